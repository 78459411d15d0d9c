//! The agent end to end: `warden run` against the mock OpenAI-compatible server.

use serde_json::{Value, json};
use warden_mock_llm::{MockLlm, Reply, answer, calls, check_chat_body, chunk};
use warden_tests::{Run, Sandbox, run};

const KEY: &str = "sk-test-do-not-leak-4242";

fn warden_run(sb: &Sandbox, mock: &MockLlm, args: &[&str]) -> Run {
    warden_tests::warden_run(sb, mock, KEY, args)
}

/// Every request was a valid chat-completions body; returns them.
fn bodies(mock: &MockLlm) -> Vec<Value> {
    let reqs = mock.requests();
    for r in &reqs {
        assert_eq!(r.path, "/v1/chat/completions");
        check_chat_body(&r.body).unwrap_or_else(|e| panic!("invalid request: {e}\n{}", r.body));
        assert_eq!(r.authorization.as_deref(), Some(&*format!("Bearer {KEY}")));
    }
    reqs.into_iter().map(|r| r.body).collect()
}

/// The role of each message of a request body, in order.
fn roles(body: &Value) -> Vec<&str> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect()
}

/// The transcript lines of the only session, each parsed.
fn transcript(sb: &Sandbox) -> (String, Vec<Value>) {
    // Sessions live in the user's state folder, one folder per workspace.
    assert!(!sb.ws.join(".warden/sessions").exists());
    let files: Vec<_> = std::fs::read_dir(sb.home.join("state/warden/sessions"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        !text.contains(KEY),
        "the API key leaked into the transcript"
    );
    let lines = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad line {l}: {e}")))
        .collect();
    (text, lines)
}

fn tool_messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().into(),
                m["content"].as_str().unwrap().into(),
            )
        })
        .collect()
}

#[test]
fn the_classic_task_reads_cargo_toml_then_writes_a_summary() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws.join("Cargo.toml"), "[package]\nname = \"demo\"\n").unwrap();
    let summary = "demo is a Rust package.\n";
    let mock = MockLlm::start(vec![
        calls(&[("call_1", "read_file", r#"{"path":"Cargo.toml"}"#)]),
        calls(&[(
            "call_2",
            "write_file",
            &json!({"path": "summary.txt", "content": summary}).to_string(),
        )]),
        answer("Wrote summary.txt."),
    ]);
    let r = warden_run(&sb, &mock, &["Summarize Cargo.toml into summary.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Wrote summary.txt.\n");
    assert!(r.stderr.contains("✓ read_file Cargo.toml"), "{}", r.stderr);
    assert!(
        r.stderr.contains("✓ write_file summary.txt"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("summary.txt")).unwrap(),
        summary
    );
    assert!(!r.stderr.contains(KEY) && !r.stdout.contains(KEY));

    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "read_file")
    );
    assert_eq!(
        bodies[0]["messages"][1],
        json!({"role": "user", "content": "Summarize Cargo.toml into summary.txt"})
    );
    let tools = tool_messages(&bodies[1]);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].0, "call_1");
    assert!(tools[0].1.contains("name = \"demo\""), "{}", tools[0].1);
    // The assistant message echoes its tool call exactly.
    let echoed = &bodies[1]["messages"][2];
    assert_eq!(echoed["tool_calls"][0]["id"], "call_1");
    assert_eq!(
        echoed["tool_calls"][0]["function"]["arguments"],
        r#"{"path":"Cargo.toml"}"#
    );

    let (_, lines) = transcript(&sb);
    let kinds: Vec<String> = lines
        .iter()
        .map(|l| match l["type"].as_str().unwrap() {
            "message" => format!("message:{}", l["message"]["role"].as_str().unwrap()),
            t => t.to_string(),
        })
        .collect();
    let expected = [
        "start",
        "message:system",
        "message:user",
        "message:assistant",
        "tool_result",
        "message:tool",
        "message:assistant",
        "tool_result",
        "message:tool",
        "usage",
        "message:assistant",
        "end",
    ];
    assert_eq!(kinds, expected);
}

#[test]
fn bad_calls_come_back_to_the_model_and_the_run_goes_on() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[
            ("a", "reed_file", r#"{"path":"hello.txt"}"#),
            ("b", "read_file", r#"{"path": "hello.txt""#),
            ("c", "read_file", r#"{"path": 7}"#),
            ("d", "read_file", r#"{"path":"../outside/secret.txt"}"#),
        ]),
        answer("I could not read it."),
    ]);
    let r = warden_run(&sb, &mock, &["read things"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let bodies = bodies(&mock);
    let tools = tool_messages(&bodies[1]);
    let ids: Vec<&str> = tools.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    assert!(
        tools[0].1.contains("no tool named `reed_file`") && tools[0].1.contains("read_file"),
        "{}",
        tools[0].1
    );
    assert!(tools[1].1.contains("not valid JSON"), "{}", tools[1].1);
    assert!(
        tools[2].1.contains("do not match its schema") && tools[2].1.contains("/path"),
        "{}",
        tools[2].1
    );
    assert!(
        tools[3].1.contains("outside the directories"),
        "{}",
        tools[3].1
    );
    assert!(r.stderr.contains("✗ reed_file"), "{}", r.stderr);
}

#[test]
fn calls_with_a_shared_or_no_id_or_no_name_go_back_valid_and_resume_whole() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[
            ("a", "read_file", r#"{"path":"hello.txt"}"#),
            ("a", "list_files", r#"{"path":"."}"#),
            ("", "read_file", r#"{"path":"hello.txt"}"#),
            ("call_2", "", "{}"),
        ]),
        answer("Done."),
        answer("Again."),
    ]);
    let r = warden_run(&sb, &mock, &["read things"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let tools = tool_messages(&bodies(&mock)[1]);
    let ids: Vec<&str> = tools.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["a", "call_1", "call_3", "call_2"]);
    assert!(tools[0].1.contains("hello") && tools[2].1.contains("hello"));
    assert!(tools[1].1.contains("hello.txt"), "{}", tools[1].1);
    assert!(
        tools[3].1.contains("the tool call has no name"),
        "{}",
        tools[3].1
    );
    // The transcript resumes with every call and its result.
    let r = warden_run(&sb, &mock, &["-c", "more"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(tool_messages(&bodies(&mock)[2]), tools);
}

fn transcript_intact(sb: &Sandbox) {
    let (_, lines) = transcript(sb);
    assert_eq!(lines[0]["type"], "start");
    assert!(
        lines
            .iter()
            .any(|l| l["type"] == "message" && l["message"]["role"] == "user")
    );
}

#[test]
fn transient_failures_are_retried_and_the_run_succeeds() {
    let cases: Vec<(&str, Vec<Reply>)> = vec![
        (
            "429 with Retry-After",
            vec![Reply::Status {
                status: 429,
                body: r#"{"error":{"message":"slow down"}}"#.into(),
                retry_after: Some("1".into()),
            }],
        ),
        (
            "500 three times",
            vec![
                Reply::Status {
                    status: 500,
                    body: "boom".into(),
                    retry_after: None,
                },
                Reply::Status {
                    status: 502,
                    body: "boom".into(),
                    retry_after: None,
                },
                Reply::Status {
                    status: 503,
                    body: "boom".into(),
                    retry_after: None,
                },
            ],
        ),
        (
            "a stream cut midway",
            vec![Reply::SseCut(vec![chunk::text("Partial ans")])],
        ),
    ];
    for (what, mut replies) in cases {
        let sb = Sandbox::new();
        let failures = replies.len();
        replies.push(answer("Recovered."));
        let mock = MockLlm::start(replies);
        let start = std::time::Instant::now();
        let r = warden_run(&sb, &mock, &["hi"]);
        assert_eq!(r.code, 0, "{what}: {}", r.stderr);
        assert!(r.stdout.ends_with("Recovered.\n"), "{what}: {}", r.stdout);
        assert!(r.stderr.contains("retrying"), "{what}: {}", r.stderr);
        assert_eq!(bodies(&mock).len(), failures + 1, "{what}");
        if what.starts_with("429") {
            assert!(
                start.elapsed() >= std::time::Duration::from_millis(900),
                "Retry-After ignored"
            );
        }
        transcript_intact(&sb);
    }
}

#[test]
fn a_server_that_never_answers_times_out() {
    let sb = Sandbox::new();
    sb.policy("[model]\nidle_timeout = \"300ms\"\nmax_attempts = 2\n");
    sb.trust();
    let mock = MockLlm::start(vec![Reply::Hang, Reply::Hang]);
    let start = std::time::Instant::now();
    let r = warden_run(&sb, &mock, &["hi"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(start.elapsed() < std::time::Duration::from_secs(10));
    assert!(
        r.stderr.contains("error:") && r.stderr.contains(&mock.base_url()),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("--resume"), "{}", r.stderr);
    assert_eq!(mock.requests().len(), 2);
    transcript_intact(&sb);
}

#[test]
fn unauthorized_is_a_clear_error_without_retry() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![Reply::Status {
        status: 401,
        body: r#"{"error":{"message":"Incorrect API key provided"}}"#.into(),
        retry_after: None,
    }]);
    let r = warden_run(&sb, &mock, &["hi"]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.contains("401") && r.stderr.contains("Incorrect API key provided"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains(KEY));
    assert_eq!(mock.requests().len(), 1);
    transcript_intact(&sb);
}

#[test]
fn the_text_protocol_runs_calls_written_in_prose() {
    let sb = Sandbox::new();
    sb.policy("[model]\nprotocol = \"text\"\n");
    sb.trust();
    let reply = "I will write the note and read the file.\n\
        [TOOL] write_file(\"notes, (draft).txt\", \"a \\\"quoted\\\" line\") [/TOOL]\n\
        Then:\n[TOOL] read_file({\"path\": \"hello.txt\"}) [/TOOL]";
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            chunk::text(reply),
            chunk::finish("stop"),
            chunk::done(),
        ]),
        answer("Both done."),
    ]);
    let r = warden_run(&sb, &mock, &["write a note"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("notes, (draft).txt")).unwrap(),
        "a \"quoted\" line"
    );
    let bodies = bodies(&mock);
    assert!(bodies.iter().all(|b| b.get("tools").is_none()));
    assert!(
        bodies[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("[TOOL]")
    );
    let last = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["role"], "user");
    let results = last["content"].as_str().unwrap();
    assert!(
        results.contains("wrote") && results.contains("     1\thello"),
        "{results}"
    );
}

#[test]
fn auto_switches_to_text_when_the_endpoint_rejects_tools() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        Reply::Status {
            status: 400,
            body: r#"{"error":{"message":"tools are not supported by this model"}}"#.into(),
            retry_after: None,
        },
        // Whether the server constrains replies to a schema, asked once:
        // it refuses `response_format` and ignores Ollama's `format`.
        Reply::Status {
            status: 400,
            body: r#"{"error":{"message":"Unrecognized request argument: response_format"}}"#
                .into(),
            retry_after: None,
        },
        answer("Hello! How can I help?"),
        Reply::Sse(vec![
            chunk::text("[TOOL] read_file(\"hello.txt\") [/TOOL]"),
            chunk::finish("stop"),
            chunk::done(),
        ]),
        answer("It says hello."),
    ]);
    let r = warden_run(&sb, &mock, &["what is in hello.txt?"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("switching to the text tool protocol"),
        "{}",
        r.stderr
    );
    let bodies = bodies(&mock);
    assert!(bodies[0].get("tools").is_some());
    assert!(bodies[1].get("response_format").is_some());
    assert!(bodies[2].get("format").is_some());
    let bodies = &bodies[2..];
    assert!(bodies[1].get("tools").is_none());
    assert!(
        bodies[1]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("[TOOL]")
    );
    let last = bodies[2]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert!(
        last["content"].as_str().unwrap().contains("     1\thello"),
        "{last}"
    );
}

#[test]
fn json_events_and_resume() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "read_file", r#"{"path":"hello.txt"}"#)]),
        answer("First."),
        answer("Second."),
    ]);
    let r = warden_run(&sb, &mock, &["--json", "one"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains(KEY));
    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["tool_call", "tool_result", "text", "usage", "final"]
    );
    assert_eq!(events[1]["ok"], true);
    assert_eq!(events[4]["text"], "First.");
    let id = events[4]["session"].as_str().unwrap().to_string();

    let list = run(sb.warden().args(["sessions"]));
    assert!(
        list.stdout.contains(&id) && list.stdout.contains("one"),
        "{}",
        list.stdout
    );

    let r = warden_run(&sb, &mock, &["--resume", &id, "two"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Second.\n");
    let bodies = bodies(&mock);
    let roles = roles(&bodies[2]);
    assert_eq!(
        roles,
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    let (_, lines) = transcript(&sb);
    assert_eq!(lines.iter().filter(|l| l["type"] == "start").count(), 2);
}

#[test]
fn no_model_configured_says_what_to_set() {
    let sb = Sandbox::new();
    let r = run(sb.warden().args(["run", "hi"]));
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("no model configured: set OPENAI_BASE_URL"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Ollama"), "{}", r.stderr);
    // warden's own message keeps its lines.
    assert!(
        r.stderr.contains("For example:\n  OpenAI: ") && !r.stderr.contains("\\n"),
        "{}",
        r.stderr
    );
}

#[test]
fn no_stream_mode_reads_whole_answers() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![Reply::Json(json!({
        "id": "x", "object": "chat.completion", "model": "m",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Whole answer."}}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}
    }))]);
    let r = warden_run(&sb, &mock, &["--no-stream", "hi"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Whole answer.\n");
    assert_eq!(bodies(&mock)[0]["stream"], false);
}

#[test]
fn tools_run_by_the_agent_never_see_the_api_key() {
    let sb = Sandbox::new();
    sb.drop_in(warden_tests::guests::HOSTILE, "hostile.wasm");
    sb.policy("[tools.env_dump]\n");
    sb.trust();
    let mock = MockLlm::start(vec![calls(&[("e", "env_dump", "{}")]), answer("ok")]);
    let r = warden_run(&sb, &mock, &["dump the environment"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let tools = tool_messages(&bodies(&mock)[1]);
    assert_eq!(tools[0].1, "count=0");
}

#[test]
fn chat_reads_lines_runs_slash_commands_and_keeps_the_conversation() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![answer("Hello!"), answer("Still here.")]);
    let out = sb.chat(&mock.base_url(), KEY, b"hi\n/tools\nand again\n/exit\n");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("Hello!") && stdout.contains("Still here."),
        "{stdout}"
    );
    assert!(
        stderr.contains("read_file") && stderr.contains("read-only"),
        "{stderr}"
    );
    let bodies = bodies(&mock);
    let roles = roles(&bodies[1]);
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
}

/// A streamed answer with no text and no tool calls.
fn empty_answer() -> Reply {
    Reply::Sse(vec![
        chunk::finish("stop"),
        chunk::usage(10, 0),
        chunk::done(),
    ])
}

#[test]
fn an_empty_answer_fails_the_run_and_the_session_can_be_resumed() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![empty_answer(), answer("Here.")]);
    let r = warden_run(&sb, &mock, &["hi"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.contains(
            "error: the model returned an empty answer (no text and no tool calls, \
             finish_reason \"stop\"): send the message again"
        ),
        "{}",
        r.stderr
    );
    let (_, lines) = transcript(&sb);
    assert!(
        !lines.iter().any(|l| l["message"]["role"] == "assistant"),
        "{lines:?}"
    );
    let id = r
        .stderr
        .split("--resume ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no session id: {}", r.stderr))
        .to_string();
    let r = warden_run(&sb, &mock, &["--resume", &id, "hi again"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Here.\n");
    assert_eq!(bodies(&mock).len(), 2);
}

#[test]
fn in_chat_an_empty_answer_is_reported_and_not_sent_back() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![empty_answer(), answer("Here.")]);
    let out = sb.chat(&mock.base_url(), KEY, b"hi\nhi again\n/exit\n");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("error: the model returned an empty answer"),
        "{stderr}"
    );
    assert!(stdout.contains("Here."), "{stdout}");
    // Valid requests only: no assistant message without content, and the
    // two user messages sent as one.
    let bodies = bodies(&mock);
    let roles = roles(&bodies[1]);
    assert_eq!(roles, ["system", "user"]);
    assert_eq!(bodies[1]["messages"][1]["content"], "hi\n\nhi again");
}

#[test]
fn the_chat_history_replaces_a_planted_link_instead_of_writing_through_it() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![answer("Hello!")]);
    let state = sb.folders().state.join("warden");
    let target = sb.outside.join("victim.txt");
    std::fs::write(&target, "precious\n").unwrap();
    std::os::unix::fs::symlink(&target, state.join("history")).unwrap();
    let out = sb.chat(&mock.base_url(), KEY, b"say \"hi\"\n/exit\n");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious\n");
    let history = state.join("history");
    assert!(
        !std::fs::symlink_metadata(&history).unwrap().is_symlink(),
        "the link is still there"
    );
    let saved = std::fs::read_to_string(&history).unwrap();
    assert!(saved.lines().any(|l| l == r#""say \"hi\"""#), "{saved}");
}

#[test]
fn without_yes_a_non_interactive_run_refuses_writes_and_the_model_sees_it() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[
            ("w", "write_file", r#"{"path":"new.txt","content":"x"}"#),
            ("r", "read_file", r#"{"path":"hello.txt"}"#),
        ]),
        answer("I was not allowed to write."),
    ]);
    let r = run(sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .args(["run", "write new.txt"]));
    // The refusal fails the run, whatever the model says after it.
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(!sb.ws.join("new.txt").exists());
    let tools = tool_messages(&mock.requests()[1].body);
    assert!(
        tools[0].1.contains("needs the user's approval") && tools[0].1.contains("--yes"),
        "{}",
        tools[0].1
    );
    assert!(
        tools[1].1.contains("     1\thello"),
        "reads need no approval: {}",
        tools[1].1
    );
}

#[test]
fn approval_never_runs_writes_without_asking() {
    let sb = Sandbox::new();
    sb.policy("approval = \"never\"\n");
    sb.trust();
    let mock = MockLlm::start(vec![
        calls(&[("w", "write_file", r#"{"path":"new.txt","content":"x"}"#)]),
        answer("ok"),
    ]);
    let r = run(sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .args(["run", "write"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(sb.ws.join("new.txt")).unwrap(), "x");
}

#[test]
fn on_a_terminal_the_user_sees_a_diff_and_a_refusal_reaches_the_model() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[(
            "w",
            "write_file",
            r#"{"path":"hello.txt","content":"hello\nmars\n"}"#,
        )]),
        answer("You said no."),
    ]);
    let r = sb.run_in_terminal(&mock.base_url(), "change hello.txt", "n\n");
    assert!(r.stdout.contains("write_file wants to run"), "{}", r.stdout);
    assert!(
        r.stdout.contains("- world") && r.stdout.contains("+ mars"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("You said no."), "{}", r.stdout);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    let tools = tool_messages(&mock.requests()[1].body);
    assert!(tools[0].1.contains("the user refused"), "{}", tools[0].1);
}

#[test]
fn on_a_terminal_the_usage_line_follows_the_answer_on_its_own_line() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![answer("Here is the answer.")]);
    let r = sb.run_in_terminal(&mock.base_url(), "hi", "");
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert!(
        r.stdout
            .contains("Here is the answer.\r\ntokens: 10 prompt + 5 completion = 15"),
        "{:?}",
        r.stdout
    );
}

/// A reader that goes away (`warden run … | head`) ends nothing early:
/// the run finishes, reports what it changed and exits 0.
#[test]
fn closed_stdout_and_stderr_do_not_end_the_run_midway() {
    // As in `warden run … 2>&1 | head` once head has exited: every line
    // warden writes, the tool-call line and the `changed:` report on stderr
    // too, meets a closed pipe.
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[("w", "write_file", r#"{"path":"new.txt","content":"made"}"#)]),
        answer("Written."),
    ]);
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", KEY)
        .args(["run", "--yes", "write new.txt"])
        .stdout(writer.try_clone().unwrap())
        .stderr(writer)
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(0), "{status}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("new.txt")).unwrap(),
        "made"
    );
    // The session was recorded to its end.
    let (_, lines) = transcript(&sb);
    let last = lines.iter().rev().find(|l| l["type"] == "message").unwrap();
    assert_eq!(last["message"]["content"], "Written.", "{lines:?}");
}

#[test]
fn a_closed_stdout_does_not_end_the_run_in_a_panic() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[("w", "write_file", r#"{"path":"new.txt","content":"made"}"#)]),
        answer("Written, without a newline at the end"),
    ]);
    let mut child = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", KEY)
        .env("WARDEN_RETRY_BASE_MS", "5")
        .args(["run", "--yes", "write new.txt"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(stderr.contains("changed: new.txt"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("new.txt")).unwrap(),
        "made"
    );
}
