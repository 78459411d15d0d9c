//! The `warden` binary: output, exit codes, policy errors.

use warden_tests::{Run, Sandbox, run};

fn warden(sb: &Sandbox, args: &[&str]) -> Run {
    run(sb.warden().args(args))
}

const BUILTINS: [&str; 17] = [
    "read_file",
    "write_file",
    "edit_file",
    "list_files",
    "glob",
    "grep",
    "copy",
    "move",
    "mkdir",
    "delete",
    "fetch",
    "web_search",
    "shell",
    "list_apps",
    "open_app",
    "close_app",
    "browse",
];

#[test]
fn tools_list_shows_every_builtin_with_source_and_access() {
    let sb = Sandbox::new();
    let r = warden(&sb, &["tools", "list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut lines = r.stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "SOURCE", "ACCESS", "DESCRIPTION"]);
    let rows: Vec<Vec<&str>> = lines
        .map(|l| l.split_whitespace().take(3).collect())
        .collect();
    let expected: Vec<Vec<&str>> = BUILTINS
        .iter()
        .map(|n| {
            // Tools that only look get the workspace read-only.
            let looks = ["read_file", "list_files", "glob", "grep"].contains(n);
            // The web tools, shell and the desktop tools are off until a
            // section names them.
            let web = BUILTINS[10..].contains(n);
            let access = if web {
                "disabled"
            } else if looks {
                "ro:."
            } else {
                "rw:."
            };
            vec![*n, "builtin", access]
        })
        .collect();
    assert_eq!(rows, expected);
    assert_eq!(
        r.stderr,
        "note: disabled tools are enabled by a `[tools.NAME]` section in warden.toml\n"
    );

    let r = warden(&sb, &["tools", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let names: Vec<&str> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, BUILTINS);
    let read = &v["tools"][0];
    assert_eq!(read["origin"], "builtin");
    assert_eq!(read["enabled"], true);
    assert_eq!(read["mutates"], false);
    assert_eq!(
        read["grants"]["caps"][0],
        serde_json::json!({"kind": "dir", "path": sb.ws.display().to_string(), "write": false})
    );
    assert_eq!(v["tools"][1]["mutates"], true);
}

#[test]
fn tools_inspect_shows_the_schema_and_resolves_aliases() {
    let sb = Sandbox::new();
    let r = warden(&sb, &["tools", "inspect", "cat"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("read_file\n"), "{}", r.stdout);
    assert!(r.stdout.contains("mutates:  no"));
    assert!(r.stdout.contains("access:   ro:."), "{}", r.stdout);
    assert!(
        r.stdout
            .contains("limits:   memory 256MiB, timeout 30s, output 256KiB"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("\"path\""));
    let r = warden(&sb, &["tools", "inspect", "write_file", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["spec"]["name"], "write_file");
    assert_eq!(v["spec"]["mutates"], true);
    assert_eq!(v["hash"].as_str().unwrap().len(), 64);
    let r = warden(&sb, &["tools", "inspect", "nope"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("no tool named `nope`") && r.stderr.contains("warden tools list"),
        "{}",
        r.stderr
    );
}

#[test]
fn tools_call_prints_the_result_and_sets_the_exit_code() {
    let sb = Sandbox::new();
    let r = warden(
        &sb,
        &["tools", "call", "read_file", r#"{"path":"hello.txt"}"#],
    );
    assert_eq!(
        (r.code, r.stdout.as_str(), r.stderr.as_str()),
        (0, "     1\thello\n     2\tworld\n", "")
    );

    let r = warden(
        &sb,
        &[
            "tools",
            "call",
            "write_file",
            r#"{"path":"a/b/c.txt","content":"made"}"#,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("a/b/c.txt")).unwrap(),
        "made"
    );

    let r = warden(
        &sb,
        &[
            "tools",
            "call",
            "read_file",
            r#"{"path":"../outside/secret.txt"}"#,
        ],
    );
    assert_eq!(r.code, 1);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr
            .starts_with("error (denied): ../outside/secret.txt is outside"),
        "{}",
        r.stderr
    );

    let r = warden(&sb, &["tools", "call", "read_file", r#"{"path":}"#]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .starts_with("error (invalid arguments): arguments for `read_file` are not valid JSON"),
        "{}",
        r.stderr
    );

    let r = warden(&sb, &["tools", "call", "no_such_tool"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("there is no tool named `no_such_tool`"),
        "{}",
        r.stderr
    );

    let r = warden(
        &sb,
        &[
            "tools",
            "call",
            "read_file",
            r#"{"path":"hello.txt"}"#,
            "--json",
        ],
    );
    assert_eq!(r.code, 0);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["tool"], "read_file");
    assert_eq!(v["result"]["Ok"], "     1\thello\n     2\tworld\n");
}

#[test]
fn an_invalid_policy_names_the_line_column_and_expectation() {
    let sb = Sandbox::new();
    sb.policy("[tools.read_file]\nread = \"docs\"\n");
    // Accepting it fails with the place and what was expected.
    let r = warden(&sb, &["trust"]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("warden.toml at line 2, column 8"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("invalid type: string \"docs\", expected a sequence"),
        "{}",
        r.stderr
    );
    assert_eq!(r.stdout, "");
    // Untrusted, it is not applied, and every command says why.
    for args in [&["tools", "list"][..], &["policy"]] {
        let r = warden(&sb, args);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains("line 2, column 8"), "{}", r.stderr);
        assert!(r.stderr.contains("warden trust"), "{}", r.stderr);
    }
    sb.policy("[tools.read_file]\nwrite = [\".\"]\ntimeout = \"forever\"\n");
    let r = warden(&sb, &["trust"]);
    assert!(
        r.stderr.contains("line 3, column 11") && r.stderr.contains("not a duration"),
        "{}",
        r.stderr
    );
}

#[test]
fn policy_prints_every_tools_effective_grants() {
    let sb = Sandbox::new();
    sb.policy(
        "[limits]\ntimeout = \"10s\"\n[tools.read_file]\nread = [\"docs\"]\nenv = [\"LANG\"]\nmemory = \"64MiB\"\n\
         [tools.delete]\nenabled = false\n[tools.ghost]\n[tools.grep]\nread = [\"missing\"]\n",
    );
    sb.trust();
    let r = warden(&sb, &["policy"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let ws = sb.ws.display();
    assert!(r.stdout.contains(&format!(
        "read_file (builtin):\n  files:    read-only  {ws}/docs\n  env:      LANG\n  network:  none\n  limits:   memory 64MiB, timeout 10s, output 256KiB\n"
    )), "{}", r.stdout);
    assert!(
        r.stdout.contains(&format!(
            "write_file (builtin):\n  files:    read-write {ws}\n"
        )),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("delete (builtin): disabled\n"));
    assert!(
        r.stdout.contains("grep (builtin):\n  files:    none\n"),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr.contains("`[tools.ghost]` names no loaded tool"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("directory `missing` granted to `grep` does not exist"),
        "{}",
        r.stderr
    );

    let r = warden(&sb, &["policy", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(v["policy_present"], true);
    let read = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "read_file")
        .unwrap();
    assert_eq!(read["grants"]["limits"]["memory"], 64 << 20);
    assert_eq!(read["grants"]["limits"]["timeout"], 10_000);
    assert!(
        read["grants"]["caps"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!({"kind": "env", "name": "LANG"})),
        "{read}"
    );
}

#[test]
fn a_missing_workspace_is_a_clear_error() {
    let sb = Sandbox::new();
    let r = warden(
        &sb,
        &["--workspace", "/nonexistent/warden", "tools", "list"],
    );
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("workspace /nonexistent/warden does not exist"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_bash_completion_loads_and_every_shell_gets_one() {
    let sb = Sandbox::new();
    let bin = warden_tests::warden_bin();
    let script = format!(
        "source <('{}' completions bash) && complete -p warden",
        bin.display()
    );
    let r = run(std::process::Command::new("bash").args(["-c", &script]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("complete "), "{}", r.stdout);
    assert!(r.stdout.contains(" -F _warden "), "{}", r.stdout);
    assert!(r.stdout.trim_end().ends_with(" warden"), "{}", r.stdout);
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let r = warden(&sb, &["completions", shell]);
        assert_eq!(r.code, 0, "{shell}: {}", r.stderr);
        // Made from the same definitions as the parser: the new commands
        // and their flags are in it.
        for word in ["init", "doctor", "model-check", "completions"] {
            assert!(r.stdout.contains(word), "{shell} lacks {word}");
        }
    }
    let r = warden(&sb, &["completions", "tcsh"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("invalid value 'tcsh'"), "{}", r.stderr);
}

#[test]
fn the_manual_page_comes_from_the_parser() {
    let sb = Sandbox::new();
    let page = warden(&sb, &["man"]);
    assert_eq!(page.code, 0, "{}", page.stderr);
    assert!(
        page.stdout.starts_with(".ie \\n(.g .ds Aq"),
        "{}",
        page.stdout
    );
    assert!(page.stdout.contains(".TH warden 1"), "{}", page.stdout);
    for word in ["init", "doctor", "models", "completions"] {
        assert!(page.stdout.contains(word), "the page lacks {word}");
    }
    let dir = sb.home.join("man");
    let r = warden(&sb, &["man", "--dir", dir.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for page in [
        "warden.1",
        "warden-init.1",
        "warden-doctor.1",
        "warden-tools-call.1",
    ] {
        let text =
            std::fs::read_to_string(dir.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH "), "{page}");
    }
    let doctor = std::fs::read_to_string(dir.join("warden-doctor.1")).unwrap();
    assert!(doctor.contains("model\\-check"), "{doctor}");
}

#[test]
fn a_shell_without_a_directory_is_told_what_to_add() {
    let sb = Sandbox::new();
    sb.policy("[tools.shell]\nexec = [\"sh\"]\n");
    sb.trust();
    let r = warden(&sb, &["tools", "call", "shell", r#"{"command":"true"}"#]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(
        r.stderr,
        "error (denied): this tool has no directory grant to run a program in: add `write = \
         [\".\"]` (the workspace, read-write) or `read = [\".\"]` to its [tools.NAME] section \
         in warden.toml, then run `warden trust`\n"
    );
}
