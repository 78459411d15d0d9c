//! `warden init` through the real binary: the policy it writes for a Rust,
//! a Node and a Python folder passes `warden trust`, and with it `shell`
//! runs the toolchain; it never replaces a file; on a terminal it offers
//! the trust diff.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use warden_tests::{Sandbox, Terminal, run, run_ok};

/// A toolchain folder as this machine has it: the variable, else its
/// place under the real `HOME`.
fn real_home(var: &str, under_home: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(under_home)))
        .and_then(|p| p.canonicalize().ok())
        .unwrap_or_else(|| panic!("no {var} on this machine"))
}

/// `warden init` in the sandbox's workspace, with `env` added to the
/// private environment (`HOME` is the sandbox's own).
fn init(sb: &Sandbox, env: &[(&str, &PathBuf)]) -> String {
    let mut cmd = sb.warden();
    for (k, v) in env {
        cmd.env(k, v);
    }
    run_ok(cmd.arg("init"))
}

/// The shell's answer to `line`, run as the model would run it, with no
/// toolchain variable in warden's own environment.
fn shell(sb: &Sandbox, line: &str) -> String {
    let args = serde_json::json!({ "command": line }).to_string();
    let r = run(sb.warden().args(["tools", "call", "shell", &args]));
    assert_eq!(r.code, 0, "{line}: {}{}", r.stdout, r.stderr);
    r.stdout
}

/// What a program prints on the host for `--version`.
fn host_version(program: &str) -> Option<String> {
    let out = Command::new(program).arg("--version").output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    Some(text.trim().to_string())
}

#[test]
fn a_rust_folder_gets_cargo_with_the_rustup_and_cargo_homes() {
    let sb = Sandbox::new();
    std::fs::write(
        sb.ws.join("Cargo.toml"),
        "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::create_dir(sb.ws.join("src")).unwrap();
    std::fs::write(sb.ws.join("src/main.rs"), "fn main() {}\n").unwrap();
    let rustup = real_home("RUSTUP_HOME", ".rustup");
    let cargo = real_home("CARGO_HOME", ".cargo");
    let out = init(&sb, &[("RUSTUP_HOME", &rustup), ("CARGO_HOME", &cargo)]);
    assert!(out.starts_with(&format!(
        "wrote {} (Rust)\n",
        sb.ws.join("warden.toml").display()
    )));
    // The diff, then how to accept it (no terminal here).
    assert!(
        out.contains("  + tool shell (builtin): read-write "),
        "{out}"
    );
    for line in [
        format!("read-only {}", rustup.display()),
        format!("env RUSTUP_HOME={}", rustup.display()),
        format!("env CARGO_HOME={}", cargo.display()),
        "exec cargo".to_string(),
    ] {
        assert!(out.contains(&line), "{line} in\n{out}");
    }
    assert!(
        out.ends_with("not trusted yet: review it, then accept it with `warden trust`\n"),
        "{out}"
    );
    let file = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    assert!(
        file.contains("exec = [\"cargo\", \"rustc\", \"sh\"]\n"),
        "{file}"
    );
    assert!(file.contains("write = [\".\"]"), "{file}");
    sb.trust();
    let version = shell(&sb, "cargo --version");
    assert!(version.contains("cargo 1."), "{version}");
    // The toolchain's own folders are read-only to the commands.
    let denied = run(sb.warden().args([
        "tools",
        "call",
        "shell",
        &serde_json::json!({ "command": format!("touch {}/x", rustup.display()) }).to_string(),
    ]));
    assert!(!rustup.join("x").exists(), "{}", denied.stdout);
    assert!(
        denied.stdout.contains("Read-only file system") || denied.stdout.contains("denied"),
        "{}",
        denied.stdout
    );
}

#[test]
fn a_node_folder_gets_node_and_npm() {
    let Some(node) = host_version("node") else {
        // CI installs node for the authoring tests and says so.
        assert!(
            std::env::var_os("WARDEN_REQUIRE_AUTHORING").is_none(),
            "node is not installed"
        );
        eprintln!("skipped: node is not installed");
        return;
    };
    let sb = Sandbox::new();
    std::fs::write(sb.ws.join("package.json"), "{\"name\":\"demo\"}\n").unwrap();
    let out = init(&sb, &[]);
    assert!(out.contains("exec node"), "{out}");
    sb.trust();
    assert_eq!(
        shell(&sb, "node --version")
            .lines()
            .find(|l| l.starts_with('v')),
        Some(node.as_str())
    );
    let file = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    assert!(file.contains("exec = [\"node\", \"npm\""), "{file}");
}

#[test]
fn a_python_folder_gets_the_python_on_path() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws.join("pyproject.toml"), "[project]\nname = \"demo\"\n").unwrap();
    let out = init(&sb, &[]);
    assert!(out.contains("exec python3"), "{out}");
    sb.trust();
    // The same interpreter as the host's PATH gives, a version manager's
    // shim included (its folder is granted, and comes first on PATH).
    let host = host_version("python3").expect("python3 on PATH");
    let shown = shell(&sb, "python3 --version");
    assert!(shown.lines().any(|l| l == host), "{host} in\n{shown}");
}

#[test]
fn init_never_replaces_a_file_and_print_writes_nothing() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws.join("go.mod"), "module demo\n").unwrap();
    let printed = run_ok(sb.warden().args(["init", "--print"]));
    assert!(printed.contains("# Found here: go.mod (Go)."), "{printed}");
    assert!(!sb.ws.join("warden.toml").exists());
    sb.policy("# mine\n");
    let r = run(sb.warden().arg("init"));
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        format!(
            "error: {} already exists: `warden init` never replaces it. Edit it, or see what \
             init would write with `warden init --print`\n",
            sb.ws.join("warden.toml").display()
        )
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap(),
        "# mine\n"
    );
    // Nor a link planted in its place, dangling or not.
    std::fs::remove_file(sb.ws.join("warden.toml")).unwrap();
    std::os::unix::fs::symlink(sb.outside.join("planted.toml"), sb.ws.join("warden.toml")).unwrap();
    assert_eq!(run(sb.warden().arg("init")).code, 2);
    assert!(!sb.outside.join("planted.toml").exists());
}

#[test]
fn an_empty_folder_gets_the_defaults_and_grants_nothing_new() {
    let sb = Sandbox::new();
    let out = run_ok(sb.warden().arg("init"));
    let diff: Vec<&str> = out.lines().collect();
    assert_eq!(diff.len(), 4, "{out}");
    assert_eq!(
        diff[0],
        format!(
            "wrote {} (the built-in defaults)",
            sb.ws.join("warden.toml").display()
        )
    );
    // The file itself is all there is to accept.
    assert!(diff[2].starts_with("  + warden.toml sha256:"), "{out}");
    let file = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    assert!(file.contains("# [tools.shell]\n"), "{file}");
    assert!(!file.contains("\n[tools."), "{file}");
}

#[test]
fn on_a_terminal_init_offers_to_trust_what_it_wrote() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws.join("Makefile"), "all:\n\ttrue\n").unwrap();
    let mut cmd = sb.warden();
    cmd.arg("init");
    let mut t = Terminal::start(&cmd);
    let limit = Duration::from_secs(60);
    t.wait_for("Trust it now? [y/N] ", 1, limit);
    t.send("y\n");
    let (code, screen) = t.finish(limit);
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("exec make"), "{screen}");
    assert!(
        screen.contains("trusted: these apply from the next run on"),
        "{screen}"
    );
    let again = sb.trust();
    assert!(again.starts_with("nothing changed since"), "{again}");
}
