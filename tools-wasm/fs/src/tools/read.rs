//! `read_file`: numbered lines of a text file, a window at a time.

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader};

use serde::Deserialize;

use super::read_op;
use crate::error::{Access, ToolError, invalid, io_error, parse_args};
use crate::text::{SNIFF_LEN, cut_line, human_size};
use crate::{Tool, paths};

/// Lines shown when `limit` is not given.
const DEFAULT_LIMIT: usize = 2000;
/// Largest read buffer: files up to this size are read in one go.
const READ_BUFFER: usize = 16 * 1024;
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

/// What `run` needs to know of the file before opening it.
struct Meta {
    is_dir: bool,
    /// A regular file (after following a symlink).
    regular: bool,
    len: u64,
}

/// The file access of `read_file`. Inside the component it talks to
/// `wasi:filesystem` directly: wasi-libc's `stat` asks the host twice (the
/// metadata hash for `st_ino`), and reading through its streams costs two
/// stream reads and a drop. Paths resolve through the same preopen as with
/// std (see [`paths::find_preopen`]) and errors carry the errno wasi-libc
/// would set, so messages do not change. Off wasm32: std.
#[cfg(target_os = "wasi")]
mod file {
    use std::io;

    use wasip2::filesystem::types::{
        Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags,
    };

    use super::Meta;
    use crate::paths;

    /// Metadata of `path`, following a final symlink. Asks without
    /// following first: only a symlink needs the second question, and for
    /// anything else the two agree.
    pub fn stat(path: &str) -> io::Result<Meta> {
        let (dir, rel) = preopen(path)?;
        let mut stat = dir.stat_at(PathFlags::empty(), rel).map_err(error)?;
        if stat.type_ == DescriptorType::SymbolicLink {
            stat = dir.stat_at(PathFlags::SYMLINK_FOLLOW, rel).map_err(error)?;
        }
        Ok(Meta {
            is_dir: stat.type_ == DescriptorType::Directory,
            regular: stat.type_ == DescriptorType::RegularFile,
            len: stat.size,
        })
    }

    /// Opens `path` for reading, like `File::open`; `meta` is its [`stat`].
    pub fn open(path: &str, meta: &Meta) -> io::Result<File> {
        let (dir, rel) = preopen(path)?;
        let descriptor = dir
            .open_at(
                PathFlags::SYMLINK_FOLLOW,
                rel,
                OpenFlags::empty(),
                DescriptorFlags::READ,
            )
            .map_err(error)?;
        Ok(File {
            descriptor,
            pos: 0,
            end: false,
            regular: meta.regular,
        })
    }

    fn preopen(path: &str) -> io::Result<(&'static Descriptor, &str)> {
        paths::find_preopen(path).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
    }

    /// A file read with positioned reads, one host call per buffer fill.
    pub struct File {
        descriptor: Descriptor,
        pos: u64,
        /// A read came back short: the end of a regular file (its pread
        /// is short only there), so the next read need not ask the host.
        end: bool,
        regular: bool,
    }

    impl io::Read for File {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.end || buf.is_empty() {
                return Ok(0);
            }
            // Well under the host's cap on one read (64 KiB), so a short
            // read means the end.
            let want = buf.len().min(super::READ_BUFFER);
            let (data, eof) = self.descriptor.read(want as u64, self.pos).map_err(error)?;
            let n = data.len().min(want);
            buf[..n].copy_from_slice(&data[..n]);
            self.pos += n as u64;
            self.end = eof || n == 0 || (self.regular && n < want);
            Ok(n)
        }
    }

    /// The io error std would report: wasi-libc's errno for `code`.
    fn error(code: ErrorCode) -> io::Error {
        io::Error::from_raw_os_error(match code {
            ErrorCode::Access => libc::EACCES,
            ErrorCode::WouldBlock => libc::EAGAIN,
            ErrorCode::Already => libc::EALREADY,
            ErrorCode::BadDescriptor => libc::EBADF,
            ErrorCode::Busy => libc::EBUSY,
            ErrorCode::Deadlock => libc::EDEADLK,
            ErrorCode::Quota => libc::EDQUOT,
            ErrorCode::Exist => libc::EEXIST,
            ErrorCode::FileTooLarge => libc::EFBIG,
            ErrorCode::IllegalByteSequence => libc::EILSEQ,
            ErrorCode::InProgress => libc::EINPROGRESS,
            ErrorCode::Interrupted => libc::EINTR,
            ErrorCode::Invalid => libc::EINVAL,
            ErrorCode::Io => libc::EIO,
            ErrorCode::IsDirectory => libc::EISDIR,
            ErrorCode::Loop => libc::ELOOP,
            ErrorCode::TooManyLinks => libc::EMLINK,
            ErrorCode::MessageSize => libc::EMSGSIZE,
            ErrorCode::NameTooLong => libc::ENAMETOOLONG,
            ErrorCode::NoDevice => libc::ENODEV,
            ErrorCode::NoEntry => libc::ENOENT,
            ErrorCode::NoLock => libc::ENOLCK,
            ErrorCode::InsufficientMemory => libc::ENOMEM,
            ErrorCode::InsufficientSpace => libc::ENOSPC,
            ErrorCode::NotDirectory => libc::ENOTDIR,
            ErrorCode::NotEmpty => libc::ENOTEMPTY,
            ErrorCode::NotRecoverable => libc::ENOTRECOVERABLE,
            ErrorCode::Unsupported => libc::ENOTSUP,
            ErrorCode::NoTty => libc::ENOTTY,
            ErrorCode::NoSuchDevice => libc::ENXIO,
            ErrorCode::Overflow => libc::EOVERFLOW,
            ErrorCode::NotPermitted => libc::EPERM,
            ErrorCode::Pipe => libc::EPIPE,
            ErrorCode::ReadOnly => libc::EROFS,
            ErrorCode::InvalidSeek => libc::ESPIPE,
            ErrorCode::TextFileBusy => libc::ETXTBSY,
            ErrorCode::CrossDevice => libc::EXDEV,
        })
    }
}

#[cfg(not(target_os = "wasi"))]
mod file {
    use std::fs;
    use std::io;

    pub use fs::File;

    use super::Meta;

    /// Metadata of `path`, following a final symlink (not following first,
    /// like the component).
    pub fn stat(path: &str) -> io::Result<Meta> {
        let mut meta = fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            meta = fs::metadata(path)?;
        }
        Ok(Meta {
            is_dir: meta.is_dir(),
            regular: meta.is_file(),
            len: meta.len(),
        })
    }

    pub fn open(path: &str, _meta: &Meta) -> io::Result<File> {
        File::open(path)
    }
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
