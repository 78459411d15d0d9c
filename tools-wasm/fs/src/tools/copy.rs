//! `copy`: copy a file, symlink or directory tree.

use std::fs::{self, File};
use std::io;
use std::path::Path;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::{Counts, create_parents, is_special, kind_name, lstat, not_regular, read_op, write_op};
use crate::error::{ToolError, invalid, is_denied};
use crate::paths::{self, is_within, normalize};
use crate::text::human_size;

/// Copy a file or directory. `to` is the full destination path, not a folder to copy into. Fails if it exists, unless overwrite.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to copy.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::copy_from()))]
    from: String,
    /// Full destination path.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::copy_to().flag("overwrite")))]
    to: String,
    /// Replace what exists at the destination.
    #[serde(default)]
    overwrite: bool,
}

impl Tool for Args {
    const NAME: &str = "copy";
    const ALIASES: &[&str] = &["cp"];
    const MUTATES: bool = true;
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let (from, to) = (args.from.as_str(), args.to.as_str());
    let (from_resolved, to_resolved) = paths::resolve_pair(from, to)?;
    let (from, to) = (from_resolved.as_str(), to_resolved.as_str());
    check_pair(from, to, "copy")?;
    let src = source_metadata(from, to)?;
    if src.is_dir() && is_within(&normalize(to), &normalize(from)) {
        return Err(invalid(format!(
            "cannot copy directory {from} into itself ({to})"
        )));
    }
    let mut counts = Counts::default();
    if src.is_dir() {
        match lstat(to)? {
            None => create_parents(to)?,
            Some(dst) if dst.is_dir() => {
                if !args.overwrite {
                    return Err(exists(to, "directory", "merge into it"));
                }
            }
            Some(dst) => {
                return Err(invalid(format!(
                    "{to} exists and is a {}; delete it first or choose another path",
                    kind_name(&dst)
                )));
            }
        }
        copy_tree(Path::new(from), Path::new(to), args.overwrite, &mut counts)?;
        return Ok(format!(
            "copied directory {from} to {to}: {}, {}{}",
            counts.describe(),
            human_size(counts.bytes),
            counts.skipped_note()
        ));
    }
    if src.file_type().is_symlink() && leads_outside(Path::new(from)) {
        let target = match fs::read_link(from) {
            Ok(t) => format!(" (-> {})", t.display()),
            Err(_) => String::new(),
        };
        return Err(ToolError::Denied(format!(
            "{from} is a symlink{target} leading outside the directories this tool may \
             access; copy does not duplicate such links"
        )));
    }
    if is_special(src.file_type()) {
        return Err(not_regular(from, Args::NAME));
    }
    if lstat(to)?.is_none() {
        create_parents(to)?;
    }
    copy_entry(Path::new(from), Path::new(to), args.overwrite, &mut counts)?;
    if !counts.skipped_links.is_empty() {
        let target =
            fs::read_link(from).map_or(String::new(), |t| format!(" (-> {})", t.display()));
        return Err(ToolError::Denied(format!(
            "{from} is a symlink{target} that would lead outside the directories this tool may \
             access from {to}; copy does not make such links"
        )));
    }
    Ok(if counts.symlinks > 0 {
        let target = fs::read_link(to).map(|t| t.display().to_string());
        format!(
            "copied symlink {from} to {to} (-> {})",
            target.unwrap_or_default()
        )
    } else {
        format!("copied file {from} to {to} ({})", human_size(counts.bytes))
    })
}

/// Checks shared by copy and move: the two paths must differ.
/// The metadata of `from` (not following a link), refusing a directory-like
/// `to` for a file source: copy and move need the full destination path.
pub fn source_metadata(from: &str, to: &str) -> Result<fs::Metadata, ToolError> {
    let src = read_op(from, fs::symlink_metadata(from))?;
    if !src.is_dir() && to.ends_with('/') {
        let name = Path::new(from).file_name().map(|n| n.to_string_lossy());
        return Err(invalid(format!(
            "to must be the full destination path, not a directory: for example \
             to=\"{to}{}\"",
            name.unwrap_or_default()
        )));
    }
    Ok(src)
}

pub fn check_pair(from: &str, to: &str, verb: &str) -> Result<(), ToolError> {
    if normalize(from) == normalize(to) {
        return Err(invalid(format!(
            "cannot {verb} {from} onto itself: from and to are the same path"
        )));
    }
    Ok(())
}

fn exists(path: &str, kind: &str, what: &str) -> ToolError {
    invalid(format!(
        "{path} already exists (a {kind}); set overwrite=true to {what}, or choose another path"
    ))
}

/// Copies directory `from` into directory `to` (created if missing),
/// recursively, without following symlinks.
pub fn copy_tree(
    from: &Path,
    to: &Path,
    overwrite: bool,
    counts: &mut Counts,
) -> Result<(), ToolError> {
    let to_shown = to.to_string_lossy();
    match lstat(&to_shown)? {
        None => {
            write_op(&to_shown, fs::create_dir(to))?;
            counts.dirs += 1;
        }
        Some(meta) if meta.is_dir() => {}
        Some(meta) => {
            return Err(invalid(format!(
                "cannot copy directory {} over the {} {to_shown}",
                from.display(),
                kind_name(&meta)
            )));
        }
    }
    let from_shown = from.to_string_lossy();
    let mut entries = Vec::new();
    for entry in read_op(&from_shown, fs::read_dir(from))? {
        let entry = read_op(&from_shown, entry)?;
        entries.push((entry.file_name(), read_op(&from_shown, entry.file_type())?));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, file_type) in entries {
        let (src, dst) = (from.join(&name), to.join(&name));
        if file_type.is_dir() {
            copy_tree(&src, &dst, overwrite, counts)?;
        } else if file_type.is_symlink() && leads_outside(&src) {
            counts
                .skipped_links
                .push(src.to_string_lossy().into_owned());
        } else if is_special(file_type) {
            counts
                .skipped_special
                .push(src.to_string_lossy().into_owned());
        } else {
            copy_entry(&src, &dst, overwrite, counts)?;
        }
    }
    Ok(())
}

/// Copies one file or symlink (the link itself) to `to`.
pub fn copy_entry(
    from: &Path,
    to: &Path,
    overwrite: bool,
    counts: &mut Counts,
) -> Result<(), ToolError> {
    let (from_shown, to_shown) = (from.to_string_lossy(), to.to_string_lossy());
    match lstat(&to_shown)? {
        None => {}
        Some(meta) if meta.is_dir() => {
            let name = from
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default();
            return Err(invalid(format!(
                "{to_shown} is a directory; to copy into it give the full destination \
                 path, e.g. to=\"{}/{name}\"",
                to_shown.trim_end_matches('/')
            )));
        }
        Some(meta) if !overwrite => return Err(exists(&to_shown, kind_name(&meta), "replace it")),
        // Never write through a symlink or into a special file (opening a
        // named pipe would wait for its reader): replace it.
        Some(meta) if meta.file_type().is_symlink() || is_special(meta.file_type()) => {
            write_op(&to_shown, fs::remove_file(to))?
        }
        Some(_) => {}
    }
    let meta = read_op(&from_shown, fs::symlink_metadata(from))?;
    if meta.file_type().is_symlink() {
        let target = read_op(&from_shown, fs::read_link(from))?;
        write_op(&to_shown, make_symlink(&target, to))?;
        // A relative target means something else at another depth: a link
        // that leads outside from its new place is removed, never left.
        if leads_outside(to) {
            write_op(&to_shown, fs::remove_file(to))?;
            counts.skipped_links.push(from_shown.into_owned());
            return Ok(());
        }
        counts.symlinks += 1;
        return Ok(());
    }
    let mut input = read_op(&from_shown, File::open(from))?;
    let mut output = write_op(&to_shown, File::create(to))?;
    counts.bytes += write_op(&to_shown, io::copy(&mut input, &mut output))?;
    counts.files += 1;
    Ok(())
}

/// Whether the sandbox refuses to follow symlink `link` (its target is
/// outside every grant, or absolute). Dangling links inside are fine.
pub fn leads_outside(link: &Path) -> bool {
    fs::metadata(link).is_err_and(|e| is_denied(&e))
}

/// Creates symlink `link` pointing at `target` (which is not resolved).
#[cfg(target_os = "wasi")]
pub fn make_symlink(target: &Path, link: &Path) -> io::Result<()> {
    use std::ffi::CString;
    // WASI 0.2 paths are always UTF-8 (component-model strings).
    let c = |p: &Path| {
        let s = p
            .to_str()
            .ok_or_else(|| io::Error::other("path is not UTF-8"))?;
        CString::new(s).map_err(io::Error::other)
    };
    let (target, link) = (c(target)?, c(link)?);
    // SAFETY: both are valid NUL-terminated strings that outlive the call.
    if unsafe { libc::symlink(target.as_ptr(), link.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(unix)]
pub fn make_symlink(target: &Path, link: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(not(any(unix, target_os = "wasi")))]
pub fn make_symlink(_target: &Path, _link: &Path) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "cannot create symlinks here",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("fs-copy-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn copies_trees_and_links() {
        let dir = tmp("tree");
        fs::create_dir_all(dir.join("src/sub")).unwrap();
        fs::write(dir.join("src/a.txt"), "hello").unwrap();
        fs::write(dir.join("src/sub/b.txt"), "world!").unwrap();
        make_symlink(Path::new("../../outside"), &dir.join("src/sub/link")).unwrap();
        let mut counts = Counts::default();
        copy_tree(&dir.join("src"), &dir.join("dst"), false, &mut counts).unwrap();
        assert_eq!(
            fs::read_to_string(dir.join("dst/sub/b.txt")).unwrap(),
            "world!"
        );
        assert_eq!(
            fs::read_link(dir.join("dst/sub/link")).unwrap(),
            Path::new("../../outside")
        );
        assert_eq!(counts.describe(), "2 files, 2 directories, 1 symlink");
        assert_eq!(counts.bytes, 11);
        // A second copy conflicts unless overwrite is set.
        let err = copy_tree(
            &dir.join("src"),
            &dir.join("dst"),
            false,
            &mut Counts::default(),
        );
        assert!(matches!(err, Err(ToolError::InvalidArgs(m)) if m.contains("already exists")));
        copy_tree(
            &dir.join("src"),
            &dir.join("dst"),
            true,
            &mut Counts::default(),
        )
        .unwrap();
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn same_path() {
        assert!(check_pair("a/b", "./a/b/", "copy").is_err());
        assert!(check_pair("a/b", "a/c", "copy").is_ok());
    }
}
