//! The recursive walk shared by `glob` and `grep`: depth-first, entries in
//! name order, `.git` skipped, symlinks reported but never followed.

use std::fs::{self, FileType};
use std::io;
use std::ops::ControlFlow;
use std::path::Path;

/// Directory names never entered.
pub const SKIPPED_DIRS: &[&str] = &[".git"];

/// Most entries (files and directories) one walk looks at.
const MAX_VISITED: usize = 100_000;

/// What happened during a walk, beyond the visited files.
#[derive(Debug, Default)]
pub struct Summary {
    /// The walk hit [`MAX_VISITED`] and stopped.
    pub stopped_early: bool,
    /// Relative paths of subdirectories that could not be read.
    pub unreadable: Vec<String>,
}

impl Summary {
    /// Notes for the end of the tool output (empty when nothing to say).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.stopped_early {
            notes.push(format!(
                "[walk stopped after {MAX_VISITED} entries; use a narrower path]"
            ));
        }
        if !self.unreadable.is_empty() {
            let shown: Vec<&str> = self.unreadable.iter().take(5).map(String::as_str).collect();
            notes.push(format!(
                "[{} directories could not be read: {}{}]",
                self.unreadable.len(),
                shown.join(", "),
                if self.unreadable.len() > 5 {
                    ", ..."
                } else {
                    ""
                }
            ));
        }
        notes
    }
}

/// The callback of [`walk_files`]: relative path (with `/`), full path,
/// file type. Returning `Break` ends the walk.
pub type Visit<'a> = dyn FnMut(&str, &Path, FileType) -> ControlFlow<()> + 'a;

/// Calls `visit` for every entry under directory `root` that is not a
/// directory (files, symlinks, others), until it returns `Break`. Fails only
/// when `root` itself cannot be read.
pub fn walk_files(root: &str, visit: &mut Visit<'_>) -> io::Result<Summary> {
    let root = Path::new(if root.is_empty() { "." } else { root });
    let mut walker = Walker {
        visit,
        summary: Summary::default(),
        visited: 0,
    };
    let entries = sorted_entries(root)?;
    let _ = walker.dir(root, "", entries);
    Ok(walker.summary)
}

/// The entries of `dir` sorted by name, without skipped directories.
pub fn sorted_entries(dir: &Path) -> io::Result<Vec<(String, FileType)>> {
    let mut entries = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let file_type = entry.file_type()?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if file_type.is_dir() && SKIPPED_DIRS.contains(&name.as_str()) {
            continue;
        }
        entries.push((name, file_type));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

struct Walker<'v, 'a> {
    visit: &'v mut Visit<'a>,
    summary: Summary,
    visited: usize,
}

impl Walker<'_, '_> {
    fn dir(
        &mut self,
        dir: &Path,
        rel_dir: &str,
        entries: Vec<(String, FileType)>,
    ) -> ControlFlow<()> {
        for (name, file_type) in entries {
            self.visited += 1;
            if self.visited > MAX_VISITED {
                self.summary.stopped_early = true;
                return ControlFlow::Break(());
            }
            let full = dir.join(&name);
            let rel = if rel_dir.is_empty() {
                name
            } else {
                format!("{rel_dir}/{name}")
            };
            if file_type.is_dir() {
                match sorted_entries(&full) {
                    Ok(children) => self.dir(&full, &rel, children)?,
                    Err(_) => self.summary.unreadable.push(rel),
                }
            } else {
                (self.visit)(&rel, &full, file_type)?;
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walks_sorted_and_skips_git() {
        let tmp = std::env::temp_dir().join(format!("fs-walk-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        for dir in ["b/d", ".git/objects", "a"] {
            fs::create_dir_all(tmp.join(dir)).unwrap();
        }
        for file in [
            "z.txt",
            "b/d/x.rs",
            "b/c.rs",
            "a/y",
            ".git/HEAD",
            ".gitignore",
        ] {
            fs::write(tmp.join(file), "x").unwrap();
        }
        let mut seen = Vec::new();
        let summary = walk_files(tmp.to_str().unwrap(), &mut |rel, full, _| {
            assert!(full.ends_with(rel));
            seen.push(rel.to_string());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen, [".gitignore", "a/y", "b/c.rs", "b/d/x.rs", "z.txt"]);
        assert!(summary.notes().is_empty());
        let mut first = None;
        walk_files(tmp.to_str().unwrap(), &mut |rel, _, _| {
            first = Some(rel.to_string());
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!(first.as_deref(), Some(".gitignore"));
        fs::remove_dir_all(&tmp).unwrap();
    }
}
