//! `grep` and `glob` through the sandbox against `rg -j1` on a generated
//! 320 MB tree, kept under `target/bench-tree` so reruns skip generating it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;
use warden_tests::{Sandbox, ok};

use crate::{ms, ratio, time, verdict};

/// No line of the tree holds this.
const NO_MATCH: &str = "zq_absent_token_9";
/// About 1,000 lines of the tree (1,036) hold this.
const SOME_MATCHES: &str = "(fn|let|mut|return|self|match|impl|struct|pub|use|if|else) needle_xyz";
/// Matches about 1 file in 100, so `glob` walks the whole tree without
/// reaching its 1,000-result cap.
const GLOB: &str = "f*77.rs";
const RUNS: usize = 5;

pub fn run() {
    println!();
    println!("search on a 320 MB tree: rg time / warden time (median of {RUNS}; target >= 0.5)");
    if Command::new("rg").arg("--version").output().is_err() {
        println!(
            "  skipped: ripgrep (rg) is not installed; install it (e.g. apt-get install ripgrep)"
        );
        return;
    }
    let tree = tree();
    let sb = Sandbox::new();
    let grant = tree.display();
    sb.policy(&format!(
        "[tools.grep]\nread = [\"{grant}\"]\ntimeout = \"10m\"\n\
         [tools.glob]\nread = [\"{grant}\"]\ntimeout = \"10m\"\n"
    ));
    let tools = sb.toolset(&[]);
    let path = tree.to_str().unwrap();

    for (label, pattern) in [
        ("grep, no match", NO_MATCH),
        ("grep, ~1,000 matches", SOME_MATCHES),
    ] {
        let args = json!({"pattern": pattern, "path": path, "max_matches": 2000}).to_string();
        let out = ok(tools.call("grep", &args));
        // `path:line: text`; a search without matches says so in one line.
        let found = out
            .lines()
            .filter(|l| {
                l.split(':')
                    .nth(1)
                    .is_some_and(|n| n.parse::<u64>().is_ok())
            })
            .count();
        let expected = rg_lines(&tree, &["-j1", "--no-heading", "-n", pattern]);
        let warden = time(RUNS, || tools.call("grep", &args));
        let rg = time(RUNS, || rg_run(&tree, &["-j1", "-n", pattern]));
        report(label, rg, warden, found, expected);
    }

    let args = json!({"pattern": format!("**/{GLOB}"), "path": path}).to_string();
    let out = ok(tools.call("glob", &args));
    let found = out
        .lines()
        .filter(|l| !l.starts_with('[') && !l.is_empty())
        .count();
    let expected = rg_lines(&tree, &["-j1", "--files", "-g", GLOB]);
    let warden = time(RUNS, || tools.call("glob", &args));
    let rg = time(RUNS, || rg_run(&tree, &["-j1", "--files", "-g", GLOB]));
    report("glob (full walk)", rg, warden, found, expected);
    let all = time(RUNS, || rg_run(&tree, &["-j1", "--files"]));
    println!(
        "  rg --files, all {} files  {:>10}   (listing everything; glob returns at most 1,000)",
        rg_lines(&tree, &["--files"]),
        ms(all)
    );
}

fn report(label: &str, rg: Duration, warden: Duration, found: usize, expected: usize) {
    let r = ratio(rg, warden);
    let same = if found == expected {
        String::new()
    } else {
        format!("; MISMATCH: warden {found} results, rg {expected}")
    };
    println!(
        "  {label:<22} rg {:>10}  warden {:>10}  ratio {r:.2} ({}; {expected} results{same})",
        ms(rg),
        ms(warden),
        verdict(r >= 0.5)
    );
}

fn rg_run(tree: &Path, args: &[&str]) {
    // Exit code 1 means no match, which is expected here.
    Command::new("rg")
        .args(args)
        .current_dir(tree)
        .stdout(Stdio::null())
        .status()
        .unwrap();
}

fn rg_lines(tree: &Path, args: &[&str]) -> usize {
    let out = Command::new("rg")
        .args(args)
        .current_dir(tree)
        .output()
        .unwrap();
    out.stdout
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .count()
}

/// The generated tree, made once by `tools-wasm/fs/bench/make_tree.py`.
fn tree() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    // The benchmark runs from target/release/.
    let target = exe.parent().unwrap().parent().unwrap();
    let tree = target.join("bench-tree");
    let done = tree.join(".complete");
    if !done.is_file() {
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tools-wasm/fs/bench/make_tree.py");
        println!("  generating {} (once) ...", tree.display());
        let _ = std::fs::remove_dir_all(&tree);
        let status = Command::new("python3")
            .arg(&script)
            .arg(&tree)
            .stdout(Stdio::null())
            .status()
            .expect("python3 is needed to generate the search tree");
        assert!(status.success(), "{} failed", script.display());
        std::fs::write(&done, "").unwrap();
    }
    tree.canonicalize().unwrap()
}
