//! Escapes through real tool calls fail, and nothing outside the workspace changes.

use serde_json::json;
use warden_sandbox::ErrorKind;
use warden_tests::Tools as Toolset;
use warden_tests::{Sandbox, err, guests, ok};

fn call(tools: &Toolset, name: &str, args: serde_json::Value) -> warden_sandbox::CallOutcome {
    tools.call(name, &args.to_string())
}

/// Every way to name the outside secret, relative and absolute.
fn outside_paths(sb: &Sandbox) -> Vec<String> {
    let abs = sb.outside.join("secret.txt").display().to_string();
    vec![
        "../outside/secret.txt".into(),
        "./../outside/secret.txt".into(),
        "docs/../../outside/secret.txt".into(),
        abs.clone(),
        format!("{}/../outside/secret.txt", sb.ws.display()),
        "/etc/passwd".into(),
    ]
}

#[test]
fn dotdot_and_absolute_paths_outside_cannot_be_read_or_written() {
    let sb = Sandbox::new();
    let before = sb.outside_snapshot();
    let tools = sb.toolset(&[]);
    for p in outside_paths(&sb) {
        let e = err(call(&tools, "read_file", json!({"path": p})));
        assert!(!e.message.contains("top secret"), "{p}: {e}");
        assert!(!e.message.contains("root:"), "{p}: {e}");
        let target = p
            .replace("secret.txt", "new.txt")
            .replace("passwd", "warden-pwn");
        err(call(
            &tools,
            "write_file",
            json!({"path": target, "content": "pwned"}),
        ));
        err(call(
            &tools,
            "edit_file",
            json!({"path": p, "old_text": "top", "new_text": "pwned"}),
        ));
        err(call(&tools, "delete", json!({"path": p})));
        err(call(&tools, "copy", json!({"from": p, "to": "stolen.txt"})));
        err(call(&tools, "move", json!({"from": p, "to": "stolen.txt"})));
        err(call(
            &tools,
            "copy",
            json!({"from": "hello.txt", "to": target}),
        ));
        err(call(
            &tools,
            "mkdir",
            json!({"path": p.replace("secret.txt", "newdir")}),
        ));
    }
    err(call(&tools, "list_files", json!({"path": "../outside"})));
    err(call(
        &tools,
        "list_files",
        json!({"path": sb.outside.display().to_string()}),
    ));
    let e = err(call(
        &tools,
        "grep",
        json!({"pattern": "secret", "path": "../outside"}),
    ));
    assert!(!e.message.contains("top secret"));
    assert_eq!(
        sb.outside_snapshot(),
        before,
        "something outside the workspace changed"
    );
    assert!(!sb.ws.join("stolen.txt").exists());
    assert!(!std::path::Path::new("/etc/warden-pwn").exists());
}

#[test]
fn symlinks_pointing_outside_lead_nowhere() {
    let sb = Sandbox::new();
    let abs_file = sb.outside.join("secret.txt");
    let links = [
        (
            "rel_file",
            std::path::PathBuf::from("../outside/secret.txt"),
        ),
        ("abs_file", abs_file.clone()),
        ("rel_dir", std::path::PathBuf::from("../outside")),
        ("abs_dir", sb.outside.clone()),
    ];
    for (name, target) in &links {
        std::os::unix::fs::symlink(target, sb.ws.join(name)).unwrap();
    }
    let before = sb.outside_snapshot();
    let tools = sb.toolset(&[]);
    for p in [
        "rel_file",
        "abs_file",
        "rel_dir/secret.txt",
        "abs_dir/secret.txt",
        "abs_dir/./secret.txt",
    ] {
        let e = err(call(&tools, "read_file", json!({"path": p})));
        assert!(!e.message.contains("top secret"), "{p}: {e}");
        err(call(
            &tools,
            "write_file",
            json!({"path": p, "content": "pwned"}),
        ));
        err(call(
            &tools,
            "edit_file",
            json!({"path": p, "old_text": "top", "new_text": "pwned"}),
        ));
        err(call(&tools, "copy", json!({"from": p, "to": "stolen.txt"})));
    }
    for dir in ["rel_dir", "rel_dir/", "abs_dir", "abs_dir/", "rel_dir/."] {
        let listed = call(&tools, "list_files", json!({"path": dir}));
        if let Ok(text) = &listed.result {
            panic!("listing {dir} through a symlink should fail, got: {text}");
        }
        err(call(
            &tools,
            "write_file",
            json!({"path": format!("{dir}/pwn.txt"), "content": "x"}),
        ));
        err(call(
            &tools,
            "mkdir",
            json!({"path": format!("{dir}/newdir")}),
        ));
        err(call(
            &tools,
            "delete",
            json!({"path": format!("{}/secret.txt", dir.trim_end_matches('/'))}),
        ));
        err(call(
            &tools,
            "move",
            json!({"from": "hello.txt", "to": format!("{dir}/moved.txt")}),
        ));
        let grep = call(
            &tools,
            "grep",
            json!({"pattern": "to[p] secret", "path": dir}),
        );
        assert!(
            !grep.model_text().contains("top secret"),
            "{dir}: {}",
            grep.model_text()
        );
    }
    // Searching the whole workspace does not follow the links out either.
    let grep = ok(call(&tools, "grep", json!({"pattern": "top secret"})));
    assert!(grep.starts_with("no matches for /top secret/"), "{grep}");
    assert_eq!(
        sb.outside_snapshot(),
        before,
        "something outside the workspace changed"
    );
    assert!(sb.ws.join("hello.txt").exists());
}

#[test]
fn read_only_grants_refuse_every_write() {
    let sb = Sandbox::new();
    sb.policy(
        "[tools.write_file]\nread = [\".\"]\n[tools.edit_file]\nread = [\".\"]\n\
         [tools.delete]\nread = [\".\"]\n[tools.mkdir]\nread = [\".\"]\n\
         [tools.move]\nread = [\".\"]\n[tools.copy]\nread = [\".\"]\n",
    );
    let tools = sb.toolset(&[]);
    let e = err(call(
        &tools,
        "write_file",
        json!({"path": "new.txt", "content": "x"}),
    ));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    assert!(e.message.contains("new.txt"), "{e}");
    err(call(
        &tools,
        "write_file",
        json!({"path": "hello.txt", "content": "x"}),
    ));
    err(call(
        &tools,
        "edit_file",
        json!({"path": "hello.txt", "old_text": "hello", "new_text": "bye"}),
    ));
    err(call(&tools, "delete", json!({"path": "hello.txt"})));
    err(call(&tools, "mkdir", json!({"path": "sub"})));
    err(call(
        &tools,
        "move",
        json!({"from": "hello.txt", "to": "moved.txt"}),
    ));
    err(call(
        &tools,
        "copy",
        json!({"from": "hello.txt", "to": "copied.txt"}),
    ));
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    for f in ["new.txt", "sub", "moved.txt", "copied.txt"] {
        assert!(!sb.ws.join(f).exists(), "{f} was created");
    }
}

#[test]
fn read_only_grant_inside_a_read_write_one_stays_read_only() {
    let sb = Sandbox::new();
    sb.policy(
        "[tools.write_file]\nwrite = [\".\"]\nread = [\"docs\"]\n\
         [tools.delete]\nwrite = [\".\"]\nread = [\"docs\"]\n",
    );
    let tools = sb.toolset(&[]);
    ok(call(
        &tools,
        "write_file",
        json!({"path": "top.txt", "content": "fine"}),
    ));
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("top.txt")).unwrap(),
        "fine"
    );
    let abs = sb.ws.join("docs/readme.md").display().to_string();
    for p in [
        "docs/readme.md",
        "./docs/readme.md",
        "docs/new.md",
        abs.as_str(),
    ] {
        let e = err(call(
            &tools,
            "write_file",
            json!({"path": p, "content": "pwned"}),
        ));
        assert_eq!(e.kind, ErrorKind::Denied, "{p}: {e}");
        err(call(&tools, "delete", json!({"path": p})));
    }
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("docs/readme.md")).unwrap(),
        "# docs\n"
    );
    assert!(!sb.ws.join("docs/new.md").exists());
}

#[test]
fn the_workspace_root_cannot_be_deleted() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let abs = sb.ws.display().to_string();
    for p in [".", "./", "", "/", abs.as_str(), "docs/..", "../ws"] {
        let e = err(call(
            &tools,
            "delete",
            json!({"path": p, "recursive": true}),
        ));
        assert!(
            matches!(
                e.kind,
                ErrorKind::Denied | ErrorKind::InvalidArgs | ErrorKind::NotFound
            ),
            "{p}: {e}"
        );
    }
    assert!(sb.ws.join("hello.txt").exists() && sb.ws.join("docs/readme.md").exists());
}

#[test]
fn nul_bytes_and_very_long_paths_are_rejected_cleanly() {
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    let long = "a/".repeat(5000) + "x.txt";
    for p in [
        "hello.txt\u{0}../../outside/secret.txt",
        "\u{0}",
        long.as_str(),
    ] {
        let e = err(call(&tools, "read_file", json!({"path": p})));
        assert!(!e.message.contains("top secret"));
        err(call(
            &tools,
            "write_file",
            json!({"path": p, "content": "x"}),
        ));
    }
    let huge = "b".repeat(100_000);
    err(call(
        &tools,
        "write_file",
        json!({"path": huge, "content": "x"}),
    ));
    // The host is still healthy afterwards.
    assert!(ok(call(&tools, "read_file", json!({"path": "hello.txt"}))).contains("hello"));
}

#[test]
fn a_guest_bypassing_libc_cannot_write_through_a_read_only_or_outside_path() {
    let sb = Sandbox::new();
    sb.policy("[tools.raw_write]\nread = [\".\"]\n[tools.fs_preopens]\nread = [\".\"]\n");
    let before = sb.outside_snapshot();
    let tools = sb.toolset(&[guests::HOSTILE]);
    let preopens = ok(call(&tools, "fs_preopens", json!({})));
    assert!(preopens.lines().any(|l| l.trim() == "."), "{preopens}");
    for path in [
        "hello.txt",
        "new.txt",
        "../outside/secret.txt",
        "../outside/new.txt",
    ] {
        let out = ok(call(
            &tools,
            "raw_write",
            json!({"preopen": ".", "path": path, "content": "pwned"}),
        ));
        assert!(out.starts_with("err"), "{path}: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert!(!sb.ws.join("new.txt").exists());
    assert_eq!(sb.outside_snapshot(), before);
}

#[test]
fn a_granted_directory_is_fixed_for_the_run_whatever_replaces_its_path() {
    // The directory opened when the toolset was bound is the one every call
    // uses: renaming it away, putting another folder or a symlink to the
    // outside in its place, changes nothing.
    let sb = Sandbox::new();
    sb.policy("[tools.read_file]\nread = [\"docs\"]\n");
    let tools = sb.toolset(&[]);
    let read = |tools: &Toolset| call(tools, "read_file", json!({"path": "docs/readme.md"}));
    assert_eq!(ok(read(&tools)), "     1\t# docs\n");

    std::fs::rename(sb.ws.join("docs"), sb.ws.join("docs-old")).unwrap();
    std::fs::create_dir(sb.ws.join("docs")).unwrap();
    std::fs::write(sb.ws.join("docs/readme.md"), "# new docs\n").unwrap();
    assert_eq!(ok(read(&tools)), "     1\t# docs\n");

    std::fs::remove_dir_all(sb.ws.join("docs")).unwrap();
    std::fs::write(sb.outside.join("readme.md"), "top secret\n").unwrap();
    std::os::unix::fs::symlink(&sb.outside, sb.ws.join("docs")).unwrap();
    assert_eq!(ok(read(&tools)), "     1\t# docs\n");
    let secret = call(&tools, "read_file", json!({"path": "docs/secret.txt"}));
    assert!(!secret.model_text().contains("top secret"), "{secret:?}");

    // Deleted for good: calls fail, and never reach anything else.
    std::fs::remove_file(sb.ws.join("docs")).unwrap();
    std::fs::remove_dir_all(sb.ws.join("docs-old")).unwrap();
    std::fs::create_dir(sb.ws.join("docs")).unwrap();
    std::fs::write(sb.ws.join("docs/readme.md"), "# new docs\n").unwrap();
    let again = read(&tools);
    assert!(!again.model_text().contains("new docs"), "{again:?}");
}
