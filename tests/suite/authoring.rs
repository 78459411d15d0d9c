//! Writing a tool in Rust, Python and JavaScript as a user does:
//! `warden tools new` → build → `warden tools add` → `[tools.NAME]` in
//! warden.toml → `warden trust` → `warden tools call`.
//!
//! The Python and JavaScript tests need componentize-py and componentize-js
//! (`make authoring-toolchains` installs both; `.ci/run` does it on CI, where
//! `WARDEN_REQUIRE_AUTHORING=1` turns a missing toolchain into a failure).
//! Locally they skip with a message that says what to install.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use warden_tests::{Run, Sandbox, run, run_ok};

/// The repository root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The folder where the toolchains and build caches of these tests live.
fn authoring_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    target.join("authoring")
}

/// `None` (and a message) when `what` is missing and CI does not require it.
fn toolchain(what: &str, found: bool) -> Option<()> {
    if found {
        return Some(());
    }
    let msg = format!(
        "{what} is not installed: run `make authoring-toolchains` (pip and npm) to run this test"
    );
    if std::env::var_os("WARDEN_REQUIRE_AUTHORING").is_some() {
        panic!("{msg}");
    }
    eprintln!("skipped: {msg}");
    None
}

/// Runs a build step; panics with its output when it fails.
fn build(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `warden tools new NAME --lang LANG` next to the workspace; the project.
fn scaffold(sb: &Sandbox, name: &str, lang: &str) -> PathBuf {
    let base = sb.ws.parent().unwrap().join("projects");
    std::fs::create_dir_all(&base).unwrap();
    let out = run_ok(
        sb.warden()
            .args(["tools", "new", name, "--lang", lang, "--dir"])
            .arg(&base),
    );
    let project = base.join(name);
    assert!(out.contains("README.md"), "{out}");
    let readme = std::fs::read_to_string(project.join("README.md")).unwrap();
    assert!(readme.contains("## Build"), "{readme}");
    assert!(
        project.join("wit/tool.wit").is_file()
            || project.join("warden-tool/wit/tool.wit").is_file()
    );
    // Never over an existing folder.
    let again = run(sb
        .warden()
        .args(["tools", "new", name, "--lang", lang, "--dir"])
        .arg(&base));
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(again.stderr.contains("already exists"), "{}", again.stderr);
    project
}

fn call(sb: &Sandbox, name: &str, args: &str) -> Run {
    run(sb.warden().args(["tools", "call", name, args]))
}

fn call_json(sb: &Sandbox, name: &str, args: &str) -> Value {
    let r = run(sb.warden().args(["tools", "call", "--json", name, args]));
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

/// Installs `wasm` with `warden tools add`, enables and trusts it, and
/// checks what the example tool does: its output, a schema error for bad
/// arguments, and its error for a text without words. Returns the JSON
/// outcome of that failing call.
fn install_and_call(sb: &Sandbox, wasm: &Path, name: &str) -> Value {
    let bytes = std::fs::read(wasm).unwrap();
    let r = run(sb.warden().args(["tools", "add"]).arg(wasm));
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A large component says it is compiling instead of pausing silently.
    if bytes.len() > 4 << 20 {
        assert!(
            r.stderr.contains("compiling") && r.stderr.contains(" MiB)"),
            "{}",
            r.stderr
        );
    }
    let installed = sb.ws.join(format!(".warden/tools/{name}.wasm"));
    assert_eq!(std::fs::read(&installed).unwrap(), bytes);
    assert!(
        r.stdout.contains(&format!("\n[tools.{name}]\n")),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("warden trust"), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("text (string, required), unique (boolean)"),
        "{}",
        r.stdout
    );
    // `add` grants nothing: no warden.toml, and the tool cannot run.
    assert!(!sb.ws.join("warden.toml").exists());
    let denied = call(sb, name, r#"{"text":"a b"}"#);
    assert_eq!(denied.code, 2, "{}", denied.stderr);

    sb.policy(&format!("[tools.{name}]\n"));
    sb.trust();
    let r = call(sb, name, r#"{"text":"one two two"}"#);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "3 words\n"),
        "{}",
        r.stderr
    );
    let r = call(sb, name, r#"{"text":"one two two","unique":true}"#);
    assert_eq!(
        (r.code, r.stdout.as_str()),
        (0, "2 words\n"),
        "{}",
        r.stderr
    );

    // The schema is checked before the guest runs.
    let r = call(sb, name, r#"{"txt":"one"}"#);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.starts_with("error (invalid arguments):") && r.stderr.contains("text"),
        "{}",
        r.stderr
    );
    let r = call(sb, name, r#"{"text":3}"#);
    assert!(
        r.stderr.starts_with("error (invalid arguments):"),
        "{}",
        r.stderr
    );

    let outcome = call_json(sb, name, r#"{"text":"   "}"#);
    assert!(
        outcome["result"]["Err"]["message"]
            .as_str()
            .unwrap()
            .contains("the text has no words; give some text to count"),
        "{outcome}"
    );
    outcome
}

#[test]
fn a_rust_tool_from_the_scaffold() {
    let sb = Sandbox::with_own_cache();
    let project = scaffold(&sb, "count_words", "rust");
    // One target folder across runs: the SDK's dependencies build once.
    let target = authoring_dir().join("rust-target");
    build(
        Command::new("cargo")
            .args(["build", "--release", "--target", "wasm32-wasip2"])
            .current_dir(&project)
            .env("CARGO_TARGET_DIR", &target),
    );
    let wasm = target.join("wasm32-wasip2/release/count_words.wasm");
    let outcome = install_and_call(&sb, &wasm, "count_words");
    assert_eq!(
        outcome["result"]["Err"]["kind"], "invalid_args",
        "{outcome}"
    );
}

/// The SDK example that writes a file (`examples/tools/rust-note`)
/// declares its effect on a field: dropped in, its call is previewed as a
/// diff, and `warden undo` puts the file back.
#[test]
fn a_rust_sdk_tool_that_declares_its_write_gets_a_diff_and_an_undo() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let target = authoring_dir().join("rust-target");
    build(
        Command::new("cargo")
            .args([
                "build",
                "--release",
                "--locked",
                "--target",
                "wasm32-wasip2",
            ])
            .current_dir(repo().join("examples/tools/rust-note"))
            .env("CARGO_TARGET_DIR", &target),
    );
    let sb = Sandbox::new();
    sb.drop_in(
        target
            .join("wasm32-wasip2/release/save_note.wasm")
            .to_str()
            .unwrap(),
        "save_note.wasm",
    );
    sb.policy("[tools.save_note]\nwrite = [\".\"]\n");
    sb.trust();
    let args = serde_json::json!({"path": "hello.txt", "text": "hello\nnotes\n"}).to_string();
    let mock = MockLlm::start(vec![calls(&[("n", "save_note", &args)]), answer("Saved.")]);
    let r = sb.run_in_terminal(&mock.base_url(), "save a note", "y\n");
    assert_eq!(r.code, 0, "{}", r.stdout);
    let screen = &r.stdout;
    assert!(screen.contains("write hello.txt (+1 -1 lines)"), "{screen}");
    assert!(
        screen.contains("- world") && screen.contains("+ notes"),
        "{screen}"
    );
    assert!(
        screen
            .contains("(as `save_note` declares it; what it can change is what it is granted: .)"),
        "{screen}"
    );
    assert!(screen.contains("changed: hello.txt"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nnotes\n"
    );
    let undo = run(sb.warden().arg("undo"));
    assert_eq!(undo.code, 0, "{}", undo.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
}

#[test]
fn a_python_tool_from_the_scaffold() {
    let found = Command::new("componentize-py")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if toolchain("componentize-py", found).is_none() {
        return;
    }
    let sb = Sandbox::with_own_cache();
    let project = scaffold(&sb, "count_words", "python");
    build(
        Command::new("componentize-py")
            .args([
                "-d",
                "wit",
                "-w",
                "warden:tool/component",
                "componentize",
                "app",
            ])
            .args(["-o", "count_words.wasm"])
            .current_dir(&project),
    );
    let outcome = install_and_call(&sb, &project.join("count_words.wasm"), "count_words");
    // An uncaught exception: a tool error with its message, the traceback
    // in the call's stderr record.
    assert_eq!(outcome["result"]["Err"]["kind"], "failed", "{outcome}");
    assert_eq!(
        outcome["result"]["Err"]["message"],
        "ValueError: the text has no words; give some text to count"
    );
    let stderr = outcome["stderr"].as_str().unwrap();
    assert!(
        stderr.contains("Traceback (most recent call last)") && stderr.contains("app.py"),
        "{stderr}"
    );
}

/// The project-local componentize-js (`make authoring-toolchains`).
fn node_modules() -> PathBuf {
    authoring_dir().join("js/node_modules")
}

#[test]
fn a_javascript_tool_from_the_scaffold() {
    let found = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
        && node_modules()
            .join("@bytecodealliance/componentize-js/package.json")
            .is_file();
    if toolchain("node with componentize-js", found).is_none() {
        return;
    }
    let sb = Sandbox::with_own_cache();
    let project = scaffold(&sb, "count_words", "js");
    // What `npm install` would put there, from the project-local install.
    std::os::unix::fs::symlink(node_modules(), project.join("node_modules")).unwrap();
    build(
        Command::new("node")
            .args(["build.mjs"])
            .current_dir(&project),
    );
    let outcome = install_and_call(&sb, &project.join("count_words.wasm"), "count_words");
    // A thrown Error: a tool error with its message, the stack on stderr.
    assert_eq!(outcome["result"]["Err"]["kind"], "failed", "{outcome}");
    assert_eq!(
        outcome["result"]["Err"]["message"],
        "Error: the text has no words; give some text to count"
    );
    let stderr = outcome["stderr"].as_str().unwrap();
    assert!(stderr.contains("the text has no words"), "{stderr}");
}

#[test]
fn add_refuses_what_is_not_a_tool_and_keeps_what_exists() {
    let sb = Sandbox::new();
    let junk = sb.ws.parent().unwrap().join("junk.wasm");
    std::fs::write(&junk, b"\0asm garbage").unwrap();
    let r = run(sb.warden().args(["tools", "add"]).arg(&junk));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("was not installed"), "{}", r.stderr);
    assert!(!sb.ws.join(".warden/tools/junk.wasm").exists());

    let r = run(sb.warden().args(["tools", "add", "README.md"]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("not a .wasm file"), "{}", r.stderr);

    // Another file of the same name is kept unless --force.
    let dir = sb.ws.join(".warden/tools");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("uppercase.wasm"), b"mine").unwrap();
    let r = run(sb
        .warden()
        .args(["tools", "add", warden_tests::guests::UPPERCASE]));
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--force"), "{}", r.stderr);
    assert_eq!(std::fs::read(dir.join("uppercase.wasm")).unwrap(), b"mine");
    let r = run(sb
        .warden()
        .args(["tools", "add", "--force", warden_tests::guests::UPPERCASE]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read(dir.join("uppercase.wasm")).unwrap(),
        std::fs::read(warden_tests::guests::UPPERCASE).unwrap()
    );
}

#[test]
fn add_does_not_follow_a_planted_symlink() {
    let sb = Sandbox::new();
    // A cloned repository can hold `.warden` as a link to anywhere.
    std::os::unix::fs::symlink(&sb.outside, sb.ws.join(".warden")).unwrap();
    let before = sb.outside_snapshot();
    let r = run(sb
        .warden()
        .args(["tools", "add", warden_tests::guests::UPPERCASE]));
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert_eq!(sb.outside_snapshot(), before);
    assert!(!sb.outside.join("tools").exists());
}

#[test]
fn add_user_installs_into_the_user_tools_folder() {
    let sb = Sandbox::new();
    let r = run(sb
        .warden()
        .args(["tools", "add", "--user", warden_tests::guests::UPPERCASE]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let installed = sb.home.join("data/warden/tools/uppercase.wasm");
    assert!(installed.is_file());
    assert!(!sb.ws.join(".warden").exists());
    assert!(r.stdout.contains("[tools.uppercase]"), "{}", r.stdout);
    // A user tool too runs only once warden.toml names it and is trusted.
    let r = run(sb
        .warden()
        .args(["tools", "call", "uppercase", r#"{"text":"hi"}"#]));
    assert_eq!(r.code, 2, "{}", r.stdout);
    sb.policy("[tools.uppercase]\n");
    sb.trust();
    let list = run_ok(sb.warden().args(["tools", "list"]));
    let row = list.lines().find(|l| l.starts_with("uppercase")).unwrap();
    assert!(row.contains("user") && row.contains("no access"), "{row}");
    let out = run_ok(
        sb.warden()
            .args(["tools", "call", "uppercase", r#"{"text":"hi"}"#]),
    );
    assert_eq!(out, "HI\n");
}

#[test]
fn names_from_a_component_are_escaped() {
    // `new` refuses a name that is not snake_case, escaped in the message.
    let sb = Sandbox::new();
    let r = run(sb
        .warden()
        .args(["tools", "new", "bad\x1b[31mname", "--lang", "rust"]));
    assert_eq!(r.code, 2);
    assert!(!r.stderr.contains('\x1b'), "{:?}", r.stderr);
    assert!(r.stderr.contains("not a tool name"), "{}", r.stderr);
}

#[test]
fn compile_ahead_of_time_fills_the_cache() {
    let sb = Sandbox::with_own_cache();
    let compiled = |out: &str| -> usize {
        out.split(" component(s) compiled")
            .next()
            .and_then(|n| n.rsplit('\n').next())
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("{out}"))
    };
    let first = run_ok(sb.warden().args(["tools", "compile"]));
    assert!(compiled(&first) >= 1, "{first}");
    let second = run_ok(sb.warden().args(["tools", "compile"]));
    assert_eq!(compiled(&second), 0, "{second}");
    // The next start compiles nothing, and lists the tools without
    // loading a component.
    let json = run_ok(sb.warden().args(["tools", "list", "--json"]));
    let doc: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["cache"]["compiled"], 0, "{json}");
    assert_eq!(doc["cache"]["reused"], 0, "{json}");
}
