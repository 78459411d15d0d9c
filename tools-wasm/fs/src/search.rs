//! The search core of `grep`: reads a file in big blocks, runs the regex
//! over a whole block at once and cuts out only the lines that match.
//!
//! The results are those of matching line by line: `^` and `$` match at
//! line ends (before `\r\n` too). A match found across a line break is
//! checked against its line alone; once such a check fails, the rest of the
//! file is searched line by line, so a pattern like `a\s*b` cannot make the
//! search quadratic.

use std::io::{self, Read};
use std::ops::ControlFlow;

use memchr::{memchr, memchr_iter, memrchr};
use regex::bytes::{Regex, RegexBuilder};

use crate::deadline::Deadline;
use crate::text::SNIFF_LEN;

/// Bytes asked for by one read.
const READ_LEN: usize = 256 << 10;
/// Bytes searched at once: a walked file bigger than this is skipped, a
/// file searched on its own goes in blocks of this size.
pub const BLOCK_LEN: usize = 16 << 20;

/// Compiles `pattern` for [`Searcher`]: multi-line anchors, CRLF aware.
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, regex::Error> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .multi_line(true)
        .crlf(true)
        .build()
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
    regex: Regex,
    buf: Vec<u8>,
    /// [`BLOCK_LEN`], but for tests.
    block_len: usize,
}

impl Searcher {
    pub fn new(regex: Regex) -> Searcher {
        Searcher {
            regex,
            buf: Vec::new(),
            block_len: BLOCK_LEN,
        }
    }

    /// Searches what `reader` yields, calling `sink` for each matching
    /// line. With `whole_only`, a file over [`BLOCK_LEN`] is [`Outcome::TooBig`]
    /// and nothing of it reaches the sink; otherwise it is searched block by
    /// block, checking `deadline` between blocks.
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
        let mut window = self.block_len;
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
            let end = if eof {
                len
            } else if let Some(i) = memrchr(b'\n', &self.buf[..len]) {
                i + 1
            } else {
                // One line longer than the window: take in more of it.
                window *= 2;
                continue;
            };
            let flow = search_block(&self.regex, &self.buf[..end], &mut next_line, sink);
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
/// line is number `*line`; leaves in `*line` the number of the line after it.
fn search_block(
    regex: &Regex,
    block: &[u8],
    line: &mut u64,
    sink: &mut Sink<'_>,
) -> ControlFlow<()> {
    // `pos` is always at a line start; lines before `counted` are counted.
    let (mut pos, mut counted) = (0, 0);
    while pos < block.len() {
        let Some(m) = regex.find_at(block, pos) else {
            break;
        };
        let at = m.start();
        if at == block.len() && block[at - 1] == b'\n' {
            break; // an empty match after the last line end: no line there
        }
        let start = memrchr(b'\n', &block[pos..at]).map_or(pos, |i| pos + i + 1);
        let end = memchr(b'\n', &block[at..]).map_or(block.len(), |i| at + i);
        let text = strip_cr(&block[start..end]);
        if m.end() <= end || regex.is_match(text) {
            advance(block, line, &mut counted, start);
            sink(*line, text)?;
        } else {
            // The match needed the line break: from here on, line by line.
            return by_lines(regex, block, end, line, counted, sink);
        }
        pos = end + 1;
    }
    advance(block, line, &mut counted, block.len());
    ControlFlow::Continue(())
}

/// Moves `*counted` (a line start, whose line is number `*line`) on to `to`,
/// so that `*line` is the number of the line holding `to`.
fn advance(block: &[u8], line: &mut u64, counted: &mut usize, to: usize) {
    *line += memchr_iter(b'\n', &block[*counted..to]).count() as u64;
    *counted = to;
}

/// [`search_block`] for the lines after `from` (a line end or the block's
/// end), one regex run per line.
fn by_lines(
    regex: &Regex,
    block: &[u8],
    from: usize,
    line: &mut u64,
    counted: usize,
    sink: &mut Sink<'_>,
) -> ControlFlow<()> {
    let mut counted = counted;
    advance(block, line, &mut counted, from);
    let mut start = from + 1;
    while start < block.len() {
        *line += 1;
        let end = memchr(b'\n', &block[start..]).map_or(block.len(), |i| start + i);
        let text = strip_cr(&block[start..end]);
        if regex.is_match(text) {
            sink(*line, text)?;
        }
        start = end + 1;
    }
    // The line after the block.
    if from < block.len() {
        *line += 1;
    }
    ControlFlow::Continue(())
}

fn strip_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests;
