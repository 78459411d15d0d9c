//! What a call will do, for the user deciding on it: compact diffs for
//! writes and edits, sentences for delete, move, copy and mkdir, the
//! arguments for anything else.
//!
//! The current content of a file is read only through the tool's own
//! opened directories ([`GrantedDirs::peek`]): a path the tool cannot reach
//! is not read, and is shown as one the call will be refused for. Every
//! string from the model or a file is shown inert.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use warden_policy::{inert, inert_text};
use warden_sandbox::{GrantedDirs, Peek};

use crate::style::paint;

/// Largest current file read for a preview.
pub const PREVIEW_MAX: u64 = 256 * 1024;
/// Diff lines shown before the rest is counted instead.
const MAX_LINES: usize = 40;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;

/// The preview of calling `tool` with `args`, one line or more, each
/// starting with two spaces and ending with a line feed.
pub fn preview(tool: &str, args: &Value, dirs: &GrantedDirs, fancy: bool) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    let flag = |k: &str| args.get(k).and_then(Value::as_bool).unwrap_or(false);
    match (tool, s("path"), s("from"), s("to")) {
        ("write_file", Some(path), _, _) => write(path, s("content").unwrap_or(""), dirs, fancy),
        ("edit_file", Some(path), _, _) => edit(
            path,
            s("old_text").unwrap_or(""),
            s("new_text").unwrap_or(""),
            flag("replace_all"),
            dirs,
            fancy,
        ),
        ("delete", Some(path), _, _) => delete(path, flag("recursive"), dirs),
        ("mkdir", Some(path), _, _) => match dirs.peek(path, 0) {
            Peek::Outside => format!("  create directory {}: {OUTSIDE}\n", inert(path)),
            _ => format!("  create directory {}\n", inert(path)),
        },
        ("move" | "copy", _, Some(from), Some(to)) => {
            transfer(tool, from, to, flag("overwrite"), dirs)
        }
        // The command line itself, each line shown inert.
        ("shell", _, _, _) if s("command").is_some() => {
            let mut out = String::new();
            for line in s("command").unwrap_or("").lines() {
                out.push_str(&format!("  $ {}\n", inert(line)));
            }
            if let Some(dir) = s("workdir") {
                out.push_str(&format!("  in {}\n", inert(dir)));
            }
            out
        }
        _ => format!(
            "  {}\n",
            inert_text(&serde_json::to_string_pretty(args).unwrap_or_default())
                .replace('\n', "\n  ")
        ),
    }
}

/// Said of a path no grant of the tool reaches.
const OUTSIDE: &str = "outside the grants, will be refused";

fn write(path: &str, content: &str, dirs: &GrantedDirs, fancy: bool) -> String {
    let p = inert(path);
    let new_lines = count_lines(content);
    match dirs.peek(path, PREVIEW_MAX) {
        Peek::Outside => format!("  write {p}: {OUTSIDE}\n"),
        Peek::Text(old) => format!(
            "  write {p} ({})\n{}",
            changed_lines(&old, content),
            diff(&old, content, fancy)
        ),
        Peek::Missing => format!(
            "  create {p} ({})\n{}",
            lines(new_lines),
            diff("", content, fancy)
        ),
        Peek::Dir => format!("  write {p}: a directory, the call will fail\n"),
        Peek::Special => format!("  write {p}: not a regular file, the call will fail\n"),
        Peek::TooLarge(n) | Peek::Binary(n) => format!(
            "  replace {p} ({}, not shown) with {}\n{}",
            size(n),
            lines(new_lines),
            diff("", content, fancy)
        ),
        Peek::Unreadable => format!(
            "  write {p} (the current file cannot be read) with {}\n{}",
            lines(new_lines),
            diff("", content, fancy)
        ),
    }
}

fn edit(
    path: &str,
    old_text: &str,
    new_text: &str,
    all: bool,
    dirs: &GrantedDirs,
    fancy: bool,
) -> String {
    let p = inert(path);
    let snippet = || diff(old_text, new_text, fancy);
    match dirs.peek(path, PREVIEW_MAX) {
        Peek::Outside => format!("  edit {p}: {OUTSIDE}\n"),
        Peek::Text(current) => {
            let found = current.matches(old_text).count();
            if found == 0 {
                return format!(
                    "  edit {p}: the text to replace is not in the file, the call will fail\n{}",
                    snippet()
                );
            }
            if found > 1 && !all {
                return format!(
                    "  edit {p}: the text to replace appears {found} times, the call will fail\n{}",
                    snippet()
                );
            }
            let edited = if all {
                current.replace(old_text, new_text)
            } else {
                current.replacen(old_text, new_text, 1)
            };
            format!(
                "  edit {p} ({})\n{}",
                changed_lines(&current, &edited),
                diff(&current, &edited, fancy)
            )
        }
        Peek::Missing => format!("  edit {p}: no such file, the call will fail\n"),
        _ => format!("  edit {p}\n{}", snippet()),
    }
}

fn delete(path: &str, recursive: bool, dirs: &GrantedDirs) -> String {
    let p = inert(path);
    match dirs.peek(path, PREVIEW_MAX) {
        Peek::Outside => format!("  delete {p}: {OUTSIDE}\n"),
        Peek::Text(t) => format!("  delete {p} ({})\n", lines(count_lines(&t))),
        Peek::TooLarge(n) | Peek::Binary(n) => format!("  delete {p} ({})\n", size(n)),
        Peek::Dir if recursive => format!("  delete the directory {p} and everything in it\n"),
        Peek::Dir => format!("  delete the directory {p} (only if it is empty)\n"),
        Peek::Missing => format!("  delete {p} (it does not exist)\n"),
        Peek::Special => format!("  delete {p} (a pipe, socket or device)\n"),
        Peek::Unreadable => format!("  delete {p}\n"),
    }
}

fn transfer(tool: &str, from: &str, to: &str, overwrite: bool, dirs: &GrantedDirs) -> String {
    let verb = if tool == "move" { "move" } else { "copy" };
    let line = format!("  {verb} {} → {}", inert(from), inert(to));
    let source = dirs.peek(from, 0);
    let target = dirs.peek(to, 0);
    let note = if source == Peek::Outside {
        format!(": {} is {OUTSIDE}", inert(from))
    } else if target == Peek::Outside {
        format!(": {} is {OUTSIDE}", inert(to))
    } else if source == Peek::Missing {
        format!(": {} does not exist, the call will fail", inert(from))
    } else if target != Peek::Missing && overwrite {
        format!(" (replacing the existing {})", inert(to))
    } else if target != Peek::Missing {
        format!(
            " ({} exists; the call will fail without overwrite)",
            inert(to)
        )
    } else {
        String::new()
    };
    format!("{line}{note}\n")
}

/// Lines as the diff counts them (a lone `\r` ends one too).
fn count_lines(text: &str) -> usize {
    TextDiff::from_lines(text, text).old_slices().len()
}

fn lines(n: usize) -> String {
    if n == 1 {
        "1 line".into()
    } else {
        format!("{n} lines")
    }
}

/// "+3 -1 lines": what a change adds and removes.
fn changed_lines(old: &str, new: &str) -> String {
    let (mut added, mut removed) = (0, 0);
    for change in TextDiff::from_lines(old, new).iter_all_changes() {
        match change.tag() {
            ChangeTag::Insert => added += 1,
            ChangeTag::Delete => removed += 1,
            ChangeTag::Equal => {}
        }
    }
    format!("+{added} -{removed} lines")
}

fn size(n: u64) -> String {
    match n {
        n if n < 10 * 1024 => format!("{n} bytes"),
        n if n < 10 << 20 => format!("{} KiB", n >> 10),
        n => format!("{} MiB", n >> 20),
    }
}

/// A unified diff of `old` → `new` with a few lines of context around each
/// change, cut at [`MAX_LINES`] lines with a count of the rest.
fn diff(old: &str, new: &str, fancy: bool) -> String {
    let text = TextDiff::from_lines(old, new);
    let mut shown: Vec<String> = Vec::new();
    for hunk in text.unified_diff().context_radius(CONTEXT).iter_hunks() {
        shown.push(paint(fancy, "36", &format!("  {}", hunk.header())));
        for change in hunk.iter_changes() {
            let (sign, code) = match change.tag() {
                ChangeTag::Delete => ("-", "31"),
                ChangeTag::Insert => ("+", "32"),
                ChangeTag::Equal => (" ", ""),
            };
            let line = format!("{sign} {}", inert(change.value().trim_end_matches('\n')));
            shown.push(if code.is_empty() {
                line
            } else {
                paint(fancy, code, &line)
            });
        }
    }
    let more = shown.len().saturating_sub(MAX_LINES);
    shown.truncate(MAX_LINES);
    if more > 0 {
        shown.push(format!("  … {more} more lines"));
    }
    let mut out = shown.join("\n");
    if !out.is_empty() {
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests;
