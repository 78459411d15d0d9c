//! `list_files`: an indented tree of a directory.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::Path;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::read_op;
use crate::error::{ToolError, invalid};
use crate::file::{self, EntryType};
use crate::rules::{Filter, Rules, Skipped};
use crate::{paths, walk};

/// Most entries shown in one listing.
const MAX_ENTRIES: usize = 1000;
/// Most entries shown for one subdirectory, so that a huge directory does
/// not hide its siblings.
const MAX_PER_SUBDIR: usize = 200;

/// List a directory as a tree; directories end in /. Skips .git, hidden and ignored entries unless hidden / no_ignore.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory (default .).
    #[serde(default = "dot")]
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::read().follow()))]
    path: String,
    /// Levels to show (default 2).
    #[serde(default = "two")]
    #[schemars(range(min = 1, max = 10))]
    depth: usize,
    /// Include files .gitignore ignores.
    #[serde(default)]
    no_ignore: bool,
    /// Include hidden files.
    #[serde(default)]
    hidden: bool,
}

fn dot() -> String {
    ".".into()
}

fn two() -> usize {
    2
}

impl Tool for Args {
    const NAME: &str = "list_files";
    const ALIASES: &[&str] = &["ls", "list_dir"];
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let path = if args.path.is_empty() {
        "."
    } else {
        args.path.as_str()
    };
    let path_resolved = paths::resolve("path", path)?;
    let path = path_resolved.as_str();
    if !(1..=10).contains(&args.depth) {
        return Err(invalid("depth must be between 1 and 10"));
    }
    if !read_op(path, file::stat(path))?.is_dir {
        return Err(invalid(format!(
            "{path} is a file, not a directory; use read_file to read it"
        )));
    }
    // Read the root here so that its errors reach the model as they are.
    let root = Path::new(path);
    let raw = read_op(path, walk::read_sorted(root))?;
    let filter = Filter {
        no_ignore: args.no_ignore,
        hidden: args.hidden,
    };
    let rules = Rules::root(filter, root, &raw, &paths::grant_ancestors(path));
    let (listings, truncated, skipped) = collect(root, (raw, rules), args.depth);
    let label = match path.trim_end_matches('/') {
        "" => "/".to_string(),
        trimmed => format!("{trimmed}/"),
    };
    let mut out = render(&label, &listings, truncated);
    for note in skipped.note().into_iter().chain(file::bad_names_note()) {
        if !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str(&note);
    }
    Ok(out)
}

/// One directory entry as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    /// A symlink and its target, if it could be read.
    Symlink(Option<String>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub kind: Kind,
}

/// What is known about one directory, keyed by its path relative to the
/// listed root (`""` for the root).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Listing {
    /// Expanded: the entries shown (maybe fewer than `total`).
    Read { entries: Vec<Entry>, total: usize },
    /// At the depth limit: only the number of entries.
    Count(usize),
    /// Could not be read.
    Unreadable(String),
}

/// Sorts directories first, then everything else; alphabetically within
/// each group (ignoring case, then by bytes).
pub fn sort_entries(entries: &mut [Entry]) {
    entries.sort_by(|a, b| {
        (a.kind != Kind::Dir)
            .cmp(&(b.kind != Kind::Dir))
            .then_with(|| a.name.to_lowercase().cmp(&b.name.to_lowercase()))
            .then_with(|| a.name.cmp(&b.name))
    });
}

/// The entries of directory `dir` (at `rel` below the listed root, whose
/// raw entries are `raw` and rules `rules`) that are shown, sorted for
/// display; those left out are counted in `skipped`.
fn kept_entries(
    dir: &Path,
    rel: &str,
    raw: Vec<(String, EntryType)>,
    rules: &Rules,
    skipped: &mut Skipped,
) -> Vec<Entry> {
    let mut entries: Vec<Entry> = raw
        .into_iter()
        .filter(|(name, file_type)| {
            !walk::always_skipped(name, *file_type)
                && skipped.keep(rules.verdict(&child(rel, name), file_type.is_dir()))
        })
        .map(|(name, file_type)| {
            let kind = if file_type.is_dir() {
                Kind::Dir
            } else if file_type.is_symlink() {
                let target = fs::read_link(dir.join(&name)).ok();
                Kind::Symlink(target.map(|t| t.to_string_lossy().into_owned()))
            } else {
                Kind::File
            };
            Entry { name, kind }
        })
        .collect();
    sort_entries(&mut entries);
    entries
}

fn child(rel: &str, name: &str) -> String {
    walk::join_rel(rel, name)
}

/// The rules of directory `dir` below one with `parent` rules, with its raw
/// entries.
fn read_dir(
    dir: &Path,
    rel: &str,
    parent: &Rules,
) -> io::Result<(Vec<(String, EntryType)>, Rules)> {
    let raw = walk::read_sorted(dir)?;
    let rules = parent.child(dir, rel, &raw);
    Ok((raw, rules))
}

/// Reads the tree breadth first, so that the upper levels are complete when
/// the entry budget runs out. `root_read` is the root's raw entries and
/// rules. Returns the listings, whether the budget ran out, and what the
/// rules left out of the shown directories.
fn collect(
    root: &Path,
    root_read: (Vec<(String, EntryType)>, Rules),
    depth: usize,
) -> (HashMap<String, Listing>, bool, Skipped) {
    let mut listings = HashMap::new();
    let mut budget = MAX_ENTRIES;
    let mut truncated = false;
    let mut skipped = Skipped::default();
    let mut queue = VecDeque::new();
    let mut pending = Some(Ok(root_read));
    queue.push_back((String::new(), 0, Rules::default()));
    while let Some((rel, level, parent)) = queue.pop_front() {
        let full = root.join(&rel);
        if level >= depth {
            if let Ok((raw, rules)) = read_dir(&full, &rel, &parent) {
                // What is inside is not shown: its skipped entries are not
                // counted in the note.
                let shown = kept_entries(&full, &rel, raw, &rules, &mut Skipped::default());
                listings.insert(rel, Listing::Count(shown.len()));
            }
            continue;
        }
        if budget == 0 {
            truncated = true;
            continue;
        }
        let read = pending
            .take()
            .unwrap_or_else(|| read_dir(&full, &rel, &parent));
        let listing = match read {
            Err(e) => Listing::Unreadable(e.to_string()),
            Ok((raw, rules)) => {
                let mut entries = kept_entries(&full, &rel, raw, &rules, &mut skipped);
                let total = entries.len();
                let cap = if rel.is_empty() {
                    budget
                } else {
                    budget.min(MAX_PER_SUBDIR)
                };
                if total > cap {
                    entries.truncate(cap);
                    truncated |= cap == budget;
                }
                budget -= entries.len();
                for entry in entries.iter().filter(|e| e.kind == Kind::Dir) {
                    queue.push_back((child(&rel, &entry.name), level + 1, rules.clone()));
                }
                Listing::Read { entries, total }
            }
        };
        listings.insert(rel, listing);
    }
    (listings, truncated, skipped)
}

/// Renders the tree under `label` (the root's name, ending in `/`).
pub fn render(label: &str, listings: &HashMap<String, Listing>, truncated: bool) -> String {
    let mut out = format!("{label}\n");
    match listings.get("") {
        Some(Listing::Read { total: 0, .. }) => out.push_str("  (empty directory)\n"),
        _ => render_dir(&mut out, listings, "", 1),
    }
    if truncated {
        let _ = write!(
            out,
            "[listing stopped at {MAX_ENTRIES} entries; list a subdirectory or use a smaller \
             depth to see the rest]"
        );
    }
    out
}

fn render_dir(out: &mut String, listings: &HashMap<String, Listing>, rel: &str, level: usize) {
    let Some(Listing::Read { entries, total }) = listings.get(rel) else {
        return;
    };
    let indent = "  ".repeat(level);
    for entry in entries {
        let _ = match &entry.kind {
            Kind::File => writeln!(out, "{indent}{}", entry.name),
            Kind::Symlink(Some(target)) => writeln!(out, "{indent}{} -> {target}", entry.name),
            Kind::Symlink(None) => writeln!(out, "{indent}{} (symlink)", entry.name),
            Kind::Dir => {
                let path = child(rel, &entry.name);
                let note = match listings.get(&path) {
                    Some(Listing::Count(0)) => " (empty)".to_string(),
                    Some(Listing::Count(1)) => " (1 entry)".to_string(),
                    Some(Listing::Count(n)) => format!(" ({n} entries)"),
                    Some(Listing::Unreadable(e)) => format!(" [cannot read: {e}]"),
                    Some(Listing::Read { total: 0, .. }) => " (empty)".to_string(),
                    _ => String::new(),
                };
                let _ = writeln!(out, "{indent}{}/{note}", entry.name);
                render_dir(out, listings, &path, level + 1);
                Ok(())
            }
        };
    }
    let hidden = total - entries.len();
    if hidden > 0 {
        let noun = if hidden == 1 { "entry" } else { "entries" };
        let _ = writeln!(out, "{indent}... {hidden} more {noun} not shown");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(name: &str, kind: Kind) -> Entry {
        Entry {
            name: name.into(),
            kind,
        }
    }

    fn read_root(dir: &Path) -> (Vec<(String, EntryType)>, Rules) {
        read_dir(dir, "", &Rules::root(Filter::default(), dir, &[], &[])).unwrap()
    }

    #[test]
    fn sorts_dirs_first() {
        let mut entries = vec![
            e("b.txt", Kind::File),
            e("Zed", Kind::Dir),
            e("link", Kind::Symlink(None)),
            e("A.txt", Kind::File),
            e("src", Kind::Dir),
        ];
        sort_entries(&mut entries);
        let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["src", "Zed", "A.txt", "b.txt", "link"]);
    }

    #[test]
    fn renders_tree() {
        let mut listings = HashMap::new();
        listings.insert(
            String::new(),
            Listing::Read {
                entries: vec![
                    e("src", Kind::Dir),
                    e("empty", Kind::Dir),
                    e("Cargo.toml", Kind::File),
                    e("cur", Kind::Symlink(Some("src/lib.rs".into()))),
                ],
                total: 4,
            },
        );
        listings.insert(
            "src".into(),
            Listing::Read {
                entries: vec![e("tools", Kind::Dir), e("lib.rs", Kind::File)],
                total: 3,
            },
        );
        listings.insert("src/tools".into(), Listing::Count(12));
        listings.insert(
            "empty".into(),
            Listing::Read {
                entries: vec![],
                total: 0,
            },
        );
        let out = render("./", &listings, true);
        assert_eq!(
            out,
            "./\n  src/\n    tools/ (12 entries)\n    lib.rs\n    ... 1 more entry not shown\n  \
             empty/ (empty)\n  Cargo.toml\n  cur -> src/lib.rs\n[listing stopped at 1000 \
             entries; list a subdirectory or use a smaller depth to see the rest]"
        );
    }

    #[test]
    fn empty_root() {
        let mut listings = HashMap::new();
        listings.insert(
            String::new(),
            Listing::Read {
                entries: vec![],
                total: 0,
            },
        );
        assert_eq!(render("x/", &listings, false), "x/\n  (empty directory)\n");
    }

    #[test]
    fn collects_breadth_first_with_budget() {
        let tmp = std::env::temp_dir().join(format!("fs-list-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("a/deep/deeper")).unwrap();
        fs::create_dir_all(tmp.join(".git")).unwrap();
        fs::write(tmp.join("a/deep/f"), "").unwrap();
        fs::write(tmp.join("top"), "").unwrap();
        let (listings, truncated, _) = collect(&tmp, read_root(&tmp), 2);
        assert!(!truncated);
        let out = render("t/", &listings, truncated);
        assert_eq!(out, "t/\n  a/\n    deep/ (2 entries)\n  top\n");
        fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn leaves_out_ignored_and_hidden() {
        let tmp = std::env::temp_dir().join(format!("fs-list-ignore-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("target/debug")).unwrap();
        fs::create_dir_all(tmp.join("src/.cache")).unwrap();
        fs::create_dir_all(tmp.join("docs/gen")).unwrap();
        for (file, text) in [
            (".gitignore", "target/\n*.log\n"),
            ("docs/.ignore", "gen/\n"),
            ("src/lib.rs", ""),
            ("src/x.log", ""),
            ("docs/gen/a", ""),
            ("docs/gen/b.log", ""),
            ("docs/b.log", ""),
            ("docs/c", ""),
        ] {
            fs::write(tmp.join(file), text).unwrap();
        }
        let (listings, truncated, skipped) = collect(&tmp, read_root(&tmp), 1);
        assert_eq!(
            render("t/", &listings, truncated),
            "t/\n  docs/ (1 entry)\n  src/ (1 entry)\n"
        );
        assert_eq!((skipped.ignored, skipped.hidden), (1, 1));
        let (listings, truncated, skipped) = collect(&tmp, read_root(&tmp), 3);
        assert_eq!(
            render("t/", &listings, truncated),
            "t/\n  docs/\n    c\n  src/\n    lib.rs\n"
        );
        // target, .gitignore; docs: gen, b.log, .ignore; src: x.log, .cache
        assert_eq!((skipped.ignored, skipped.hidden), (4, 3));
        let all = Filter {
            no_ignore: true,
            hidden: true,
        };
        let raw = walk::read_sorted(&tmp).unwrap();
        let rules = Rules::root(all, &tmp, &raw, &[]);
        let (listings, _, skipped) = collect(&tmp, (raw, rules), 1);
        let out = render("t/", &listings, false);
        assert!(
            out.contains("  target/ (1 entry)\n") && out.contains("  .gitignore\n"),
            "{out}"
        );
        assert_eq!(skipped, Skipped::default());
        fs::remove_dir_all(&tmp).unwrap();
    }

    #[test]
    fn caps_subdirectories() {
        let tmp = std::env::temp_dir().join(format!("fs-list-cap-{}", std::process::id()));
        let _ = fs::remove_dir_all(&tmp);
        fs::create_dir_all(tmp.join("huge")).unwrap();
        fs::create_dir_all(tmp.join("other")).unwrap();
        fs::write(tmp.join("other/kept"), "").unwrap();
        for i in 0..MAX_PER_SUBDIR + 50 {
            fs::write(tmp.join(format!("huge/f{i:03}")), "").unwrap();
        }
        let (listings, truncated, _) = collect(&tmp, read_root(&tmp), 2);
        assert!(!truncated);
        let out = render("t/", &listings, truncated);
        assert!(out.contains("    ... 50 more entries not shown\n"), "{out}");
        assert!(out.ends_with("  other/\n    kept\n"), "{out}");
        fs::remove_dir_all(&tmp).unwrap();
    }
}
