//! grep, glob and list_files choose the files ripgrep chooses (ignore files,
//! hidden entries) and never follow symlinks out of the grant.

use std::collections::BTreeSet;
use std::os::unix::fs::symlink;
use std::process::Command;

use serde_json::json;
use warden_tests::Tools;
use warden_tests::{Sandbox, ok};

use super::fs_tools::{call, host_write};

/// In every file of the workspace.
const MARK: &str = "MARK_7f3";

/// A workspace exercising each ignore rule ripgrep applies.
fn ignored_project() -> Sandbox {
    let sb = Sandbox::new();
    for (rel, content) in [
        (".gitignore", "target/\n*.log\n!keep.log\n"),
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".git/info/exclude", "excluded.txt\n"),
        ("hello.txt", ""),
        ("docs/readme.md", ""),
        ("src/main.rs", ""),
        ("src/.gitignore", "gen.rs\n"),
        ("src/gen.rs", ""),
        ("src/sub/gen.rs", ""),
        ("target/out.rs", ""),
        ("debug.log", ""),
        ("keep.log", ""),
        ("excluded.txt", ""),
        (".hidden/inside.txt", ""),
        (".env", ""),
    ] {
        let text = if rel.starts_with(".git/") {
            content.to_string()
        } else {
            format!("{content}{MARK}\n")
        };
        host_write(&sb, rel, &text);
    }
    sb
}

/// `rg --files` (plus `extra` flags) in the workspace: the expected set.
fn rg_files(sb: &Sandbox, extra: &[&str]) -> BTreeSet<String> {
    let out = Command::new("rg")
        .arg("--files")
        .args(extra)
        .current_dir(&sb.ws)
        .output()
        .unwrap_or_else(|e| panic!("ripgrep (rg) is needed by this test; install it: {e}"));
    assert!(out.status.success(), "rg failed: {out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_start_matches("./").to_string())
        .collect()
}

/// Every regular file under the workspace except `.git`, found on the host.
fn all_files(sb: &Sandbox) -> BTreeSet<String> {
    fn walk(dir: &std::path::Path, base: &std::path::Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            let p = e.path();
            if ft.is_dir() && e.file_name() != ".git" {
                walk(&p, base, out);
            } else if ft.is_file() {
                let rel = p.strip_prefix(base).unwrap().to_str().unwrap().to_string();
                out.insert(rel);
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(&sb.ws, &sb.ws, &mut out);
    out
}

fn body(out: &str) -> impl Iterator<Item = &str> {
    out.lines().filter(|l| !l.is_empty() && !l.starts_with('['))
}

/// `base` arguments plus the `flags` (`no_ignore`, `hidden`).
fn with_flags(mut base: serde_json::Value, flags: serde_json::Value) -> serde_json::Value {
    let serde_json::Value::Object(flags) = flags else {
        panic!("flags must be an object: {flags}");
    };
    base.as_object_mut().unwrap().extend(flags);
    base
}

fn grep_files(tools: &Tools, flags: serde_json::Value) -> BTreeSet<String> {
    let args = with_flags(json!({"pattern": MARK, "max_matches": 2000}), flags);
    let out = ok(call(tools, "grep", args));
    body(&out)
        .map(|l| l.split(':').next().unwrap().to_string())
        .collect()
}

fn glob_files(tools: &Tools, flags: serde_json::Value) -> BTreeSet<String> {
    let args = with_flags(json!({"pattern": "**/*"}), flags);
    let out = ok(call(tools, "glob", args));
    body(&out).map(str::to_string).collect()
}

/// The files of a `list_files` tree, as paths (directories left out).
fn list_files(tools: &Tools, flags: serde_json::Value) -> BTreeSet<String> {
    let args = with_flags(json!({"depth": 10}), flags);
    let out = ok(call(tools, "list_files", args));
    let mut stack: Vec<String> = Vec::new();
    let mut files = BTreeSet::new();
    for line in body(&out).skip(1) {
        let depth = (line.len() - line.trim_start().len()) / 2;
        // A directory whose entries are all skipped shows as `name/ (empty)`.
        let name = line.trim_start().trim_end_matches(" (empty)");
        assert!(!name.contains(" entr"), "tree cut short: {out}");
        stack.truncate(depth - 1);
        if let Some(dir) = name.strip_suffix('/') {
            stack.push(dir.to_string());
        } else {
            let mut path = stack.join("/");
            if !path.is_empty() {
                path.push('/');
            }
            path.push_str(name);
            files.insert(path);
        }
    }
    files
}

#[test]
fn grep_glob_and_list_files_choose_the_files_ripgrep_chooses() {
    let sb = ignored_project();
    let tools = sb.toolset(&[]);
    let expected = rg_files(&sb, &[]);
    assert!(expected.contains("keep.log") && !expected.contains("debug.log"));
    assert!(!expected.contains("src/gen.rs") && !expected.contains("excluded.txt"));
    assert_eq!(grep_files(&tools, json!({})), expected, "grep");
    assert_eq!(glob_files(&tools, json!({})), expected, "glob");
    assert_eq!(list_files(&tools, json!({})), expected, "list_files");

    let everything = all_files(&sb);
    assert!(everything.contains(".hidden/inside.txt") && everything.contains("target/out.rs"));
    let all = json!({"no_ignore": true, "hidden": true});
    assert_eq!(grep_files(&tools, all.clone()), everything, "grep");
    assert_eq!(glob_files(&tools, all.clone()), everything, "glob");
    assert_eq!(list_files(&tools, all), everything, "list_files");
}

#[test]
fn symlinks_out_of_the_grant_are_never_followed() {
    let sb = Sandbox::new();
    std::fs::write(sb.outside.join("unique_outside_name.txt"), "top secret\n").unwrap();
    host_write(&sb, "sub/in.txt", "inside\n");
    symlink(&sb.outside, sb.ws.join("abs_dir")).unwrap();
    symlink("../../outside", sb.ws.join("sub/rel_dir")).unwrap();
    symlink(sb.outside.join("secret.txt"), sb.ws.join("abs_file.txt")).unwrap();
    symlink("../../outside/secret.txt", sb.ws.join("sub/rel_file.txt")).unwrap();
    let tools = sb.toolset(&[]);
    for flags in [
        json!({}),
        json!({"no_ignore": true}),
        json!({"hidden": true}),
        json!({"no_ignore": true, "hidden": true}),
    ] {
        let mut grep = json!({"pattern": "secret|inside"});
        grep.as_object_mut()
            .unwrap()
            .extend(flags.as_object().unwrap().clone());
        let out = ok(call(&tools, "grep", grep));
        assert!(out.contains("sub/in.txt"), "{out}");
        assert!(!out.contains("top secret"), "grep followed a link: {out}");
        for (tool, mut args) in [
            ("glob", json!({"pattern": "**/*"})),
            ("list_files", json!({"depth": 10})),
        ] {
            args.as_object_mut()
                .unwrap()
                .extend(flags.as_object().unwrap().clone());
            let out = ok(call(&tools, tool, args));
            assert!(out.contains("in.txt"), "{tool}: {out}");
            assert!(
                !out.contains("unique_outside_name"),
                "{tool} followed a link: {out}"
            );
        }
    }
}
