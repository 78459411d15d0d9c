//! What a call will do, for the user deciding on it, built from the call's
//! effects ([`warden_sandbox::Effects`]: the same value its undo snapshot,
//! its event line and its changed list are made from): compact diffs for
//! writes and edits, sentences for delete, move, copy and create, then
//! the arguments the effects do not cover. A call whose tool does not
//! declare its effects shows its arguments and says so.
//!
//! The current content of a file is read only through the tool's own
//! opened directories ([`GrantedDirs::peek_at`]), at the place the effects
//! resolved: a path the tool cannot reach is not read, and is shown as one
//! the call will be refused for. Every string from the model or a file is
//! shown inert.

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use warden_edit::EditError;
use warden_policy::{Origin, inert};
use warden_sandbox::{Access, Content, DesktopCall, Effects, GrantedDirs, NewContent, Peek, Touch};
use warden_workspace::ApprovalRequest;

use crate::style::paint;

/// Largest current file read for a preview.
pub const PREVIEW_MAX: u64 = 256 * 1024;
/// Diff lines shown before the rest is counted instead.
const MAX_LINES: usize = 40;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;
/// Lines of one argument's value shown before the rest is counted.
const ARG_LINES: usize = 20;

/// The preview of the call `request` puts to the user, one line or more,
/// each starting with two spaces and ending with a line feed.
pub fn preview(request: &ApprovalRequest<'_>, fancy: bool) -> String {
    let (effects, args, dirs) = (request.effects, request.arguments, request.dirs);
    let mut out = String::new();
    let mut shown = vec![false; effects.touches.len()];
    for (i, t) in effects.touches.iter().enumerate() {
        if shown[i] {
            continue;
        }
        shown[i] = true;
        // A copy or move reads as one line, source → destination.
        let pair = matches!(t.access, Access::CopyFrom | Access::MoveFrom)
            .then(|| {
                let to = |a: &Access| match t.access {
                    Access::CopyFrom => matches!(a, Access::CopyTo(_)),
                    _ => matches!(a, Access::MoveTo(_)),
                };
                (i + 1..effects.touches.len())
                    .find(|&j| !shown[j] && to(&effects.touches[j].access))
            })
            .flatten();
        match pair {
            Some(j) => {
                shown[j] = true;
                out.push_str(&transfer(t, &effects.touches[j], args, dirs));
            }
            None => out.push_str(&touch(t, args, dirs, fancy)),
        }
    }
    out.push_str(&desktop(request));
    out.push_str(&other_arguments(effects, request.desktop, args));
    if !effects.declared {
        out.push_str(&unknown(request));
    } else if request.origin != Origin::Builtin && effects.changes().next().is_some() {
        out.push_str(&format!(
            "  (as `{}` declares it; what it can change is what it is granted{})\n",
            inert(request.tool),
            writable(dirs).map(|w| format!(": {w}")).unwrap_or_default()
        ));
    }
    out
}

/// Said of a path no grant of the tool reaches.
const OUTSIDE: &str = "outside the grants, will be refused";
/// Said of a path through a file.
const BLOCKED: &str = "a part of the path is a file, not a directory";

/// The line(s) for one path the call names.
fn touch(t: &Touch, args: &Value, dirs: &GrantedDirs, fancy: bool) -> String {
    let p = inert(t.shown());
    let verb = match t.access {
        Access::Write(Content::Replace(_)) => "edit",
        Access::Create => "create directory",
        ref a => a.verb(),
    };
    if let Some(why) = t.refused() {
        return format!("  {verb} {p}: {why}, will be refused\n");
    }
    let Ok(at) = &t.at else {
        unreachable!("a touch that is not refused is resolved")
    };
    let peek = |max| match dirs.peek_at(at.mount, &at.rel, max) {
        // The path leads out of its grant (a symlink): the tool cannot
        // reach it either.
        Peek::Outside => None,
        peek => Some(peek),
    };
    match &t.access {
        Access::Write(_) => match t.content(args) {
            NewContent::Whole(content) => match peek(PREVIEW_MAX) {
                None => format!("  write {p}: {OUTSIDE}\n"),
                Some(peek) => write(&p, content, peek, fancy),
            },
            NewContent::Replace { old, new, all } => match peek(PREVIEW_MAX) {
                None => format!("  edit {p}: {OUTSIDE}\n"),
                Some(peek) => edit(&p, old, new, all, peek, fancy),
            },
            NewContent::Unknown => match peek(0) {
                None => format!("  write {p}: {OUTSIDE}\n"),
                Some(Peek::Missing) => {
                    format!("  create {p} (its content is not known before the call)\n")
                }
                Some(_) => format!("  write {p} (its new content is not known before the call)\n"),
            },
        },
        Access::Delete(_) => match peek(PREVIEW_MAX) {
            None => format!("  delete {p}: {OUTSIDE}\n"),
            Some(peek) => delete(&p, t.access.flagged(args), peek),
        },
        Access::Create => match peek(0) {
            None => format!("  create directory {p}: {OUTSIDE}\n"),
            Some(Peek::Dir) => format!("  create directory {p} (it exists already)\n"),
            Some(_) => format!("  create directory {p}\n"),
        },
        access => match peek(0) {
            None => format!("  {} {p}: {OUTSIDE}\n", access.verb()),
            Some(_) => format!("  {} {p}\n", access.verb()),
        },
    }
}

fn write(p: &str, content: &str, peek: Peek, fancy: bool) -> String {
    let new_lines = count_lines(content);
    match peek {
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
        Peek::Blocked => format!("  write {p}: {BLOCKED}, the call will fail\n"),
        Peek::TooLarge(n) | Peek::Binary(n) => format!(
            "  replace {p} ({}, not shown) with {}\n{}",
            size(n),
            lines(new_lines),
            diff("", content, fancy)
        ),
        Peek::Unreadable | Peek::Outside => format!(
            "  write {p} (the current file cannot be read) with {}\n{}",
            lines(new_lines),
            diff("", content, fancy)
        ),
    }
}

/// An exact-text edit, made as the tool will make it (`warden-edit`).
fn edit(p: &str, old: &str, new: &str, all: bool, peek: Peek, fancy: bool) -> String {
    let snippet = || diff(old, new, fancy);
    match peek {
        Peek::Text(current) => match warden_edit::edit(&current, old, new, all) {
            Ok(edited) => format!(
                "  edit {p} ({})\n{}",
                changed_lines(&current, &edited.content),
                diff(&current, &edited.content, fancy)
            ),
            Err(EditError::NotFound) => format!(
                "  edit {p}: the text to replace is not in the file, the call will fail\n{}",
                snippet()
            ),
            Err(EditError::Ambiguous(at)) => format!(
                "  edit {p}: the text to replace appears {} times, the call will fail\n{}",
                at.len(),
                snippet()
            ),
            Err(EditError::EmptyOld) => {
                format!("  edit {p}: the text to replace is empty, the call will fail\n")
            }
            Err(EditError::Unchanged) => {
                format!("  edit {p}: the replacement is the same text, the call will fail\n")
            }
        },
        Peek::Missing => format!("  edit {p}: no such file, the call will fail\n"),
        Peek::Blocked => format!("  edit {p}: {BLOCKED}, the call will fail\n"),
        Peek::Dir => format!("  edit {p}: a directory, the call will fail\n"),
        Peek::Special => format!("  edit {p}: not a regular file, the call will fail\n"),
        Peek::Binary(n) => format!(
            "  edit {p}: a binary file ({}), the call will fail\n",
            size(n)
        ),
        _ => format!(
            "  edit {p} (the current file cannot be shown)\n{}",
            snippet()
        ),
    }
}

fn delete(p: &str, recursive: bool, peek: Peek) -> String {
    match peek {
        Peek::Text(t) => format!("  delete {p} ({})\n", lines(count_lines(&t))),
        Peek::TooLarge(n) | Peek::Binary(n) => format!("  delete {p} ({})\n", size(n)),
        Peek::Dir if recursive => format!("  delete the directory {p} and everything in it\n"),
        Peek::Dir => format!("  delete the directory {p} (only if it is empty)\n"),
        Peek::Missing | Peek::Blocked => format!("  delete {p} (it does not exist)\n"),
        Peek::Special => format!("  delete {p} (a pipe, socket or device)\n"),
        Peek::Unreadable | Peek::Outside => format!("  delete {p}\n"),
    }
}

/// A copy or move: `from` → `to`, with what stops it or what it replaces.
fn transfer(from: &Touch, to: &Touch, args: &Value, dirs: &GrantedDirs) -> String {
    let verb = if matches!(from.access, Access::MoveFrom) {
        "move"
    } else {
        "copy"
    };
    let (f, t) = (inert(from.shown()), inert(to.shown()));
    let line = format!("  {verb} {f} → {t}");
    let look = |x: &Touch| match &x.at {
        Ok(at) => dirs.peek_at(at.mount, &at.rel, 0),
        Err(_) => Peek::Outside,
    };
    let (source, target) = (look(from), look(to));
    let note = if let Some(why) = from.refused() {
        format!(": {f} is {why}, will be refused")
    } else if let Some(why) = to.refused() {
        format!(": {t} is {why}, will be refused")
    } else if source == Peek::Outside {
        format!(": {f} is {OUTSIDE}")
    } else if target == Peek::Outside {
        format!(": {t} is {OUTSIDE}")
    } else if source == Peek::Missing {
        format!(": {f} does not exist, the call will fail")
    } else if target != Peek::Missing && to.access.flagged(args) {
        format!(" (replacing the existing {t})")
    } else if target != Peek::Missing {
        format!(" ({t} exists; the call will fail without overwrite)")
    } else {
        String::new()
    };
    format!("{line}{note}\n")
}

/// What the call starts, opens or ends in the desktop session: the exact
/// program line, which is what runs; for a tool that does not declare it,
/// what its grants let it start ([`DesktopCall::said`], which the MCP
/// question shows too).
fn desktop(request: &ApprovalRequest<'_>) -> String {
    let mut out = String::new();
    for said in request.desktop.said(request.tool, request.grants) {
        match said.line {
            Some(line) => out.push_str(&format!("  {}:\n    {line}\n", said.sentence)),
            None => out.push_str(&format!("  {}\n", said.sentence)),
        }
    }
    out
}

/// The arguments neither the effects nor the desktop actions show: each
/// `name: value`, a value of several lines below its name, cut at
/// [`ARG_LINES`] lines.
fn other_arguments(effects: &Effects, desktop: &DesktopCall, args: &Value) -> String {
    let Some(map) = args.as_object() else {
        return String::new();
    };
    let covered = |name: &str| desktop.arguments.iter().any(|a| a == name) || effects.covers(name);
    let mut out = String::new();
    for (name, value) in map.iter().filter(|(n, _)| !covered(n)) {
        let text = match value {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        let name = inert(name);
        let mut lines = text.lines();
        if text.lines().nth(1).is_none() {
            out.push_str(&format!(
                "  {name}: {}\n",
                inert(lines.next().unwrap_or(""))
            ));
            continue;
        }
        out.push_str(&format!("  {name}:\n"));
        for line in lines.by_ref().take(ARG_LINES) {
            out.push_str(&format!("    {}\n", inert(line)));
        }
        let more = lines.count();
        if more > 0 {
            out.push_str(&format!("    … {more} more lines\n"));
        }
    }
    out
}

/// Said of a call whose tool does not declare what it touches.
fn unknown(request: &ApprovalRequest<'_>) -> String {
    let tool = inert(request.tool);
    match writable(request.dirs) {
        Some(w) => format!(
            "  effects unknown: `{tool}` does not declare which files it changes; it may \
             change anything in {w}, and undo cannot put that back\n"
        ),
        None => format!(
            "  effects unknown: `{tool}` does not declare which files it touches (it can \
             change none: it has no write grant)\n"
        ),
    }
}

/// The tool's read-write directories as the model names them, if any.
fn writable(dirs: &GrantedDirs) -> Option<String> {
    let mut names: Vec<String> = Vec::new();
    let mut hosts = Vec::new();
    // A grant inside the workspace is mounted twice; its relative name,
    // listed after its absolute one, is the one the model uses.
    for m in dirs.mounts().filter(|m| m.write) {
        match hosts.iter().position(|h| *h == &m.host) {
            Some(i) if !m.guest.starts_with('/') => names[i] = inert(&m.guest).into_owned(),
            Some(_) => {}
            None => {
                hosts.push(&m.host);
                names.push(inert(&m.guest).into_owned());
            }
        }
    }
    (!names.is_empty()).then(|| names.join(", "))
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
