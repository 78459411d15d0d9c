//! `edit_file`: replace an exact piece of text in a file.

use std::fs;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool};

use super::{not_regular, read_op, write_op};
use crate::error::{ToolError, invalid};
use crate::paths;
use crate::text::{as_text, human_size, line_numbers, list_numbers};

/// Replace an exact piece of text in a file. old_text must match the file exactly (indentation included, no line numbers) and only once, unless replace_all. Read the file first.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// File path.
    #[schemars(length(min = 1))]
    path: String,
    /// Exact text to replace.
    #[schemars(length(min = 1))]
    old_text: String,
    /// Replacement (may be empty).
    new_text: String,
    /// Replace every occurrence.
    #[serde(default)]
    replace_all: bool,
}

impl Tool for Args {
    const NAME: &str = "edit_file";
    const ALIASES: &[&str] = &["edit", "str_replace"];
    const MUTATES: bool = true;
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let path = args.path.as_str();
    let path_resolved = paths::resolve("path", path)?;
    let path = path_resolved.as_str();
    if args.old_text.is_empty() {
        return Err(invalid(
            "old_text is empty; give the exact text to replace (use write_file to create a file)",
        ));
    }
    if args.old_text == args.new_text {
        return Err(invalid(
            "old_text and new_text are identical; nothing to change",
        ));
    }
    let meta = read_op(path, fs::metadata(path))?;
    if meta.is_dir() {
        return Err(invalid(format!("{path} is a directory, not a file")));
    }
    if !meta.is_file() {
        return Err(not_regular(path, Args::NAME));
    }
    let bytes = read_op(path, fs::read(path))?;
    let Some(content) = as_text(&bytes) else {
        return Err(invalid(format!(
            "{path} is a binary file ({}); edit_file only edits text files",
            human_size(bytes.len() as u64)
        )));
    };
    let (old, new) = (args.old_text.as_str(), args.new_text.as_str());
    let mut result = apply(content, old, new, args.replace_all);
    // Files with CRLF line ends: the model usually sends plain `\n`.
    if matches!(result, Err(EditError::NotFound))
        && content.contains("\r\n")
        && old.contains('\n')
        && !old.contains("\r\n")
    {
        let crlf = |s: &str| s.replace('\n', "\r\n");
        result = apply(content, &crlf(old), &crlf(new), args.replace_all);
    }
    let edit = result.map_err(|e| invalid(e.message(path, content, old)))?;
    write_op(path, fs::write(path, &edit.content))?;
    let count = edit.ranges.len();
    let ranges: Vec<String> = edit
        .ranges
        .iter()
        .take(20)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    let more = if count > 20 {
        format!(" and {} more", count - 20)
    } else {
        String::new()
    };
    Ok(format!(
        "replaced {count} occurrence{} in {path}; the change is now at line{} {}{more}",
        if count == 1 { "" } else { "s" },
        if count == 1 && edit.ranges[0].0 == edit.ranges[0].1 {
            ""
        } else {
            "s"
        },
        ranges.join(", ")
    ))
}

/// A successful replacement.
#[derive(Debug, PartialEq, Eq)]
pub struct Edit {
    /// The new file contents.
    pub content: String,
    /// For each replacement, the first and last line it covers in the new
    /// contents (1-based, inclusive).
    pub ranges: Vec<(usize, usize)>,
}

/// Why a replacement could not be made.
#[derive(Debug, PartialEq, Eq)]
pub enum EditError {
    /// `old` does not occur.
    NotFound,
    /// `old` occurs more than once (on these lines) and `replace_all` is off.
    Ambiguous(Vec<usize>),
}

impl EditError {
    fn message(&self, path: &str, content: &str, old: &str) -> String {
        match self {
            EditError::NotFound => {
                let mut msg = format!(
                    "old_text was not found in {path} (0 matches). Read the file first and \
                     copy the exact text, including whitespace and indentation."
                );
                if let Some(hint) = not_found_hint(content, old) {
                    msg.push(' ');
                    msg.push_str(&hint);
                }
                msg
            }
            EditError::Ambiguous(lines) => format!(
                "old_text matches {} times in {path} (at lines {}). Add surrounding lines \
                 to old_text so that it matches exactly once, or set replace_all=true to \
                 replace every match.",
                lines.len(),
                list_numbers(lines, 20)
            ),
        }
    }
}

/// Replaces `old` (non-empty) by `new` in `content`: the single occurrence,
/// or every occurrence when `replace_all`.
pub fn apply(content: &str, old: &str, new: &str, replace_all: bool) -> Result<Edit, EditError> {
    let offsets: Vec<usize> = content.match_indices(old).map(|(i, _)| i).collect();
    match offsets.len() {
        0 => return Err(EditError::NotFound),
        1 => {}
        _ if replace_all => {}
        _ => return Err(EditError::Ambiguous(line_numbers(content, &offsets))),
    }
    let mut out = String::with_capacity(content.len() + offsets.len() * new.len());
    let mut starts = Vec::with_capacity(offsets.len());
    let mut copied = 0;
    for &offset in &offsets {
        out.push_str(&content[copied..offset]);
        starts.push(out.len());
        out.push_str(new);
        copied = offset + old.len();
    }
    out.push_str(&content[copied..]);
    // A replacement covers as many lines as `new` has (a trailing newline
    // does not start a changed line); an empty `new` still marks its line.
    let span = new.trim_end_matches('\n').matches('\n').count();
    let ranges = line_numbers(&out, &starts)
        .into_iter()
        .map(|line| (line, line + span))
        .collect();
    Ok(Edit {
        content: out,
        ranges,
    })
}

/// A hint for text that was not found: line-number prefixes copied from
/// read_file, or a first line that only differs in indentation.
fn not_found_hint(content: &str, old: &str) -> Option<String> {
    let numbered = old.lines().all(|line| {
        let t = line.trim_start();
        let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        digits > 0 && t[digits..].starts_with('\t')
    });
    if numbered {
        return Some(
            "old_text seems to include the line numbers read_file adds; remove them.".into(),
        );
    }
    let first = old.lines().map(str::trim).find(|l| !l.is_empty())?;
    let lines: Vec<usize> = content
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim() == first)
        .map(|(i, _)| i + 1)
        .collect();
    (!lines.is_empty()).then(|| {
        format!(
            "Its first line appears, with different indentation or surrounding text, at \
             line {}; check whitespace and the lines after it.",
            list_numbers(&lines, 10)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_once() {
        let edit = apply("a\nfoo\nb\n", "foo", "bar\nbaz", false).unwrap();
        assert_eq!(edit.content, "a\nbar\nbaz\nb\n");
        assert_eq!(edit.ranges, vec![(2, 3)]);
        let edit = apply("a\nfoo\nb\n", "foo\n", "", false).unwrap();
        assert_eq!(edit.content, "a\nb\n");
        assert_eq!(edit.ranges, vec![(2, 2)]);
        let edit = apply("x", "x", "y\n", false).unwrap();
        assert_eq!(edit.ranges, vec![(1, 1)]);
    }

    #[test]
    fn counts_matches() {
        assert_eq!(apply("abc", "zz", "y", false), Err(EditError::NotFound));
        assert_eq!(
            apply("x\nfoo\nfoo foo\n", "foo", "y", false),
            Err(EditError::Ambiguous(vec![2, 3, 3]))
        );
        let edit = apply("x\nfoo\nfoo foo\n", "foo", "longer", true).unwrap();
        assert_eq!(edit.content, "x\nlonger\nlonger longer\n");
        assert_eq!(edit.ranges, vec![(2, 2), (3, 3), (3, 3)]);
        // Matches do not overlap.
        assert_eq!(apply("aaa", "aa", "b", true).unwrap().content, "ba");
    }

    #[test]
    fn messages() {
        let msg = EditError::Ambiguous(vec![2, 9]).message("f.rs", "", "x");
        assert!(
            msg.contains("matches 2 times in f.rs (at lines 2, 9)"),
            "{msg}"
        );
        assert!(msg.contains("replace_all=true"));
        let msg = EditError::NotFound.message(
            "f.rs",
            "fn a() {\n    let x = 1;\n}\n",
            "  let x = 1;\n  y",
        );
        assert!(msg.contains("0 matches"), "{msg}");
        assert!(msg.contains("at line 2"), "{msg}");
        let msg = EditError::NotFound.message("f.rs", "abc", "     3\tabc");
        assert!(msg.contains("line numbers"), "{msg}");
    }
}
