//! Drop-in components: found, listed, enabled only by the policy, confined to
//! exactly the grants written there; broken ones are reported, not fatal.

use serde_json::json;
use warden_sandbox::ErrorKind;
use warden_tests::{Sandbox, err, guests, ok, run, run_ok, test_host, workspace_source};

fn list(sb: &Sandbox) -> (String, String) {
    let r = run(sb.warden().args(["tools", "list"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    (r.stdout, r.stderr)
}

fn row<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
        .unwrap_or_else(|| panic!("no row for {name} in:\n{table}"))
}

#[test]
fn a_dropped_in_tool_is_listed_and_callable_once_enabled() {
    let sb = Sandbox::new();
    sb.drop_in(guests::UPPERCASE, "uppercase.wasm");
    std::fs::write(sb.ws.join(".warden/tools/corrupt.wasm"), b"\0asm garbage").unwrap();
    sb.trust();

    let (stdout, stderr) = list(&sb);
    let r = row(&stdout, "uppercase");
    assert!(r.contains("workspace") && r.contains("disabled"), "{r}");
    assert!(
        stderr.contains("corrupt.wasm") && stderr.contains("not a valid WebAssembly component"),
        "{stderr}"
    );
    assert!(row(&stdout, "read_file").contains("ro:."));
    assert!(row(&stdout, "write_file").contains("rw:."));

    let r = run(sb
        .warden()
        .args(["tools", "call", "uppercase", r#"{"text":"hi"}"#]));
    assert_eq!(r.code, 1);
    assert_eq!(
        r.stderr,
        "error (unknown tool): tool `uppercase` is installed but not enabled in this workspace \
         (the user can enable it with a `[tools.uppercase]` section in warden.toml)\n"
    );

    sb.policy("[tools.uppercase]\n");
    sb.trust();
    let (stdout, _) = list(&sb);
    assert!(row(&stdout, "uppercase").contains("no access"), "{stdout}");
    for name in ["uppercase", "upper"] {
        let stdout = run_ok(
            sb.warden()
                .args(["tools", "call", name, r#"{"text":"hi"}"#]),
        );
        assert_eq!(
            stdout,
            "HI
"
        );
    }
}

#[test]
fn a_drop_in_gets_exactly_the_grants_written() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws.join("out")).unwrap();
    sb.policy("[tools.fs_probe]\nread = [\"docs\"]\nwrite = [\"out\"]\n");
    let tools = sb.toolset(&[guests::HOSTILE]);
    let probe = |op: &str, path: &str| {
        ok(tools.call(
            "fs_probe",
            &json!({"op": op, "path": path, "content": "data"}).to_string(),
        ))
    };
    assert!(probe("read", "docs/readme.md").starts_with("ok: # docs"));
    assert!(probe("write", "out/new.txt").starts_with("ok"));
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("out/new.txt")).unwrap(),
        "data"
    );
    for (op, path) in [
        ("read", "hello.txt"),
        ("list", "."),
        ("write", "docs/new.md"),
        ("write", "hello.txt"),
        ("delete", "docs/readme.md"),
        ("read", "../outside/secret.txt"),
        ("read", "/etc/passwd"),
    ] {
        let r = probe(op, path);
        assert!(r.starts_with("err"), "{op} {path} should fail: {r}");
    }
    let abs = sb.ws.join("docs/readme.md").display().to_string();
    assert!(probe("read", &abs).starts_with("ok: # docs"));
    assert!(!sb.ws.join("docs/new.md").exists());
    assert!(sb.ws.join("docs/readme.md").exists());

    // Without a section the drop-in is not callable at all.
    sb.policy("");
    let tools = sb.toolset(&[guests::HOSTILE]);
    let e = err(tools.call("fs_probe", r#"{"op":"read","path":"hello.txt"}"#));
    assert_eq!(e.kind, ErrorKind::UnknownTool);
    assert!(e.message.contains("not enabled"), "{e}");

    // A section without directories grants none.
    sb.policy("[tools.fs_probe]\n");
    let tools = sb.toolset(&[guests::HOSTILE]);
    let r = ok(tools.call("fs_probe", r#"{"op":"read","path":"hello.txt"}"#));
    assert!(r.starts_with("err"), "{r}");
}

#[test]
fn broken_components_are_reported_and_the_rest_still_load() {
    let sb = Sandbox::new();
    let core_module = sb.home.join("core.wasm");
    std::fs::write(&core_module, b"\0asm\x01\0\0\0").unwrap();
    let garbage = sb.home.join("garbage.wasm");
    std::fs::write(&garbage, b"this is not wasm").unwrap();
    let core_module = core_module.display().to_string();
    let garbage = garbage.display().to_string();
    let mut host = test_host(&sb.ws);
    host.load([warden_tests::builtin_fs()]);
    let cases: [(&str, &str); 10] = [
        (garbage.as_str(), "not a valid WebAssembly component"),
        (
            core_module.as_str(),
            "core WebAssembly module, not a component",
        ),
        (
            guests::NOT_A_TOOL,
            "does not export `warden:tool/tool@0.2.0` (nor 0.1.0)",
        ),
        (guests::BAD_SCHEMA, "parameters is not valid JSON"),
        (guests::BAD_SCHEMA_TYPE, "must describe an object"),
        (guests::DUP_NAMES, "two tools are named `dup`"),
        (guests::TRAP_DESCRIBE, "describe() failed"),
        (guests::BAD_NAME, "not snake_case"),
        (guests::CLASH, "`read_file` is already taken"),
        (guests::UPPERCASE, ""),
    ];
    host.load(cases.iter().map(|(p, _)| workspace_source(p)));
    let problems = host.problems();
    for (path, why) in &cases {
        let found = problems.iter().find(|p| p.location == *path);
        if why.is_empty() {
            assert!(found.is_none(), "{path} should load: {found:?}");
        } else {
            let p = found.unwrap_or_else(|| panic!("{path} should be reported"));
            assert!(p.reason.contains(why), "{path}: {}", p.reason);
        }
    }
    assert_eq!(problems.len(), 9);
    assert!(host.resolve("uppercase").is_some());
    assert_eq!(host.resolve("read_file").unwrap().location, "builtin:fs");
}

#[test]
fn user_tools_load_from_the_xdg_data_folder_and_cannot_be_shadowed() {
    let sb = Sandbox::new();
    let user_dir = sb.home.join("data/warden/tools");
    std::fs::create_dir_all(&user_dir).unwrap();
    std::fs::copy(guests::UPPERCASE, user_dir.join("uppercase.wasm")).unwrap();
    // A workspace component offering the same name is reported, not loaded.
    sb.drop_in(guests::UPPERCASE, "uppercase-again.wasm");
    sb.policy("[tools.uppercase]\n");
    sb.trust();
    let (stdout, stderr) = list(&sb);
    assert!(row(&stdout, "uppercase").contains("user"), "{stdout}");
    assert!(
        stderr.contains("uppercase-again.wasm") && stderr.contains("already taken"),
        "{stderr}"
    );
    let out = run_ok(
        sb.warden()
            .args(["tools", "call", "uppercase", r#"{"text":"ok"}"#]),
    );
    assert_eq!(out, "OK\n");
}
