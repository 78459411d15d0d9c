//! `list_files`: an indented tree of a directory.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use serde::Deserialize;

use super::read_op;
use crate::error::{ToolError, invalid, parse_args};
use crate::{Tool, paths, walk};

/// Most entries shown in one listing.
const MAX_ENTRIES: usize = 1000;
/// Most entries shown for one subdirectory, so that a huge directory does
/// not hide its siblings.
const MAX_PER_SUBDIR: usize = 200;

pub const TOOL: Tool = Tool {
    name: "list_files",
    description: "List a directory as an indented tree: directories first (marked with a \
        trailing /), then files, each group alphabetical; symlinks shown as `name -> target` \
        and not followed. Directories at the depth limit show how many entries they hold. \
        `.git` is skipped. At most 1000 entries (200 per subdirectory); list a subdirectory \
        to see more. Use glob \
        to find files by name pattern.",
    schema: r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "Directory to list. Default \".\" (the workspace)."},
    "depth": {"type": "integer", "minimum": 1, "maximum": 10, "description": "How many levels to show; 1 lists only the directory's own entries. Default 2."}
  },
  "additionalProperties": false
}"#,
    aliases: &["ls", "list_dir"],
    mutates: false,
    run,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default = "dot")]
    path: String,
    #[serde(default = "two")]
    depth: usize,
}

fn dot() -> String {
    ".".into()
}

fn two() -> usize {
    2
}

fn run(args: &str) -> Result<String, ToolError> {
    let args: Args = parse_args(TOOL.name, args)?;
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
    if !read_op(path, fs::metadata(path))?.is_dir() {
        return Err(invalid(format!(
            "{path} is a file, not a directory; use read_file to read it"
        )));
    }
    // Read the root here so that its errors reach the model as they are.
    let root_entries = read_op(path, read_entries(Path::new(path)))?;
    let (listings, truncated) = collect(Path::new(path), root_entries, args.depth);
    let label = match path.trim_end_matches('/') {
        "" => "/".to_string(),
        trimmed => format!("{trimmed}/"),
    };
    Ok(render(&label, &listings, truncated))
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

fn read_entries(dir: &Path) -> std::io::Result<Vec<Entry>> {
    let mut entries: Vec<Entry> = walk::sorted_entries(dir)?
        .into_iter()
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
    Ok(entries)
}

fn child(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

/// Reads the tree breadth first, so that the upper levels are complete when
/// the entry budget runs out. Returns the listings and whether the budget
/// ran out.
fn collect(
    root: &Path,
    root_entries: Vec<Entry>,
    depth: usize,
) -> (HashMap<String, Listing>, bool) {
    let mut listings = HashMap::new();
    let mut budget = MAX_ENTRIES;
    let mut truncated = false;
    let mut queue = VecDeque::new();
    let mut pending = Some(root_entries);
    queue.push_back((String::new(), 0));
    while let Some((rel, level)) = queue.pop_front() {
        let full = root.join(&rel);
        if level >= depth {
            if let Ok(entries) = walk::sorted_entries(&full) {
                listings.insert(rel, Listing::Count(entries.len()));
            }
            continue;
        }
        if budget == 0 {
            truncated = true;
            continue;
        }
        let read = match pending.take() {
            Some(entries) => Ok(entries),
            None => read_entries(&full),
        };
        let listing = match read {
            Err(e) => Listing::Unreadable(e.to_string()),
            Ok(mut entries) => {
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
                    queue.push_back((child(&rel, &entry.name), level + 1));
                }
                Listing::Read { entries, total }
            }
        };
        listings.insert(rel, listing);
    }
    (listings, truncated)
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
        let root = read_entries(&tmp).unwrap();
        let (listings, truncated) = collect(&tmp, root, 2);
        assert!(!truncated);
        let out = render("t/", &listings, truncated);
        assert_eq!(out, "t/\n  a/\n    deep/ (2 entries)\n  top\n");
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
        let root = read_entries(&tmp).unwrap();
        let (listings, truncated) = collect(&tmp, root, 2);
        assert!(!truncated);
        let out = render("t/", &listings, truncated);
        assert!(out.contains("    ... 50 more entries not shown\n"), "{out}");
        assert!(out.ends_with("  other/\n    kept\n"), "{out}");
        fs::remove_dir_all(&tmp).unwrap();
    }
}
