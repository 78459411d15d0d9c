//! The chat-completions client against the mock server: stream assembly,
//! non-streamed answers, retries, timeouts, and errors worth reading.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use warden_agent::client::{Client, ClientConfig, ClientError, ClientEvent, Completion, Request};
use warden_agent::{Message, ToolCall, ToolDef, Usage};
use warden_mock_llm::{MockLlm, Reply, answer, calls, check_chat_body, chunk};

/// What the client reported, owned so that it can be compared.
#[derive(Debug, Clone, PartialEq)]
enum Ev {
    Text(String),
    Restart,
    Retry {
        attempt: u32,
        wait: Duration,
        reason: String,
    },
}

/// Fast retries, so that the tests stay quick.
fn config(mock: &MockLlm) -> ClientConfig {
    let mut cfg = ClientConfig::new(mock.base_url(), "test-model");
    cfg.backoff_base = Duration::from_millis(5);
    cfg.backoff_max = Duration::from_millis(50);
    cfg.idle_timeout = Duration::from_secs(5);
    cfg
}

fn client(cfg: ClientConfig) -> Client {
    Client::new(cfg).expect("client")
}

fn hello() -> Vec<Message> {
    vec![
        Message::System {
            content: "You are terse.".into(),
        },
        Message::User {
            content: "Say hello.".into(),
        },
    ]
}

fn read_file_tool() -> ToolDef {
    ToolDef {
        name: "read_file".into(),
        description: "Reads a file.".into(),
        parameters: json!({
            "type": "object",
            "properties": { "path": { "type": "string" } },
            "required": ["path"],
        }),
    }
}

/// Runs one completion, collecting the events.
async fn complete(
    client: &Client,
    messages: &[Message],
    tools: &[ToolDef],
) -> (Result<Completion, ClientError>, Vec<Ev>) {
    let mut events = Vec::new();
    let mut on_event = |e: ClientEvent<'_>| {
        events.push(match e {
            ClientEvent::Text(t) => Ev::Text(t.to_string()),
            ClientEvent::Restart => Ev::Restart,
            ClientEvent::Retry {
                attempt,
                wait,
                reason,
            } => Ev::Retry {
                attempt,
                wait,
                reason,
            },
        })
    };
    let result = client
        .complete(Request::new(messages, tools), &mut on_event)
        .await;
    (result, events)
}

fn texts(events: &[Ev]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| match e {
            Ev::Text(t) => Some(t.as_str()),
            Ev::Retry { .. } | Ev::Restart => None,
        })
        .collect()
}

fn retries(events: &[Ev]) -> Vec<(u32, String)> {
    events
        .iter()
        .filter_map(|e| match e {
            Ev::Retry {
                attempt, reason, ..
            } => Some((*attempt, reason.clone())),
            Ev::Text(_) | Ev::Restart => None,
        })
        .collect()
}

/// Every request the mock saw is one a real server would accept.
fn assert_valid_bodies(mock: &MockLlm) {
    for (i, r) in mock.requests().iter().enumerate() {
        assert_eq!(r.path, "/v1/chat/completions");
        if let Err(e) = check_chat_body(&r.body) {
            panic!("request {i} is invalid: {e}\n{}", r.body);
        }
    }
}

#[tokio::test]
async fn streamed_text_is_reported_in_order_and_assembled() {
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        chunk::text("Hel"),
        chunk::text("lo, "),
        chunk::text("world"),
        chunk::finish("stop"),
        chunk::usage(7, 3),
        chunk::done(),
    ])]);
    let c = client(config(&mock));
    let (result, events) = complete(&c, &hello(), &[]).await;
    let done = result.expect("completion");
    assert_eq!(events, ["Hel", "lo, ", "world"].map(|t| Ev::Text(t.into())));
    assert_eq!(done.content, "Hello, world");
    assert!(done.tool_calls.is_empty());
    assert_eq!(done.finish_reason.as_deref(), Some("stop"));
    assert_eq!(
        done.usage,
        Some(Usage {
            prompt_tokens: 7,
            completion_tokens: 3,
            total_tokens: 10
        })
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 1);
    let body = &reqs[0].body;
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["stream"], true);
    assert_eq!(body["stream_options"]["include_usage"], true);
    assert!(
        body.get("tools").is_none(),
        "no tools → no tools field: {body}"
    );
    assert_eq!(body["messages"], serde_json::to_value(hello()).unwrap());
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn call_arguments_in_many_small_chunks_are_joined() {
    let args = r#"{"path":"docs/some/rather/long/path/to/a/file.md","max_lines":200}"#;
    let mut payloads = chunk::tool_call(0, "call_abc", "read_file", args, 40);
    payloads.push(chunk::finish("tool_calls"));
    payloads.push(chunk::done());
    let mock = MockLlm::start(vec![Reply::Sse(payloads)]);
    // A trailing slash on the base URL is tolerated.
    let c = client(ClientConfig {
        base_url: format!("{}/", mock.base_url()),
        ..config(&mock)
    });
    let (result, events) = complete(&c, &hello(), &[read_file_tool()]).await;
    let done = result.expect("completion");
    assert!(events.is_empty(), "no text: {events:?}");
    assert_eq!(done.content, "");
    assert_eq!(
        done.tool_calls,
        [ToolCall::new("call_abc", "read_file", args)]
    );
    assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
    let body = &mock.requests()[0].body;
    assert_eq!(body["tools"], json!([read_file_tool().to_json()]));
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn interleaved_calls_are_assembled_by_index_after_the_text() {
    // The name of call 1 arrives in two pieces, as some servers send it.
    let name_piece = json!({
        "choices": [{ "index": 0, "delta": { "tool_calls": [
            { "index": 1, "function": { "name": "_files" } }
        ] }, "finish_reason": null }]
    })
    .to_string();
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        chunk::text("Let me "),
        chunk::text("look."),
        chunk::tool_call_start(0, "call_a", "read_file"),
        chunk::tool_call_start(1, "call_b", "list"),
        name_piece,
        chunk::tool_call_args(1, r#"{"pa"#),
        chunk::tool_call_args(0, r#"{"path""#),
        chunk::tool_call_args(1, r#"th":"."}"#),
        chunk::tool_call_args(0, r#":"a.txt"}"#),
        chunk::finish("tool_calls"),
        chunk::usage(20, 12),
        chunk::done(),
    ])]);
    let c = client(config(&mock));
    let (result, events) = complete(&c, &hello(), &[read_file_tool()]).await;
    let done = result.expect("completion");
    assert_eq!(texts(&events), ["Let me ", "look."]);
    assert_eq!(done.content, "Let me look.");
    assert_eq!(
        done.tool_calls,
        [
            ToolCall::new("call_a", "read_file", r#"{"path":"a.txt"}"#),
            ToolCall::new("call_b", "list_files", r#"{"path":"."}"#),
        ]
    );
    assert_eq!(done.usage.map(|u| u.total_tokens), Some(32));
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn usage_after_finish_is_recorded_and_a_missing_done_is_accepted() {
    // Usage without total_tokens, then EOF without [DONE]: the model had
    // finished, so the answer stands and is not asked for again.
    let usage = json!({ "choices": [], "usage": { "prompt_tokens": 5, "completion_tokens": 2 } });
    let mock = MockLlm::start(vec![Reply::Sse(vec![
        chunk::text("Hi"),
        chunk::finish("stop"),
        usage.to_string(),
    ])]);
    let c = client(config(&mock));
    let (result, events) = complete(&c, &hello(), &[]).await;
    let done = result.expect("completion");
    assert_eq!(texts(&events), ["Hi"]);
    assert_eq!(
        done.usage,
        Some(Usage {
            prompt_tokens: 5,
            completion_tokens: 2,
            total_tokens: 7
        })
    );
    assert_eq!(mock.requests().len(), 1);
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn non_streamed_answers_are_parsed() {
    let mock = MockLlm::start(vec![Reply::Json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{
            "index": 0,
            "message": {
                "role": "assistant",
                "content": "Reading it.",
                "reasoning_content": "ignored",
                "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": { "name": "read_file", "arguments": "{\"path\":\"a\"}" }
                }]
            },
            "finish_reason": "tool_calls"
        }],
        "usage": { "prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15 }
    }))]);
    let c = client(ClientConfig {
        stream: false,
        ..config(&mock)
    });
    let (result, events) = complete(&c, &hello(), &[read_file_tool()]).await;
    let done = result.expect("completion");
    assert_eq!(texts(&events), ["Reading it."]);
    assert_eq!(done.content, "Reading it.");
    assert_eq!(
        done.tool_calls,
        [ToolCall::new("call_1", "read_file", r#"{"path":"a"}"#)]
    );
    assert_eq!(done.usage.map(|u| u.total_tokens), Some(15));
    assert_eq!(done.finish_reason.as_deref(), Some("tool_calls"));
    let body = &mock.requests()[0].body;
    assert_eq!(body["stream"], false);
    assert!(body.get("stream_options").is_none(), "{body}");
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn rate_limit_waits_for_retry_after() {
    let mock = MockLlm::start(vec![
        Reply::Status {
            status: 429,
            body: json!({ "error": { "message": "Rate limit reached" } }).to_string(),
            retry_after: Some("1".into()),
        },
        answer("ok"),
    ]);
    let c = client(config(&mock));
    let (result, events) = complete(&c, &hello(), &[]).await;
    assert_eq!(result.expect("completion").content, "ok");
    let Some(Ev::Retry {
        attempt,
        wait,
        reason,
    }) = events.first()
    else {
        panic!("expected a retry first: {events:?}");
    };
    assert_eq!((*attempt, *wait), (2, Duration::from_secs(1)));
    assert!(
        reason.contains("429") && reason.contains("Rate limit reached"),
        "{reason}"
    );
    let reqs = mock.requests();
    assert_eq!(reqs.len(), 2);
    let gap = reqs[1].at - reqs[0].at;
    assert!(gap >= Duration::from_millis(950), "retried after {gap:?}");
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn server_errors_are_retried_until_success() {
    let error = || Reply::Status {
        status: 500,
        body: json!({ "error": { "message": "boom" } }).to_string(),
        retry_after: None,
    };
    let mock = MockLlm::start(vec![error(), error(), error(), answer("finally")]);
    let c = client(config(&mock));
    let (result, events) = complete(&c, &hello(), &[]).await;
    assert_eq!(result.expect("completion").content, "finally");
    let attempts: Vec<u32> = retries(&events).into_iter().map(|(a, _)| a).collect();
    assert_eq!(attempts, [2, 3, 4]);
    assert!(
        retries(&events)[0].1.contains("http 500: boom"),
        "{events:?}"
    );
    assert_eq!(texts(&events), ["finally"]);
    assert_eq!(mock.requests().len(), 4);
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn retries_stop_at_max_attempts() {
    let error = || Reply::Status {
        status: 503,
        body: "upstream unavailable".into(),
        retry_after: None,
    };
    let mock = MockLlm::start(vec![error(), error(), error(), answer("too late")]);
    let c = client(ClientConfig {
        max_attempts: 3,
        ..config(&mock)
    });
    let (result, _) = complete(&c, &hello(), &[]).await;
    let err = result.expect_err("gives up");
    assert!(
        matches!(
            err,
            ClientError::Status {
                status: 503,
                attempts: 3,
                ..
            }
        ),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains("503") && msg.contains("upstream unavailable"),
        "{msg}"
    );
    assert!(
        msg.contains("after 3 attempts") && msg.contains(&mock.base_url()),
        "{msg}"
    );
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn a_cut_stream_is_asked_for_again() {
    let mock = MockLlm::start(vec![
        Reply::SseCut(vec![chunk::text("Hel"), chunk::text("lo wo")]),
        answer("Hello world"),
    ]);
    let c = client(config(&mock));
    let (result, events) = complete(&c, &hello(), &[]).await;
    // The partial text was reported; the retry reports only what it adds.
    assert_eq!(result.expect("completion").content, "Hello world");
    assert_eq!(texts(&events), ["Hel", "lo wo", "rld"]);
    let r = retries(&events);
    assert_eq!(r.len(), 1, "{events:?}");
    assert!(
        matches!(events[2], Ev::Retry { attempt: 2, .. }),
        "{events:?}"
    );
    // The mock drops the connection mid-body, as a crashed server would.
    assert!(r[0].1.starts_with("stream cut"), "{r:?}");
    assert_eq!(mock.requests().len(), 2);
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn a_silent_server_times_out_within_the_idle_timeout() {
    let mock = MockLlm::start(vec![Reply::Hang, Reply::Hang]);
    let c = client(ClientConfig {
        idle_timeout: Duration::from_millis(300),
        max_attempts: 2,
        ..config(&mock)
    });
    let start = Instant::now();
    let (result, events) = complete(&c, &hello(), &[]).await;
    let took = start.elapsed();
    let err = result.expect_err("times out");
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                what: "response",
                attempts: 2,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(took >= Duration::from_millis(600), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");
    assert!(err.to_string().contains("timed out after 300ms"), "{err}");
    assert_eq!(retries(&events).len(), 1);
    assert_eq!(mock.requests().len(), 2);
}

#[tokio::test]
async fn a_stalled_stream_times_out_between_chunks() {
    use std::io::{Read, Write};
    // A raw server: the head and one chunk, then silence until the client
    // gives up and closes the connection.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        // A safety net: the client closing the connection ends this thread.
        conn.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut buf = [0u8; 4096];
        let _ = conn.read(&mut buf);
        let event = format!("data: {}\n\n", chunk::text("partial"));
        let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n";
        let _ = write!(conn, "{head}{:x}\r\n{event}\r\n", event.len());
        let _ = conn.flush();
        while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
    });
    let mut cfg = ClientConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    cfg.idle_timeout = Duration::from_millis(300);
    cfg.max_attempts = 1;
    let start = Instant::now();
    let (result, events) = complete(&client(cfg), &hello(), &[]).await;
    let err = result.expect_err("stalls");
    assert!(
        matches!(
            err,
            ClientError::Timeout {
                what: "stream",
                attempts: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(events, [Ev::Text("partial".into())]);
    // Joined off the runtime thread, which must stay free to close the
    // abandoned connection: that is what ends the server thread.
    let closed_at = tokio::task::spawn_blocking(move || {
        server.join().unwrap();
        Instant::now()
    });
    let closed_after = closed_at.await.unwrap() - start;
    assert!(
        closed_after < Duration::from_secs(5),
        "connection left open"
    );
}

#[tokio::test]
async fn unauthorized_is_reported_once_without_the_key() {
    let key = "sk-test-very-secret";
    let mock = MockLlm::start(vec![Reply::Status {
        status: 401,
        body: json!({ "error": {
            "message": format!("Incorrect API key provided: {key}"),
            "type": "invalid_request_error"
        } })
        .to_string(),
        retry_after: None,
    }]);
    let c = client(ClientConfig {
        api_key: Some(key.into()),
        ..config(&mock)
    });
    let (result, events) = complete(&c, &hello(), &[]).await;
    let err = result.expect_err("unauthorized");
    assert!(err.is_auth(), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("401") && msg.contains("Incorrect API key provided"),
        "{msg}"
    );
    assert!(msg.contains("/v1/chat/completions"), "{msg}");
    assert!(!msg.contains(key), "the key leaked: {msg}");
    assert!(!format!("{err:?} {c:?}").contains(key), "the key leaked");
    assert!(events.is_empty());
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn rejected_tools_are_not_retried() {
    let mock = MockLlm::start(vec![
        Reply::Status {
            status: 400,
            body: json!({ "error": { "message": "tools param requires --jinja flag" } })
                .to_string(),
            retry_after: None,
        },
        Reply::Status {
            status: 400,
            body: json!({ "error": { "message": "temperature must be at most 2" } }).to_string(),
            retry_after: None,
        },
        Reply::Status {
            status: 400,
            body: json!({ "error": { "message": "maximum context length exceeded" } }).to_string(),
            retry_after: None,
        },
    ]);
    let c = client(config(&mock));
    let (result, events) = complete(&c, &hello(), &[read_file_tool()]).await;
    let err = result.expect_err("rejected");
    assert!(
        matches!(&err, ClientError::ToolsRejected { status: 400, body, .. } if body == "tools param requires --jinja flag"),
        "{err:?}"
    );
    assert!(!err.is_auth());
    assert!(events.is_empty());
    assert_eq!(mock.requests().len(), 1);
    // Any other 400 is a plain status error, not retried either.
    let (result, _) = complete(&c, &hello(), &[read_file_tool()]).await;
    let err = result.expect_err("bad request");
    assert!(
        matches!(
            err,
            ClientError::Status {
                status: 400,
                attempts: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(mock.requests().len(), 2);
    // A prompt over the context window is named as such, not retried.
    let (result, _) = complete(&c, &hello(), &[read_file_tool()]).await;
    let err = result.expect_err("too long");
    assert!(
        matches!(&err, ClientError::ContextOverflow { status: 400, .. }),
        "{err:?}"
    );
    assert_eq!(mock.requests().len(), 3);
    assert_valid_bodies(&mock);
}

#[tokio::test]
async fn authorization_is_sent_only_with_an_api_key() {
    let mock = MockLlm::start(vec![answer("a"), answer("b")]);
    let (result, _) = complete(&client(config(&mock)), &hello(), &[]).await;
    result.expect("without key");
    let keyed = client(ClientConfig {
        api_key: Some("sk-abc".into()),
        ..config(&mock)
    });
    let (result, _) = complete(&keyed, &hello(), &[]).await;
    result.expect("with key");
    let auth: Vec<Option<String>> = mock
        .requests()
        .into_iter()
        .map(|r| r.authorization)
        .collect();
    assert_eq!(auth, [None, Some("Bearer sk-abc".to_string())]);
}

#[tokio::test]
async fn a_refused_connection_is_a_connect_error() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut cfg = ClientConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    cfg.max_attempts = 2;
    cfg.backoff_base = Duration::from_millis(5);
    let (result, events) = complete(&client(cfg), &hello(), &[]).await;
    let err = result.expect_err("refused");
    assert!(
        matches!(err, ClientError::Connect { attempts: 2, .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .starts_with("cannot connect to http://127.0.0.1:"),
        "{err}"
    );
    assert_eq!(retries(&events).len(), 1);
}

#[tokio::test]
async fn a_whole_tool_round_trip_is_a_valid_request() {
    let mock = MockLlm::start(vec![
        calls(&[
            ("call_1", "read_file", r#"{"path":"a"}"#),
            ("call_2", "read_file", r#"{"path":"b"}"#),
        ]),
        answer("Both read."),
    ]);
    let c = client(config(&mock));
    let tools = [read_file_tool()];
    let mut messages = hello();
    let (result, _) = complete(&c, &messages, &tools).await;
    let first = result.expect("calls");
    assert_eq!(first.tool_calls.len(), 2);
    assert_eq!(first.tool_calls[1].function.arguments, r#"{"path":"b"}"#);
    messages.push(Message::Assistant {
        content: None,
        tool_calls: first.tool_calls.clone(),
    });
    for call in &first.tool_calls {
        messages.push(Message::Tool {
            tool_call_id: call.id.clone(),
            content: "contents".into(),
        });
    }
    let (result, _) = complete(&c, &messages, &tools).await;
    assert_eq!(result.expect("answer").content, "Both read.");
    assert_valid_bodies(&mock);
    assert_eq!(
        mock.requests()[1].body["messages"]
            .as_array()
            .unwrap()
            .len(),
        5
    );
}

#[tokio::test]
async fn complete_runs_on_a_spawned_task() {
    let mock = MockLlm::start(vec![answer("sent")]);
    let c = client(config(&mock));
    let task = tokio::spawn(async move {
        let messages = hello();
        let mut n = 0;
        let mut count = |_: ClientEvent<'_>| n += 1;
        let done = c.complete(Request::new(&messages, &[]), &mut count).await;
        (done.map(|d| d.content).ok(), n)
    });
    assert_eq!(task.await.unwrap(), (Some("sent".to_string()), 1));
}

#[test]
fn check_chat_body_rejects_broken_conversations() {
    let call = |id: &str| {
        json!({ "id": id, "type": "function",
        "function": { "name": "f", "arguments": "{}" } })
    };
    let body = |messages: Value| json!({ "model": "m", "messages": messages });
    let user = json!({ "role": "user", "content": "hi" });
    let asked = json!({ "role": "assistant", "tool_calls": [call("a"), call("b")] });
    let tool = |id: &str| json!({ "role": "tool", "tool_call_id": id, "content": "ok" });
    let ok = body(
        json!([user, asked, tool("a"), tool("b"), { "role": "assistant", "content": "done" }]),
    );
    assert_eq!(check_chat_body(&ok), Ok(()));
    for (broken, why) in [
        (body(json!([user, asked, tool("b"), tool("a")])), "in order"),
        (body(json!([user, asked, tool("a")])), "never answered"),
        (
            body(json!([user, asked, tool("a"), tool("a"), tool("b")])),
            "twice",
        ),
        (
            body(json!([user, asked, tool("a"), user, tool("b")])),
            "before the tool call",
        ),
        (body(json!([user, tool("a")])), "answers no call"),
        (
            body(
                json!([user, { "role": "assistant", "tool_calls": [{ "id": "a", "type": "function",
                "function": { "name": "f", "arguments": "{\"path\": \"x\", \"offset\":" } }] }, tool("a")]),
            ),
            "not a JSON object",
        ),
        (
            body(json!([user, { "role": "assistant" }])),
            "neither content",
        ),
        (json!({ "messages": [user] }), "model"),
        (
            json!({ "model": "m", "messages": [user], "tools": [{ "type": "function", "function": { "name": "f" } }] }),
            "parameters",
        ),
    ] {
        let err = check_chat_body(&broken).expect_err(why);
        assert!(err.contains(why), "{why}: {err}");
    }
}
