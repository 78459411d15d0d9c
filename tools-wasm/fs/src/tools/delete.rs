//! `delete`: remove a file, symlink or directory.

use std::fs;
use std::path::Path;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::{Counts, read_op, write_op};
use crate::error::{ToolError, invalid};
use crate::paths;
use crate::text::human_size;

/// Delete a file, symlink or directory; a non-empty directory needs recursive=true. There is no undo.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// What to delete.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::delete().flag("recursive")))]
    path: String,
    /// Also delete a non-empty directory's contents.
    #[serde(default)]
    recursive: bool,
}

impl Tool for Args {
    const NAME: &str = "delete";
    const ALIASES: &[&str] = &["rm", "remove"];
    const MUTATES: bool = true;
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let path = args.path.as_str();
    paths::check("path", path)?;
    // Before `resolve`, so that `/` and `..` get the root message, not "outside".
    paths::refuse_grant_root("delete", path)?;
    let path_resolved = paths::resolve("path", path)?;
    let path = path_resolved.as_str();
    // `link/` would name the link's target: delete the link itself.
    let path = match path.trim_end_matches('/') {
        "" => path,
        trimmed => trimmed,
    };
    let meta = read_op(path, fs::symlink_metadata(path))?;
    if meta.file_type().is_symlink() {
        write_op(path, fs::remove_file(path))?;
        return Ok(format!(
            "deleted symlink {path} (its target was not touched)"
        ));
    }
    if !meta.is_dir() {
        write_op(path, fs::remove_file(path))?;
        return Ok(format!("deleted file {path} ({})", human_size(meta.len())));
    }
    let entries = read_op(path, fs::read_dir(path))?.count();
    if entries == 0 {
        write_op(path, fs::remove_dir(path))?;
        return Ok(format!("deleted empty directory {path}"));
    }
    if !args.recursive {
        return Err(invalid(format!(
            "{path} is a directory with {entries} entr{}; set recursive=true to delete it \
             and everything in it",
            if entries == 1 { "y" } else { "ies" }
        )));
    }
    let mut counts = Counts::default();
    remove_contents(Path::new(path), &mut counts)?;
    write_op(path, fs::remove_dir(path))?;
    Ok(format!(
        "deleted directory {path} and everything in it: {}, {}",
        counts.describe(),
        human_size(counts.bytes)
    ))
}

/// Deletes everything inside directory `dir`, depth first. Symlinks are
/// removed themselves, never followed.
pub fn remove_contents(dir: &Path, counts: &mut Counts) -> Result<(), ToolError> {
    let shown = dir.to_string_lossy();
    for entry in read_op(&shown, fs::read_dir(dir))? {
        let entry = read_op(&shown, entry)?;
        let file_type = read_op(&shown, entry.file_type())?;
        let path = entry.path();
        let path_shown = path.to_string_lossy();
        if file_type.is_dir() {
            remove_contents(&path, counts)?;
            write_op(&path_shown, fs::remove_dir(&path))?;
            counts.dirs += 1;
        } else {
            if file_type.is_symlink() {
                counts.symlinks += 1;
            } else {
                counts.files += 1;
                counts.bytes += entry.metadata().map_or(0, |m| m.len());
            }
            write_op(&path_shown, fs::remove_file(&path))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removes_contents_without_following_links() {
        let base = std::env::temp_dir().join(format!("fs-delete-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(base.join("victim/sub")).unwrap();
        fs::create_dir_all(base.join("keep")).unwrap();
        fs::write(base.join("keep/precious"), "x").unwrap();
        fs::write(base.join("victim/sub/f"), "abc").unwrap();
        crate::tools::copy::make_symlink(&base.join("keep"), &base.join("victim/link")).unwrap();
        let mut counts = Counts::default();
        remove_contents(&base.join("victim"), &mut counts).unwrap();
        assert_eq!(counts.describe(), "1 file, 1 directory, 1 symlink");
        assert_eq!(counts.bytes, 3);
        assert!(base.join("keep/precious").exists());
        assert_eq!(fs::read_dir(base.join("victim")).unwrap().count(), 0);
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn refuses_roots() {
        for root in [".", "./", "/", ".."] {
            let args = format!(r#"{{"path":"{root}","recursive":true}}"#);
            let err = crate::call("delete", &args).unwrap_err();
            assert!(
                matches!(&err, ToolError::InvalidArgs(m) if m.contains("refusing to delete")),
                "{root}: {err:?}"
            );
        }
    }
}
