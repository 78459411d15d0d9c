//! One module per tool, plus the helpers they share.

pub mod copy;
pub mod delete;
pub mod edit;
pub mod glob;
pub mod grep;
pub mod list;
pub mod mkdir;
pub mod mv;
pub mod read;
pub mod write;

use std::fs::{self, Metadata};
use std::io;
use std::path::Path;

use crate::error::{Access, ToolError, io_error};

/// Maps the io error of reading `path`.
pub fn read_op<T>(path: &str, result: io::Result<T>) -> Result<T, ToolError> {
    result.map_err(|e| io_error(&e, path, Access::Read))
}

/// Maps the io error of changing `path`.
pub fn write_op<T>(path: &str, result: io::Result<T>) -> Result<T, ToolError> {
    result.map_err(|e| io_error(&e, path, Access::Write))
}

/// Metadata of a path about to be written (created or replaced), not
/// following a final symlink; `None` if it does not exist yet. Errors read
/// as write errors, since writing is what the call was about to do.
pub fn lstat(path: &str) -> Result<Option<Metadata>, ToolError> {
    match fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(&e, path, Access::Write)),
    }
}

/// "file", "directory" or "symlink", for messages.
pub fn kind_name(meta: &Metadata) -> &'static str {
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "directory"
    } else {
        "file"
    }
}

/// Creates the missing parent directories of `path`.
pub fn create_parents(path: &str) -> Result<(), ToolError> {
    match Path::new(path).parent() {
        Some(parent) if !parent.as_os_str().is_empty() => {
            let shown = parent.to_string_lossy();
            write_op(&shown, fs::create_dir_all(parent))
        }
        _ => Ok(()),
    }
}

/// Counts of what a recursive copy or delete touched.
#[derive(Debug, Default)]
pub struct Counts {
    pub files: usize,
    pub dirs: usize,
    pub symlinks: usize,
    pub bytes: u64,
    /// Symlinks not copied because they lead outside the granted directories.
    pub skipped_links: Vec<String>,
}

impl Counts {
    /// "3 files, 1 directory, 1 symlink" (zero counts omitted except files).
    pub fn describe(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let mut parts = vec![plural(self.files, "file", "files")];
        if self.dirs > 0 {
            parts.push(plural(self.dirs, "directory", "directories"));
        }
        if self.symlinks > 0 {
            parts.push(plural(self.symlinks, "symlink", "symlinks"));
        }
        parts.join(", ")
    }

    /// "; skipped 1 symlink leading outside ...: a/link", or "".
    pub fn skipped_note(&self) -> String {
        let skipped = &self.skipped_links;
        if skipped.is_empty() {
            return String::new();
        }
        let shown: Vec<&str> = skipped.iter().take(10).map(String::as_str).collect();
        format!(
            "; skipped {} symlink{} leading outside the directories this tool may access: {}{}",
            skipped.len(),
            if skipped.len() == 1 { "" } else { "s" },
            shown.join(", "),
            if skipped.len() > 10 { ", ..." } else { "" }
        )
    }
}
