//! `move`: move or rename a file, symlink or directory.

use std::fs;
use std::io;
use std::path::Path;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::copy::{check_pair, copy_entry, copy_tree, leads_outside, source_metadata};
use super::delete::remove_contents;
use super::{Counts, create_parents, is_special, kind_name, lstat, read_op, write_op};
use crate::error::{Access, ToolError, invalid, io_error};
use crate::paths::{self, is_within, normalize};

/// Move or rename a file or directory. `to` is the full new path, not a folder to move into. Fails if it exists, unless overwrite.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to move.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::move_from()))]
    from: String,
    /// Full new path.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::move_to().flag("overwrite")))]
    to: String,
    /// Replace an existing file or empty directory.
    #[serde(default)]
    overwrite: bool,
}

impl Tool for Args {
    const NAME: &str = "move";
    const ALIASES: &[&str] = &["mv", "rename"];
    const MUTATES: bool = true;
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let (from, to) = (args.from.as_str(), args.to.as_str());
    let (from_resolved, to_resolved) = paths::resolve_pair(from, to)?;
    let (from, to) = (from_resolved.as_str(), to_resolved.as_str());
    paths::refuse_grant_root("move", from)?;
    check_pair(from, to, "move")?;
    let src = source_metadata(from, to)?;
    let kind = kind_name(&src);
    if src.is_dir() && is_within(&normalize(to), &normalize(from)) {
        return Err(invalid(format!(
            "cannot move directory {from} into itself ({to})"
        )));
    }
    let mut replaced = "";
    match lstat(to)? {
        None => create_parents(to)?,
        Some(dst) if !args.overwrite => {
            return Err(invalid(format!(
                "{to} already exists (a {}); set overwrite=true to replace it, or choose \
                 another path",
                kind_name(&dst)
            )));
        }
        Some(dst) if dst.is_dir() && !src.is_dir() => {
            let name = Path::new(from)
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            return Err(invalid(format!(
                "{to} is a directory; to move into it give the full new path, e.g. \
                 to=\"{}/{name}\"",
                to.trim_end_matches('/')
            )));
        }
        Some(dst) if src.is_dir() && !dst.is_dir() => {
            return Err(invalid(format!(
                "{to} is a {}, not a directory; delete it first or choose another path",
                kind_name(&dst)
            )));
        }
        Some(dst) if dst.is_dir() => {
            if read_op(to, fs::read_dir(to))?.next().is_some() {
                return Err(invalid(format!(
                    "{to} is a directory that is not empty; delete it first or choose \
                     another path"
                )));
            }
            // rename replaces an empty directory by itself.
            replaced = " (replaced an empty directory)";
        }
        Some(dst) => {
            replaced = match kind_name(&dst) {
                "symlink" => " (replaced a symlink)",
                "special file" => " (replaced a special file)",
                _ => " (replaced a file)",
            }
        }
    }
    match fs::rename(from, to) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => {
            copy_then_delete(from, to, src.is_dir())?
        }
        Err(e) => return Err(rename_error(&e, from, to)),
    }
    // A relative link means something else at another depth: a move that
    // makes a link lead outside is undone.
    if let Some(link) = outward_link(Path::new(to)) {
        let undone = replaced.is_empty() && fs::rename(to, from).is_ok();
        if !undone {
            // Cannot put it back (it replaced something): remove the links.
            let mut removed = 0;
            while let Some(l) = outward_link(Path::new(to)) {
                if removed > 1000 || fs::remove_file(&l).is_err() {
                    break;
                }
                removed += 1;
            }
        }
        return Err(ToolError::Denied(format!(
            "moving {from} to {to} would make the symlink {} lead outside the directories this \
             tool may access; {}",
            link.display(),
            if undone {
                "the move was undone"
            } else {
                "such links were removed"
            }
        )));
    }
    Ok(format!("moved {kind} {from} to {to}{replaced}"))
}

/// Most entries looked at for links after moving a directory.
const MAX_LINK_CHECK: usize = 100_000;

/// The first symlink at or under `path` (not following links) that leads
/// outside the grants.
fn outward_link(path: &Path) -> Option<std::path::PathBuf> {
    let meta = fs::symlink_metadata(path).ok()?;
    if meta.file_type().is_symlink() {
        return leads_outside(path).then(|| path.to_path_buf());
    }
    if !meta.is_dir() {
        return None;
    }
    let mut stack = vec![path.to_path_buf()];
    let mut seen = 0;
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).ok()?.flatten() {
            seen += 1;
            if seen > MAX_LINK_CHECK {
                // Too many to check: treated as leading outside.
                return Some(entry.path());
            }
            let Ok(t) = entry.file_type() else { continue };
            if t.is_dir() {
                stack.push(entry.path());
            } else if t.is_symlink() && leads_outside(&entry.path()) {
                return Some(entry.path());
            }
        }
    }
    None
}

/// Moves across file systems (for example between two grants): copy, then
/// delete the source.
fn copy_then_delete(from: &str, to: &str, is_dir: bool) -> Result<(), ToolError> {
    let (src, dst) = (Path::new(from), Path::new(to));
    let mut counts = Counts::default();
    if is_dir {
        copy_tree(src, dst, false, &mut counts)?;
        if counts.skipped_any() {
            return Err(ToolError::Failed(format!(
                "{from} and {to} are on different file systems, so the move had to copy; \
                 the copy at {to} is incomplete, and {from} was left in place. Copied: {}{}",
                counts.describe(),
                counts.skipped_note()
            )));
        }
        remove_contents(src, &mut Counts::default())?;
        write_op(from, fs::remove_dir(from))
    } else {
        if fs::symlink_metadata(src).is_ok_and(|m| is_special(m.file_type())) {
            return Err(invalid(format!(
                "{from} is a special file (a named pipe, socket or device), and {to} is on \
                 another file system; a special file can only be moved within one file system"
            )));
        }
        // The destination was checked above: replacing it is intended.
        copy_entry(src, dst, true, &mut counts)?;
        write_op(from, fs::remove_file(from))
    }
}

/// A failed rename: both ends must be writable, so name both.
fn rename_error(err: &io::Error, from: &str, to: &str) -> ToolError {
    let culprit = if paths::looks_outside(to) { to } else { from };
    match io_error(err, culprit, Access::Write) {
        ToolError::Denied(msg) if culprit == from => ToolError::Denied(format!(
            "cannot move {from} to {to}: {msg} (both paths must be writable)"
        )),
        other => other,
    }
}
