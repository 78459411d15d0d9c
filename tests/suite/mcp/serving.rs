//! `warden mcp`: warden's tools served to an MCP client, through the
//! sandbox, with approval asked of the client's user.

use std::io::{BufRead, BufReader, Write};

use serde_json::{Value, json};
use std::process::{Command, Stdio};
use std::time::Duration;
use warden_tests::{Sandbox, run, run_ok, warden_bin};

use super::{python_mcp, script};

/// Runs the Python client against `warden mcp` in `sb`, making `calls`.
fn mcp_client(sb: &Sandbox, calls: Value, flags: &[&str]) -> Value {
    mcp_client_eliciting(sb, calls, flags, None)
}

/// [`mcp_client`] with a client that supports elicitation and answers
/// every one with `answer` (`accept`, `decline`), when given.
fn mcp_client_eliciting(sb: &Sandbox, calls: Value, flags: &[&str], answer: Option<&str>) -> Value {
    let mut cmd = sb.warden();
    cmd.env_remove("NO_COLOR");
    let mut py = Command::new("python3");
    // The SDK starts the server with this environment (private HOME, XDG).
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => py.env(k, v),
            None => py.env_remove(k),
        };
    }
    py.current_dir(&sb.ws)
        .arg(script("client.py"))
        .arg(warden_bin())
        .arg(&sb.ws)
        .arg(calls.to_string())
        .args(flags);
    match answer {
        Some(a) => py.env("WARDEN_TEST_ELICIT", a),
        None => py.env_remove("WARDEN_TEST_ELICIT"),
    };
    let out = run(&mut py);
    assert_eq!(
        out.code, 0,
        "client failed:\n{}\n{}",
        out.stdout, out.stderr
    );
    serde_json::from_str(out.stdout.trim()).unwrap_or_else(|e| panic!("{e}: {}", out.stdout))
}

#[test]
fn an_mcp_client_lists_and_calls_the_workspace_tools_through_the_sandbox() {
    if !python_mcp() {
        return;
    }
    let sb = Sandbox::new();
    let calls = json!([
        {"name": "read_file", "arguments": {"path": "hello.txt"}},
        {"name": "read_file", "arguments": {"path": "../outside/secret.txt"}},
        {"name": "read_file", "arguments": {"path": sb.outside.join("secret.txt")}},
        {"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}},
        {"name": "read_file", "arguments": {"nope": 1}},
        // Malformed requests, through the SDK's connection: a JSON-RPC
        // error each, and the server keeps serving.
        {"method": "tools/call", "params": {"name": 5}},
        {"method": "grant/everything", "params": {}},
        {"name": "read_file", "arguments": {"path": "hello.txt"}},
    ]);
    let before = sb.outside_snapshot();
    let report = mcp_client(&sb, calls, &[]);
    assert_eq!(report["server"], "warden");

    // The same tools, names and schemas as `warden tools list --json`.
    let listed: Value =
        serde_json::from_str(&run_ok(sb.warden().args(["tools", "list", "--json"]))).unwrap();
    let expected: Vec<(Value, Value)> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["enabled"] == true)
        .map(|t| (t["name"].clone(), t["parameters"].clone()))
        .collect();
    let served: Vec<(Value, Value)> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["name"].clone(), t["inputSchema"].clone()))
        .collect();
    assert!(expected.len() >= 10, "{expected:?}");
    assert_eq!(served, expected);

    let calls = report["calls"].as_array().unwrap();
    assert_eq!(calls[0]["isError"], false, "{calls:?}");
    assert!(calls[0]["text"].as_str().unwrap().contains("hello"));
    for escape in &calls[1..3] {
        assert_eq!(escape["isError"], true, "{escape}");
        assert!(
            escape["text"]
                .as_str()
                .unwrap()
                .contains("outside the directories"),
            "{escape}"
        );
        assert!(!escape["text"].as_str().unwrap().contains("top secret"));
    }
    // `approval = "writes"` is the default: without --yes, refused.
    assert_eq!(calls[3]["isError"], true);
    assert!(
        calls[3]["text"].as_str().unwrap().contains("--yes"),
        "{}",
        calls[3]
    );
    assert!(!sb.ws.join("new.txt").exists());
    // A schema error is a tool error with the message the model gets.
    assert_eq!(calls[4]["isError"], true);
    assert!(calls[4]["text"].as_str().unwrap().contains("path"));
    assert!(calls[5]["error"]["code"].is_i64(), "{}", calls[5]);
    assert_eq!(calls[6]["error"]["code"], -32601, "{}", calls[6]);
    assert_eq!(calls[7]["isError"], false, "{}", calls[7]);
    assert!(calls[7]["text"].as_str().unwrap().contains("world"));
    assert_eq!(sb.outside_snapshot(), before);
}

#[test]
fn with_yes_a_write_goes_through_and_never_offers_a_way_to_widen_grants() {
    if !python_mcp() {
        return;
    }
    let sb = Sandbox::new();
    let calls = json!([{"name": "write_file", "arguments": {"path": "new.txt", "content": "x"}}]);
    let report = mcp_client(&sb, calls, &["--yes"]);
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    assert_eq!(std::fs::read_to_string(sb.ws.join("new.txt")).unwrap(), "x");
    for t in report["tools"].as_array().unwrap() {
        let name = t["name"].as_str().unwrap();
        assert!(
            !name.contains("grant") && !name.contains("trust") && !name.contains("policy"),
            "{name}"
        );
    }
}

#[test]
fn a_client_that_can_ask_its_user_gets_a_write_approved_or_declined() {
    if !python_mcp() {
        return;
    }
    let sb = Sandbox::new();
    let calls = json!([{"name": "write_file", "arguments": {"path": "asked.txt", "content": "x"}}]);
    let declined = mcp_client_eliciting(&sb, calls.clone(), &[], Some("decline"));
    let asked = declined["elicited"][0].as_str().unwrap_or_default();
    assert!(
        asked.contains("write_file") && asked.contains("asked.txt"),
        "{declined}"
    );
    assert_eq!(declined["calls"][0]["isError"], true, "{declined}");
    let text = declined["calls"][0]["text"].as_str().unwrap();
    assert!(text.contains("declined"), "{text}");
    assert!(!sb.ws.join("asked.txt").exists());

    let accepted = mcp_client_eliciting(&sb, calls, &[], Some("accept"));
    assert_eq!(accepted["calls"][0]["isError"], false, "{accepted}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("asked.txt")).unwrap(),
        "x"
    );
    // A read needs no approval: nobody is asked.
    let read = json!([{"name": "read_file", "arguments": {"path": "asked.txt"}}]);
    let report = mcp_client_eliciting(&sb, read, &[], Some("decline"));
    assert_eq!(report["calls"][0]["isError"], false, "{report}");
    assert_eq!(report["elicited"], json!([]), "{report}");
}

/// One line-delimited JSON-RPC exchange with a `warden mcp` process.
struct Raw {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Raw {
    fn start(sb: &Sandbox) -> Raw {
        Raw::start_with(sb, &[])
    }

    /// `warden mcp ARGS`.
    fn start_with(sb: &Sandbox, args: &[&str]) -> Raw {
        let mut child = sb
            .warden()
            .arg("mcp")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        Raw { child, out }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    /// `initialize` and `notifications/initialized`; the answer.
    fn initialize(&mut self) -> Value {
        self.send(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"}}})
            .to_string(),
        );
        let answer = self.read();
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        answer
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

#[test]
fn a_malformed_request_gets_a_json_rpc_error_and_the_server_keeps_serving() {
    let sb = Sandbox::new();
    let mut mcp = Raw::start(&sb);
    assert_eq!(mcp.initialize()["result"]["serverInfo"]["name"], "warden");
    // Valid JSON, not a valid request: params of the wrong type.
    mcp.send(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":7}"#);
    let error = mcp.read();
    assert!(error["error"]["code"].is_i64(), "{error}");
    // A method that does not exist.
    mcp.send(r#"{"jsonrpc":"2.0","id":3,"method":"grant/everything","params":{}}"#);
    let error = mcp.read();
    assert_eq!(error["id"], 3, "{error}");
    assert_eq!(error["error"]["code"], -32601, "{error}");
    // Still serving.
    mcp.send(
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"hello.txt"}}}"#,
    );
    let answer = mcp.read();
    assert_eq!(answer["id"], 4, "{answer}");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("world"), "{answer}");
    drop(mcp.child.stdin.take());
    let status = mcp.child.wait().unwrap();
    assert!(status.success(), "{status}");
}

#[test]
fn the_server_takes_a_changed_policy_only_after_trust_and_says_so() {
    let sb = Sandbox::new();
    sb.policy("[tools.read_file]\nread = [\"docs\"]\n");
    sb.trust();
    let mut mcp = Raw::start(&sb);
    mcp.initialize();
    let call = |id: u32| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "read_file", "arguments": {"path": "hello.txt"}}})
        .to_string()
    };
    mcp.send(&call(2));
    assert_eq!(mcp.read()["result"]["isError"], true);
    // Edited, not trusted: nothing changes.
    sb.policy("[tools.read_file]\nread = [\".\"]\n");
    mcp.send(&call(3));
    assert_eq!(mcp.read()["result"]["isError"], true);
    // Trusted: the next request sees it, after a list_changed notice.
    sb.trust();
    mcp.send(&call(4));
    let first = mcp.read();
    assert_eq!(
        first["method"], "notifications/tools/list_changed",
        "{first}"
    );
    let answer = mcp.read();
    assert_eq!(answer["id"], 4);
    assert_eq!(answer["result"]["isError"], false, "{answer}");
}

/// A client that goes away while a call runs takes the call with it:
/// `warden mcp` stops the command at once rather than waiting out its
/// timeout.
#[test]
fn a_client_that_goes_away_stops_the_call_it_left_running() {
    let sb = Sandbox::new();
    sb.policy("[tools.shell]\nexec = [\"sh\"]\nread = [\".\"]\ntimeout = \"60s\"\n");
    sb.trust();
    let mut mcp = Raw::start_with(&sb, &["--yes"]);
    mcp.initialize();
    mcp.send(
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 777410"}}}"#,
    );
    warden_tests::wait_until("the command never started", || {
        !warden_tests::sleeping("777410").is_empty()
    });
    let gone = std::time::Instant::now();
    drop(mcp.child.stdin.take());
    while mcp.child.try_wait().unwrap().is_none() && gone.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = gone.elapsed();
    let _ = mcp.child.kill();
    let _ = mcp.child.wait();
    // Not the 5 s rmcp gives calls in flight to answer once its input ends:
    // the call is cancelled when stdin closes.
    assert!(
        took < Duration::from_secs(3),
        "warden mcp ended {took:?} after its client"
    );
    assert_eq!(warden_tests::sleeping("777410"), Vec::<u32>::new());
}

/// A client that can ask its user, driven by hand: `initialize` with the
/// elicitation capability, then a `write_file` call whose question comes
/// back; `answer` is sent for it (`{id}` stands for the question's id).
/// The call's result, and how long the answer took to come back.
fn answered_by_hand(sb: &Sandbox, answer: &str) -> (Value, Duration) {
    let mut mcp = Raw::start(sb);
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}},
            "clientInfo": {"name": "raw", "version": "1"}}})
        .to_string(),
    );
    mcp.read();
    mcp.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    // A long content before the path: the question names the file first.
    let content = "y".repeat(5_000);
    mcp.send(
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "write_file",
            "arguments": {"content": content, "path": ".git/hooks/pre-commit"}}})
        .to_string(),
    );
    let question = mcp.read();
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let message = question["params"]["message"].as_str().unwrap().to_string();
    let lines: Vec<&str> = message.lines().collect();
    assert_eq!(
        lines[1..3],
        ["It will:", "  write .git/hooks/pre-commit"],
        "{message}"
    );
    assert!(message.ends_with("more bytes left out)"), "{message}");
    let id = question["id"].to_string();
    let start = std::time::Instant::now();
    mcp.send(&answer.replace("{id}", &id));
    let result = mcp.read();
    (result, start.elapsed())
}

/// The question names the file first, whatever the order and size of the
/// arguments; only a well-formed accept runs the call; an answer that
/// does not parse is a refusal at once, not after the question's time.
#[test]
fn only_a_well_formed_accept_runs_a_call_and_the_question_names_the_file_first() {
    let sb = Sandbox::new();
    let hook = sb.ws.join(".git/hooks/pre-commit");
    for (answer, why) in [
        (
            r#"{"jsonrpc":"2.0","id":{id},"result":{"action":"accept","content":{"x":1}}}"#,
            "content the question did not ask for",
        ),
        (
            r#"{"jsonrpc":"2.0","id":{id},"result":{"action":"maybe"}}"#,
            "could not be read",
        ),
        (
            r#"{"jsonrpc":"2.0","id":{id},"result":"#,
            "could not be read",
        ),
        (
            r#"{"jsonrpc":"2.0","id":{id},"result":{"action":"decline"}}"#,
            "declined",
        ),
    ] {
        let (result, took) = answered_by_hand(&sb, answer);
        assert_eq!(result["id"], 2, "{answer}: {result}");
        assert_eq!(result["result"]["isError"], true, "{answer}: {result}");
        let text = result["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains(why), "{answer}: {text}");
        assert!(took < Duration::from_secs(10), "{answer}: {took:?}");
        assert!(!hook.exists(), "{answer}");
    }
    let (result, _) = answered_by_hand(
        &sb,
        r#"{"jsonrpc":"2.0","id":{id},"result":{"action":"accept","content":{}}}"#,
    );
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert!(hook.is_file());
}
