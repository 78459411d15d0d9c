//! The recursive walk shared by `glob` and `grep`: depth-first, entries in
//! name order, `.git` skipped, symlinks reported but never followed, ignored
//! and hidden entries left out (see [`crate::rules`]), stopped softly at a
//! [`Deadline`].

use std::io;
use std::ops::ControlFlow;
use std::path::Path;

use crate::deadline::Deadline;
use crate::file::{self, EntryType};
use crate::rules::{Ancestor, Filter, Rules, Skipped};

/// Directory names never entered.
pub const SKIPPED_DIRS: &[&str] = &[".git"];

/// Most entries (files and directories) one walk looks at.
const MAX_VISITED: usize = 100_000;
/// The clock is read once per this many entries.
const CLOCK_EVERY: usize = 32;

/// How one walk goes: which entries it leaves out, where ignore files
/// above the root are, and when to stop.
pub struct Options<'a> {
    pub filter: Filter,
    /// Ancestors of the root whose ignore files apply, nearest first.
    pub ancestors: &'a [Ancestor],
    pub deadline: Deadline,
}

/// What happened during a walk, beyond the visited files.
#[derive(Debug, Default)]
pub struct Summary {
    /// The walk hit [`MAX_VISITED`] and stopped.
    pub stopped_early: bool,
    /// The walk reached its deadline and stopped.
    pub out_of_time: bool,
    /// Relative paths of subdirectories that could not be read.
    pub unreadable: Vec<String>,
    /// Entries left out by ignore and hidden rules.
    pub skipped: Skipped,
    /// The note on entries whose names are not UTF-8, if the walk met any.
    pub bad_names: Option<String>,
}

impl Summary {
    /// Notes for the end of the tool output (empty when nothing to say).
    /// The deadline's note is the caller's, who may have stopped too.
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
        notes.extend(self.skipped.note());
        notes.extend(self.bad_names.clone());
        notes
    }
}

/// The callback of [`walk_files`]: relative path (with `/`), full path,
/// file type. Returning `Break` ends the walk.
pub type Visit<'a> = dyn FnMut(&str, &Path, EntryType) -> ControlFlow<()> + 'a;

/// Calls `visit` for every entry under directory `root` that is not a
/// directory (files, symlinks, others) and that the filter keeps, until it
/// returns `Break`. Fails only when `root` itself cannot be read.
pub fn walk_files(root: &str, options: &Options<'_>, visit: &mut Visit<'_>) -> io::Result<Summary> {
    let root = Path::new(if root.is_empty() { "." } else { root });
    let entries = read_sorted(root)?;
    let rules = Rules::root(options.filter, root, &entries, options.ancestors);
    let mut walker = Walker {
        visit,
        deadline: options.deadline,
        summary: Summary::default(),
        visited: 0,
    };
    let _ = walker.dir(root, "", &rules, entries);
    walker.summary.bad_names = file::bad_names_note();
    Ok(walker.summary)
}

/// The entries of `dir` sorted by name (bytewise), `.git` included.
pub fn read_sorted(dir: &Path) -> io::Result<Vec<(String, EntryType)>> {
    let mut entries = file::read_dir(&dir.to_string_lossy())?;
    entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(entries)
}

/// Whether a walk never enters or shows this entry, whatever the filter.
pub fn always_skipped(name: &str, file_type: EntryType) -> bool {
    file_type.is_dir() && SKIPPED_DIRS.contains(&name)
}

/// `rel_dir/name`, or `name` at the root.
pub fn join_rel(rel_dir: &str, name: &str) -> String {
    if rel_dir.is_empty() {
        name.to_string()
    } else {
        format!("{rel_dir}/{name}")
    }
}

struct Walker<'v, 'a> {
    visit: &'v mut Visit<'a>,
    deadline: Deadline,
    summary: Summary,
    visited: usize,
}

impl Walker<'_, '_> {
    fn dir(
        &mut self,
        dir: &Path,
        rel_dir: &str,
        rules: &Rules,
        entries: Vec<(String, EntryType)>,
    ) -> ControlFlow<()> {
        for (name, file_type) in entries {
            if always_skipped(&name, file_type) {
                continue;
            }
            let rel = join_rel(rel_dir, &name);
            let verdict = rules.verdict(&rel, file_type.is_dir());
            if !self.summary.skipped.keep(verdict) {
                continue;
            }
            self.visited += 1;
            if self.visited > MAX_VISITED {
                self.summary.stopped_early = true;
                return ControlFlow::Break(());
            }
            if self.visited.is_multiple_of(CLOCK_EVERY) && self.deadline.passed() {
                self.summary.out_of_time = true;
                return ControlFlow::Break(());
            }
            let full = dir.join(&name);
            if file_type.is_dir() {
                match read_sorted(&full) {
                    Ok(children) => {
                        let rules = rules.child(&full, &rel, &children);
                        self.dir(&full, &rel, &rules, children)?
                    }
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
mod tests;
