//! The search core of `grep`: reads a file in big blocks, runs the regex
//! over a whole block at once and cuts out only the lines that match.
//!
//! The matcher is ripgrep's (`grep-regex`), built so that it never matches
//! a line end (`a\sb` cannot match `a\nb`; a literal `\n` is refused): the
//! results are those of matching line by line, `^` and `$` match at line
//! ends (before `\r\n` too). It finds candidate lines by the pattern's
//! rarest literal, and only those are matched in full.

use std::io::{self, Read};
use std::ops::ControlFlow;

use grep_matcher::{LineMatchKind, Matcher};
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use memchr::{memchr, memchr_iter, memrchr};

use crate::deadline::Deadline;
use crate::text::SNIFF_LEN;

/// Bytes asked for by one read.
const READ_LEN: usize = 256 << 10;
/// Most bytes searched at once: a walked file is searched whole, and
/// skipped when bigger than this.
pub const BLOCK_LEN: usize = 16 << 20;
/// Bytes searched at once in a file searched on its own (of any size): small
/// enough to stay in the CPU caches.
const STREAM_LEN: usize = 1 << 20;

/// Most bytes one line may take in a file searched on its own before it is
/// searched in pieces (a match across two pieces is missed).
const MAX_WINDOW: usize = 64 << 20;

/// Compiles `pattern` for [`Searcher`]: never matching `\n`, with anchors
/// at line ends, CRLF aware.
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, grep_regex::Error> {
    RegexMatcherBuilder::new()
        .case_insensitive(case_insensitive)
        .multi_line(true)
        .line_terminator(Some(b'\n'))
        .crlf(true)
        .build(pattern)
}

/// How searching one file ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Searched (to the end, or until the sink said `Break`).
    Searched(ControlFlow<()>),
    /// A NUL byte in the first 8 KiB: not searched.
    Binary,
    /// Bigger than the limit: not searched.
    TooBig,
    /// The deadline passed between two blocks.
    OutOfTime,
}

/// A matching line: its 1-based number and its bytes, without the line end.
pub type Sink<'a> = dyn FnMut(u64, &[u8]) -> ControlFlow<()> + 'a;

/// Searches files for one regex, reusing its buffer from file to file.
pub struct Searcher {
    regex: RegexMatcher,
    buf: Vec<u8>,
    /// [`BLOCK_LEN`], smaller in tests.
    block_len: usize,
}

impl Searcher {
    pub fn new(regex: RegexMatcher) -> Searcher {
        Searcher {
            regex,
            buf: Vec::new(),
            block_len: BLOCK_LEN,
        }
    }

    /// Searches what `reader` yields, calling `sink` for each matching
    /// line. With `whole_only`, a file over [`BLOCK_LEN`] is [`Outcome::TooBig`]
    /// and nothing of it reaches the sink; otherwise it is searched in blocks
    /// of [`STREAM_LEN`], checking `deadline` between blocks.
    pub fn search(
        &mut self,
        reader: &mut impl Read,
        whole_only: bool,
        deadline: &Deadline,
        sink: &mut Sink<'_>,
    ) -> io::Result<Outcome> {
        let mut len = 0;
        let mut next_line = 1;
        let mut first = true;
        let mut window = if whole_only {
            self.block_len
        } else {
            self.block_len.min(STREAM_LEN)
        };
        loop {
            let eof = self.fill(reader, &mut len, window)?;
            if first {
                first = false;
                if self.buf[..len.min(SNIFF_LEN)].contains(&0) {
                    return Ok(Outcome::Binary);
                }
            }
            if !eof && whole_only {
                return Ok(Outcome::TooBig);
            }
            let last_end = if eof {
                None
            } else {
                memrchr(b'\n', &self.buf[..len])
            };
            let end = match last_end {
                _ if eof => len,
                Some(i) => i + 1,
                // One line longer than the window: take in more of it, up
                // to a bound; past that the line is searched in pieces.
                None if window < MAX_WINDOW => {
                    window *= 2;
                    continue;
                }
                None => len,
            };
            let flow = search_block(&self.regex, &self.buf[..end], &mut next_line, !eof, sink);
            if flow.is_break() || eof {
                return Ok(Outcome::Searched(flow));
            }
            if deadline.passed() {
                return Ok(Outcome::OutOfTime);
            }
            self.buf.copy_within(end..len, 0);
            len -= end;
        }
    }

    /// Reads into `buf[len..]` until it holds more than `window` bytes or the
    /// reader is done; true when it is done.
    fn fill(&mut self, reader: &mut impl Read, len: &mut usize, window: usize) -> io::Result<bool> {
        while *len <= window {
            // Never more than one byte past the window: that byte tells a
            // file of exactly `window` bytes from a bigger one.
            let want = READ_LEN.min(window + 1 - *len);
            if self.buf.len() < *len + want {
                self.buf.resize(*len + want, 0);
            }
            match reader.read(&mut self.buf[*len..*len + want]) {
                Ok(0) => return Ok(true),
                Ok(n) => *len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(false)
    }
}

/// Searches `block` (whole lines; the last may lack its `\n`), whose first
/// line is number `*line`. With `more` (another block follows), leaves in
/// `*line` the number of the line after it; without, the lines after the
/// last match are not counted.
fn search_block(
    regex: &RegexMatcher,
    block: &[u8],
    line: &mut u64,
    more: bool,
    sink: &mut Sink<'_>,
) -> ControlFlow<()> {
    // `pos` is always at a line start; lines before `counted` are counted.
    let (mut pos, mut counted) = (0, 0);
    while pos < block.len() {
        let Ok(Some(kind)) = regex.find_candidate_line(&block[pos..]) else {
            break;
        };
        let (at, confirmed) = match kind {
            LineMatchKind::Confirmed(i) => (pos + i, true),
            LineMatchKind::Candidate(i) => (pos + i, false),
        };
        if at == block.len() && block[at - 1] == b'\n' {
            break; // an empty match after the last line end: no line there
        }
        let start = memrchr(b'\n', &block[pos..at]).map_or(pos, |i| pos + i + 1);
        let end = memchr(b'\n', &block[at..]).map_or(block.len(), |i| at + i);
        let text = strip_cr(&block[start..end]);
        if confirmed || regex.is_match(&block[start..end]).unwrap_or(false) {
            advance(block, line, &mut counted, start);
            sink(*line, text)?;
        }
        pos = end + 1;
    }
    if more {
        advance(block, line, &mut counted, block.len());
    }
    ControlFlow::Continue(())
}

/// Moves `*counted` (a line start, whose line is number `*line`) on to `to`,
/// so that `*line` is the number of the line holding `to`.
fn advance(block: &[u8], line: &mut u64, counted: &mut usize, to: usize) {
    *line += memchr_iter(b'\n', &block[*counted..to]).count() as u64;
    *counted = to;
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests;
