//! `edit_file`: replace an exact piece of text in a file.

use std::fs;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::{not_regular, read_op, write_op};
use crate::error::{ToolError, invalid};
use crate::paths;
use crate::text::{as_text, human_size, list_numbers};
use warden_edit::EditError;

/// Replace an exact piece of text in a file. old_text must match the file exactly (indentation included, no line numbers) and only once, unless replace_all. Read the file first.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// File path.
    #[schemars(
        length(min = 1),
        extend("x-warden-effect" = effect::write().replace("old_text", "new_text", Some("replace_all")).follow())
    )]
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
    let (old, new) = (args.old_text.as_str(), args.new_text.as_str());
    warden_edit::check(old, new).map_err(|e| invalid(message(&e, path, "", old)))?;
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
    let edit = warden_edit::edit(content, old, new, args.replace_all)
        .map_err(|e| invalid(message(&e, path, content, old)))?;
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

/// The message for an edit that cannot be made.
fn message(e: &EditError, path: &str, content: &str, old: &str) -> String {
    match e {
        EditError::EmptyOld => {
            "old_text is empty; give the exact text to replace (use write_file to create a file)"
                .into()
        }
        EditError::Unchanged => "old_text and new_text are identical; nothing to change".into(),
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
    fn messages() {
        let msg = message(&EditError::Ambiguous(vec![2, 9]), "f.rs", "", "x");
        assert!(
            msg.contains("matches 2 times in f.rs (at lines 2, 9)"),
            "{msg}"
        );
        assert!(msg.contains("replace_all=true"));
        let msg = message(
            &EditError::NotFound,
            "f.rs",
            "fn a() {\n    let x = 1;\n}\n",
            "  let x = 1;\n  y",
        );
        assert!(msg.contains("0 matches"), "{msg}");
        assert!(msg.contains("at line 2"), "{msg}");
        let msg = message(&EditError::NotFound, "f.rs", "abc", "     3\tabc");
        assert!(msg.contains("line numbers"), "{msg}");
    }
}
