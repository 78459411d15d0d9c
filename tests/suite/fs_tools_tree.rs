//! Built-in file tools that walk or reshape directories behave the way a
//! model can rely on: list_files, glob, grep, copy, move, mkdir, delete.

use serde_json::json;
use warden_sandbox::ErrorKind;
use warden_tests::{Sandbox, err, ok};

use super::fs_tools::{call, host_read, host_write};

/// The default workspace plus a small source tree and a `.git` directory
/// whose files match every pattern used below.
fn project() -> Sandbox {
    let sb = Sandbox::new();
    for (rel, content) in [
        ("src/main.rs", "fn main() {}\nlet x = 1; // TODO\n"),
        ("src/util/mod.rs", "pub mod deep;\n"),
        ("src/util/deep/x.rs", "// nothing here\n"),
        ("src/notes.txt", "TODO: write docs\ntodo lower\n"),
        ("Cargo.toml", "[package]\n"),
        ("README.md", "readme\n"),
        (".git/HEAD", "ref: refs/heads/main TODO\n"),
        (".git/hooks/pre.rs", "// TODO\n"),
    ] {
        host_write(&sb, rel, content);
    }
    sb
}

#[test]
fn list_files_shows_a_tree_to_the_given_depth_without_git() {
    let sb = project();
    let tools = sb.toolset(&[]);
    let out = ok(call(&tools, "list_files", json!({})));
    assert_eq!(
        out,
        "./\n  docs/\n    readme.md\n  src/\n    util/ (2 entries)\n    main.rs\n    notes.txt\n  \
         Cargo.toml\n  hello.txt\n  README.md\n"
    );
    let out = ok(call(&tools, "list_files", json!({"depth": 1})));
    assert_eq!(
        out,
        "./\n  docs/ (1 entry)\n  src/ (3 entries)\n  Cargo.toml\n  hello.txt\n  README.md\n"
    );
    let out = ok(call(&tools, "ls", json!({"path": "src", "depth": 3})));
    assert_eq!(
        out,
        "src/\n  util/\n    deep/\n      x.rs\n    mod.rs\n  main.rs\n  notes.txt\n"
    );
    let e = err(call(&tools, "list_files", json!({"path": "hello.txt"})));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "hello.txt is a file, not a directory; use read_file to read it"
    );
}

#[test]
fn glob_matches_across_directories_sorted_and_skips_git() {
    let sb = project();
    let tools = sb.toolset(&[]);
    let out = ok(call(&tools, "glob", json!({"pattern": "**/*.rs"})));
    assert_eq!(out, "src/main.rs\nsrc/util/deep/x.rs\nsrc/util/mod.rs");
    let out = ok(call(
        &tools,
        "glob",
        json!({"pattern": "*.rs", "path": "src"}),
    ));
    assert_eq!(out, "src/main.rs");
    let out = ok(call(&tools, "glob", json!({"pattern": "*.{md,toml}"})));
    assert_eq!(out, "Cargo.toml\nREADME.md");
    // `*` stays within one directory, and the note says how to recurse.
    let out = ok(call(&tools, "glob", json!({"pattern": "*.rs"})));
    assert_eq!(
        out,
        "no files match \"*.rs\" under . (a pattern without '/' only matches at the top \
         level; try \"**/*.rs\")"
    );
}

#[test]
fn grep_reports_path_line_and_text_and_honours_its_filters() {
    let sb = project();
    let tools = sb.toolset(&[]);
    let out = ok(call(&tools, "grep", json!({"pattern": "TODO|FIXME"})));
    assert_eq!(
        out,
        "src/main.rs:2: let x = 1; // TODO\nsrc/notes.txt:1: TODO: write docs"
    );
    let out = ok(call(
        &tools,
        "grep",
        json!({"pattern": "TODO", "include": "*.rs"}),
    ));
    assert_eq!(out, "src/main.rs:2: let x = 1; // TODO");
    let out = ok(call(&tools, "grep", json!({"pattern": "todo"})));
    assert_eq!(out, "src/notes.txt:2: todo lower");
    let out = ok(call(
        &tools,
        "grep",
        json!({"pattern": "todo", "case_insensitive": true, "path": "src"}),
    ));
    assert_eq!(
        out,
        "src/main.rs:2: let x = 1; // TODO\nsrc/notes.txt:1: TODO: write docs\n\
         src/notes.txt:2: todo lower"
    );
    let out = ok(call(&tools, "grep", json!({"pattern": "w[aeiou]rld$"})));
    assert_eq!(out, "hello.txt:2: world");
    let out = ok(call(&tools, "grep", json!({"pattern": "zebra"})));
    assert_eq!(out, "no matches for /zebra/ in .");
}

#[test]
fn grep_stops_at_max_matches_and_says_so() {
    let sb = Sandbox::new();
    host_write(&sb, "many.txt", "hit 1\nmiss\nhit 2\nhit 3\nhit 4\n");
    let tools = sb.toolset(&[]);
    let out = ok(call(
        &tools,
        "grep",
        json!({"pattern": "hit", "max_matches": 2}),
    ));
    assert_eq!(
        out,
        "many.txt:1: hit 1\nmany.txt:3: hit 2\n[stopped after 2 matches; narrow the pattern or path]"
    );
    // Exactly max_matches matches is not a cut.
    let out = ok(call(
        &tools,
        "grep",
        json!({"pattern": "hit", "max_matches": 4}),
    ));
    assert_eq!(
        out,
        "many.txt:1: hit 1\nmany.txt:3: hit 2\nmany.txt:4: hit 3\nmany.txt:5: hit 4"
    );
}

#[test]
fn grep_with_an_invalid_regex_is_invalid_args() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let e = err(call(&tools, "grep", json!({"pattern": "fn (main"})));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert!(e.message.starts_with("invalid regex: "), "{e}");
    assert!(e.message.contains("unclosed group"), "{e}");
}

#[test]
fn copy_files_and_trees_and_refuse_to_clobber_without_overwrite() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let out = ok(call(
        &tools,
        "copy",
        json!({"from": "hello.txt", "to": "backup/hello.txt"}),
    ));
    assert_eq!(out, "copied file hello.txt to backup/hello.txt (12 bytes)");
    assert_eq!(host_read(&sb, "backup/hello.txt"), "hello\nworld\n");
    assert_eq!(host_read(&sb, "hello.txt"), "hello\nworld\n");
    let out = ok(call(&tools, "copy", json!({"from": "docs", "to": "docs2"})));
    assert_eq!(
        out,
        "copied directory docs to docs2: 1 file, 1 directory, 7 bytes"
    );
    assert_eq!(host_read(&sb, "docs2/readme.md"), "# docs\n");
    let e = err(call(
        &tools,
        "copy",
        json!({"from": "docs/readme.md", "to": "hello.txt"}),
    ));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "hello.txt already exists (a file); set overwrite=true to replace it, or choose \
         another path"
    );
    assert_eq!(host_read(&sb, "hello.txt"), "hello\nworld\n");
    ok(call(
        &tools,
        "copy",
        json!({"from": "docs/readme.md", "to": "hello.txt", "overwrite": true}),
    ));
    assert_eq!(host_read(&sb, "hello.txt"), "# docs\n");
    let e = err(call(&tools, "copy", json!({"from": "nope", "to": "x"})));
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
}

#[test]
fn move_renames_files_and_directories_and_refuses_to_clobber() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let out = ok(call(
        &tools,
        "move",
        json!({"from": "hello.txt", "to": "moved/hi.txt"}),
    ));
    assert_eq!(out, "moved file hello.txt to moved/hi.txt");
    assert!(!sb.ws.join("hello.txt").exists());
    assert_eq!(host_read(&sb, "moved/hi.txt"), "hello\nworld\n");
    let out = ok(call(
        &tools,
        "move",
        json!({"from": "docs", "to": "archive/docs"}),
    ));
    assert_eq!(out, "moved directory docs to archive/docs");
    assert!(!sb.ws.join("docs").exists());
    assert_eq!(host_read(&sb, "archive/docs/readme.md"), "# docs\n");
    let e = err(call(
        &tools,
        "move",
        json!({"from": "archive/docs/readme.md", "to": "moved/hi.txt"}),
    ));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "moved/hi.txt already exists (a file); set overwrite=true to replace it, or choose \
         another path"
    );
    assert_eq!(host_read(&sb, "moved/hi.txt"), "hello\nworld\n");
    assert_eq!(host_read(&sb, "archive/docs/readme.md"), "# docs\n");
}

#[test]
fn mkdir_creates_parents_and_is_idempotent() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let out = ok(call(&tools, "mkdir", json!({"path": "a/b/c"})));
    assert_eq!(out, "created directory a/b/c");
    assert!(sb.ws.join("a/b/c").is_dir());
    let out = ok(call(&tools, "mkdir", json!({"path": "a/b/c"})));
    assert_eq!(out, "directory a/b/c already exists");
    let e = err(call(&tools, "mkdir", json!({"path": "hello.txt"})));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "hello.txt already exists and is a file, not a directory"
    );
    assert_eq!(host_read(&sb, "hello.txt"), "hello\nworld\n");
}

#[test]
fn delete_needs_recursive_for_a_non_empty_directory() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let out = ok(call(&tools, "delete", json!({"path": "hello.txt"})));
    assert_eq!(out, "deleted file hello.txt (12 bytes)");
    assert!(!sb.ws.join("hello.txt").exists());
    let e = err(call(&tools, "delete", json!({"path": "docs"})));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert_eq!(
        e.message,
        "docs is a directory with 1 entry; set recursive=true to delete it and everything in it"
    );
    assert_eq!(host_read(&sb, "docs/readme.md"), "# docs\n");
    let out = ok(call(
        &tools,
        "delete",
        json!({"path": "docs", "recursive": true}),
    ));
    assert_eq!(
        out,
        "deleted directory docs and everything in it: 1 file, 7 bytes"
    );
    assert!(!sb.ws.join("docs").exists());
    std::fs::create_dir(sb.ws.join("empty")).unwrap();
    let out = ok(call(&tools, "delete", json!({"path": "empty"})));
    assert_eq!(out, "deleted empty directory empty");
    assert!(!sb.ws.join("empty").exists());
    let e = err(call(&tools, "delete", json!({"path": "nope"})));
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert_eq!(e.message, "no such file or directory: nope");
}

/// Makes a named pipe at workspace path `rel` (Linux and macOS `mkfifo`).
pub(super) fn host_mkfifo(sb: &Sandbox, rel: &str) {
    let status = std::process::Command::new("mkfifo")
        .arg(sb.ws.join(rel))
        .status()
        .expect("running mkfifo");
    assert!(status.success(), "mkfifo {rel} failed");
}

/// Opening a named pipe waits, in the host, for its other end, and no time
/// limit can stop a host call: every built-in tool that would open one
/// refuses it first (a copy of a tree leaves it out, a copy with overwrite
/// replaces one at the destination), so the call ends.
#[test]
fn named_pipes_are_refused_at_once_never_waited_for() {
    let sb = Sandbox::new();
    host_mkfifo(&sb, "pipe");
    host_mkfifo(&sb, "dest-pipe");
    std::os::unix::fs::symlink("pipe", sb.ws.join("link-to-pipe")).unwrap();
    host_write(&sb, "tree/a.txt", "a\n");
    host_mkfifo(&sb, "tree/p");
    let tools = sb.toolset(&[]);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let refused = [
            ("read_file", json!({"path": "pipe"})),
            ("grep", json!({"pattern": "x", "path": "pipe"})),
            (
                "edit_file",
                json!({"path": "pipe", "old_text": "a", "new_text": "b"}),
            ),
            ("write_file", json!({"path": "pipe", "content": "x"})),
            (
                "write_file",
                json!({"path": "link-to-pipe", "content": "x"}),
            ),
            ("copy", json!({"from": "pipe", "to": "pipe2"})),
        ]
        .map(|(name, args)| (name, err(call(&tools, name, args))));
        let kept = err(call(
            &tools,
            "copy",
            json!({"from": "hello.txt", "to": "dest-pipe"}),
        ));
        let replaced = ok(call(
            &tools,
            "copy",
            json!({"from": "hello.txt", "to": "dest-pipe", "overwrite": true}),
        ));
        let tree = ok(call(&tools, "copy", json!({"from": "tree", "to": "tree2"})));
        let grep = ok(call(&tools, "grep", json!({"pattern": "a", "path": "."})));
        let after = ok(call(&tools, "read_file", json!({"path": "hello.txt"})));
        tx.send((refused, kept, replaced, tree, grep, after))
            .unwrap();
    });
    let (refused, kept, replaced, tree, grep, after) = rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the calls did not finish: a panic above, or a call waiting on a named pipe");
    for (name, e) in refused {
        assert_eq!(e.kind, ErrorKind::InvalidArgs, "{name}: {}", e.message);
        assert!(
            e.message.contains(
                "pipe is a special file (a named pipe, socket or device), not a regular file"
            ),
            "{name}: {}",
            e.message
        );
    }
    assert!(
        kept.message
            .contains("dest-pipe already exists (a special file)"),
        "{}",
        kept.message
    );
    assert!(
        replaced.contains("copied file hello.txt to dest-pipe"),
        "{replaced}"
    );
    assert_eq!(host_read(&sb, "dest-pipe"), "hello\nworld\n");
    assert!(
        tree.contains("; skipped 1 special file (a named pipe, socket or device): ")
            && tree.contains("tree/p"),
        "{tree}"
    );
    assert_eq!(host_read(&sb, "tree2/a.txt"), "a\n");
    assert!(!sb.ws.join("tree2/p").exists() && !sb.ws.join("pipe2").exists());
    assert!(grep.contains("tree/a.txt:1: a"), "{grep}");
    assert!(after.contains("hello"));
    // The pipe itself is untouched.
    use std::os::unix::fs::FileTypeExt;
    let meta = std::fs::symlink_metadata(sb.ws.join("pipe")).unwrap();
    assert!(meta.file_type().is_fifo());
}

/// WASI passes names as UTF-8 strings, so an entry whose name is not valid
/// UTF-8 cannot be handed to a tool: a walk leaves it out, names the
/// directory it is in, and goes on with everything else.
#[test]
fn a_name_that_is_not_utf8_is_skipped_and_its_directory_named() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    let sb = Sandbox::new();
    host_write(&sb, "tree/a.txt", "needle a\n");
    host_write(&sb, "tree/sub/b.txt", "needle b\n");
    let bad = sb
        .ws
        .join("tree/sub")
        .join(OsStr::from_bytes(b"bad\xff.txt"));
    std::fs::write(&bad, "needle bad\n").unwrap();
    let tools = sb.toolset(&[]);
    let note = "[skipped 1 entry whose name is not valid UTF-8 (tools cannot name it), \
                in: tree/sub/; rename it from a shell to include it]";

    let out = ok(call(&tools, "list_files", json!({"path": "tree"})));
    assert_eq!(out, format!("tree/\n  sub/\n    b.txt\n  a.txt\n{note}"));
    let out = ok(call(&tools, "glob", json!({"pattern": "tree/**/*.txt"})));
    assert!(out.starts_with("tree/a.txt\ntree/sub/b.txt\n"), "{out}");
    assert!(out.ends_with(note), "{out}");
    let out = ok(call(
        &tools,
        "grep",
        json!({"pattern": "needle", "path": "tree"}),
    ));
    assert!(out.contains("tree/a.txt:1: needle a"), "{out}");
    assert!(out.contains("tree/sub/b.txt:1: needle b"), "{out}");
    assert!(!out.contains("needle bad"), "{out}");
    assert!(out.contains(note), "{out}");
    assert!(bad.exists(), "the file itself is left alone");
}
