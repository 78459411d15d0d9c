//! The agent against servers and models as they really behave: cut and
//! failing streams, wrong endpoints, silence, cut answers, broken or inline
//! tool calls, repeats, small context windows; through the real binary.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_mock_llm::{MockLlm, Reply, answer, calls, check_chat_body, chunk, prompt_tokens};
use warden_tests::{Run, Sandbox};

pub(super) fn warden_run(sb: &Sandbox, mock: &MockLlm, args: &[&str]) -> Run {
    warden_tests::warden_run(sb, mock, "sk-test", args)
}

/// Every request a real server would accept (tool-call arguments that are
/// JSON objects included); returns the bodies.
pub(super) fn bodies(mock: &MockLlm) -> Vec<Value> {
    mock.requests()
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            check_chat_body(&r.body).unwrap_or_else(|e| panic!("request {i}: {e}\n{}", r.body));
            r.body
        })
        .collect()
}

fn tool_messages(body: &Value) -> Vec<String> {
    warden_tests::tool_contents(body)
}

fn status(status: u16, body: &str) -> Reply {
    Reply::Status {
        status,
        body: body.into(),
        retry_after: None,
    }
}

/// The only session's transcript file.
fn transcript_path(sb: &Sandbox) -> std::path::PathBuf {
    let files: Vec<_> = std::fs::read_dir(sb.home.join("state/warden/sessions"))
        .unwrap()
        .flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn session_id(r: &Run) -> String {
    let line = r.stdout.lines().last().unwrap();
    let v: Value = serde_json::from_str(line).unwrap();
    v["session"].as_str().unwrap().to_string()
}

#[test]
fn a_cut_stream_then_a_retry_prints_the_answer_once() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        Reply::SseCut(vec![chunk::text("Hello, "), chunk::text("wor")]),
        Reply::Sse(vec![
            chunk::text("Hello, world."),
            chunk::finish("stop"),
            chunk::done(),
        ]),
    ]);
    let r = warden_run(&sb, &mock, &["greet"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Hello, world.\n");
    assert!(r.stderr.contains("retrying"), "{}", r.stderr);
    assert_eq!(bodies(&mock).len(), 2);
}

#[test]
fn an_error_event_in_a_stream_is_retried_without_repeating_the_text() {
    let sb = Sandbox::new();
    let error = json!({"error": {"message": "The model produced output that does not match the expected format"}});
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![chunk::text("Hel"), error.to_string()]),
        Reply::Sse(vec![
            chunk::text("Hello."),
            chunk::finish("stop"),
            chunk::done(),
        ]),
    ]);
    let r = warden_run(&sb, &mock, &["greet"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Hello.\n");
    assert!(
        r.stderr.contains("retrying") && r.stderr.contains("does not match the expected format"),
        "{}",
        r.stderr
    );
    assert_eq!(bodies(&mock).len(), 2);
}

#[test]
fn a_page_that_is_not_an_api_is_named_as_such_without_retries() {
    for (kind, body) in [
        (
            "text/html; charset=utf-8",
            "<!doctype html><html><body>Welcome</body></html>",
        ),
        ("text/plain", "it works"),
        ("application/json", "<html>not json</html>"),
    ] {
        let sb = Sandbox::new();
        let mock = MockLlm::start(vec![Reply::Raw {
            status: 200,
            content_type: kind.into(),
            body: body.into(),
        }]);
        let r = warden_run(&sb, &mock, &["hi"]);
        assert_eq!(r.code, 3, "{kind}: {}", r.stderr);
        assert!(
            r.stderr
                .contains("this is not an OpenAI-compatible endpoint: check the base URL")
                && r.stderr.contains("/v1"),
            "{kind}: {}",
            r.stderr
        );
        assert_eq!(mock.requests().len(), 1, "{kind}: retried");
    }
}

#[test]
fn a_404_names_the_model_and_a_401_the_key_variable() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![status(
        404,
        r#"{"error":{"message":"model not found"}}"#,
    )]);
    let r = warden_run(&sb, &mock, &["--model", "qwen-coder-typo", "hi"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("model `qwen-coder-typo`"), "{}", r.stderr);
    assert_eq!(mock.requests().len(), 1);

    let mock = MockLlm::start(vec![status(401, r#"{"error":{"message":"bad key"}}"#)]);
    let r = warden_run(&sb, &mock, &["hi"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("$OPENAI_API_KEY"), "{}", r.stderr);
    assert!(!r.stderr.contains("sk-test"), "{}", r.stderr);
}

#[test]
fn a_server_that_never_answers_fails_within_the_request_deadline() {
    let sb = Sandbox::new();
    // The idle timeout stays at its default (two minutes): only the
    // deadline can end this.
    sb.policy("[model]\nrequest_timeout = \"1s\"\n");
    sb.trust();
    let mock = MockLlm::start(vec![Reply::Hang, Reply::Hang, Reply::Hang]);
    let start = Instant::now();
    let r = warden_run(&sb, &mock, &["hi"]);
    let took = start.elapsed();
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(
        r.stderr.contains("request timed out after 1s") && r.stderr.contains("request_timeout"),
        "{}",
        r.stderr
    );
}

#[test]
fn the_final_error_names_the_cause_of_every_attempt() {
    let sb = Sandbox::new();
    sb.policy("[model]\nmax_attempts = 3\n");
    sb.trust();
    let mock = MockLlm::start(vec![
        status(500, r#"{"error":{"message":"first: out of memory"}}"#),
        Reply::SseCut(vec![chunk::text("x")]),
        status(503, r#"{"error":{"message":"third: overloaded"}}"#),
    ]);
    let r = warden_run(&sb, &mock, &["hi"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let error = r.stderr.lines().find(|l| l.starts_with("error:")).unwrap();
    assert!(
        error.contains("after 3 attempts")
            && error.contains("attempt 1: http 500: first: out of memory")
            && error.contains("attempt 2: stream cut")
            && error.contains("third: overloaded"),
        "{error}"
    );
}

#[test]
fn an_answer_cut_at_the_output_limit_is_flagged() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        chunk::text("The three steps are: first"),
        chunk::finish("length"),
        chunk::done(),
    ])]);
    let r = warden_run(&sb, &mock, &["explain"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "The three steps are: first\n");
    assert!(
        r.stderr
            .contains("cut off at the model's output token limit"),
        "{}",
        r.stderr
    );
    let json = warden_run(
        &sb,
        &MockLlm::start(vec![Reply::Sse(vec![
            chunk::text("Cut"),
            chunk::finish("length"),
            chunk::done(),
        ])]),
        &["--json", "explain"],
    );
    assert!(json.stdout.contains(r#"{"type":"cut"}"#), "{}", json.stdout);
}

#[test]
fn a_cut_tool_call_is_never_sent_back_and_the_session_resumes() {
    let sb = Sandbox::new();
    let broken = r#"{"path": "hello.txt", "offset":"#;
    let mock = MockLlm::start(vec![
        Reply::Sse(vec![
            chunk::tool_call_start(0, "c1", "read_file"),
            chunk::tool_call_args(0, broken),
            chunk::finish("length"),
            chunk::done(),
        ]),
        answer("I could not finish."),
        answer("Resumed."),
        answer("Resumed again."),
    ]);
    let r = warden_run(&sb, &mock, &["--json", "read it"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let id = session_id(&r);
    let b = bodies(&mock);
    let results = tool_messages(&b[1]);
    assert!(
        results[0].contains("cut off at the output token limit")
            && results[0].contains("not valid JSON"),
        "{}",
        results[0]
    );
    assert_eq!(
        b[1]["messages"][2]["tool_calls"][0]["function"]["arguments"],
        "{}"
    );

    let r = warden_run(&sb, &mock, &["--resume", &id, "go on"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Resumed.\n");

    // A transcript written by an older version holds the broken arguments
    // themselves: it resumes too, repaired before anything is sent.
    let path = transcript_path(&sb);
    let text = std::fs::read_to_string(&path).unwrap();
    let escaped = serde_json::to_string(broken).unwrap();
    let poisoned = text.replace(r#""arguments":"{}""#, &format!(r#""arguments":{escaped}"#));
    assert_ne!(poisoned, text);
    std::fs::write(&path, poisoned).unwrap();
    let r = warden_run(&sb, &mock, &["--resume", &id, "and again"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Resumed again.\n");
    assert_eq!(bodies(&mock).len(), 4);
}

#[test]
fn tool_calls_written_as_text_are_run_under_auto() {
    let sb = Sandbox::new();
    let text = |s: &str| Reply::Sse(vec![chunk::text(s), chunk::finish("stop"), chunk::done()]);
    let mock = MockLlm::start(vec![
        text(r#"{"name": "read_file", "arguments": {"path": "hello.txt"}}"#),
        text(
            "Let me list them.\n```json\n{\"name\": \"list_files\", \"arguments\": {\"path\": \".\"}}\n```",
        ),
        text(
            "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"docs/readme.md\"}}\n</tool_call>",
        ),
        answer("Read both."),
    ]);
    let r = warden_run(&sb, &mock, &["look around"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.ends_with("Read both.\n"), "{}", r.stdout);
    let b = bodies(&mock);
    assert_eq!(b.len(), 4);
    let results = tool_messages(&b[3]);
    assert_eq!(results.len(), 3, "{results:?}");
    assert!(results[0].contains("hello"), "{}", results[0]);
    assert!(results[1].contains("docs/"), "{}", results[1]);
    assert!(!results[2].starts_with("error"), "{}", results[2]);
    assert_eq!(b[2]["messages"][4]["content"], "Let me list them.");
}

#[test]
fn a_tool_call_shown_as_an_example_in_prose_is_not_run() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws.join("important.txt"), "keep me\n").unwrap();
    let example = "To delete a file with warden, the model would emit:\n```json\n\
                   {\"name\": \"delete\", \"arguments\": {\"path\": \"important.txt\"}}\n```\n\
                   That is all.";
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        chunk::text(example),
        chunk::finish("stop"),
        chunk::done(),
    ])]);
    let r = warden_run(&sb, &mock, &["how does warden delete a file?"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, format!("{example}\n"));
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("important.txt")).unwrap(),
        "keep me\n"
    );
    assert_eq!(bodies(&mock).len(), 1);
}

#[test]
fn a_server_that_cannot_parse_tool_calls_gets_one_retry_then_the_text_protocol() {
    let sb = Sandbox::new();
    let parse = || {
        status(
            500,
            r#"{"error":{"message":"Failed to parse tool call arguments as JSON"}}"#,
        )
    };
    let mock = MockLlm::start(vec![
        parse(),
        parse(),
        // Whether the server constrains replies to a schema, asked once:
        // it refuses `response_format` and ignores Ollama's `format`.
        status(
            400,
            r#"{"error":{"message":"response_format is not supported"}}"#,
        ),
        answer("Hello!"),
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
    let b = bodies(&mock);
    assert_eq!(b.len(), 6);
    assert!(b[0].get("tools").is_some() && b[1].get("tools").is_some());
    assert!(b[2].get("response_format").is_some() && b[3].get("format").is_some());
    assert!(b[4].get("tools").is_none() && b[4].get("response_format").is_none());
    let text = std::fs::read_to_string(transcript_path(&sb)).unwrap();
    assert!(
        text.contains(r#""protocol":"text""#) && text.contains("Failed to parse tool call"),
        "the switch is not in the transcript"
    );
}

#[test]
fn an_identical_call_is_not_run_a_third_time() {
    let sb = Sandbox::new();
    let write = json!({"path": "out.txt", "content": "done\n"}).to_string();
    let again = |id: &str| calls(&[(id, "write_file", write.as_str())]);
    let mock = MockLlm::start(vec![
        again("w1"),
        again("w2"),
        again("w3"),
        answer("Written."),
    ]);
    let r = warden_run(&sb, &mock, &["write out.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Written.\n");
    let b = bodies(&mock);
    assert_eq!(b.len(), 4);
    let results = tool_messages(&b[3]);
    assert!(!results[1].contains("not run"), "{}", results[1]);
    // The repeat gets the earlier result and the task restated, not a
    // bare refusal.
    for part in [
        "already ran 2 times",
        "Its result was:\nwrote 5 bytes to out.txt",
        "The task: write out.txt\nCalls made so far:\n1. write_file out.txt: ok\n",
        "Changed so far: out.txt",
    ] {
        assert!(results[2].contains(part), "{part}: {}", results[2]);
    }

    // A model that keeps repeating ends the task long before max_turns;
    // what it changed is the outcome, not a failure.
    let sb = Sandbox::new();
    let mock = MockLlm::start((1..=20).map(|i| again(&format!("w{i}"))).collect());
    let r = warden_run(&sb, &mock, &["write out.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout
            .contains("kept repeating calls that had already run")
            && r.stdout.contains("What its calls changed: out.txt."),
        "{}",
        r.stdout
    );
    assert_eq!(bodies(&mock).len(), 5);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("out.txt")).unwrap(),
        "done\n"
    );

    // One that changed nothing failed.
    let sb = Sandbox::new();
    let read = |id: &str| calls(&[(id, "read_file", r#"{"path":"hello.txt"}"#)]);
    let mock = MockLlm::start((1..=20).map(|i| read(&format!("r{i}"))).collect());
    let r = warden_run(&sb, &mock, &["read hello.txt"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("kept repeating the same tool call"),
        "{}",
        r.stderr
    );
}

#[test]
fn usage_totals_are_shown_at_the_end_and_in_json() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "read_file", r#"{"path":"hello.txt"}"#)]),
        Reply::Sse(vec![
            chunk::text("Done."),
            chunk::finish("stop"),
            chunk::usage(30, 7),
            chunk::done(),
        ]),
        answer("Again."),
        calls(&[("c2", "read_file", r#"{"path":"hello.txt"}"#)]),
        answer("Read."),
    ]);
    let r = warden_run(&sb, &mock, &["read"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "tokens: 30 prompt + 7 completion = 37 (2 model calls, 1 not counted by the server)"
        ),
        "{}",
        r.stderr
    );
    let r = warden_run(&sb, &mock, &["--json", "again"]);
    let last: Value = serde_json::from_str(r.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["type"], "final");
    assert_eq!(last["usage"]["total_tokens"], 15);
    assert_eq!(last["usage"]["model_calls"], 1);
    // Every call the model answered counts, with token counts or without.
    let r = warden_run(&sb, &mock, &["--json", "read again"]);
    let last: Value = serde_json::from_str(r.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["usage"]["total_tokens"], 15);
    assert_eq!(last["usage"]["model_calls"], 2);
    assert!(
        bodies(&mock)
            .iter()
            .all(|b| b["stream_options"]["include_usage"] == true)
    );
}

#[test]
fn a_session_three_times_the_window_completes_and_every_request_fits() {
    let sb = Sandbox::new();
    let window = 4_000;
    sb.policy(&format!("[model]\ncontext_window = {window}\n"));
    sb.trust();
    let files = 16;
    let mut total = 0;
    for i in 0..files {
        let line = format!(
            "file {i:02}: {}\n",
            "some ordinary words of text ".repeat(2)
        );
        let body = line.repeat(50);
        total += body.len();
        std::fs::write(sb.ws.join(format!("f{i:02}.txt")), body).unwrap();
    }
    assert!(
        total / 4 >= 3 * window as usize,
        "{total} bytes is not 3x the window"
    );
    let mut script: Vec<Reply> = (0..files)
        .map(|i| {
            let args = json!({ "path": format!("f{i:02}.txt") }).to_string();
            calls(&[(&format!("c{i}"), "read_file", &args)])
        })
        .collect();
    // Spare answers: a summary request may take one of the replies.
    script.extend((0..3).map(|_| answer("Read them all.")));
    let mock = MockLlm::start(script);
    mock.set_context_window(window);
    let r = warden_run(&sb, &mock, &["--tools", "read_file", "read every file"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.ends_with("Read them all.\n"), "{}", r.stdout);
    assert!(r.stderr.contains("compacted"), "{}", r.stderr);
    let b = bodies(&mock);
    assert!(b.len() > files, "{}", b.len());
    for (i, body) in b.iter().enumerate() {
        let used = prompt_tokens(body);
        assert!(
            used <= window,
            "request {i} is {used} tokens, over the window"
        );
    }
    // The latest output always arrives whole.
    let turn = b.iter().rev().find(|b| b.get("tools").is_some()).unwrap();
    let outputs = tool_messages(turn);
    let last = outputs.last().unwrap();
    assert!(
        last.contains("1\tfile") && last.contains("50\tfile"),
        "{last}"
    );
    assert!(!last.contains("left out"), "{last}");
}

/// Under the text protocol the outputs are blocks of user messages: they
/// are shortened as tool messages are, and the user's request stays
/// verbatim when older turns are summarized.
#[test]
fn under_the_text_protocol_a_session_past_the_window_keeps_the_request_and_fits() {
    let sb = Sandbox::new();
    let window = 4_000;
    sb.policy(&format!(
        "[model]\ncontext_window = {window}\nprotocol = \"text\"\n"
    ));
    sb.trust();
    let files = 16;
    for i in 0..files {
        let line = format!(
            "file {i:02}: {}\n",
            "some ordinary words of text ".repeat(2)
        );
        std::fs::write(sb.ws.join(format!("f{i:02}.txt")), line.repeat(50)).unwrap();
    }
    let mut script: Vec<Reply> = (0..files)
        .map(|i| {
            answer(&format!(
                r#"[TOOL] read_file({{"path": "f{i:02}.txt"}}) [/TOOL]"#
            ))
        })
        .collect();
    script.extend((0..3).map(|_| answer("Read them all.")));
    let mock = MockLlm::start(script);
    mock.set_context_window(window);
    let task = "read every file, one per turn";
    let r = warden_run(&sb, &mock, &["--tools", "read_file", task]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.ends_with("Read them all.\n"), "{}", r.stdout);
    assert!(r.stderr.contains("compacted"), "{}", r.stderr);
    let b = bodies(&mock);
    let mut shortened = false;
    for (i, body) in b.iter().enumerate() {
        let used = prompt_tokens(body);
        assert!(
            used <= window,
            "request {i} is {used} tokens, over the window"
        );
        let text = body["messages"].to_string();
        // Summary requests quote the conversation; the agent's own carry
        // the request.
        if text.contains("You condense a conversation") {
            continue;
        }
        assert!(text.contains(task), "request {i} lost the task: {text}");
        shortened |= text.contains("left out to fit the context window");
    }
    assert!(shortened, "no output was shortened");
}

/// A big file in `sb`, and the replies of a model that reads it, then
/// finds the request past its context window.
fn read_past_the_window(sb: &Sandbox) -> Vec<Reply> {
    let big = "a line of a big file, long enough to matter\n".repeat(500);
    std::fs::write(sb.ws.join("big.txt"), &big).unwrap();
    vec![
        calls(&[("c1", "read_file", r#"{"path":"big.txt"}"#)]),
        status(
            400,
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 6000 tokens."}}"#,
        ),
    ]
}

#[test]
fn a_context_length_error_is_recovered_once() {
    let sb = Sandbox::new();
    let mock = MockLlm::start([read_past_the_window(&sb), vec![answer("Done.")]].concat());
    let r = warden_run(&sb, &mock, &["read big.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Done.\n");
    assert!(r.stderr.contains("compacted"), "{}", r.stderr);
    let b = bodies(&mock);
    assert_eq!(b.len(), 3);
    assert!(prompt_tokens(&b[2]) < prompt_tokens(&b[1]));
    let shortened = tool_messages(&b[2]);
    assert!(
        shortened[0].contains("left out to fit the context window"),
        "{shortened:?}"
    );

    // A second overflow in a row is an error, not a loop.
    let sb = Sandbox::new();
    let overflow = || {
        status(
            400,
            r#"{"error":{"message":"the request exceeds the available context size"}}"#,
        )
    };
    let mock = MockLlm::start(vec![overflow(), overflow(), answer("never")]);
    let r = warden_run(&sb, &mock, &["hi"]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("context window"), "{}", r.stderr);
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn the_window_a_server_reports_is_used() {
    let sb = Sandbox::new();
    let big = "a line of a big file, long enough to matter\n".repeat(150);
    std::fs::write(sb.ws.join("big.txt"), &big).unwrap();
    std::fs::write(sb.ws.join("big2.txt"), &big).unwrap();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "read_file", r#"{"path":"big.txt"}"#)]),
        calls(&[("c2", "read_file", r#"{"path":"big2.txt"}"#)]),
        answer("Done."),
        answer("Done."),
    ]);
    let window = 6_000;
    mock.set_models(
        json!({"object": "list", "data": [{"id": "default", "max_model_len": window}]}),
    );
    mock.set_context_window(window);
    let r = warden_run(&sb, &mock, &["read both"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(mock.model_lists(), 1);
    // Without the reported window the third request would be over it.
    for (i, body) in bodies(&mock).iter().enumerate() {
        let used = prompt_tokens(body);
        assert!(used <= window, "request {i} is {used} tokens");
    }
}

#[test]
fn the_first_request_is_small_and_tools_can_be_left_out() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![answer("Hi."), answer("Hi.")]);
    let r = warden_run(&sb, &mock, &["hi"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let count = |body: &Value| {
        let system = body["messages"][0]["content"].as_str().unwrap();
        bpe.encode_with_special_tokens(system).len()
            + bpe
                .encode_with_special_tokens(&body["tools"].to_string())
                .len()
    };
    let b = bodies(&mock);
    let all = count(&b[0]);
    let offered = b[0]["tools"].as_array().unwrap().len();
    eprintln!("first request: system prompt and {offered} tool specs = {all} tokens (o200k_base)");
    assert_eq!(offered, 10);
    assert!(
        all <= 1_200,
        "the system prompt and tool specs take {all} tokens"
    );

    let r = warden_run(&sb, &mock, &["--tools", "read_file,grep", "hi"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let b = bodies(&mock);
    let names: Vec<&str> = b[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read_file", "grep"]);
    assert!(count(&b[1]) < all / 2);

    let r = warden_run(&sb, &mock, &["--tools", "read_file,rm_rf", "hi"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("`rm_rf`") && r.stderr.contains("enabled tools"),
        "{}",
        r.stderr
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn a_resumed_session_goes_on_from_the_compacted_conversation() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(
        [
            read_past_the_window(&sb),
            vec![answer("Done."), answer("Resumed.")],
        ]
        .concat(),
    );
    let r = warden_run(&sb, &mock, &["--json", "read big.txt"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let id = session_id(&r);
    let r = warden_run(&sb, &mock, &["--resume", &id, "go on"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Resumed.\n");
    // The resumed request carries the output as it was last sent,
    // shortened, not the whole file again.
    let b = bodies(&mock);
    assert_eq!(b.len(), 4);
    let resumed = tool_messages(&b[3]);
    assert_eq!(resumed.len(), 1, "{resumed:?}");
    assert!(
        resumed[0].contains("left out to fit the context window")
            && !resumed[0].contains("500\ta line"),
        "{}",
        resumed[0]
    );
    assert!(prompt_tokens(&b[3]) < prompt_tokens(&b[1]));
    // The transcript keeps the whole output, and shows the compaction.
    let text = std::fs::read_to_string(transcript_path(&sb)).unwrap();
    assert!(
        text.contains("500\\ta line"),
        "the transcript lost the output"
    );
    let shown = warden_tests::run(sb.warden().args(["sessions", "show", &id]));
    assert!(
        shown.stdout.contains("── compacted · ")
            && shown.stdout.contains("a resumed session goes on from them"),
        "{}",
        shown.stdout
    );
}

#[test]
fn compact_in_chat_shortens_older_outputs_and_turns_show_their_tokens() {
    let sb = Sandbox::new();
    let big = "a line of a big file, long enough to matter\n".repeat(200);
    std::fs::write(sb.ws.join("big.txt"), &big).unwrap();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "read_file", r#"{"path":"big.txt"}"#)]),
        answer("Read."),
        answer("Next."),
    ]);
    let out = sb.chat(
        &mock.base_url(),
        "sk-test",
        b"read big.txt\n/compact\nnext\n/exit\n",
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("conversation compacted"), "{stderr}");
    assert!(
        stderr.contains("tokens: 10 prompt + 5 completion = 15 (1 model call)"),
        "{stderr}"
    );
    let b = bodies(&mock);
    assert_eq!(b.len(), 3);
    let before = &tool_messages(&b[1])[0];
    let after = &tool_messages(&b[2])[0];
    assert!(before.contains("200\ta line") && !before.contains("left out"));
    assert!(
        after.contains("left out to fit the context window"),
        "{after}"
    );
}

/// Ctrl-C during `/compact` stops the summary request at once, and the
/// chat goes on with the conversation as it was.
#[test]
fn ctrl_c_cancels_a_compaction_in_chat() {
    use std::io::Write;
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![answer("One."), answer("Two."), Reply::Hang]);
    let mut child = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .arg("chat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let long = "a long message that only a summary can shorten ".repeat(100);
    child
        .stdin
        .take()
        .unwrap()
        .write_all(format!("{long}\n{long}\n/compact\n/exit\n").as_bytes())
        .unwrap();
    // The third request is the summary, which never comes back.
    warden_tests::wait_until("no summary request", || mock.requests().len() >= 3);
    // Before the fix it waited out the request timeout (minutes).
    let (took, out) = ctrl_c(child);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(5), "took {took:?}: {stderr}");
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("compaction cancelled; the conversation is kept as it was"),
        "{stderr}"
    );
    assert_eq!(mock.requests().len(), 3);
}

/// Before the first large request warden asks the server for its context
/// window; a server slow to answer that is waited on like the model: Ctrl-C
/// ends the turn at once.
#[test]
fn ctrl_c_ends_the_wait_for_a_slow_model_list_at_once() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![answer("never sent")]);
    let gate = warden_mock_llm::Gate::new();
    mock.gate_models(gate.clone());
    let task = "a task long enough to ask for the context window first ".repeat(300);
    let child = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", &task])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    warden_tests::wait_until("no model list asked for", || mock.model_lists() >= 1);
    let (took, out) = ctrl_c(child);
    gate.open();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(took < Duration::from_secs(5), "took {took:?}: {stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(mock.requests().is_empty(), "the turn went on");
}

/// Presses Ctrl-C (SIGINT) in `child` after a moment, and gives it 20 s to
/// end (then kills it): how long it took, and how it ended.
fn ctrl_c(mut child: std::process::Child) -> (Duration, std::process::Output) {
    std::thread::sleep(Duration::from_millis(300));
    let pressed = Instant::now();
    let sent = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    while child.try_wait().unwrap().is_none() && pressed.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = pressed.elapsed();
    let _ = child.kill();
    (took, child.wait_with_output().unwrap())
}
