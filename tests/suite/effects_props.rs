//! The host's effects against what the fs tools do, over generated paths:
//! for every path, the grant and the file the host's effects step resolves
//! (what the preview shows, undo snapshots and the changed list names) are
//! where the `write_file` call really writes, and the preview's verdict
//! (will write X / will fail or be refused) is the call's outcome.
//!
//! The layout: the workspace granted read-write with `docs/` granted
//! read-only inside it, a link inside the grant (`in` → `a`), a link
//! leading out (`out` → the sibling folder no grant covers), a link to the
//! read-only grant (`ro` → `docs`), a file, folders; paths are relative
//! and absolute (into the workspace, outside it), relative ones that spell
//! an absolute grant without its slash, with `.`, `..`, repeated slashes
//! and trailing ones.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use warden_sandbox::{Peek, Touch};
use warden_tests::{Sandbox, Tools};

/// What a call does, as the preview says it and as it turns out.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    /// The call writes this file (its real path).
    Writes(PathBuf),
    /// It writes nothing: it is refused (outside the grants, a read-only
    /// grant) or fails (a directory, a special file, a file in the way).
    Nothing,
}

fn layout() -> (Sandbox, Tools) {
    let sb = Sandbox::new();
    let ws = &sb.ws;
    std::fs::create_dir_all(ws.join("a/b")).unwrap();
    std::fs::write(ws.join("a/file.txt"), "a file\n").unwrap();
    std::os::unix::fs::symlink("a", ws.join("in")).unwrap();
    std::os::unix::fs::symlink("docs", ws.join("ro")).unwrap();
    std::os::unix::fs::symlink(&sb.outside, ws.join("out")).unwrap();
    std::os::unix::fs::symlink("a/file.txt", ws.join("to_file")).unwrap();
    sb.policy("[tools.write_file]\nwrite = [\".\"]\nread = [\"docs\"]\n");
    sb.trust();
    let tools = sb.toolset(&[]);
    (sb, tools)
}

/// The preview's verdict, from the call's effects and a look through the
/// tool's own handles (what `warden`'s prompt is built from).
fn preview(tools: &Tools, t: &Touch) -> Verdict {
    if t.refused().is_some() {
        return Verdict::Nothing;
    }
    let at =
        t.at.as_ref()
            .expect("a touch that is not refused is resolved");
    let tool = tools.find("write_file").unwrap();
    match tool.dirs().peek_at(at.mount, &at.rel, 1 << 20) {
        Peek::Outside | Peek::Dir | Peek::Special | Peek::Blocked => Verdict::Nothing,
        _ => Verdict::Writes(real(&at.host.join(&at.rel))),
    }
}

/// `path` with every link on it resolved, the last one too (a write
/// follows it); for a file not there yet, its folder's real path.
fn real(path: &Path) -> PathBuf {
    if let Ok(p) = path.canonicalize() {
        return p;
    }
    let name = path.file_name().unwrap();
    real(path.parent().unwrap()).join(name)
}

/// Where `content` landed under `root` (none, or the file's real path).
fn landed(root: &Path, content: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() && std::fs::read(e.path()).unwrap() == content.as_bytes() {
                found.push(e.path());
            }
        }
    }
    found
}

fn component() -> impl Strategy<Value = &'static str> {
    prop::sample::select(
        &[
            "a",
            "b",
            "docs",
            "new",
            "file.txt",
            "readme.md",
            "in",
            "out",
            "ro",
            "to_file",
            ".",
            "..",
            "",
        ][..],
    )
}

/// A path: a start (the workspace, relative; its absolute path; the folder
/// outside; `/etc`; the root) and components.
fn path(ws: String, outside: String) -> impl Strategy<Value = String> {
    let start = prop::sample::select(vec![
        String::new(),
        String::new(),
        "./".to_string(),
        format!("{ws}/"),
        format!("{ws}//"),
        format!("{outside}/"),
        // Relative, spelling the workspace's absolute path without its
        // slash: a folder of that name inside the workspace.
        format!("{}/", ws.trim_start_matches('/')),
        "/etc/".to_string(),
        "/".to_string(),
    ]);
    (
        start,
        prop::collection::vec(component(), 1..6),
        any::<bool>(),
    )
        .prop_map(|(start, parts, slash)| {
            let mut p = start + &parts.join("/");
            if slash {
                p.push('/');
            }
            p
        })
}

#[test]
fn the_effects_the_host_shows_are_what_the_fs_tools_do() {
    let (sb, tools) = layout();
    let root = sb.ws.parent().unwrap().to_path_buf();
    let tool = tools.find("write_file").unwrap();
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: 3000,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let n = std::sync::atomic::AtomicU32::new(0);
    let strategy = path(
        sb.ws.display().to_string(),
        sb.outside.display().to_string(),
    );
    runner
        .run(&strategy, |path| {
            let case = n.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let content = format!("case {case}\n");
            let args = serde_json::json!({"path": path, "content": content});
            let Ok(checked) = tool.check(&args) else {
                return Ok(()); // the schema refuses it (an empty path)
            };
            let touches = &checked.effects().touches;
            prop_assert_eq!(touches.len(), 1);
            let shown = preview(&tools, &touches[0]);
            let outcome = checked.call(&warden_sandbox::CallControl::new());
            let wrote = landed(&root, &content);
            let actual = match (&outcome.result, wrote.as_slice()) {
                (Ok(_), [file]) => Verdict::Writes(real(file)),
                (Err(_), []) => Verdict::Nothing,
                (result, files) => {
                    return Err(TestCaseError::fail(format!(
                        "{path:?}: {result:?}, written to {files:?}"
                    )));
                }
            };
            prop_assert_eq!(
                &shown,
                &actual,
                "{:?} (resolved to {:?}): {:?}",
                path,
                touches[0].at,
                outcome.result
            );
            Ok(())
        })
        .unwrap();
}
