//! Stream reading against scripted bodies: call assembly, when the answer
//! counts as started, the wait after `finish_reason`, errors sent mid-stream.

use std::time::{Duration, Instant};

use futures_util::stream;
use serde_json::{Value, json};

use super::retry::Failure;
use super::sse::{Assembler, read};
use super::{Client, ClientConfig, ClientError, Completion};

/// A chunk with one choice carrying `delta` (and `finish_reason`).
fn choice(delta: Value, finish: Option<&str>) -> Value {
    json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] })
}

fn assemble(chunks: &[Value]) -> Completion {
    let mut asm = Assembler::default();
    for c in chunks {
        asm.push(c, &mut |_| {});
    }
    asm.finish()
}

fn calls(c: &Completion) -> Vec<(&str, &str, &str)> {
    c.tool_calls
        .iter()
        .map(|t| {
            let f = &t.function;
            (t.id.as_str(), f.name.as_str(), f.arguments.as_str())
        })
        .collect()
}

#[test]
fn parallel_calls_sharing_index_0_are_told_apart_by_id() {
    let call = |id: Option<&str>, name: Option<&str>, args: &str| {
        let mut d = json!({ "index": 0, "function": { "arguments": args } });
        if let Some(id) = id {
            d["id"] = id.into();
        }
        if let Some(name) = name {
            d["function"]["name"] = name.into();
        }
        choice(json!({ "tool_calls": [d] }), None)
    };
    let c = assemble(&[
        call(Some("a"), Some("read_file"), ""),
        call(None, None, r#"{"path":"#),
        call(None, None, r#""a"}"#),
        call(Some("b"), Some("read_file"), r#"{"path":"#),
        call(None, None, r#""b"}"#),
        choice(json!({}), Some("tool_calls")),
    ]);
    assert_eq!(
        calls(&c),
        [
            ("a", "read_file", r#"{"path":"a"}"#),
            ("b", "read_file", r#"{"path":"b"}"#)
        ]
    );
}

#[test]
fn repeated_ids_and_missing_indexes_still_assemble() {
    // The id and whole name in every delta: one call.
    let same = |args: &str| {
        let d = json!({ "index": 0, "id": "a", "function": { "name": "ls", "arguments": args } });
        choice(json!({ "tool_calls": [d] }), None)
    };
    let c = assemble(&[same("{\"p\":"), same("1}")]);
    assert_eq!(calls(&c), [("a", "ls", "{\"p\":1}")]);
    // No index: a new id starts a call, deltas without one continue it.
    let bare = |id: Option<&str>, args: &str| {
        let mut d = json!({ "function": { "name": "", "arguments": args } });
        if let Some(id) = id {
            d["id"] = id.into();
            d["function"]["name"] = "ls".into();
        }
        choice(json!({ "tool_calls": [d] }), None)
    };
    let c = assemble(&[bare(Some("x"), "{"), bare(None, "}"), bare(Some("y"), "{}")]);
    assert_eq!(calls(&c), [("x", "ls", "{}"), ("y", "ls", "{}")]);
}

#[test]
fn reasoning_starts_the_answer() {
    let mut asm = Assembler::default();
    assert!(!asm.started());
    asm.push(&json!({ "choices": [], "usage": null }), &mut |_| {});
    assert!(!asm.started());
    asm.push(
        &choice(json!({ "reasoning_content": "hmm" }), None),
        &mut |_| {},
    );
    assert!(asm.started());
}

/// What a scripted server sends: raw SSE text after a pause, then the end
/// of the body or, with `hang`, nothing more.
struct Script {
    pieces: Vec<(Duration, String)>,
    hang: bool,
}

fn data(v: &Value) -> String {
    format!("data: {v}\n\n")
}

fn client(idle: Duration, request: Duration) -> Client {
    let mut cfg = ClientConfig::new("http://127.0.0.1:9/v1", "m");
    cfg.idle_timeout = idle;
    cfg.request_timeout = request;
    Client::new(cfg).unwrap()
}

/// Reads `script` as a response body, as one attempt would.
async fn read_script(
    client: &Client,
    script: Script,
    tools_sent: bool,
) -> Result<Completion, Failure> {
    let Script { pieces, hang } = script;
    let body = stream::unfold(pieces.into_iter(), move |mut rest| async move {
        match rest.next() {
            Some((pause, text)) => {
                tokio::time::sleep(pause).await;
                Some((Ok::<_, std::io::Error>(text), rest))
            }
            None if hang => std::future::pending().await,
            None => None,
        }
    });
    let resp = http::Response::new(reqwest::Body::wrap_stream(body));
    let deadline = Instant::now() + client.cfg.request_timeout;
    read(client, resp.into(), tools_sent, deadline, &mut |_| {}).await
}

#[tokio::test]
async fn a_model_reasoning_past_the_request_timeout_is_not_cut() {
    let c = client(Duration::from_secs(5), Duration::from_millis(300));
    let step = Duration::from_millis(100);
    let mut pieces: Vec<(Duration, String)> = (0..6)
        .map(|_| {
            (
                step,
                data(&choice(json!({ "reasoning_content": "…" }), None)),
            )
        })
        .collect();
    pieces.push((
        step,
        data(&choice(json!({ "content": "42" }), Some("stop"))),
    ));
    pieces.push((Duration::ZERO, "data: [DONE]\n\n".into()));
    let done = read_script(
        &c,
        Script {
            pieces,
            hang: false,
        },
        false,
    )
    .await
    .map_err(|f| f.error)
    .expect("answer");
    assert_eq!(done.content, "42");
}

#[tokio::test]
async fn after_finish_reason_a_quiet_server_is_waited_for_briefly() {
    let c = client(Duration::from_secs(10), Duration::from_secs(60));
    let pieces = vec![(
        Duration::ZERO,
        data(&choice(json!({ "content": "Hi" }), Some("stop"))),
    )];
    let start = Instant::now();
    let done = read_script(&c, Script { pieces, hang: true }, false)
        .await
        .map_err(|f| f.error)
        .expect("answer");
    assert_eq!(done.content, "Hi");
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
}

/// A stream that starts, then ends with `error` the way llama.cpp sends it.
fn ends_in_error(error: String) -> Script {
    let text = data(&choice(json!({ "content": "Let me" }), None));
    Script {
        pieces: vec![(Duration::ZERO, text), (Duration::ZERO, error)],
        hang: false,
    }
}

#[tokio::test]
async fn errors_sent_mid_stream_are_the_servers_message() {
    let c = client(Duration::from_secs(5), Duration::from_secs(60));
    let parse = r#"{"code":500,"message":"Failed to parse tool call arguments as JSON","type":"server_error"}"#;
    // llama.cpp: a bare `error:` field, which SSE parsers drop.
    let f = read_script(&c, ends_in_error(format!("error: {parse}\n\n")), true)
        .await
        .expect_err("fails");
    assert!(f.retry && f.tools_failure, "{f:?}");
    let shown = f.error.to_string();
    assert!(
        shown.contains("server error in stream (500): Failed to parse tool call arguments as JSON"),
        "{shown}"
    );
    // The same, followed by `[DONE]`, as llama.cpp sends it.
    let f = read_script(
        &c,
        ends_in_error(format!("error: {parse}\n\ndata: [DONE]\n\n")),
        false,
    )
    .await
    .expect_err("fails");
    assert!(
        f.error.to_string().contains("Failed to parse tool call"),
        "{}",
        f.error
    );
    // An `error` event.
    let f = read_script(
        &c,
        ends_in_error(format!("event: error\ndata: {parse}\n\n")),
        false,
    )
    .await
    .expect_err("fails");
    assert!(f.retry && !f.tools_failure, "{f:?}");
    assert!(
        f.error.to_string().contains("Failed to parse tool call"),
        "{}",
        f.error
    );
    // A context overflow is not retried as is.
    let full = r#"{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}"#;
    let f = read_script(&c, ends_in_error(format!("error: {full}\r\n\r\n")), false)
        .await
        .expect_err("fails");
    assert!(!f.retry, "{f:?}");
    assert!(
        matches!(&f.error, ClientError::ContextOverflow { body, .. } if body.contains("available context size")),
        "{:?}",
        f.error
    );
}

/// An error in the stream is retried, or not, as the status its code
/// stands for would be: llama-server's refusal of a reply that opens with
/// a fence is a 500 (retried, and a failure of native tools whatever its
/// words); a 400 is not retried.
#[tokio::test]
async fn an_error_in_the_stream_is_judged_by_its_code() {
    let c = client(Duration::from_secs(5), Duration::from_secs(60));
    let peg = r#"{"error":{"code":500,"message":"The model produced output that does not match the expected peg-native format","type":"server_error"}}"#;
    let f = read_script(&c, ends_in_error(format!("data: {peg}\n\n")), true)
        .await
        .expect_err("fails");
    assert!(f.retry && f.tools_failure, "{f:?}");
    assert!(
        f.error
            .to_string()
            .contains("(500): The model produced output"),
        "{}",
        f.error
    );
    let bad = r#"{"error":{"code":400,"message":"invalid 'temperature'","type":"invalid_request_error"}}"#;
    let f = read_script(&c, ends_in_error(format!("data: {bad}\n\n")), true)
        .await
        .expect_err("fails");
    assert!(!f.retry && !f.tools_failure, "{f:?}");
    let busy = r#"{"error":{"message":"slow down","type":"rate_limit_exceeded"}}"#;
    let f = read_script(&c, ends_in_error(format!("data: {busy}\n\n")), true)
        .await
        .expect_err("fails");
    assert!(f.retry && !f.tools_failure, "{f:?}");
}

/// A stream cut while a tool call comes is a failure of native tools; one
/// cut in text is not.
#[tokio::test]
async fn a_stream_cut_in_a_call_counts_against_native_tools() {
    let c = client(Duration::from_secs(5), Duration::from_secs(60));
    let call = json!({ "index": 0, "id": "c1", "function": { "name": "write_file", "arguments": "{\"pa" } });
    let in_call = Script {
        pieces: vec![(
            Duration::ZERO,
            data(&choice(json!({ "tool_calls": [call] }), None)),
        )],
        hang: false,
    };
    let f = read_script(&c, in_call, true).await.expect_err("cut");
    assert!(f.retry && f.tools_failure, "{f:?}");
    let in_text = Script {
        pieces: vec![(
            Duration::ZERO,
            data(&choice(json!({ "content": "Let" }), None)),
        )],
        hang: false,
    };
    let f = read_script(&c, in_text, true).await.expect_err("cut");
    assert!(f.retry && !f.tools_failure, "{f:?}");
}

#[test]
fn every_call_gets_a_unique_id_streamed_or_whole() {
    // Two calls with id "a"; one without an id beside a server's "call_2",
    // the id it would otherwise get from its index.
    let wire = [
        ("a", "read_file"),
        ("a", "write_file"),
        ("", "read_file"),
        ("call_2", ""),
    ];
    let expected = ["a", "call_1", "call_3", "call_2"];
    let mut chunks: Vec<Value> = wire
        .iter()
        .zip(0..)
        .map(|((id, name), index)| {
            let d = json!({ "index": index, "id": id, "function": { "name": name, "arguments": "{}" } });
            choice(json!({ "tool_calls": [d] }), None)
        })
        .collect();
    chunks.push(choice(json!({}), Some("tool_calls")));
    let ids = |c: &Completion| {
        c.tool_calls
            .iter()
            .map(|t| t.id.clone())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&assemble(&chunks)), expected);

    let mut whole = json!({ "choices": [{ "message": { "tool_calls": wire
        .iter()
        .map(|(id, name)| json!({ "id": id, "function": { "name": name, "arguments": "{}" } }))
        .collect::<Vec<_>>() } }] });
    let c = super::reply::parse_completion(&mut whole).unwrap();
    assert_eq!(ids(&c), expected);
}
