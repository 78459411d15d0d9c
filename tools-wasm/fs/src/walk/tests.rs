//! The walk against a fixture with every kind of ignore rule, checked
//! against a hard-coded list and against `rg --files` where rg is installed.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::*;
use crate::rules::Skipped;

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("fs-walk-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn write(&self, rel: &str, text: &str) {
        let path = self.0.join(rel);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The fixture: a repository with root, nested and exclude rules, hidden
/// entries, and symlinks (one leading out of the tree).
fn fixture(tag: &str) -> (TempDir, TempDir) {
    let outside = TempDir::new(&format!("{tag}-outside"));
    let t = TempDir::new(tag);
    for (rel, text) in [
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/info/exclude", "# local\nexcluded.txt\n"),
        (".gitignore", "target/\n*.log\n!keep.log\n"),
        (".hidden/secret.txt", "x"),
        (".env", "x"),
        ("a.txt", "x"),
        ("debug.log", "x"),
        ("keep.log", "x"),
        ("excluded.txt", "x"),
        ("target/out.txt", "x"),
        ("target/deep/x.txt", "x"),
        ("src/main.rs", "x"),
        ("src/.gitignore", "gen.rs\n/local.txt\n"),
        ("src/gen.rs", "x"),
        ("src/local.txt", "x"),
        ("src/deep/local.txt", "x"),
        ("src/deep/target", "a file, so `target/` does not match it"),
        ("src/deep/trace.log", "x"),
        ("sub/.ignore", "*.tmp\n!.keep-hidden\n"),
        ("sub/.keep-hidden", "x"),
        ("sub/x.tmp", "x"),
        ("sub/y.txt", "x"),
        ("docs/.gitignore", "!*.log\n"),
        ("docs/notes.log", "x"),
    ] {
        t.write(rel, text);
    }
    outside.write("secret.txt", "outside");
    std::os::unix::fs::symlink(&outside.0, t.0.join("out")).unwrap();
    std::os::unix::fs::symlink("a.txt", t.0.join("link.txt")).unwrap();
    (t, outside)
}

/// The files (not symlinks) a walk of `root` visits, in walk order, the
/// symlinks, and the summary.
fn walk(
    root: &Path,
    filter: Filter,
    ancestors: &[Ancestor],
) -> (Vec<String>, Vec<String>, Summary) {
    let options = Options {
        filter,
        ancestors,
        deadline: Deadline::new(Duration::from_secs(3600)),
    };
    let (mut files, mut links) = (Vec::new(), Vec::new());
    let summary = walk_files(root.to_str().unwrap(), &options, &mut |rel, full, t| {
        assert!(full.ends_with(rel));
        if t.is_symlink() {
            &mut links
        } else {
            &mut files
        }
        .push(rel.to_string());
        ControlFlow::Continue(())
    })
    .unwrap();
    (files, links, summary)
}

/// `rg --files` in `dir` with `args`, sorted; `None` without rg.
fn rg_files(dir: &Path, args: &[&str]) -> Option<Vec<String>> {
    let out = Command::new("rg")
        .arg("--files")
        .args(args)
        .current_dir(dir)
        // No user or global git config: only the fixture's rules.
        .env("HOME", dir)
        .env("XDG_CONFIG_HOME", dir.join("no-such-dir"))
        .env_remove("RIPGREP_CONFIG_PATH")
        .output();
    let Ok(out) = out else {
        println!("note: rg is not installed; comparison with rg --files skipped");
        return None;
    };
    assert!(out.status.success(), "{out:?}");
    let mut files: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_start_matches("./").to_string())
        .collect();
    files.sort();
    Some(files)
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn default_rules_match_ripgrep() {
    let (t, _outside) = fixture("default");
    let (files, links, summary) = walk(&t.0, Filter::default(), &[]);
    assert_eq!(
        files,
        [
            "a.txt",
            "docs/notes.log",
            "keep.log",
            "src/deep/local.txt",
            "src/deep/target",
            "src/main.rs",
            "sub/.keep-hidden",
            "sub/y.txt",
        ]
    );
    assert_eq!(
        links,
        ["link.txt", "out"],
        "symlinks are reported, not followed"
    );
    assert_eq!(
        summary.skipped,
        Skipped {
            ignored: 7,
            hidden: 6
        }
    );
    if let Some(rg) = rg_files(&t.0, &[]) {
        assert_eq!(sorted(files), rg);
    }
}

#[test]
fn no_ignore_and_hidden_list_everything_but_git() {
    let (t, _outside) = fixture("all");
    let all = Filter {
        no_ignore: true,
        hidden: true,
    };
    let (files, links, summary) = walk(&t.0, all, &[]);
    assert_eq!(
        files,
        [
            ".env",
            ".gitignore",
            ".hidden/secret.txt",
            "a.txt",
            "debug.log",
            "docs/.gitignore",
            "docs/notes.log",
            "excluded.txt",
            "keep.log",
            "src/.gitignore",
            "src/deep/local.txt",
            "src/deep/target",
            "src/deep/trace.log",
            "src/gen.rs",
            "src/local.txt",
            "src/main.rs",
            "sub/.ignore",
            "sub/.keep-hidden",
            "sub/x.tmp",
            "sub/y.txt",
            "target/deep/x.txt",
            "target/out.txt",
        ]
    );
    assert_eq!(links, ["link.txt", "out"]);
    assert_eq!(summary.skipped, Skipped::default());
    assert!(summary.notes().is_empty());
    if let Some(rg) = rg_files(&t.0, &["--no-ignore", "--hidden", "--glob", "!.git"]) {
        assert_eq!(sorted(files), rg);
    }
    // Each flag alone.
    let (files, _, summary) = walk(
        &t.0,
        Filter {
            hidden: true,
            ..Filter::default()
        },
        &[],
    );
    assert!(files.contains(&".env".to_string()) && !files.contains(&"debug.log".to_string()));
    assert_eq!(
        summary.skipped,
        Skipped {
            ignored: 7,
            hidden: 0
        }
    );
    let (files, _, summary) = walk(
        &t.0,
        Filter {
            no_ignore: true,
            ..Filter::default()
        },
        &[],
    );
    assert!(!files.contains(&".env".to_string()) && files.contains(&"debug.log".to_string()));
    assert_eq!(summary.skipped.ignored, 0);
}

#[test]
fn ancestors_ignore_files_apply() {
    let (t, _outside) = fixture("anc");
    let src = t.0.join("src");
    let ancestors = [Ancestor {
        path: t.0.to_str().unwrap().to_string(),
        below: "src/".into(),
    }];
    let (files, _, _) = walk(&src, Filter::default(), &ancestors);
    // trace.log is ignored by the root's `*.log`.
    assert_eq!(files, ["deep/local.txt", "deep/target", "main.rs"]);
    if let Some(rg) = rg_files(&src, &[]) {
        assert_eq!(sorted(files), rg);
    }
    // Without the ancestor only the nested rules are known.
    let (files, _, _) = walk(&src, Filter::default(), &[]);
    assert!(files.contains(&"deep/trace.log".to_string()));
}

#[test]
fn symlinked_directories_are_not_entered() {
    let (t, _outside) = fixture("link");
    for filter in [
        Filter::default(),
        Filter {
            no_ignore: true,
            hidden: true,
        },
    ] {
        let (files, links, _) = walk(&t.0, filter, &[]);
        assert!(links.contains(&"out".to_string()));
        assert!(files.iter().all(|f| !f.starts_with("out/")), "{files:?}");
    }
}

#[test]
fn stops_at_the_first_break_and_at_the_deadline() {
    let (t, _outside) = fixture("stop");
    let mut options = Options {
        filter: Filter::default(),
        ancestors: &[],
        deadline: Deadline::new(Duration::from_secs(3600)),
    };
    let mut first = None;
    walk_files(t.0.to_str().unwrap(), &options, &mut |rel, _, _| {
        first = Some(rel.to_string());
        ControlFlow::Break(())
    })
    .unwrap();
    assert_eq!(first.as_deref(), Some("a.txt"));
    options.deadline = Deadline::new(Duration::ZERO);
    for i in 0..CLOCK_EVERY {
        t.write(&format!("many/{i:02}"), "x");
    }
    let summary = walk_files(t.0.to_str().unwrap(), &options, &mut |_, _, _| {
        ControlFlow::Continue(())
    })
    .unwrap();
    assert!(summary.out_of_time);
}
