//! One answer typed on the terminal, safe to trust.
//!
//! Keys typed before the question was on the screen (while the model was
//! thinking, say) are discarded, so they cannot answer it. The answer is
//! read with the terminal in non-canonical mode and signals off, so Ctrl-C
//! returns at once instead of waiting for Enter; the terminal's mode is
//! restored on every path out.

use std::io::{BufRead, Write};
use std::os::fd::{AsFd, BorrowedFd};

use rustix::termios::{self, LocalModes, OptionalActions, QueueSelector, SpecialCodeIndex};

/// What the user did at a prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// A line, without its end.
    Line(String),
    /// Ctrl-C.
    Interrupted,
    /// Ctrl-D on an empty line, or the terminal went away.
    Closed,
}

/// Longest answer kept; more is ignored (an answer is a word and a reason).
const MAX_ANSWER: usize = 2000;

/// Prints `question` on stderr and reads one answer from the terminal on
/// stdin. Typeahead is discarded just before the question is shown: a key
/// pressed before it could be read cannot answer it.
pub fn ask(question: &str) -> Answer {
    let mut err = std::io::stderr().lock();
    let stdin = std::io::stdin();
    let fd = stdin.as_fd();
    // Discard what was typed so far, and read raw from then on, before the
    // question appears: a key pressed once it is visible is kept, whoever
    // types it.
    let _ = termios::tcflush(fd, QueueSelector::IFlush);
    let raw = Raw::enter(fd);
    let _ = write!(err, "{question}");
    let _ = err.flush();
    let answer = match raw {
        Some(_raw) => read_raw(fd, &mut err),
        // Not a terminal after all: an ordinary line.
        None => {
            let mut line = String::new();
            match stdin.lock().read_line(&mut line) {
                Ok(0) | Err(_) => Answer::Closed,
                Ok(_) => Answer::Line(line.trim_end_matches(['\r', '\n']).to_string()),
            }
        }
    };
    if answer != Answer::Closed {
        let _ = writeln!(err);
    }
    answer
}

/// The terminal in non-canonical mode without echo or signals, restored
/// when dropped.
struct Raw<'a> {
    fd: BorrowedFd<'a>,
    saved: termios::Termios,
}

impl<'a> Raw<'a> {
    fn enter(fd: BorrowedFd<'a>) -> Option<Raw<'a>> {
        let saved = termios::tcgetattr(fd).ok()?;
        let mut raw = saved.clone();
        raw.local_modes
            .remove(LocalModes::ICANON | LocalModes::ECHO | LocalModes::ISIG | LocalModes::IEXTEN);
        raw.special_codes[SpecialCodeIndex::VMIN] = 1;
        raw.special_codes[SpecialCodeIndex::VTIME] = 0;
        termios::tcsetattr(fd, OptionalActions::Now, &raw).ok()?;
        Some(Raw { fd, saved })
    }
}

impl Drop for Raw<'_> {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(self.fd, OptionalActions::Now, &self.saved);
    }
}

/// Reads keys until Enter, Ctrl-C or Ctrl-D, echoing and editing the line
/// (Backspace, Ctrl-U; escape sequences such as arrows are ignored).
fn read_raw(fd: BorrowedFd<'_>, err: &mut impl Write) -> Answer {
    let mut line: Vec<u8> = Vec::new();
    let mut escape = Escape::None;
    let mut buf = [0u8; 64];
    loop {
        let n = match rustix::io::read(fd, &mut buf) {
            Ok(0) => return Answer::Closed,
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return Answer::Closed,
        };
        for &b in &buf[..n] {
            let consumed = match (escape, b) {
                (Escape::None, 0x1b) => {
                    escape = Escape::Start;
                    true
                }
                (Escape::None, _) => false,
                (Escape::Start, b'[' | b'O') => {
                    escape = Escape::Body;
                    true
                }
                (Escape::Start, _) | (Escape::Body, 0x40..=0x7e) => {
                    escape = Escape::None;
                    true
                }
                (Escape::Body, _) => true,
            };
            if consumed {
                continue;
            }
            match b {
                0x03 => return Answer::Interrupted,
                0x04 if line.is_empty() => return Answer::Closed,
                b'\r' | b'\n' => {
                    return Answer::Line(String::from_utf8_lossy(&line).into_owned());
                }
                0x7f | 0x08 if pop_char(&mut line) => {
                    let _ = write!(err, "\x08 \x08");
                }
                0x7f | 0x08 => {}
                0x15 => {
                    while pop_char(&mut line) {
                        let _ = write!(err, "\x08 \x08");
                    }
                }
                0x00..=0x1f => {}
                _ if line.len() < MAX_ANSWER => {
                    line.push(b);
                    let _ = err.write_all(&[b]);
                }
                _ => {}
            }
        }
        let _ = err.flush();
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Escape {
    None,
    Start,
    Body,
}

/// Removes the last UTF-8 character; false when the line was empty.
fn pop_char(line: &mut Vec<u8>) -> bool {
    while let Some(b) = line.pop() {
        if b & 0xc0 != 0x80 {
            return true;
        }
    }
    false
}
