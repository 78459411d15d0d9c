//! `grep`: search file contents with a regular expression.

use std::fmt::Write as _;
use std::fs::{self, File};
use std::io::{BufRead, BufReader};
use std::ops::ControlFlow;
use std::path::Path;

use globset::GlobMatcher;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use super::{not_regular, read_op};
use crate::error::{ToolError, invalid, parse_args};
use crate::text::{SNIFF_LEN, cut_line};
use crate::{Tool, paths, walk};

/// Matching lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 300;
/// Bigger files are skipped.
const MAX_FILE_BYTES: u64 = 16 << 20;

pub const TOOL: Tool = Tool {
    name: "grep",
    description: "Search file contents for a regular expression (Rust regex syntax, matched \
        line by line). Returns `path:line: text` for each matching line, files in name \
        order. Searches a directory recursively (skipping `.git`, symlinks, binary files and files \
        over 16 MiB) or a single file of any size. Narrow it with include, a glob on file names such as \
        \"*.rs\" or \"*.{ts,tsx}\". Stops after max_matches lines. To find files by name use \
        glob.",
    schema: r#"{
  "type": "object",
  "properties": {
    "pattern": {"type": "string", "minLength": 1, "maxLength": 4096, "description": "Regular expression, e.g. \"fn\\s+main\" or \"TODO|FIXME\". Escape regex characters to search literal text."},
    "path": {"type": "string", "minLength": 1, "description": "File or directory to search. Default \".\" (the workspace)."},
    "include": {"type": "string", "minLength": 1, "description": "Only search files whose name matches this glob, e.g. \"*.rs\". A glob containing '/' is matched against the path relative to path instead."},
    "case_insensitive": {"type": "boolean", "description": "Ignore case. Default false."},
    "max_matches": {"type": "integer", "minimum": 1, "maximum": 2000, "description": "Stop after this many matching lines. Default 200."}
  },
  "required": ["pattern"],
  "additionalProperties": false
}"#,
    aliases: &["search", "rg"],
    mutates: false,
    run,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    include: Option<String>,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default = "default_max")]
    max_matches: usize,
}

fn default_max() -> usize {
    200
}

/// The state of one search.
struct Search {
    regex: Regex,
    max: usize,
    out: String,
    matches: usize,
    too_big: usize,
}

impl Search {
    /// Searches one file met in a walk; `Break` once `max` matches were found.
    /// Files that are not regular, unreadable, too big or not text are skipped.
    fn file(&mut self, shown: &str, full: &Path) -> ControlFlow<()> {
        let Ok(meta) = fs::metadata(full) else {
            return ControlFlow::Continue(());
        };
        if !meta.is_file() {
            return ControlFlow::Continue(());
        }
        if meta.len() > MAX_FILE_BYTES {
            self.too_big += 1;
            return ControlFlow::Continue(());
        }
        match File::open(full) {
            Ok(file) => self
                .lines(shown, BufReader::new(file))
                .unwrap_or(ControlFlow::Continue(())),
            Err(_) => ControlFlow::Continue(()),
        }
    }

    /// Searches the lines of one file, streaming. `None` when the file turns
    /// out not to be text (a NUL byte in the first 8 KiB, invalid UTF-8) or
    /// cannot be read: then nothing of it is added to the output.
    fn lines(&mut self, shown: &str, mut reader: impl BufRead) -> Option<ControlFlow<()>> {
        // Committed only once the file proved to be text.
        let (mut found, mut count) = (String::new(), 0);
        let (mut buf, mut number, mut sniffed) = (Vec::new(), 0, 0);
        let mut flow = ControlFlow::Continue(());
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf).ok()?;
            if n == 0 {
                break;
            }
            if sniffed < SNIFF_LEN && buf[..n.min(SNIFF_LEN - sniffed)].contains(&0) {
                return None;
            }
            sniffed += n;
            let line = std::str::from_utf8(&buf).ok()?;
            let line = match line.strip_suffix('\n') {
                Some(l) => l.strip_suffix('\r').unwrap_or(l),
                None => line,
            };
            number += 1;
            if !self.regex.is_match(line) {
                continue;
            }
            if self.matches + count == self.max {
                flow = ControlFlow::Break(());
                break;
            }
            count += 1;
            let line = cut_line(line, MAX_LINE_CHARS);
            let _ = writeln!(found, "{shown}:{number}: {line}");
        }
        self.matches += count;
        self.out.push_str(&found);
        Some(flow)
    }
}

fn run(args: &str) -> Result<String, ToolError> {
    let args: Args = parse_args(TOOL.name, args)?;
    let base = args
        .path
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    let base_resolved = paths::resolve("path", base)?;
    let base = base_resolved.as_str();
    if args.max_matches == 0 {
        return Err(invalid("max_matches must be at least 1"));
    }
    let regex = compile(&args.pattern, args.case_insensitive)?;
    let include = args
        .include
        .as_deref()
        .map(super::glob::compile)
        .transpose()?;
    let mut search = Search {
        regex,
        max: args.max_matches,
        out: String::new(),
        matches: 0,
        too_big: 0,
    };
    let meta = read_op(base, fs::metadata(base))?;
    let mut notes = Vec::new();
    let flow = if meta.is_dir() {
        let mut flow = ControlFlow::Continue(());
        let summary = read_op(
            base,
            walk::walk_files(base, &mut |rel, full, file_type| {
                // Like ripgrep: symlinks met in the walk are not followed.
                if file_type.is_symlink() || !included(include.as_ref(), rel) {
                    return ControlFlow::Continue(());
                }
                flow = search.file(&paths::display_join(base, rel), full);
                flow
            }),
        )?;
        notes.extend(summary.notes());
        flow
    } else if !meta.is_file() {
        return Err(not_regular(base, TOOL.name));
    } else {
        let file = read_op(base, File::open(base))?;
        match search.lines(base, BufReader::new(file)) {
            Some(flow) => flow,
            None => return Ok(format!("{base} is a binary file; grep only searches text")),
        }
    };
    if flow.is_break() {
        notes.push(format!(
            "[stopped after {} matches; narrow the pattern or path]",
            search.max
        ));
    }
    if search.too_big > 0 {
        notes.push(format!(
            "[skipped {} file{} larger than 16 MiB; grep them one at a time with path]",
            search.too_big,
            if search.too_big == 1 { "" } else { "s" }
        ));
    }
    let mut out = search.out;
    if search.matches == 0 {
        let _ = writeln!(out, "no matches for /{}/ in {base}", args.pattern);
    }
    for note in notes {
        let _ = writeln!(out, "{note}");
    }
    Ok(out.trim_end().to_string())
}

/// Compiles the search regex, reporting syntax errors as invalid arguments.
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<Regex, ToolError> {
    RegexBuilder::new(pattern)
        .case_insensitive(case_insensitive)
        .build()
        .map_err(|e| invalid(format!("invalid regex: {e}")))
}

/// Whether the `include` glob admits the file at relative path `rel`: a glob
/// without '/' is matched against the file name only.
fn included(include: Option<&GlobMatcher>, rel: &str) -> bool {
    let Some(glob) = include else { return true };
    if glob.glob().glob().contains('/') {
        glob.is_match(rel)
    } else {
        glob.is_match(rel.rsplit('/').next().unwrap_or(rel))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search(pattern: &str, max: usize) -> Search {
        Search {
            regex: compile(pattern, false).unwrap(),
            max,
            out: String::new(),
            matches: 0,
            too_big: 0,
        }
    }

    #[test]
    fn formats_and_caps_matches() {
        let mut s = search("fo+", 3);
        assert!(
            s.lines("a.rs", &b"foo\r\nbar\nxfo"[..])
                .unwrap()
                .is_continue()
        );
        assert_eq!(s.out, "a.rs:1: foo\na.rs:3: xfo\n");
        assert!(s.lines("b.rs", &b"fo\nfo\n"[..]).unwrap().is_break());
        assert_eq!(s.matches, 3);
        assert!(s.out.ends_with("b.rs:1: fo\n"));
    }

    #[test]
    fn skips_binary_files_entirely() {
        let mut s = search("fo", 10);
        assert!(s.lines("bin", &b"fo\nfo\0"[..]).is_none());
        assert!(s.lines("bad", &b"fo\n\xff\n"[..]).is_none());
        assert_eq!((s.out.as_str(), s.matches), ("", 0));
    }

    #[test]
    fn case_and_errors() {
        assert!(compile("HELLO", true).unwrap().is_match("hello"));
        assert!(!compile("HELLO", false).unwrap().is_match("hello"));
        let Err(ToolError::InvalidArgs(msg)) = compile("a(b", false) else {
            panic!()
        };
        assert!(msg.starts_with("invalid regex:"), "{msg}");
    }

    #[test]
    fn include_filter() {
        let glob = super::super::glob::compile("*.rs").unwrap();
        assert!(included(Some(&glob), "src/deep/x.rs"));
        assert!(!included(Some(&glob), "src/x.toml"));
        let glob = super::super::glob::compile("src/*.rs").unwrap();
        assert!(included(Some(&glob), "src/x.rs"));
        assert!(!included(Some(&glob), "lib/src/x.rs"));
        assert!(included(None, "anything"));
    }
}
