use std::time::Duration;

use super::*;
use crate::{McpLaunch, ModelSection};

fn dirs(g: &Grants) -> Vec<(PathBuf, bool)> {
    g.dirs().map(|(p, w)| (p.to_path_buf(), w)).collect()
}

fn ws() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("docs")).unwrap();
    std::fs::create_dir(d.path().join("out")).unwrap();
    d
}

fn parse(text: &str, ws: &Path) -> Result<Policy> {
    Policy::parse(text, &ws.join(POLICY_FILE), ws)
}

#[test]
fn builtins_default_to_their_baseline_and_dropins_to_nothing() {
    let d = ws();
    let p = Policy::defaults(d.path());
    let (g, w) = p.grants_for("write_file", Baseline::Workspace).unwrap();
    assert!(w.is_empty());
    assert_eq!(dirs(&g), vec![(d.path().canonicalize().unwrap(), true)]);
    assert_eq!(g.limits, Limits::default());
    assert_eq!(g.caps.len(), 1);
    assert!(g.needs_approval());
    // Tools that only look get the workspace read-only, and need no approval.
    let (g, _) = p.grants_for("read_file", Baseline::WorkspaceRead).unwrap();
    assert_eq!(dirs(&g), vec![(d.path().canonicalize().unwrap(), false)]);
    assert!(!g.needs_approval());
    // Web built-ins: enabled, with nothing.
    let (g, _) = p.grants_for("fetch", Baseline::Nothing).unwrap();
    assert!(g.caps.is_empty());
    assert!(p.grants_for("uppercase", Baseline::Off).is_none());
    assert!(p.grants_for("uppercase", Baseline::Off).is_none());
}

#[test]
fn a_section_enables_a_dropin_with_exactly_its_grants() {
    let d = ws();
    let p = parse(
        "[limits]\ntimeout = \"10s\"\n\n[tools.probe]\nread = [\"docs\"]\nwrite = [\"out\"]\nenv = [\"LANG\"]\nmemory = \"64MiB\"\n",
        d.path(),
    )
    .unwrap();
    let (g, _) = p.grants_for("probe", Baseline::Off).unwrap();
    let root = d.path().canonicalize().unwrap();
    assert_eq!(dirs(&g).len(), 2);
    assert!(dirs(&g).contains(&(root.join("docs"), false)));
    assert!(dirs(&g).contains(&(root.join("out"), true)));
    assert_eq!(g.env().collect::<Vec<_>>(), vec!["LANG"]);
    assert_eq!(g.limits.memory, 64 << 20);
    assert_eq!(g.limits.timeout, Duration::from_secs(10));
    assert_eq!(g.limits.output, Limits::default().output);
    assert_eq!(g.summary(&root), "rw:out ro:docs env:LANG");
}

#[test]
fn a_grant_outside_the_workspace_is_named_by_its_absolute_path() {
    let d = ws();
    let outside = tempfile::tempdir().unwrap();
    let out = outside.path().canonicalize().unwrap();
    let text = format!(
        "[tools.probe]\nwrite = [\".\", {:?}]\nread = [\"docs\"]\n",
        out.display().to_string()
    );
    let p = parse(&text, d.path()).unwrap();
    let (g, _) = p.grants_for("probe", Baseline::Off).unwrap();
    let root = d.path().canonicalize().unwrap();
    let want = format!("rw:. rw:{} ro:docs", out.display());
    assert_eq!(g.summary(&root), want);
    // Against `/` (no workspace to be relative to), every path stays
    // absolute: never `rw:tmp/...` with its leading `/` lost.
    let abs = g.summary(Path::new("/"));
    assert_eq!(
        abs,
        format!(
            "rw:{} rw:{} ro:{}",
            root.display(),
            out.display(),
            root.join("docs").display()
        )
    );
}

#[test]
fn env_passes_the_hosts_value_by_name_or_sets_one() {
    let d = ws();
    let p = parse(
        "[tools.shell]\nexec = [\"sh\"]\nenv = [\"LANG\", \"RUSTUP_HOME=/opt/rustup\", \"EMPTY=\"]\n",
        d.path(),
    )
    .unwrap();
    let (g, _) = p.grants_for("shell", Baseline::Off).unwrap();
    assert_eq!(
        g.env().collect::<Vec<_>>(),
        vec!["LANG", "RUSTUP_HOME", "EMPTY"]
    );
    let host =
        |name: &str| (name == "LANG" || name == "RUSTUP_HOME").then(|| format!("host-{name}"));
    // A set value wins over the host's; a name the host lacks is left out.
    assert_eq!(
        g.env_values(host),
        vec![
            ("LANG".to_string(), "host-LANG".to_string()),
            ("RUSTUP_HOME".to_string(), "/opt/rustup".to_string()),
            ("EMPTY".to_string(), String::new()),
        ]
    );
    assert_eq!(g.env_values(|_| None).len(), 2);
    let root = d.path().canonicalize().unwrap();
    assert_eq!(
        g.summary(&root),
        "env:LANG,RUSTUP_HOME=/opt/rustup,EMPTY= exec:sh"
    );
    let lines: Vec<String> = g.caps.iter().map(ToString::to_string).collect();
    assert!(
        lines.contains(&"env RUSTUP_HOME=/opt/rustup".to_string()),
        "{lines:?}"
    );
    assert!(lines.contains(&"env LANG".to_string()), "{lines:?}");
}

#[test]
fn bad_env_entries_say_what_is_wrong() {
    let d = ws();
    for (entry, says) in [
        ("\"1X=a\"", "`1X` is not an environment variable name"),
        ("\"=a\"", "`` is not an environment variable name"),
        ("\"A=a\\nb\"", "env `A`: a value must be one line"),
        ("\"A\", \"A=b\"", "env `A` is listed twice"),
    ] {
        let text = format!("[tools.shell]\nenv = [{entry}]\n");
        let e = parse(&text, d.path()).unwrap_err().to_string();
        assert!(e.contains(says), "{entry}: {e}");
    }
}

#[test]
fn nested_read_only_grant_sorts_after_the_read_write_one() {
    let d = ws();
    let p = parse(
        "[tools.write_file]\nwrite = [\".\"]\nread = [\"docs\"]\n",
        d.path(),
    )
    .unwrap();
    let (g, w) = p.grants_for("write_file", Baseline::Workspace).unwrap();
    assert_eq!(g.summary(&d.path().canonicalize().unwrap()), "rw:. ro:docs");
    assert_eq!(w.len(), 1);
    assert!(
        w[0].contains("grant separate directories for a hard boundary"),
        "{w:?}"
    );
}

#[test]
fn builtins_can_be_disabled_and_restricted() {
    let d = ws();
    let p = parse(
        "[tools.delete]\nenabled = false\n[tools.read_file]\nread = [\"docs\"]\n",
        d.path(),
    )
    .unwrap();
    assert!(p.grants_for("delete", Baseline::Workspace).is_none());
    let (g, _) = p.grants_for("read_file", Baseline::Workspace).unwrap();
    assert_eq!(dirs(&g).len(), 1);
    assert!(!dirs(&g)[0].1);
}

#[test]
fn missing_directory_is_a_warning_and_not_mounted() {
    let d = ws();
    let p = parse("[tools.probe]\nread = [\"nope\"]\n", d.path()).unwrap();
    let (g, w) = p.grants_for("probe", Baseline::Off).unwrap();
    assert!(dirs(&g).is_empty());
    assert!(
        w[0].contains("`nope`") && w[0].contains("does not exist"),
        "{w:?}"
    );
}

fn syntax_error(text: &str) -> (usize, usize, String) {
    let d = ws();
    match parse(text, d.path()) {
        Err(Error::Syntax {
            line,
            column,
            message,
            ..
        }) => (line, column, message),
        other => panic!("expected a syntax error, got {other:?}"),
    }
}

#[test]
fn errors_carry_line_column_and_what_was_expected() {
    let (l, c, m) = syntax_error("[tools.probe]\nread = \"docs\"\n");
    assert_eq!((l, c), (2, 8));
    assert!(m.contains("sequence") || m.contains("array"), "{m}");

    let (l, _, m) = syntax_error("[tools.probe]\nreed = [\"docs\"]\n");
    assert_eq!(l, 2);
    assert!(
        m.contains("unknown field `reed`") && m.contains("read"),
        "{m}"
    );

    let (l, c, m) = syntax_error("[limits]\nmemory = \"lots\"\n");
    assert_eq!((l, c), (2, 10));
    assert!(m.contains("not a size"), "{m}");

    let (l, _, m) = syntax_error("[tools.probe]\ntimeout = \"3h\"\n");
    assert_eq!(l, 2);
    assert!(m.contains("unknown duration unit"), "{m}");

    let (_, _, m) = syntax_error("[tools.Bad-Name]\n");
    assert!(m.contains("snake_case"), "{m}");

    let (_, _, m) = syntax_error("[tools.probe]\nenv = [\"A-B\"]\n");
    assert!(m.contains("not an environment variable name"), "{m}");

    let (_, _, m) = syntax_error("[tools.probe]\nmemory = \"8GiB\"\n");
    assert!(m.contains("between 1MiB and 4GiB"), "{m}");

    let (l, _, _) = syntax_error("[tools.probe\n");
    assert_eq!(l, 1);

    let (l, c, m) = syntax_error("[tools.probe]\nnetwork = [\"https://api.example.com/v1\"]\n");
    assert_eq!((l, c), (2, 11));
    assert!(
        m.contains("write only the host, e.g. \"api.example.com\""),
        "{m}"
    );
}

#[test]
fn network_hosts_are_granted_only_to_the_tool_that_names_them() {
    let d = ws();
    let p = parse(
        "[tools.fetch]\nnetwork = [\"API.example.com\", \"*.docs.rs\", \"127.0.0.1:8080\", \"api.example.com\"]\n\n[tools.probe]\n",
        d.path(),
    )
    .unwrap();
    let (g, _) = p.grants_for("fetch", Baseline::Off).unwrap();
    assert_eq!(
        g.hosts().collect::<Vec<_>>(),
        vec!["api.example.com", "*.docs.rs", "127.0.0.1:8080"]
    );
    assert_eq!(
        g.summary(&d.path().canonicalize().unwrap()),
        "net:api.example.com,*.docs.rs,127.0.0.1:8080"
    );
    let (probe, _) = p.grants_for("probe", Baseline::Off).unwrap();
    assert!(probe.hosts().next().is_none());
    let (read, _) = p.grants_for("read_file", Baseline::Workspace).unwrap();
    assert!(read.hosts().next().is_none());
}

#[test]
fn same_directory_read_and_write_is_rejected() {
    let d = ws();
    let e = parse(
        "[tools.probe]\nread = [\"./docs/\"]\nwrite = [\"docs\"]\n",
        d.path(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("both `read` and `write`"), "{e}");
}

#[test]
fn load_reads_the_file_or_falls_back_to_defaults() {
    let d = ws();
    assert!(!Policy::load(d.path()).unwrap().is_present());
    std::fs::write(d.path().join(POLICY_FILE), "[tools.x]\n").unwrap();
    let p = Policy::load(d.path()).unwrap();
    assert!(p.is_present());
    assert_eq!(p.named_tools().collect::<Vec<_>>(), vec!["x"]);
}

/// The file is read as every workspace file warden reads for itself:
/// never through a link, capped at 1 MiB, and text.
#[test]
fn load_refuses_a_link_an_oversized_file_and_bytes_that_are_not_text() {
    let d = ws();
    let outside = ws();
    std::fs::write(outside.path().join("p.toml"), "[tools.x]\n").unwrap();
    std::os::unix::fs::symlink(outside.path().join("p.toml"), d.path().join(POLICY_FILE)).unwrap();
    let e = Policy::load(d.path()).unwrap_err();
    assert!(
        e.to_string().contains("warden.toml is a symbolic link"),
        "{e}"
    );
    std::fs::remove_file(d.path().join(POLICY_FILE)).unwrap();
    std::fs::write(
        d.path().join(POLICY_FILE),
        vec![b'#'; POLICY_MAX as usize + 1],
    )
    .unwrap();
    let e = Policy::load(d.path()).unwrap_err();
    assert!(e.to_string().contains("more than the 1 MiB"), "{e}");
    std::fs::write(d.path().join(POLICY_FILE), b"# caf\xe9\n").unwrap();
    let e = Policy::load(d.path()).unwrap_err();
    assert!(
        e.to_string()
            .ends_with("warden.toml: it is not UTF-8 text (at byte 5): save it as UTF-8"),
        "{e}"
    );
}

#[test]
fn model_section_parses_and_layers() {
    let d = ws();
    let p = parse(
        "[model]\nbase_url = \"http://127.0.0.1:8080/v1\"\nprotocol = \"text\"\nidle_timeout = \"5s\"\n",
        d.path(),
    )
    .unwrap();
    let m = p.model();
    assert_eq!(m.base_url.as_deref(), Some("http://127.0.0.1:8080/v1"));
    assert_eq!(m.idle_timeout, Some(Duration::from_secs(5)));
    let user = ModelSection {
        model: Some("gpt-x".into()),
        protocol: Some("native".into()),
        ..Default::default()
    };
    let merged = user.overlay(m);
    assert_eq!(merged.model.as_deref(), Some("gpt-x"));
    assert_eq!(merged.protocol.as_deref(), Some("text"));
    let (l, _, msg) = syntax_error("[model]\nprotocol = \"smoke\"\n");
    assert_eq!(l, 2);
    assert!(msg.contains("unknown protocol `smoke`"), "{msg}");
    let (_, _, msg) = syntax_error("[model]\napi_key = \"sk-nope\"\n");
    assert!(msg.contains("unknown field `api_key`"), "{msg}");
}

#[test]
fn user_config_file_is_optional_and_checked() {
    let d = ws();
    let path = d.path().join("config.toml");
    assert_eq!(
        load_user_config(&path).unwrap().model,
        ModelSection::default()
    );
    std::fs::write(&path, "[model]\nmodel = \"llama\"\n").unwrap();
    assert_eq!(
        load_user_config(&path).unwrap().model.model.as_deref(),
        Some("llama")
    );
    std::fs::write(&path, "[tools.x]\n").unwrap();
    assert!(
        load_user_config(&path)
            .unwrap_err()
            .to_string()
            .contains("unknown field `tools`")
    );
}

#[test]
fn an_mcp_server_gets_only_what_its_section_grants() {
    let d = ws();
    let p = parse(
        "[mcp.demo]\ncommand = [\"python3\", \"server.py\"]\nread = [\"docs\"]\n\
         network = [\"127.0.0.1:9\"]\ntimeout = \"5s\"\n\n\
         [mcp.bare]\ncommand = [\"srv\"]\n\n\
         [mcp.off]\ncommand = [\"srv\"]\nenabled = false\n",
        d.path(),
    )
    .unwrap();
    let names: Vec<&str> = p.mcp_servers().map(|(n, _)| n).collect();
    assert_eq!(names, ["bare", "demo", "off"]);
    let (g, _) = p.mcp_grants("demo").unwrap();
    let root = d.path().canonicalize().unwrap();
    assert_eq!(dirs(&g), vec![(root.join("docs"), false)]);
    assert!(g.caps.contains(&Capability::Net {
        host: "127.0.0.1:9".into()
    }));
    assert_eq!(g.limits.timeout, Duration::from_secs(5));
    // Nothing by default: not even the workspace.
    let (g, _) = p.mcp_grants("bare").unwrap();
    assert!(g.caps.is_empty());
    assert!(p.mcp_grants("off").is_none());
    assert!(p.mcp_grants("missing").is_none());
}

#[test]
fn a_bad_mcp_section_is_an_error_that_says_what_to_write() {
    let d = ws();
    let e = parse("[mcp.demo]\ncommand = []\n", d.path()).unwrap_err();
    assert!(e.to_string().contains("empty command"), "{e}");
    let e = parse("[mcp.demo]\nread = [\".\"]\n", d.path()).unwrap_err();
    assert!(e.to_string().contains("command"), "{e}");
    let e = parse("[mcp.demo]\ncommand = [\"x\"]\nbogus = 1\n", d.path()).unwrap_err();
    assert!(e.to_string().contains("unknown field"), "{e}");
    let e = parse("[mcp.demo]\ncommand = [\"x\"]\nexec = [\"sh\"]\n", d.path()).unwrap_err();
    assert!(
        e.to_string().contains("does not apply to this MCP server"),
        "{e}"
    );
    let e = parse("[mcp.Demo-1]\ncommand = [\"x\"]\n", d.path()).unwrap_err();
    assert!(e.to_string().contains("snake_case"), "{e}");
    let e = parse(
        "[mcp.demo]\ncommand = [\"x\"]\nread = [\"docs\"]\nwrite = [\"docs\"]\n",
        d.path(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("mcp.demo"), "{e}");
}

#[test]
fn a_url_server_is_reached_only_when_its_host_is_granted() {
    let d = ws();
    let p = parse(
        "[mcp.remote]\nurl = \"https://mcp.example.com/mcp\"\nnetwork = [\"mcp.example.com\"]\n\n\
         [mcp.local]\nurl = \"http://127.0.0.1:8931/mcp\"\nnetwork = [\"127.0.0.1:8931\"]\n",
        d.path(),
    )
    .unwrap();
    let launches: Vec<&McpLaunch> = p.mcp_servers().map(|(_, s)| &s.launch).collect();
    assert_eq!(
        launches,
        [
            &McpLaunch::Url("http://127.0.0.1:8931/mcp".into()),
            &McpLaunch::Url("https://mcp.example.com/mcp".into()),
        ]
    );
    let (g, _) = p.mcp_grants("remote").unwrap();
    assert_eq!(g.hosts().collect::<Vec<_>>(), ["mcp.example.com"]);
    assert_eq!(g.dirs().count(), 0, "a URL server gets no directory");
    for (text, says) in [
        (
            "url = \"https://mcp.example.com/mcp\"\n",
            "add `network = [\"mcp.example.com\"]`",
        ),
        (
            "url = \"http://127.0.0.1:8931/mcp\"\nnetwork = [\"127.0.0.1:8932\"]\n",
            "add `network = [\"127.0.0.1:8931\"]`",
        ),
        (
            "url = \"ftp://x.example.com/\"\nnetwork = [\"x.example.com\"]\n",
            "not an http:// or https:// URL",
        ),
        (
            "url = \"https://u:p@x.example.com/\"\nnetwork = [\"x.example.com\"]\n",
            "give credentials as `secrets`",
        ),
        (
            "url = \"https://x.example.com/\"\ncommand = [\"x\"]\n",
            "both `command` and `url`",
        ),
        (
            "url = \"https://x.example.com/\"\nnetwork = [\"x.example.com\"]\nread = [\".\"]\n",
            "`read` does not apply to this MCP server",
        ),
    ] {
        let e = parse(&format!("[mcp.remote]\n{text}"), d.path()).unwrap_err();
        assert!(e.to_string().contains(says), "{text}: {e}");
    }
}

#[test]
fn a_secret_is_a_capability_with_its_source_hosts_and_way_but_no_value() {
    let d = ws();
    let p = parse(
        "[tools.web_search]\nnetwork = [\"API.example.com\"]\nsettings = { provider = \"brave\" }\n\
         [tools.web_search.secrets.key]\nfile = \"search_key\"\nhosts = [\"API.example.com\", \"api.example.com\"]\n\
         header = \"Authorization: Bearer {}\"\n",
        d.path(),
    )
    .unwrap();
    let (g, _) = p.grants_for("web_search", Baseline::Nothing).unwrap();
    let secret = g.secrets().next().unwrap();
    assert_eq!(
        *secret,
        Capability::Secret {
            name: "key".into(),
            source: "file search_key".into(),
            hosts: vec!["api.example.com".into()],
            send: "header Authorization: Bearer {}".into(),
        }
    );
    assert_eq!(
        secret.to_string(),
        "secret key (your secrets.toml entry `search_key`) to api.example.com as header \
         Authorization: Bearer {}"
    );
    assert_eq!(
        g.settings().collect::<Vec<_>>(),
        vec![("provider", "brave")]
    );
    assert!(g.needs_approval());
    assert_eq!(
        g.summary(d.path()),
        "net:api.example.com secret:key@api.example.com set:provider=brave"
    );
    let e = parse(
        "[tools.fetch.secrets.k]\nfile = \"k\"\nhosts = [\"a.com\"]\nquery = \"a b\"\n",
        d.path(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("[tools.fetch]: secret `k`: `query` is a parameter name"),
        "{e}"
    );
    let e = parse("[tools.fetch]\nsettings = { Provider = \"x\" }\n", d.path())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("setting `Provider`: use a snake_case key"),
        "{e}"
    );
}

#[test]
fn exec_grants_programs_by_name_or_absolute_path_and_needs_approval() {
    let d = ws();
    let p = parse(
        "[tools.shell]\nexec = [\"sh\", \"/usr/bin/python3\", \"sh\"]\n",
        d.path(),
    )
    .unwrap();
    let (g, _) = p.grants_for("shell", Baseline::Off).unwrap();
    assert_eq!(
        g.programs().collect::<Vec<_>>(),
        vec!["sh", "/usr/bin/python3"]
    );
    assert!(g.needs_approval());
    assert_eq!(g.summary(Path::new("/")), "exec:sh,/usr/bin/python3");
    assert_eq!(
        g.caps.iter().map(ToString::to_string).collect::<Vec<_>>(),
        vec!["exec sh", "exec /usr/bin/python3"]
    );
    for bad in [
        r#""""#,
        r#""./sh""#,
        r#""bin/sh""#,
        r#""/usr/bin/""#,
        r#""..""#,
        r#""sh\u0000x""#,
    ] {
        let text = format!("[tools.shell]\nexec = [{bad}]\n");
        let e = parse(&text, d.path()).unwrap_err().to_string();
        assert!(e.contains("neither a program name"), "{bad:?}: {e}");
    }
}

/// Where an error is, as `Policy::parse` reports it.
fn error_at(text: &str) -> (usize, usize, String) {
    let d = ws();
    match parse(text, d.path()) {
        Err(Error::Syntax {
            line,
            column,
            message,
            ..
        }) => (line, column, message),
        other => panic!("{other:?}"),
    }
}

#[test]
fn secrets_are_refused_where_they_would_leave_by_another_way() {
    let d = ws();
    let secret = |hosts: &str| {
        format!("[tools.leak.secrets.k]\nfile = \"k\"\nhosts = [{hosts}]\nheader = \"X-Key\"\n")
    };
    for (text, says) in [
        // Wildcards over addresses, or over a public suffix.
        (
            secret("\"*.1\""),
            "a wildcard covers the names under a domain, never addresses",
        ),
        (
            secret("\"*.0.0.1\""),
            "a wildcard covers the names under a domain, never addresses",
        ),
        (
            secret("\"*.com\""),
            "covers names under the public suffix `com`",
        ),
        // The workspace choosing an environment variable.
        (
            "[tools.leak.secrets.k]\nenv = \"OPENAI_API_KEY\"\nhosts = [\"a.example.com\"]\n\
             header = \"X-Key\"\n"
                .to_string(),
            "a workspace cannot take a secret from an environment variable \
             (`env = \"OPENAI_API_KEY\"`): name an entry of your secrets file, `file = \"key\"`",
        ),
        // A second host beside the secret's.
        (
            format!(
                "[tools.leak]\nnetwork = [\"a.example.com\", \"sink.example.net\"]\n{}",
                secret("\"a.example.com\"")
            ),
            "`sink.example.net` is in `network` but is not a host of secret `k`: a tool holding \
             a secret reaches only that secret's hosts",
        ),
    ] {
        let e = parse(&text, d.path()).unwrap_err().to_string();
        assert!(e.contains(says), "{text}: {e}");
        // An MCP server reached at a URL is held to the same.
        if text.contains("network") {
            let mcp = text
                .replace(
                    "[tools.leak]",
                    "[mcp.leak]\nurl = \"https://a.example.com/mcp\"",
                )
                .replace("[tools.leak.secrets.k]", "[mcp.leak.secrets.k]");
            let e = parse(&mcp, d.path()).unwrap_err().to_string();
            assert!(e.contains("[mcp.leak]: ") && e.contains(says), "{mcp}: {e}");
        }
    }
    // The secret's own hosts, by name or below its domain: accepted.
    let p = parse(
        &format!(
            "[tools.leak]\nnetwork = [\"a.example.com\"]\n{}",
            secret("\"a.example.com\", \"*.api.example.com\"")
        ),
        d.path(),
    )
    .unwrap();
    assert!(p.grants_for("leak", Baseline::Off).is_some());
}

#[test]
fn apps_and_browse_are_granted_per_tool_need_approval_and_say_what_they_mean() {
    let d = ws();
    let p = parse(
        "[tools.open_app]\napps = [\"libreoffice-writer\", \"xeyes\", \"/opt/x/bin/x\", \"xeyes\"]\n\
         read = [\".\"]\n\n[tools.browse]\nbrowse = [\"Docs.rs\", \"*.github.com\", \"docs.rs\"]\n",
        d.path(),
    )
    .unwrap();
    let (g, _) = p.grants_for("open_app", Baseline::Off).unwrap();
    assert_eq!(
        g.apps().collect::<Vec<_>>(),
        ["libreoffice-writer", "xeyes", "/opt/x/bin/x"]
    );
    assert!(g.needs_approval());
    assert_eq!(
        g.summary(&d.path().canonicalize().unwrap()),
        "ro:. app:libreoffice-writer,xeyes,/opt/x/bin/x"
    );
    assert_eq!(
        g.caps[1].to_string(),
        "apps: may start libreoffice-writer in your desktop session, unconfined"
    );
    let (b, _) = p.grants_for("browse", Baseline::Off).unwrap();
    assert_eq!(b.browse().collect::<Vec<_>>(), ["docs.rs", "*.github.com"]);
    assert!(b.needs_approval());
    assert_eq!(
        b.caps[0].to_string(),
        "browse: may open pages of docs.rs in your browser"
    );
    // Nothing of the one reaches the other.
    assert_eq!(g.browse().count(), 0);
    assert_eq!(b.apps().count(), 0);
    for (bad, says) in [
        (r#"apps = ["libre office"]"#, "neither a desktop-entry ID"),
        (r#"apps = ["-x"]"#, "neither a desktop-entry ID"),
        (r#"apps = ["../bin/x"]"#, "neither a desktop-entry ID"),
        (r#"apps = ["/opt/../bin/x"]"#, "neither a desktop-entry ID"),
        (r#"apps = [""]"#, "neither a desktop-entry ID"),
        (
            r#"apps = ["gedit.desktop"]"#,
            "name the desktop entry without `.desktop`, \"gedit\"",
        ),
        (
            r#"browse = ["https://docs.rs/x"]"#,
            "is a URL: write only the host",
        ),
        (r#"browse = [""]"#, "empty network entry"),
    ] {
        let text = format!("[tools.open_app]\n{bad}\n");
        let e = parse(&text, d.path()).unwrap_err().to_string();
        assert!(e.contains(says), "{bad}: {e}");
    }
}

#[test]
fn errors_found_after_parsing_name_their_section() {
    // Found by the fuzz target `policy`: these had no line and column.
    let (line, column, m) =
        error_at("approval = \"never\"\n\n[tools.a]\nread = [\"d\"]\nwrite = [\"d/\"]\n");
    assert_eq!((line, column), (3, 1), "{m}");
    assert_eq!(
        m,
        "tool `a` lists `d` under both `read` and `write`: keep one"
    );
    let (line, column, m) = error_at(
        "[tools.fetch]\nenabled = true\n\n[tools.fetch.secrets.k]\nfile = \"k\"\nhosts = [\"a.com\"]\nquery = \"a b\"\n",
    );
    assert_eq!((line, column), (1, 1), "{m}");
    assert!(m.starts_with("[tools.fetch]: secret `k`: `query`"), "{m}");
    let (line, column, m) =
        error_at("[mcp.demo]\ncommand = [\"x\"]\nread = [\"docs\"]\nwrite = [\"./docs\"]\n");
    assert_eq!((line, column), (1, 1), "{m}");
    assert!(m.starts_with("tool `mcp.demo` lists `docs`"), "{m}");
}

#[test]
fn columns_count_characters() {
    // `é` is two bytes: the stray `x` is the 15th character, the 18th byte.
    let (line, column, m) = error_at("[model]\nmodel = \"ééé\" x\n");
    assert_eq!((line, column), (2, 15), "{m}");
}

#[test]
fn an_mcp_server_cannot_be_granted_apps_or_pages() {
    let d = ws();
    for key in ["apps = [\"xeyes\"]", "browse = [\"docs.rs\"]"] {
        for launch in [
            "command = [\"x\"]",
            "url = \"https://a.example/mcp\"\nnetwork = [\"a.example\"]",
        ] {
            let text = format!("[mcp.demo]\n{launch}\n{key}\n");
            let e = parse(&text, d.path()).unwrap_err().to_string();
            assert!(
                e.contains("does not apply to this MCP server"),
                "{text}: {e}"
            );
        }
    }
}
