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

use std::fs::{self, FileType, Metadata};
use std::io;
use std::path::Path;

use crate::error::{Access, ToolError, invalid, io_error};

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

/// The refusal to open a special file (after following symlinks): a named
/// pipe, a socket or a device. Opening a named pipe waits for its other end,
/// in the host, past any time limit; the others have no contents to read or
/// replace.
pub fn not_regular(path: &str, tool: &str) -> ToolError {
    invalid(format!(
        "{path} is a special file (a named pipe, socket or device), not a regular file; \
         {tool} does not open those"
    ))
}

/// True for a special file (a named pipe, socket or device): neither a
/// regular file, a directory nor a symlink.
pub fn is_special(t: FileType) -> bool {
    !(t.is_file() || t.is_dir() || t.is_symlink())
}

/// "file", "directory", "symlink" or "special file", for messages.
pub fn kind_name(meta: &Metadata) -> &'static str {
    let file_type = meta.file_type();
    if file_type.is_symlink() {
        "symlink"
    } else if file_type.is_dir() {
        "directory"
    } else if is_special(file_type) {
        "special file"
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
    /// Special files (named pipes, sockets, devices): not copied.
    pub skipped_special: Vec<String>,
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

    /// True when something was left out of a copy.
    pub fn skipped_any(&self) -> bool {
        !(self.skipped_links.is_empty() && self.skipped_special.is_empty())
    }

    /// "; skipped 1 symlink leading outside ...: a/link", or "".
    pub fn skipped_note(&self) -> String {
        let part = |skipped: &[String], one: &str, many: &str| {
            if skipped.is_empty() {
                return String::new();
            }
            let shown: Vec<&str> = skipped.iter().take(10).map(String::as_str).collect();
            format!(
                "; skipped {} {}: {}{}",
                skipped.len(),
                if skipped.len() == 1 { one } else { many },
                shown.join(", "),
                if skipped.len() > 10 { ", ..." } else { "" }
            )
        };
        part(
            &self.skipped_links,
            "symlink leading outside the directories this tool may access",
            "symlinks leading outside the directories this tool may access",
        ) + &part(
            &self.skipped_special,
            "special file (a named pipe, socket or device)",
            "special files (named pipes, sockets or devices)",
        )
    }
}

#[cfg(test)]
mod tests;
