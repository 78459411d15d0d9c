//! Which entries a walk skips: ripgrep's ignore rules and hidden files.
//!
//! The rules are ripgrep's (as `rg --no-require-git`): in every directory
//! `.rgignore`, `.ignore` and `.gitignore`, and `.git/info/exclude` beside a
//! `.git`; the ignore files of the walk root's ancestors count too, up to
//! the root of the granted directory. For each kind the nearest directory
//! with a matching pattern decides (a `!pattern` there re-includes); across
//! kinds `.rgignore` wins over `.ignore` over `.gitignore` over the exclude
//! file. A hidden entry (name starting with `.`) is skipped unless a rule
//! re-included it. The patterns themselves are matched by the `ignore`
//! crate's gitignore matcher, the one ripgrep uses.
//!
//! A [`Rules`] is the chain of matchers for one directory, shared with its
//! subdirectories: directories without ignore files add nothing to it.

use std::borrow::Cow;
use std::path::Path;
use std::rc::Rc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::file::EntryType;

/// What a walk leaves out, from the tool's `no_ignore` and `hidden`
/// arguments.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Filter {
    /// Do not read ignore files: include what they ignore.
    pub no_ignore: bool,
    /// Include hidden entries.
    pub hidden: bool,
}

/// Ignore files of one directory, highest precedence first.
const IGNORE_FILES: [&str; 3] = [".rgignore", ".ignore", ".gitignore"];
/// The exclude file of a repository, relative to the directory holding `.git`.
const EXCLUDE_FILE: &str = ".git/info/exclude";
/// One matcher per entry of [`IGNORE_FILES`], then the exclude file's.
const KINDS: usize = IGNORE_FILES.len() + 1;

/// Why an entry is left out of a walk, if it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Keep,
    /// Matched by an ignore rule.
    Ignored,
    /// Hidden, and no rule re-included it.
    Hidden,
}

/// How many entries the rules left out of one walk. A skipped directory
/// counts once, whatever it holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Skipped {
    pub ignored: usize,
    pub hidden: usize,
}

impl Skipped {
    /// Counts one verdict; true when the entry is kept.
    pub fn keep(&mut self, verdict: Verdict) -> bool {
        match verdict {
            Verdict::Keep => return true,
            Verdict::Ignored => self.ignored += 1,
            Verdict::Hidden => self.hidden += 1,
        }
        false
    }

    /// The note for the end of the output, if anything was skipped.
    pub fn note(&self) -> Option<String> {
        let total = self.ignored + self.hidden;
        if total == 0 {
            return None;
        }
        let (what, args) = match (self.ignored > 0, self.hidden > 0) {
            (true, true) => ("ignore-file/hidden rules", "no_ignore/hidden"),
            (true, false) => ("ignore-file rules (.gitignore, .ignore)", "no_ignore"),
            _ => ("hidden rules (name starts with '.')", "hidden"),
        };
        Some(format!(
            "[skipped {} {} matched by {what}; pass {args}: true to include them]",
            thousands(total),
            if total == 1 { "entry" } else { "entries" },
        ))
    }
}

/// `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The ignore rules in force in one directory: its own and its ancestors'.
#[derive(Clone, Default)]
pub struct Rules {
    filter: Filter,
    chain: Option<Rc<Level>>,
}

/// The ignore files of one directory.
struct Level {
    parent: Option<Rc<Level>>,
    at: Place,
    matchers: [Option<Gitignore>; KINDS],
}

/// Where a [`Level`]'s directory is, seen from the walk root.
enum Place {
    /// The walk root or below it: the length of its path relative to the
    /// walk root (0 for the root itself).
    Inside(usize),
    /// An ancestor of the walk root: the walk root's path relative to it,
    /// ending in `/`.
    Above(String),
}

/// An ancestor directory of a walk root whose ignore files apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ancestor {
    /// The path to open it with.
    pub path: String,
    /// The walk root's path relative to it, ending in `/`.
    pub below: String,
}

impl Rules {
    /// The rules for walk root `root`, whose entries are `entries`, below
    /// the `ancestors` (nearest first) whose ignore files also apply.
    pub fn root(
        filter: Filter,
        root: &Path,
        entries: &[(String, EntryType)],
        ancestors: &[Ancestor],
    ) -> Rules {
        let mut rules = Rules {
            filter,
            chain: None,
        };
        if filter.no_ignore {
            return rules;
        }
        for ancestor in ancestors.iter().rev() {
            let dir = Path::new(&ancestor.path);
            let matchers = load(dir, |name| {
                name == EXCLUDE_FILE || IGNORE_FILES.contains(&name)
            });
            rules = rules.push(Place::Above(ancestor.below.clone()), matchers);
        }
        rules.child(root, "", entries)
    }

    /// The rules for directory `dir` (at `rel` below the walk root, `""`
    /// for the root itself), whose entries are `entries`.
    pub fn child(&self, dir: &Path, rel: &str, entries: &[(String, EntryType)]) -> Rules {
        if self.filter.no_ignore {
            return self.clone();
        }
        let has = |name: &str| {
            entries
                .binary_search_by(|(n, _)| n.as_str().cmp(name))
                .is_ok_and(|i| !entries[i].1.is_dir())
        };
        let has_git = entries
            .binary_search_by(|(n, _)| n.as_str().cmp(".git"))
            .is_ok();
        if !has_git && !IGNORE_FILES.iter().any(|f| has(f)) {
            return self.clone();
        }
        let matchers = load(dir, |name| {
            if name == EXCLUDE_FILE {
                has_git
            } else {
                has(name)
            }
        });
        self.push(Place::Inside(rel.len()), matchers)
    }

    fn push(&self, at: Place, matchers: [Option<Gitignore>; KINDS]) -> Rules {
        if matchers.iter().all(Option::is_none) {
            return self.clone();
        }
        Rules {
            filter: self.filter,
            chain: Some(Rc::new(Level {
                parent: self.chain.clone(),
                at,
                matchers,
            })),
        }
    }

    /// The verdict on the entry at `rel` below the walk root (a directory
    /// if `is_dir`; a symlink is not one).
    pub fn verdict(&self, rel: &str, is_dir: bool) -> Verdict {
        let mut found = [false; KINDS].map(|_| Match::None);
        let mut level = self.chain.as_deref();
        while let Some(l) = level {
            let path: Cow<str> = match &l.at {
                Place::Inside(0) => Cow::Borrowed(rel),
                Place::Inside(len) => Cow::Borrowed(&rel[len + 1..]),
                Place::Above(below) => Cow::Owned(format!("{below}{rel}")),
            };
            for (m, slot) in l.matchers.iter().zip(found.iter_mut()) {
                if let (Some(m), Match::None) = (m, &slot) {
                    *slot = m.matched(path.as_ref(), is_dir).map(|_| ());
                }
            }
            level = l.parent.as_deref();
        }
        match found.into_iter().find(|m| !m.is_none()) {
            Some(Match::Ignore(())) => Verdict::Ignored,
            Some(_) => Verdict::Keep,
            None => {
                let name = rel.rsplit('/').next().unwrap_or(rel);
                if !self.filter.hidden && name.starts_with('.') {
                    Verdict::Hidden
                } else {
                    Verdict::Keep
                }
            }
        }
    }
}

/// Reads the ignore files of `dir` that `wanted` admits, one matcher per
/// kind. Patterns are relative to `dir`; unreadable files and bad lines are
/// skipped, as ripgrep does.
fn load(dir: &Path, wanted: impl Fn(&str) -> bool) -> [Option<Gitignore>; KINDS] {
    let names = IGNORE_FILES.iter().copied().chain([EXCLUDE_FILE]);
    let mut matchers = [const { None }; KINDS];
    for (name, slot) in names.zip(matchers.iter_mut()) {
        if !wanted(name) {
            continue;
        }
        // Root "." with paths given relative to `dir`: the matcher then
        // strips nothing from them.
        let mut builder = GitignoreBuilder::new(".");
        let _ = builder.add(dir.join(name));
        if let Ok(m) = builder.build()
            && !m.is_empty()
        {
            *slot = Some(m);
        }
    }
    matchers
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notes() {
        assert_eq!(Skipped::default().note(), None);
        let one = Skipped {
            ignored: 1,
            hidden: 0,
        };
        assert_eq!(
            one.note().unwrap(),
            "[skipped 1 entry matched by ignore-file rules (.gitignore, .ignore); pass \
             no_ignore: true to include them]"
        );
        let both = Skipped {
            ignored: 1233,
            hidden: 1,
        };
        assert_eq!(
            both.note().unwrap(),
            "[skipped 1,234 entries matched by ignore-file/hidden rules; pass \
             no_ignore/hidden: true to include them]"
        );
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }
}
