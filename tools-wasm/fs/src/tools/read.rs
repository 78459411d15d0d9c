//! `read_file`: numbered lines of a text file, a window at a time.

use std::fmt::Write as _;
use std::io::{self, Read};

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::{not_regular, read_op};
use crate::error::{Access, ToolError, invalid, io_error};
use crate::file::{self, MAX_READ};
use crate::paths;
use crate::text::{SNIFF_LEN, cut_line, human_size};

/// Lines shown when `limit` is not given.
const DEFAULT_LIMIT: usize = 2000;
/// Largest read buffer: files up to this size are read in one go.
const READ_BUFFER: usize = MAX_READ;
/// Longer lines are cut.
const MAX_LINE_CHARS: usize = 2000;
/// Output stops early past this size, so the continuation note survives
/// the host's output limit.
const MAX_OUTPUT_BYTES: usize = 128 * 1024;

/// Read a text file. Lines come numbered like `cat -n`; the numbers are not part of the file. At most 2000 lines per call: page with offset and limit.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// File path.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::read().follow()))]
    path: String,
    /// First line to return (1-based).
    #[schemars(range(min = 1))]
    offset: Option<usize>,
    /// Lines to return (default 2000).
    #[schemars(range(min = 1, max = 10000))]
    limit: Option<usize>,
}

impl Tool for Args {
    const NAME: &str = "read_file";
    const ALIASES: &[&str] = &["read", "cat"];
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let path = args.path.as_str();
    let path_resolved = paths::resolve("path", path)?;
    let path = path_resolved.as_str();
    let offset = args.offset.unwrap_or(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if offset == 0 || limit == 0 {
        return Err(invalid("offset and limit start at 1"));
    }
    if let Some(head) = read_op(path, file::read_head(path, READ_BUFFER))?
        && head.whole
    {
        if head.data.is_empty() {
            return Ok(format!("{path} is empty (0 bytes)"));
        }
        return render_whole(&head.data, offset, limit)
            .map_err(|e| render_error(e, path, head.len, offset));
    }
    let meta = read_op(path, file::stat(path))?;
    if meta.is_dir {
        return Err(invalid(format!(
            "{path} is a directory, not a file; use list_files to see what it contains"
        )));
    }
    if !meta.regular {
        return Err(not_regular(path, Args::NAME));
    }
    if meta.len == 0 {
        return Ok(format!("{path} is empty (0 bytes)"));
    }
    let file = read_op(path, file::open(path, &meta))?;
    // A buffer the size of the file (plus the byte that finds its end) up
    // to 16 KiB: a small file is read in one go, a large one streams.
    let capacity = usize::try_from(meta.len)
        .unwrap_or(usize::MAX)
        .saturating_add(1)
        .min(READ_BUFFER);
    render(file, offset, limit, capacity).map_err(|e| render_error(e, path, meta.len, offset))
}

/// The error for a file (`len` bytes) that could not be rendered.
fn render_error(e: RenderError, path: &str, len: u64, offset: usize) -> ToolError {
    match e {
        RenderError::Binary => invalid(format!(
            "{path} is a binary file ({}); read_file only shows text files",
            human_size(len)
        )),
        RenderError::PastEnd(total) => invalid(format!(
            "offset {offset} is past the end of {path}, which has {total} line{}; \
             use an offset from 1 to {total}",
            if total == 1 { "" } else { "s" }
        )),
        RenderError::Io(e) => io_error(&e, path, Access::Read),
    }
}

/// Appends `n` right-aligned in 6 columns and a tab, like
/// `format!("{n:>6}\t")` (which costs several times more inside the
/// component, once per line).
fn push_line_number(out: &mut String, mut n: usize) {
    let mut buf = *b"                    \t"; // room for usize::MAX
    let mut start = buf.len() - 1;
    loop {
        start -= 1;
        buf[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let start = start.min(buf.len() - 7);
    out.push_str(std::str::from_utf8(&buf[start..]).expect("ASCII digits"));
}

/// Why a file could not be rendered.
#[derive(Debug)]
pub enum RenderError {
    /// Not text: a NUL byte in the first 8 KiB, or invalid UTF-8.
    Binary,
    /// The offset is past the last line; the file has this many lines.
    PastEnd(usize),
    Io(io::Error),
}

/// Numbers lines `offset..offset+limit` of the text in `reader` in `cat -n`
/// style, adding a note when lines are left out. Streams: only the window
/// is kept, but every line is read to count them and to check it is text.
/// Lines end at `\n` or `\r\n`, like `str::lines`. `size_hint` (the file
/// size, or 0) sizes the read buffer and the output: a file up to 16 KiB is
/// read in one go, and a text shown whole grows by its line numbers, about
/// 1/8 for code.
pub fn render(
    mut reader: impl Read,
    offset: usize,
    limit: usize,
    size_hint: usize,
) -> Result<String, RenderError> {
    let mut window = Window::new(offset, limit, size_hint);
    // `buf[..filled]` holds read bytes; all but a last, unfinished line
    // are handed to the window after each read.
    let mut buf = vec![0; size_hint.clamp(64, READ_BUFFER)];
    let mut filled = 0;
    loop {
        if filled == buf.len() {
            buf.resize(buf.len() * 2, 0); // a line longer than the buffer
        }
        let n = match reader.read(&mut buf[filled..]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(RenderError::Io(e)),
        };
        if n == 0 {
            window.lines(&buf[..filled], true)?;
            break;
        }
        let done = filled;
        filled += n;
        if let Some(i) = memchr::memrchr(b'\n', &buf[done..filled]) {
            let end = done + i + 1;
            window.lines(&buf[..end], false)?;
            buf.copy_within(end..filled, 0);
            filled -= end;
        }
    }
    window.finish()
}

/// [`render`] of a whole file already in memory: its lines are taken
/// where they are, without a read buffer.
pub fn render_whole(data: &[u8], offset: usize, limit: usize) -> Result<String, RenderError> {
    let mut window = Window::new(offset, limit, data.len());
    window.lines(data, true)?;
    window.finish()
}

/// The lines shown so far, and what is known of the file.
struct Window {
    offset: usize,
    limit: usize,
    /// Lines seen.
    total: usize,
    /// The last line shown.
    last: usize,
    /// The output budget is used up: later lines are only counted.
    full: bool,
    /// Bytes checked for NUL so far.
    sniffed: usize,
    out: String,
}

impl Window {
    /// An empty window; `size_hint` (the file size, or 0) sizes its output.
    fn new(offset: usize, limit: usize, size_hint: usize) -> Window {
        Window {
            offset,
            limit,
            total: 0,
            last: offset - 1,
            full: false,
            sniffed: 0,
            out: String::with_capacity(
                size_hint
                    .saturating_add(size_hint / 4)
                    .min(MAX_OUTPUT_BYTES),
            ),
        }
    }

    /// Takes whole lines (the last one may lack its `\n` only at the end
    /// of the file). One pass each finds NUL bytes, checks UTF-8 and counts
    /// lines past the window; only lines up to its end are split.
    fn lines(&mut self, bytes: &[u8], at_end: bool) -> Result<(), RenderError> {
        if bytes.is_empty() {
            return Ok(());
        }
        if self.sniffed < SNIFF_LEN {
            let head = &bytes[..bytes.len().min(SNIFF_LEN - self.sniffed)];
            if memchr::memchr(0, head).is_some() {
                return Err(RenderError::Binary);
            }
            self.sniffed += head.len();
        }
        // `\n` never occurs inside a multi-byte character, so whole lines
        // are valid UTF-8 exactly when each line is.
        let text = std::str::from_utf8(bytes).map_err(|_| RenderError::Binary)?;
        let unfinished = usize::from(at_end && !text.ends_with('\n'));
        let mut start = 0;
        for end in memchr::memchr_iter(b'\n', bytes) {
            if !self.wants_more() {
                // Counts the rest without splitting it.
                self.total += memchr::memchr_iter(b'\n', &bytes[start..]).count() + unfinished;
                return Ok(());
            }
            self.line(&text[start..end]);
            start = end + 1;
        }
        if unfinished == 1 {
            if self.wants_more() {
                self.line(&text[start..]);
            } else {
                self.total += 1;
            }
        }
        Ok(())
    }

    /// True while lines after `total` may still be shown.
    fn wants_more(&self) -> bool {
        !self.full && self.total + 1 < self.offset + self.limit
    }

    /// Takes line number `total + 1` (without its `\n`).
    fn line(&mut self, line: &str) {
        self.total += 1;
        if self.total < self.offset {
            return;
        }
        if self.out.len() >= MAX_OUTPUT_BYTES {
            self.full = true;
            return;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        push_line_number(&mut self.out, self.total);
        if line.len() <= MAX_LINE_CHARS {
            self.out.push_str(line); // bytes >= chars: no cut needed
        } else {
            self.out.push_str(&cut_line(line, MAX_LINE_CHARS));
        }
        self.out.push('\n');
        self.last = self.total;
    }

    fn finish(mut self) -> Result<String, RenderError> {
        let (offset, last, total) = (self.offset, self.last, self.total);
        if offset > total {
            return Err(RenderError::PastEnd(total));
        }
        if last < total {
            let _ = write!(
                self.out,
                "[showing lines {offset}-{last} of {total}; call read_file with offset={} to read more]",
                last + 1
            );
        }
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `text` rendered from a reader and whole (the two must agree).
    fn render(text: &str, offset: usize, limit: usize) -> Result<String, usize> {
        let read = super::render(text.as_bytes(), offset, limit, text.len());
        let whole = render_whole(text.as_bytes(), offset, limit);
        assert_eq!(format!("{read:?}"), format!("{whole:?}"));
        match read {
            Ok(out) => Ok(out),
            Err(RenderError::PastEnd(total)) => Err(total),
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn line_numbers_match_format() {
        for n in [
            0,
            1,
            9,
            10,
            99_999,
            999_999,
            1_000_000,
            123_456_789,
            usize::MAX,
        ] {
            let mut out = String::new();
            push_line_number(&mut out, n);
            assert_eq!(out, format!("{n:>6}\t"));
        }
    }

    #[test]
    fn numbers_like_cat_n() {
        assert_eq!(render("a\nb\n", 1, 10).unwrap(), "     1\ta\n     2\tb\n");
        assert_eq!(render("a\r\nb", 2, 10).unwrap(), "     2\tb\n");
        assert_eq!(render("\n", 1, 10).unwrap(), "     1\t\n");
    }

    #[test]
    fn windows_and_notes() {
        let text: String = (1..=5234).map(|i| format!("line {i}\n")).collect();
        let out = render(&text, 1, DEFAULT_LIMIT).unwrap();
        assert!(out.starts_with("     1\tline 1\n"));
        assert!(out.contains("  2000\tline 2000\n"));
        assert!(out.ends_with(
            "[showing lines 1-2000 of 5234; call read_file with offset=2001 to read more]"
        ));
        let out = render(&text, 5000, 2000).unwrap();
        assert!(out.ends_with("  5234\tline 5234\n"), "no note at the end");
        assert_eq!(render(&text, 5235, 1), Err(5234));
        assert_eq!(render("x", 2, 1), Err(1));
    }

    #[test]
    fn refuses_binary() {
        let binary = |bytes: &[u8]| {
            let read = matches!(super::render(bytes, 1, 10, 0), Err(RenderError::Binary));
            assert_eq!(
                read,
                matches!(render_whole(bytes, 1, 10), Err(RenderError::Binary))
            );
            read
        };
        assert!(binary(b"abc\0def\n"));
        assert!(binary(b"ok\nok\n\xff\xfe\n"));
        let mut late_nul = "x\n".repeat(SNIFF_LEN).into_bytes();
        late_nul.push(0);
        assert!(!binary(&late_nul));
        assert!(render("é\nü", 2, 1).unwrap().ends_with("\tü\n"));
    }

    /// Hands out at most `step` bytes per read, so lines straddle reads.
    struct Trickle<'a> {
        bytes: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.bytes.len().min(self.step).min(buf.len());
            buf[..n].copy_from_slice(&self.bytes[..n]);
            self.bytes = &self.bytes[n..];
            Ok(n)
        }
    }

    /// `cat -n` of lines `offset..offset+limit`, the obvious way.
    fn reference(text: &str, offset: usize, limit: usize) -> String {
        let lines: Vec<&str> = text.lines().collect();
        let last = (offset - 1 + limit).min(lines.len());
        let mut out: String = (offset..=last)
            .map(|n| format!("{n:>6}\t{}\n", lines[n - 1]))
            .collect();
        if last < lines.len() {
            out += &format!(
                "[showing lines {offset}-{last} of {}; call read_file with offset={} to read more]",
                lines.len(),
                last + 1
            );
        }
        out
    }

    #[test]
    fn lines_split_across_reads_render_the_same() {
        let text = "first\r\n\nsecond line, longer than the others\n  é ü\n\n\nlast";
        for (offset, limit) in [(1, 100), (2, 3), (4, 1), (7, 5), (3, 100)] {
            let want = reference(text, offset, limit);
            for step in 1..=text.len() {
                for hint in [0, 3, text.len()] {
                    let reader = Trickle {
                        bytes: text.as_bytes(),
                        step,
                    };
                    let got = super::render(reader, offset, limit, hint).unwrap();
                    assert_eq!(got, want, "offset {offset} limit {limit} step {step}");
                }
            }
        }
        assert_eq!(
            render(&format!("{text}\n"), 1, 100),
            Ok(reference(text, 1, 100))
        );
    }

    #[test]
    fn a_nul_or_bad_utf8_past_the_first_read_is_found() {
        for (tail, step) in [(&b"\xc3\n"[..], 7), (&b"\0"[..], 5)] {
            let mut bytes = "a\n".repeat(100).into_bytes();
            bytes.extend_from_slice(tail);
            let reader = Trickle {
                bytes: &bytes,
                step,
            };
            assert!(
                matches!(super::render(reader, 1, 1, 0), Err(RenderError::Binary)),
                "{tail:?}"
            );
        }
    }

    #[test]
    fn cuts_long_lines_and_output() {
        let long = "x".repeat(MAX_LINE_CHARS + 5);
        let out = render(&long, 1, 1).unwrap();
        assert!(out.contains("[... line cut at 2000 of 2005 chars]"));
        let text = format!("{long}\n").repeat(200);
        let out = render(&text, 1, 200).unwrap();
        assert!(out.len() < MAX_OUTPUT_BYTES + 3000);
        assert!(out.contains("call read_file with offset="));
    }
}
