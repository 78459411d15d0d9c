//! `read_file`: numbered lines of a text file, a window at a time.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader};

use serde::Deserialize;

use super::read_op;
use crate::error::{Access, ToolError, invalid, io_error, parse_args};
use crate::file::{self, MAX_READ};
use crate::text::{SNIFF_LEN, cut_line, human_size};
use crate::{Tool, paths};

/// Lines shown when `limit` is not given.
const DEFAULT_LIMIT: usize = 2000;
/// Largest read buffer: files up to this size are read in one go.
const READ_BUFFER: usize = MAX_READ;
/// Longer lines are cut.
const MAX_LINE_CHARS: usize = 2000;
/// Output stops early past this size, so the continuation note survives
/// the host's output limit.
const MAX_OUTPUT_BYTES: usize = 128 * 1024;

pub const TOOL: Tool = Tool {
    name: "read_file",
    description: "Read a text file. Returns its lines numbered like `cat -n` (line number, \
        tab, text). Shows at most 2000 lines per call (lines over 2000 characters are cut); \
        use offset and limit to page through long files, as the note at the end says. \
        Binary files are refused. The line numbers are not part of the file: do not copy \
        them into edit_file's old_text.",
    schema: r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File to read, relative to the workspace (or absolute inside a granted directory)."},
    "offset": {"type": "integer", "minimum": 1, "description": "1-based line number to start from. Default 1."},
    "limit": {"type": "integer", "minimum": 1, "maximum": 10000, "description": "Maximum number of lines to return. Default 2000."}
  },
  "required": ["path"],
  "additionalProperties": false
}"#,
    aliases: &["read", "cat"],
    mutates: false,
    run,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    offset: Option<usize>,
    limit: Option<usize>,
}

fn run(args: &str) -> Result<String, ToolError> {
    let args: Args = parse_args(TOOL.name, args)?;
    let path = args.path.as_str();
    let path_resolved = paths::resolve("path", path)?;
    let path = path_resolved.as_str();
    let offset = args.offset.unwrap_or(1);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if offset == 0 || limit == 0 {
        return Err(invalid("offset and limit start at 1"));
    }
    let meta = read_op(path, file::stat(path))?;
    if meta.is_dir {
        return Err(invalid(format!(
            "{path} is a directory, not a file; use list_files to see what it contains"
        )));
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
    let reader = BufReader::with_capacity(capacity, file);
    render(reader, offset, limit, capacity).map_err(|e| match e {
        RenderError::Binary => invalid(format!(
            "{path} is a binary file ({}); read_file only shows text files",
            human_size(meta.len)
        )),
        RenderError::PastEnd(total) => invalid(format!(
            "offset {offset} is past the end of {path}, which has {total} line{}; \
             use an offset from 1 to {total}",
            if total == 1 { "" } else { "s" }
        )),
        RenderError::Io(e) => io_error(&e, path, Access::Read),
    })
}

/// Appends `n` right-aligned in 6 columns, like `format!("{n:>6}")` (which
/// costs several times more inside the component, once per line).
fn push_line_number(out: &mut String, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    let width = digits.len() - start;
    out.extend(std::iter::repeat_n(' ', 6usize.saturating_sub(width)));
    out.extend(digits[start..].iter().map(|&d| char::from(d)));
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
/// size, or 0) presizes the output: a text shown whole grows by its line
/// numbers, about 1/8 for code.
pub fn render(
    mut reader: impl BufRead,
    offset: usize,
    limit: usize,
    size_hint: usize,
) -> Result<String, RenderError> {
    let mut out = String::with_capacity(
        size_hint
            .saturating_add(size_hint / 4)
            .min(MAX_OUTPUT_BYTES),
    );
    let mut buf = Vec::new();
    let (mut total, mut sniffed) = (0, 0);
    let mut last = offset - 1; // last line shown
    let mut full = false; // output budget used up
    loop {
        buf.clear();
        let n = reader
            .read_until(b'\n', &mut buf)
            .map_err(RenderError::Io)?;
        if n == 0 {
            break;
        }
        if sniffed < SNIFF_LEN && buf[..n.min(SNIFF_LEN - sniffed)].contains(&0) {
            return Err(RenderError::Binary);
        }
        sniffed += n;
        let line = std::str::from_utf8(&buf).map_err(|_| RenderError::Binary)?;
        total += 1;
        if full || total < offset || total - offset >= limit {
            continue;
        }
        if out.len() >= MAX_OUTPUT_BYTES {
            full = true;
            continue;
        }
        let line = match line.strip_suffix('\n') {
            Some(l) => l.strip_suffix('\r').unwrap_or(l),
            None => line,
        };
        push_line_number(&mut out, total);
        out.push('\t');
        out.push_str(&cut_line(line, MAX_LINE_CHARS));
        out.push('\n');
        last = total;
    }
    if offset > total {
        return Err(RenderError::PastEnd(total));
    }
    if last < total {
        let _ = write!(
            out,
            "[showing lines {offset}-{last} of {total}; call read_file with offset={} to read more]",
            last + 1
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(text: &str, offset: usize, limit: usize) -> Result<String, usize> {
        match super::render(text.as_bytes(), offset, limit, text.len()) {
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
            assert_eq!(out, format!("{n:>6}"));
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
        let binary =
            |bytes: &[u8]| matches!(super::render(bytes, 1, 10, 0), Err(RenderError::Binary));
        assert!(binary(b"abc\0def\n"));
        assert!(binary(b"ok\nok\n\xff\xfe\n"));
        let mut late_nul = "x\n".repeat(SNIFF_LEN).into_bytes();
        late_nul.push(0);
        assert!(!binary(&late_nul));
        assert!(render("é\nü", 2, 1).unwrap().ends_with("\tü\n"));
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
