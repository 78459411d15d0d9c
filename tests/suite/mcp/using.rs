//! `[mcp.NAME]` servers warden uses: started confined (pinned, restarted
//! at most three times, bounded) or reached at their URL.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;
use warden_tests::{Sandbox, run, run_ok};

use super::{python_mcp, script};

const DEMO: &str = "[mcp.demo]\ncommand = [\"python3\", \"server.py\"]\nread = [\".\"]\n";

/// A host granted to a server's process is the whole network (a process
/// cannot be held to a list): trust says so, not the list alone.
#[test]
fn trust_says_a_server_process_granted_a_host_gets_the_whole_network() {
    let sb = Sandbox::new();
    sb.policy(&format!("{DEMO}network = [\"api.example.com\"]\n"));
    let shown = sb.trust();
    assert!(
        shown.contains(
            "the whole network, loopback and local addresses too (granted for api.example.com"
        ),
        "{shown}"
    );
}

#[test]
fn the_trust_diff_shows_an_added_mcp_server_with_its_command_line() {
    let sb = Sandbox::new();
    sb.policy(DEMO);
    let shown = sb.trust();
    let line = shown
        .lines()
        .find(|l| l.trim_start().starts_with("+ mcp.demo"))
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(
        line.contains("starts `python3 server.py` confined to:"),
        "{line}"
    );
    assert!(
        line.contains(&format!("read-only {}", sb.ws.display())),
        "{line}"
    );
    // Changing the command is a new server to trust.
    sb.policy(&DEMO.replace("server.py", "other.py"));
    let shown = sb.trust();
    assert!(shown.contains("- mcp.demo"), "{shown}");
    assert!(shown.contains("starts `python3 other.py`"), "{shown}");
}

#[test]
fn a_never_trusted_workspace_starts_no_mcp_server() {
    let sb = Sandbox::new();
    sb.policy(DEMO);
    let listed = run(sb.warden().args(["tools", "list", "--json"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(!listed.stdout.contains("demo__"), "{}", listed.stdout);
    assert!(!listed.stderr.contains("demo"), "{}", listed.stderr);
    let policy = run_ok(sb.warden().args(["policy"]));
    assert!(!policy.contains("mcp.demo"), "{policy}");
}

/// A server whose read-only folder lies inside its read-write one is not
/// started: the kernel cannot keep that folder read-only for a process.
#[test]
fn a_server_whose_grants_cannot_be_enforced_is_not_started() {
    let sb = Sandbox::new();
    sb.policy(
        "[mcp.nested]\ncommand = [\"sh\", \"-c\", \"echo PWNED > docs/readme.md\"]\n\
         write = [\".\"]\nread = [\"docs\"]\n",
    );
    sb.trust();
    let listed = run(sb.warden().args(["tools", "list"]));
    assert!(
        listed.stderr.contains("cannot make it read-only"),
        "{}",
        listed.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("docs/readme.md")).unwrap(),
        "# docs\n"
    );
}

/// Processes whose command line holds `marker`, anywhere on the host.
/// A trusted sandbox whose policy starts the demo server (copied into
/// `server/`, its only grant, read-only) with `flags`; and the script's path.
fn with_demo_server(flags: &[&str]) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let server_dir = sb.ws.join("server");
    std::fs::create_dir(&server_dir).unwrap();
    let script = server_dir.join("demo_server.py");
    std::fs::copy(self::script("demo_server.py"), &script).unwrap();
    let argv: Vec<String> = [system_python(), &script.display().to_string()]
        .into_iter()
        .chain(flags.iter().copied())
        .map(|a| format!("{a:?}"))
        .collect();
    sb.policy(&format!(
        "[mcp.demo]\ncommand = [{}]\nread = [\"server\"]\n",
        argv.join(", ")
    ));
    sb.trust();
    (sb, script)
}

/// An MCP tool offered under a name a loaded tool has is left out, and
/// said so: listed once, served once, called as the loaded tool.
#[test]
fn an_mcp_tool_named_as_a_loaded_tool_is_left_out() {
    if !python_mcp() {
        return;
    }
    let (sb, _) = with_demo_server(&[]);
    sb.drop_in(warden_tests::guests::MCP_NAMED, "mcp_named.wasm");
    let policy = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    sb.policy(&format!("{policy}\n[tools.demo__echo]\n"));
    sb.trust();
    let listed = run(sb.warden().args(["tools", "list", "--json"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    let tools: Value = serde_json::from_str(&listed.stdout).unwrap();
    let said = "MCP server `demo`: tool `echo` is left out: a loaded tool is called `demo__echo` \
                already";
    assert!(
        tools["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w == said),
        "{}",
        tools["warnings"]
    );
    let named = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "demo__echo")
        .count();
    assert_eq!(named, 1, "{}", listed.stdout);
    let called = run(sb
        .warden()
        .args(["tools", "call", "demo__echo", r#"{"text":"hi"}"#]));
    assert_eq!(called.stdout.trim(), "component", "{}", called.stderr);
}

/// A server whose tool list never ends is read for a bounded number of
/// pages, then said so: warden neither hangs nor fills its memory.
#[test]
fn a_server_whose_tool_list_never_ends_is_not_read_forever() {
    if !python_mcp() {
        return;
    }
    let (sb, _) = with_demo_server(&["--endless-list"]);
    let start = std::time::Instant::now();
    let listed = run(sb.warden().args(["tools", "list"]));
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    assert!(!listed.stdout.contains("demo__"), "{}", listed.stdout);
    assert!(
        listed.stderr.contains(
            "MCP server `demo` is not available: its tool list did not end after 64 pages"
        ),
        "{}",
        listed.stderr
    );
}

/// A server's tool whose input schema is no JSON Schema is left out, and
/// said so; its other tools are offered.
#[test]
fn an_mcp_tool_with_a_broken_schema_is_left_out() {
    if !python_mcp() {
        return;
    }
    let (sb, _) = with_demo_server(&["--bad-schema"]);
    let listed = run(sb.warden().args(["tools", "list"]));
    assert!(listed.stdout.contains("demo__echo"), "{}", listed.stdout);
    assert!(!listed.stdout.contains("demo__bad"), "{}", listed.stdout);
    assert!(
        listed.stderr.contains(
            "MCP server `demo`: tool `bad` is left out: parameters is not a valid JSON Schema"
        ),
        "{}",
        listed.stderr
    );
}

/// A server's script in the workspace is pinned by trust: rewritten (say
/// by a tool that may write there), the server does not start with its
/// grants until the user has seen the change.
#[test]
fn a_server_whose_script_changed_since_trust_is_not_started() {
    if !python_mcp() {
        return;
    }
    let (sb, script) = with_demo_server(&[]);
    let listed = run_ok(sb.warden().args(["tools", "list"]));
    assert!(listed.contains("demo__"), "{listed}");
    let mut text = std::fs::read_to_string(&script).unwrap();
    text.push_str("\n# rewritten by a tool\n");
    std::fs::write(&script, text).unwrap();
    let r = run(sb.warden().args(["tools", "list"]));
    assert!(!r.stdout.contains("demo__"), "{}", r.stdout);
    assert!(
        r.stderr.contains(&format!(
            "MCP server `demo` does not start: {} is not as you trusted it",
            script.display()
        )),
        "{}",
        r.stderr
    );
    let shown = sb.trust();
    assert!(
        shown.contains(&format!("~ mcp.demo: runs {} sha256:", script.display())),
        "{shown}"
    );
    let listed = run_ok(sb.warden().args(["tools", "list"]));
    assert!(listed.contains("demo__"), "{listed}");
}

/// A server whose program is found on PATH, in a folder of the workspace
/// (an activated `.venv/bin`), is pinned like a script it names.
#[test]
fn a_server_program_found_on_path_inside_the_workspace_is_pinned() {
    if !python_mcp() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let bin = sb.ws.join("bin");
    std::fs::create_dir(&bin).unwrap();
    let program = bin.join("demoserver");
    let text = std::fs::read_to_string(script("demo_server.py")).unwrap();
    std::fs::write(&program, format!("#!{}\n{text}", system_python())).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.policy("[mcp.demo]\ncommand = [\"demoserver\"]\nread = [\"bin\"]\n");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let warden = || {
        let mut w = sb.warden();
        w.env("PATH", &path);
        w
    };
    run_ok(warden().arg("trust"));
    let listed = run_ok(warden().args(["tools", "list"]));
    assert!(listed.contains("demo__echo"), "{listed}");
    std::fs::write(
        &program,
        format!("#!{}\n{text}\n# rewritten by a tool\n", system_python()),
    )
    .unwrap();
    let r = run(warden().args(["tools", "list"]));
    assert!(!r.stdout.contains("demo__"), "{}", r.stdout);
    assert!(
        r.stderr
            .contains("MCP server `demo` does not start: demoserver is not as you trusted it"),
        "{}",
        r.stderr
    );
}

/// Nor is a server started again mid-session with a script rewritten
/// since the session began (here by `write_file`, after it crashed).
#[test]
fn a_server_is_not_started_again_with_a_script_rewritten_in_the_session() {
    use warden_mock_llm::{MockLlm, answer, calls};
    if !python_mcp() {
        return;
    }
    let (sb, script) = with_demo_server(&[]);
    let rewrite = json!({
        "path": "server/demo_server.py",
        "content": "import sys\nprint('rewritten', file=sys.stderr)\n",
    })
    .to_string();
    let echo = json!({ "text": "hi" }).to_string();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "demo__crash", r#"{"marker":"m"}"#)]),
        calls(&[("w1", "write_file", &rewrite)]),
        calls(&[("e1", "demo__echo", &echo)]),
        answer("done"),
    ]);
    let out = warden_tests::warden_run(&sb, &mock, "k", &["rewrite it"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        std::fs::read_to_string(&script)
            .unwrap()
            .contains("rewritten")
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{}", out.stderr);
    let result = warden_tests::tool_contents(&requests[3].body)
        .pop()
        .unwrap();
    assert!(
        result.contains("MCP server `demo` had exited, and a file its command runs changed"),
        "{result}"
    );
}

/// The system's python3, which a confined server can run.
fn system_python() -> &'static str {
    ["/usr/bin/python3", "/bin/python3"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .expect("a system python3")
}

fn processes_with(marker: &str) -> Vec<u32> {
    let marker = marker.as_bytes();
    warden_tests::processes_where(|c| c.windows(marker.len()).any(|w| w == marker))
}

#[test]
fn an_mcp_server_runs_confined_its_result_reaches_the_model_and_nothing_outlives_warden() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    // The server lives in a folder of its own, granted read-only; the
    // workspace is not granted at all.
    let (sb, script) = with_demo_server(&[]);
    let marker = format!("marker-{}", std::process::id());
    let target = sb.outside.join("escaped.txt");
    let args = json!({"write": target, "port": port, "marker": marker}).to_string();
    let mock = MockLlm::start(vec![
        calls(&[("p", "demo__probe", &args)]),
        answer("probed"),
    ]);
    let before = sb.outside_snapshot();
    let out = warden_tests::warden_run(&sb, &mock, "k", &["probe it"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("probed"), "{}", out.stdout);
    // The tool's normal result reached the model, and it says what the
    // kernel refused.
    let results = warden_tests::tool_contents(&mock.requests()[1].body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].contains(&marker), "{results:?}");
    assert!(!results[0].contains("write: ok"), "{results:?}");
    assert!(!results[0].contains("connect: ok"), "{results:?}");
    // Checked on the host: no file, no connection, no process left.
    assert!(!target.exists());
    assert_eq!(sb.outside_snapshot(), before);
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener was reached"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let left: Vec<u32> = processes_with(&marker)
            .into_iter()
            .chain(processes_with(&script.display().to_string()))
            .collect();
        if left.is_empty() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "processes outlived warden: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[test]
fn an_mcp_server_that_fails_says_why_and_is_started_again_at_most_three_times() {
    use warden_mock_llm::{MockLlm, answer, calls};
    // One that dies before it answers `initialize`: left out, and the user
    // sees what it wrote last, not only that it did not answer.
    let sb = Sandbox::new();
    sb.policy(
        "[mcp.broken]\ncommand = [\"/bin/sh\", \"-c\", \"echo starting >&2; \
         echo 'fatal: no config at /etc/broken.toml' >&2; exit 3\"]\n",
    );
    sb.trust();
    let listed = run(sb.warden().args(["tools", "list"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed
            .stderr
            .contains("MCP server `broken` is not available")
            && listed
                .stderr
                .contains("its stderr ended with: starting | fatal: no config at /etc/broken.toml"),
        "{}",
        listed.stderr
    );

    // One that dies in a call: the model gets the failure with the end of
    // the traceback, and warden goes on. The next call starts it again and
    // says so; after three such starts it stays down.
    let (sb, _) = with_demo_server(&[]);
    let marker = format!("marker-{}", std::process::id());
    // Each call differs: the agent refuses a call repeated exactly.
    let crash = |n: u32| json!({ "marker": format!("{marker}-{n}") }).to_string();
    let echo = |text: &str| json!({ "text": text }).to_string();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "demo__crash", &crash(1))]),
        calls(&[("e1", "demo__echo", &echo("back again"))]),
        calls(&[("c2", "demo__crash", &crash(2))]),
        calls(&[("c3", "demo__crash", &crash(3))]),
        calls(&[("c4", "demo__crash", &crash(4))]),
        calls(&[("e2", "demo__echo", &echo("once more"))]),
        answer("it crashed"),
    ]);
    let out = warden_tests::warden_run(&sb, &mock, "k", &["crash it"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("it crashed"), "{}", out.stdout);
    let requests = mock.requests();
    let result = |turn: usize| {
        let results = warden_tests::tool_contents(&requests[turn].body);
        results.last().cloned().unwrap_or_default()
    };
    let crashed = result(1);
    assert!(
        crashed.contains("MCP server `demo` failed the call")
            && crashed.contains(&format!(
                "its stderr ended with: Traceback (most recent call last): | \
                 File \"demo_server.py\", line 1, in <module> | \
                 RuntimeError: the demo server broke ({marker}-1); warden starts it again at \
                 the next call of one of its tools"
            )),
        "{crashed}"
    );
    let restarted = result(2);
    assert!(
        restarted.starts_with("back again")
            && restarted.contains("MCP server `demo` had exited; it was started again"),
        "{restarted}"
    );
    for turn in 3..=5 {
        assert!(result(turn).contains("failed the call"), "{}", result(turn));
    }
    // The third start was the last: the call that killed it says no more.
    assert!(!result(5).contains("starts it again"), "{}", result(5));
    let down = result(6);
    assert!(
        down.contains("MCP server `demo` exited and was started again 3 times already")
            && down.contains("RuntimeError: the demo server broke")
            && !down.contains("once more"),
        "{down}"
    );
}

/// A server started again mid-session gets the directories it was
/// granted when the session began: a write grant the model swapped for a
/// link to the workspace (through the file tools) is refused, not
/// followed.
#[test]
fn a_server_started_again_is_refused_a_write_grant_swapped_for_a_link() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let (sb, script) = with_demo_server(&[]);
    let argv = format!(
        "[{:?}, {:?}]",
        system_python(),
        script.display().to_string()
    );
    std::fs::create_dir(sb.ws.join("out")).unwrap();
    sb.policy(&format!(
        "[mcp.demo]\ncommand = {argv}\nread = [\"server\"]\nwrite = [\"out\"]\n"
    ));
    sb.trust();
    // `out/dot` leads to `out`; moved to `out`'s place, it leads to the
    // workspace itself.
    std::os::unix::fs::symlink(".", sb.ws.join("out/dot")).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let escaped = sb.ws.join("escaped.txt");
    let probe = json!({"write": sb.ws.join("out/escaped.txt"), "port": port}).to_string();
    let mock = MockLlm::start(vec![
        calls(&[("m1", "move", r#"{"from":"out","to":"old"}"#)]),
        calls(&[("m2", "move", r#"{"from":"old/dot","to":"out"}"#)]),
        calls(&[("c", "demo__crash", "{}")]),
        calls(&[("p", "demo__probe", &probe)]),
        answer("done"),
    ]);
    let out = warden_tests::warden_run(&sb, &mock, "k", &["swap the grant"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "{}", out.stderr);
    // The swap itself happened, and the server had died.
    let link = std::fs::symlink_metadata(sb.ws.join("out")).unwrap();
    assert!(link.file_type().is_symlink());
    let crashed = warden_tests::tool_contents(&requests[3].body)
        .pop()
        .unwrap();
    assert!(crashed.contains("failed the call"), "{crashed}");
    assert!(
        !escaped.exists(),
        "the restarted server wrote into the workspace"
    );
    let refused = warden_tests::tool_contents(&requests[4].body)
        .pop()
        .unwrap();
    assert!(
        refused.contains("starting it again failed")
            && refused.contains("is no longer the one warden opened"),
        "{refused}"
    );
}

/// The demo server in the workspace, trusted, run with `flag` (what it
/// does when started after its `crash`) and the folder it keeps its state
/// in, which it may write.
fn with_demo_server_after_crash(flag: &str) -> (Sandbox, PathBuf) {
    let sb = Sandbox::new();
    let server_dir = sb.ws.join("server");
    let state = server_dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let script = server_dir.join("demo_server.py");
    std::fs::copy(self::script("demo_server.py"), &script).unwrap();
    sb.policy(&format!(
        "[mcp.demo]\ncommand = [{:?}, {:?}, {flag:?}, {:?}]\n\
         read = [\"server\"]\nwrite = [\"server/state\"]\n",
        system_python(),
        script.display().to_string(),
        state.display().to_string()
    ));
    sb.trust();
    (sb, state)
}

/// Servers start at the same time, not one after another: two servers
/// that each answer only once the other has started are both offered (one
/// after the other, the first would give up waiting for the second).
#[test]
fn servers_start_side_by_side() {
    if !python_mcp() {
        return;
    }
    let sb = Sandbox::new();
    let server_dir = sb.ws.join("server");
    let state = server_dir.join("state");
    std::fs::create_dir_all(&state).unwrap();
    let script = server_dir.join("demo_server.py");
    std::fs::copy(self::script("demo_server.py"), &script).unwrap();
    let section = |me: &str, other: &str| {
        format!(
            "[mcp.{me}]\ncommand = [{:?}, {:?}, \"--meet\", {:?}, {me:?}, {other:?}]\n\
             read = [\"server\"]\nwrite = [\"server/state\"]\n",
            system_python(),
            script.display().to_string(),
            state.display().to_string()
        )
    };
    sb.policy(&format!(
        "{}\n{}",
        section("left", "right"),
        section("right", "left")
    ));
    sb.trust();
    let listed = run(sb.warden().args(["tools", "list"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    for tool in ["left__echo", "right__echo"] {
        assert!(
            listed.stdout.contains(tool),
            "{tool}: {}\n{}",
            listed.stdout,
            listed.stderr
        );
    }
    assert!(
        !listed.stderr.contains("not available"),
        "{}",
        listed.stderr
    );
}

/// An answer longer than warden reads (one message over 16 MiB on stdout)
/// fails the call at once and says why, instead of waiting out the
/// server's time limit for an answer that was dropped.
#[test]
fn an_answer_too_long_to_read_fails_the_call_and_says_why() {
    if !python_mcp() {
        return;
    }
    let (sb, _) = with_demo_server(&[]);
    let policy = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    sb.policy(&format!("{policy}timeout = \"20s\"\n"));
    sb.trust();
    let start = std::time::Instant::now();
    let called = run(sb.warden().args(["tools", "call", "demo__flood", "{}"]));
    assert_ne!(called.code, 0, "{}", called.stdout.len());
    assert!(
        called.stderr.contains(
            "MCP server `demo` failed the call: it sent a message of more than 16 MiB, more \
             than warden reads, so its connection was closed"
        ),
        "{}",
        called.stderr
    );
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
}

/// A server that died and then fails to start counts each failed start:
/// after three it stays down, instead of being started at every call.
#[test]
fn a_server_that_fails_to_start_again_stays_down_after_three_tries() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let (sb, state) = with_demo_server_after_crash("--fail-after-crash");
    let echo = |n: u32| json!({ "text": format!("try {n}") }).to_string();
    let mut replies = vec![calls(&[("c", "demo__crash", r#"{"marker":"m"}"#)])];
    for n in 1..=5 {
        replies.push(calls(&[(&format!("e{n}"), "demo__echo", &echo(n))]));
    }
    replies.push(answer("it stays down"));
    let mock = MockLlm::start(replies);
    let out = warden_tests::warden_run(&sb, &mock, "k", &["crash it"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let requests = mock.requests();
    let result = |turn: usize| {
        let results = warden_tests::tool_contents(&requests[turn].body);
        results.last().cloned().unwrap_or_default()
    };
    for turn in 2..=4 {
        assert!(
            result(turn).contains("MCP server `demo` had exited, and starting it again failed"),
            "{turn}: {}",
            result(turn)
        );
    }
    for turn in 5..=6 {
        assert!(
            result(turn).contains("was started again 3 times already, so it stays down"),
            "{turn}: {}",
            result(turn)
        );
    }
    // The first start, then three tries: none after.
    let starts = std::fs::read_to_string(state.join("starts")).unwrap();
    assert_eq!(starts.lines().count(), 4, "{starts}");
}

/// Ctrl-C while a dead server is being started again (and hangs) stops the
/// wait at once: warden does not sit out the 20 s start limit.
#[test]
fn ctrl_c_stops_a_server_restart_that_hangs_at_once() {
    use warden_mock_llm::{MockLlm, calls};
    let (sb, state) = with_demo_server_after_crash("--stall-after-crash");
    let mock = MockLlm::start(vec![
        calls(&[("c", "demo__crash", r#"{"marker":"m"}"#)]),
        calls(&[("e", "demo__echo", r#"{"text":"never answered"}"#)]),
        warden_mock_llm::answer("never asked for"),
    ]);
    let child = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--yes", "go"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The second model turn asks for `echo`: the restart that hangs.
    let marker = state.display().to_string();
    warden_tests::wait_until("the restart never began", || {
        mock.requests().len() >= 2 && !processes_with(&marker).is_empty()
    });
    std::thread::sleep(Duration::from_millis(300));
    let (took, out, stderr) = warden_tests::interrupt(child);
    assert!(took < Duration::from_secs(5), "took {took:?}: {stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(
        processes_with(&marker),
        Vec::<u32>::new(),
        "the server lives on"
    );
    assert_eq!(mock.requests().len(), 2, "the turn went on: {stderr}");
}

#[test]
fn a_server_that_writes_much_to_stderr_is_never_blocked_by_it() {
    // 1 MiB on stderr before it answers: the pipe is drained as it fills,
    // and only the end is kept.
    let (sb, _) = with_demo_server(&["--noisy"]);
    let listed = run(sb.warden().args(["tools", "list"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(
        listed.stdout.contains("demo__probe"),
        "{}\n{}",
        listed.stdout,
        listed.stderr
    );
}

/// The streamable-HTTP demo server, listening on a loopback port it picked;
/// killed when dropped.
struct HttpServer {
    child: std::process::Child,
    port: u16,
}

impl HttpServer {
    fn start() -> HttpServer {
        HttpServer::start_on(0)
    }

    /// On `port`; 0: one it picks.
    fn start_on(port: u16) -> HttpServer {
        HttpServer::start_with(&["--port", &port.to_string()])
    }

    /// With these arguments to the script.
    fn start_with(args: &[&str]) -> HttpServer {
        let mut child = Command::new("python3")
            .arg(script("http_server.py"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| panic!("{line:?}"));
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_url_server_granted_by_address_serves_its_tools_with_a_secret_the_model_never_sees() {
    use warden_mock_llm::{MockLlm, answer, calls};
    if !python_mcp() {
        return;
    }
    let server = HttpServer::start();
    let p = server.port;
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[mcp.remote]\nurl = \"http://127.0.0.1:{p}/mcp\"\nnetwork = [\"127.0.0.1:{p}\"]\n\n\
         [mcp.remote.secrets.token]\nfile = \"demo_token\"\nhosts = [\"127.0.0.1:{p}\"]\n\
         header = \"Authorization: Bearer {{}}\"\n"
    ));
    let shown = sb.trust();
    assert!(
        shown.contains(&format!(
            "+ mcp.remote: connects to http://127.0.0.1:{p}/mcp with: network 127.0.0.1:{p}"
        )),
        "{shown}"
    );
    // Listed with source `mcp`, its schema as the server gives it.
    sb.secrets_file("demo_token = \"tok-1234567890\"\n");
    let listed: Value =
        serde_json::from_str(&run_ok(sb.warden().args(["tools", "list", "--json"]))).unwrap();
    let tool = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "remote__whoami")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(tool["origin"], "mcp", "{tool}");
    assert_eq!(
        tool["parameters"]["required"],
        json!(["greeting"]),
        "{tool}"
    );
    // The model calls it: the server got the secret, the model a marker.
    let mock = MockLlm::start(vec![
        calls(&[("w", "remote__whoami", r#"{"greeting":"hi"}"#)]),
        answer("done"),
    ]);
    let out = warden_tests::warden_run(&sb, &mock, "k", &["who am i"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results = warden_tests::tool_contents(&mock.requests()[1].body);
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].starts_with("hi; authorization: Bearer "),
        "{results:?}"
    );
    assert!(results[0].contains("[secret token]"), "{results:?}");
    for r in mock.requests() {
        assert!(
            !r.body.to_string().contains("tok-1234567890"),
            "the secret reached the model"
        );
    }
}

/// A server at a URL that goes away and comes back (a new process, which
/// knows nothing of the old session) is spoken to again: the call made
/// while it is down fails and says why, the next one works.
#[test]
fn a_url_server_that_restarts_is_used_again_after_it_comes_back() {
    use warden_mock_llm::{Gate, MockLlm, Reply, answer, calls};
    if !python_mcp() {
        return;
    }
    let mut server = HttpServer::start();
    let p = server.port;
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[mcp.remote]\nurl = \"http://127.0.0.1:{p}/mcp\"\nnetwork = [\"127.0.0.1:{p}\"]\n"
    ));
    sb.trust();
    let call = |greeting: &str| json!({ "greeting": greeting }).to_string();
    let (gone, back) = (Gate::new(), Gate::new());
    let after = |gate: &Gate, reply: Reply| Reply::Gated(gate.clone(), Box::new(reply));
    let mock = MockLlm::start(vec![
        calls(&[("a", "remote__whoami", &call("first"))]),
        after(
            &gone,
            calls(&[("b", "remote__whoami", &call("while down"))]),
        ),
        after(
            &back,
            calls(&[("c", "remote__whoami", &call("back again"))]),
        ),
        answer("done"),
    ]);
    let mut child = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--yes", "go"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let wait_for = |n: usize| {
        warden_tests::wait_until(&format!("no request {n}"), || mock.requests().len() >= n);
    };
    // The model is slow to answer after the first result: the server
    // goes away meanwhile, and comes back while the model thinks again.
    wait_for(2);
    drop(server);
    gone.open();
    wait_for(3);
    server = HttpServer::start_on(p);
    back.open();
    let out = {
        let status = child.wait().unwrap();
        let mut stdout = String::new();
        std::io::Read::read_to_string(child.stdout.as_mut().unwrap(), &mut stdout).unwrap();
        (status, stdout)
    };
    drop(server);
    assert_eq!(out.0.code(), Some(0), "{}", out.1);
    let requests = mock.requests();
    let result = |turn: usize| {
        let results = warden_tests::tool_contents(&requests[turn].body);
        results.last().cloned().unwrap_or_default()
    };
    assert!(result(1).starts_with("first; "), "{}", result(1));
    assert!(
        result(2).starts_with(&format!(
            "MCP server `remote` could not be reached: 127.0.0.1:{p}: connection refused; \
             check that it is running"
        )),
        "{}",
        result(2)
    );
    assert!(result(3).starts_with("back again; "), "{}", result(3));
}

#[test]
fn policy_shows_a_url_server_only_what_applies_to_it() {
    // No process runs for it: no files, environment or memory to show.
    let sb = Sandbox::new();
    sb.policy(
        "[mcp.remote]\nurl = \"https://mcp.example.com/mcp\"\nnetwork = [\"mcp.example.com\"]\n",
    );
    sb.trust();
    let shown = run_ok(sb.warden().arg("policy"));
    assert!(
        shown.contains(
            "mcp.remote (mcp, at https://mcp.example.com/mcp):\n  network:  mcp.example.com\n  \
             limits:   timeout 30s, output 256KiB\n"
        ),
        "{shown}"
    );
}

#[test]
fn a_url_server_whose_name_resolves_to_loopback_is_not_connected() {
    // Granted by name, `localhost` resolves to a loopback address, which
    // only a grant of the address itself opens.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let p = listener.local_addr().unwrap().port();
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[mcp.remote]\nurl = \"http://localhost:{p}/mcp\"\nnetwork = [\"localhost:{p}\"]\n"
    ));
    sb.trust();
    let listed = run(sb.warden().args(["tools", "list"]));
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert!(!listed.stdout.contains("remote__"), "{}", listed.stdout);
    assert!(
        listed
            .stderr
            .contains("MCP server `remote` is not available")
            && listed
                .stderr
                .contains("a loopback, private or other non-public address"),
        "{}",
        listed.stderr
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener was reached"
    );
    // Without the grant the policy itself is refused, and says what to add.
    sb.policy(&format!(
        "[mcp.remote]\nurl = \"http://127.0.0.1:{p}/mcp\"\n"
    ));
    let refused = run(sb.warden().arg("trust"));
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(
        refused
            .stderr
            .contains(&format!("add `network = [\"127.0.0.1:{p}\"]`")),
        "{}",
        refused.stderr
    );
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the listener was reached"
    );
}

/// A URL server that answers with an error page longer than warden
/// keeps: the start of the page is shown, not nothing.
#[test]
fn the_start_of_a_long_error_page_from_a_url_server_is_shown() {
    let page = format!(
        "<h1>upstream connect error: backend pool drained</h1>{}",
        "<p>padding</p>".repeat(400)
    );
    let peer = warden_tests::WebPeer::start(move |_| warden_tests::Answer {
        status: 503,
        ..warden_tests::Answer::ok("text/html", page.clone())
    });
    let p = peer.port;
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[mcp.remote]\nurl = \"http://127.0.0.1:{p}/mcp\"\nnetwork = [\"127.0.0.1:{p}\"]\n"
    ));
    sb.trust();
    let listed = run(sb.warden().args(["tools", "list"]));
    assert!(
        listed
            .stderr
            .contains("MCP server `remote` is not available")
            && listed.stderr.contains(
                "503 Service Unavailable: <h1>upstream connect error: backend pool drained"
            )
            && !listed.stderr.contains("rmcp::"),
        "{}",
        listed.stderr
    );
}

/// A server whose notification stream (the GET) ends at once is not asked
/// for it again and again while warden waits: a few quick retries, then
/// warden lets it be (calls still work: they go by POST).
#[test]
fn an_idle_warden_does_not_poll_a_url_server_whose_stream_keeps_ending() {
    if !python_mcp() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let gets = dir.path().join("gets");
    let server = HttpServer::start_with(&["--gets-to", gets.to_str().unwrap()]);
    let p = server.port;
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[mcp.remote]\nurl = \"http://127.0.0.1:{p}/mcp\"\nnetwork = [\"127.0.0.1:{p}\"]\n"
    ));
    sb.trust();
    let mut idle = sb
        .warden()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let count = || {
        std::fs::read_to_string(&gets)
            .unwrap_or_default()
            .lines()
            .count()
    };
    warden_tests::wait_until("no GET came", || count() > 0);
    std::thread::sleep(Duration::from_secs(15));
    let n = count();
    let _ = idle.kill();
    let _ = idle.wait();
    assert!(n <= 5, "{n} GETs in 15 s of waiting");
}

/// A server that lists a huge description or schema cannot fill every
/// request to the model: the description is cut, the tool with the huge
/// schema is left out, and both are said.
#[test]
fn an_mcp_server_listing_huge_tools_is_cut_down_and_says_so() {
    if !python_mcp() {
        return;
    }
    let (sb, _) = with_demo_server(&["--bloated"]);
    let r = run(sb.warden().args(["tools", "list", "--json"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let listed: Value = serde_json::from_str(&r.stdout).unwrap();
    let tools = listed["tools"].as_array().unwrap();
    assert!(tools.iter().all(|t| t["name"] != "demo__huge"), "{listed}");
    let echo = tools
        .iter()
        .find(|t| t["name"] == "demo__echo")
        .unwrap_or_else(|| panic!("{listed}"));
    let description = echo["description"].as_str().unwrap();
    assert!(description.len() <= 4100, "{}", description.len());
    assert!(description.starts_with("Echoes. padding"), "{description}");
    let warnings = listed["warnings"].to_string();
    assert!(
        warnings.contains("tool `huge` is left out: its input schema is"),
        "{warnings}"
    );
    assert!(
        warnings.contains("the description of tool `echo` is cut to 4 KiB"),
        "{warnings}"
    );
}

/// All of a server's tools together are bounded too: past 256 KiB of
/// definitions, the rest are left out and named, so many tools cannot
/// fill the model's context either.
#[test]
fn a_server_with_many_large_tools_is_held_to_a_budget() {
    if !python_mcp() {
        return;
    }
    let (sb, _) = with_demo_server(&["--many"]);
    let r = run(sb.warden().args(["tools", "list", "--json"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let listed: Value = serde_json::from_str(&r.stdout).unwrap();
    let offered: Vec<&Value> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"].as_str().unwrap().starts_with("demo__"))
        .collect();
    let bytes: usize = offered
        .iter()
        .map(|t| t["description"].as_str().unwrap().len() + t["parameters"].to_string().len())
        .sum();
    assert!(bytes <= 256 << 10, "{bytes} bytes offered");
    // In the server's order: its first tools, then as many of the 100 as fit.
    let names: Vec<&str> = offered
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"demo__echo") && names.contains(&"demo__tool_000"),
        "{names:?}"
    );
    assert!(!names.contains(&"demo__tool_099"), "{names:?}");
    let warnings = listed["warnings"].to_string();
    assert!(
        warnings.contains("tools are left out (tool_0")
            && warnings.contains(", and 5 more)")
            && warnings.contains("would pass the 256 KiB a server may send to the model"),
        "{warnings}"
    );
}

/// A script the command names relative to the workspace is found when the
/// server is granted only its folder (it then starts in `/`, not in the
/// workspace); one outside its grants is refused, saying what to grant.
#[test]
fn a_script_named_relative_to_the_workspace_runs_with_only_its_folder_granted() {
    if !python_mcp() {
        return;
    }
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws.join("server")).unwrap();
    std::fs::copy(
        script("demo_server.py"),
        sb.ws.join("server/demo_server.py"),
    )
    .unwrap();
    let policy = |read: &str| {
        format!(
            "[mcp.demo]\ncommand = [{:?}, \"server/demo_server.py\"]\nread = [\"{read}\"]\n",
            system_python()
        )
    };
    sb.policy(&policy("server"));
    sb.trust();
    let called = run(sb
        .warden()
        .args(["tools", "call", "demo__echo", r#"{"text":"hi"}"#]));
    assert_eq!(called.code, 0, "{}", called.stderr);
    assert_eq!(called.stdout.trim(), "hi", "{}", called.stderr);

    sb.policy(&policy("docs"));
    sb.trust();
    let listed = run(sb.warden().args(["tools", "list"]));
    assert!(!listed.stdout.contains("demo__"), "{}", listed.stdout);
    assert!(
        listed.stderr.contains(
            "MCP server `demo` is not available: its command names server/demo_server.py, \
             which is outside the directories it is granted; add \"server\" to its `read` \
             grants in warden.toml"
        ),
        "{}",
        listed.stderr
    );
}

/// A dead server started again within a call is held to the call's time
/// limit (the server's `timeout`), not to the longer limit of a start:
/// the model hears why at its end, and the run goes on.
#[test]
fn a_restart_that_hangs_ends_with_the_calls_time_limit() {
    use warden_mock_llm::{MockLlm, answer, calls};
    if !python_mcp() {
        return;
    }
    let (sb, _) = with_demo_server_after_crash("--stall-after-crash");
    let policy = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    sb.policy(&format!("{policy}timeout = \"2s\"\n"));
    sb.trust();
    let mock = MockLlm::start(vec![
        calls(&[("c", "demo__crash", r#"{"marker":"m"}"#)]),
        calls(&[("e", "demo__echo", r#"{"text":"after the crash"}"#)]),
        answer("The server is down."),
    ]);
    let start = std::time::Instant::now();
    let out = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--yes", "go"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    // Two calls of at most 2 s each, and the restart's start-up.
    assert!(
        start.elapsed() < Duration::from_secs(12),
        "took {:?}: {stderr}",
        start.elapsed()
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{stderr}");
    let said = requests[2].body["messages"].to_string();
    assert!(
        said.contains(
            "MCP server `demo` had exited, and starting it again failed: it did not start \
             within 2s (the server's timeout, which bounds the whole call)"
        ),
        "{said}"
    );
}

/// The `pythonX.Y` of the system Python, as its user site names it.
fn python_version_dir() -> String {
    let out = Command::new(system_python())
        .args([
            "-c",
            "import sys; print(f'python{sys.version_info[0]}.{sys.version_info[1]}')",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// A server's HOME and TMPDIR are private folders outside its grants,
/// made for each start: a `usercustomize.py` a model plants where HOME
/// used to be (its first grant) does not run at the next start, and
/// neither does one under the workspace.
#[test]
fn a_planted_usercustomize_does_not_run_and_home_is_never_a_grant() {
    let (sb, _) = with_demo_server(&[]);
    let plant = "import os\nos.environ['PLANTED'] = 'yes'\n";
    for home in [sb.ws.join("server"), sb.ws.clone()] {
        let site = home
            .join(".local/lib")
            .join(python_version_dir())
            .join("site-packages");
        std::fs::create_dir_all(&site).unwrap();
        std::fs::write(site.join("usercustomize.py"), plant).unwrap();
    }
    sb.policy(&format!(
        "{}[tools.demo__env]\n",
        std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap()
    ));
    sb.trust();
    let out = run_ok(sb.warden().args(["tools", "call", "demo__env", "{}"]));
    let seen: Value = serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(seen["PLANTED"], Value::Null, "{seen}");
    let home = PathBuf::from(seen["HOME"].as_str().unwrap());
    assert!(!home.starts_with(&sb.ws), "{seen}");
    assert!(
        seen["TMPDIR"]
            .as_str()
            .unwrap()
            .starts_with(home.to_str().unwrap())
    );
    // Made for the start, removed after.
    assert!(!home.exists(), "{seen}");
}

/// A server run as a module (`-m mod`) has the module's tree pinned like a
/// script: the trust diff names it, and a change to any file of it keeps
/// the server from starting until trusted again.
#[test]
fn a_module_server_has_its_tree_pinned() {
    let sb = Sandbox::new();
    let pkg = sb.ws.join("srv");
    std::fs::create_dir(&pkg).unwrap();
    std::fs::copy(script("demo_server.py"), pkg.join("__main__.py")).unwrap();
    std::fs::write(pkg.join("helper.py"), "X = 1\n").unwrap();
    sb.policy(&format!(
        "[mcp.demo]\ncommand = [{:?}, \"-m\", \"srv\"]\nread = [\".\"]\n\n[tools.demo__echo]\n",
        system_python()
    ));
    let diff = run(sb.warden().arg("trust"));
    assert!(diff.stdout.contains("-m srv"), "{}", diff.stdout);
    let out = run_ok(
        sb.warden()
            .args(["tools", "call", "demo__echo", r#"{"text":"hi"}"#]),
    );
    assert_eq!(out.trim(), "hi");
    // Any file of the tree, not only the one run first.
    std::fs::write(pkg.join("helper.py"), "X = 2\n").unwrap();
    let r = run(sb
        .warden()
        .args(["tools", "call", "demo__echo", r#"{"text":"hi"}"#]));
    assert_ne!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stderr.contains("-m srv") && r.stderr.contains("not as you trusted it"),
        "{}",
        r.stderr
    );
}

/// warden's resident memory, from `/proc` (Linux), in KiB.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The most memory `child` held, sampled every 50 ms until it exits.
fn peak_rss_until_exit(child: &mut std::process::Child) -> u64 {
    let mut peak = 0;
    while child.try_wait().unwrap().is_none() {
        peak = peak.max(rss_kib(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    peak
}

/// A server that sends notifications without end, during a call: warden
/// holds no more of them than it reads (its memory stays small), drops
/// what passes the rate, and stops the server; the call ends by its time
/// limit, saying why.
#[test]
fn a_server_flooding_notifications_during_a_call_is_bounded_and_stopped() {
    let (sb, _) = with_demo_server(&[]);
    let policy = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    sb.policy(&format!(
        "{policy}timeout = \"5s\"\n\n[tools.demo__chatter]\n"
    ));
    sb.trust();
    let start = std::time::Instant::now();
    let mut child = sb
        .warden()
        .args(["tools", "call", "demo__chatter", "{}"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let peak = peak_rss_until_exit(&mut child);
    let took = start.elapsed();
    let out = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(peak < 100 << 10, "peak RSS {peak} KiB: {text}");
    assert!(took < Duration::from_secs(7), "{took:?}: {text}");
    assert!(
        text.contains("was stopped: it sent messages of its own (notifications)"),
        "{text}"
    );
}

/// The same flood from the start, with no call at all: an idle `warden
/// mcp` session stays small.
#[test]
fn an_idle_warden_mcp_stays_small_under_a_notification_flood() {
    let (sb, _) = with_demo_server(&["--chatter"]);
    let mut child = sb
        .warden()
        .arg("mcp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut peak = 0;
    let start = std::time::Instant::now();
    while start.elapsed() < Duration::from_secs(5) {
        peak = peak.max(rss_kib(child.id()).unwrap_or(0));
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(child.stdin.take());
    let _ = child.kill();
    let _ = child.wait();
    assert!(peak > 0 && peak < 100 << 10, "peak RSS {peak} KiB");
}

/// A call of an MCP tool is checked against the server's own schema
/// before it is sent, as a component's is: the model reads what is wrong.
#[test]
fn mcp_tool_arguments_are_checked_against_the_servers_schema() {
    let (sb, _) = with_demo_server(&[]);
    let policy = std::fs::read_to_string(sb.ws.join("warden.toml")).unwrap();
    sb.policy(&format!("{policy}\n[tools.demo__echo]\n"));
    sb.trust();
    for args in [r#"{"text": 5}"#, "{}", "[1]"] {
        let r = run(sb.warden().args(["tools", "call", "demo__echo", args]));
        assert_ne!(r.code, 0, "{args}: {}", r.stdout);
        assert!(
            r.stderr.contains("error (invalid arguments)") && r.stderr.contains("demo__echo"),
            "{args}: {}",
            r.stderr
        );
    }
    let ok = run_ok(
        sb.warden()
            .args(["tools", "call", "demo__echo", r#"{"text":"hi"}"#]),
    );
    assert_eq!(ok.trim(), "hi");
}
