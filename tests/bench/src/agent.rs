//! The agent's own cost per turn, model excluded: a turn with 50 tools and
//! 100 messages of history against a mock that answers at once, against a
//! plain HTTP POST of the same request body to the same mock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use warden_agent::client::ClientConfig;
use warden_agent::settings::{Protocol, Settings};
use warden_agent::{Agent, AgentTool, CallCancel, Message, ToolDef, ToolResult, ToolRunner};
use warden_mock_llm::{MockLlm, Reply};

/// Fifty tools with realistic schemas; never called.
struct Fifty;

impl ToolRunner for Fifty {
    fn tools(&self) -> Vec<AgentTool> {
        (0..50)
            .map(|i| AgentTool {
                def: ToolDef {
                    name: format!("tool_{i}"),
                    description: "Does one thing to a file in the workspace, and says what it did."
                        .into(),
                    parameters: json!({
                        "type": "object",
                        "properties": {
                            "path": {"type": "string", "description": "File, relative to the workspace."},
                            "limit": {"type": "integer", "minimum": 1},
                            "pattern": {"type": "string"}
                        },
                        "required": ["path"]
                    }),
                },
                mutates: i % 2 == 0,
                programs: Vec::new(),
                apps: Vec::new(),
                browse: Vec::new(),
            })
            .collect()
    }

    fn call(&self, _: &str, _: &serde_json::Value, _: &CallCancel) -> ToolResult {
        ToolResult::default()
    }
}

fn reply() -> Reply {
    Reply::Json(json!({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}
    }))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// (agent turn, plain POST of the same body), medians.
pub fn overhead(turns: usize) -> (Duration, Duration) {
    let mock = MockLlm::start((0..2 * turns + 4).map(|_| reply()).collect());
    let mut client = ClientConfig::new(mock.base_url(), "m");
    client.stream = false;
    let settings = Settings {
        client,
        protocol: Protocol::Native,
        max_turns: 5,
        api_key_env: "WARDEN_BENCH_NO_KEY".into(),
        context_window: None,
        tools: None,
    };
    let history: Vec<Message> = (0..100)
        .map(|i| {
            let text = format!(
                "message {i}: {}",
                "some words of an ordinary length ".repeat(6)
            );
            if i % 2 == 0 {
                Message::User { content: text }
            } else {
                Message::Assistant {
                    content: Some(text),
                    tool_calls: Vec::new(),
                }
            }
        })
        .collect();
    let mut agent = Agent::new(
        settings,
        Arc::new(Fifty),
        std::env::temp_dir(),
        None,
        history,
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cancel = CancellationToken::new();
    let mut turn = Vec::with_capacity(turns);
    for _ in 0..turns {
        let t = Instant::now();
        rt.block_on(agent.send("next", &cancel, &mut |_| {}))
            .unwrap();
        turn.push(t.elapsed());
    }
    let body: Value = mock.requests().last().unwrap().body.clone();
    let bytes = serde_json::to_vec(&body).unwrap();
    let url = format!("{}/chat/completions", mock.base_url());
    let http = reqwest::Client::new();
    let mut plain = Vec::with_capacity(turns);
    for _ in 0..turns {
        let t = Instant::now();
        rt.block_on(async {
            let r = http
                .post(&url)
                .header("content-type", "application/json")
                .body(bytes.clone())
                .send()
                .await
                .unwrap();
            let v: Value = r.json().await.unwrap();
            std::hint::black_box(v);
        });
        plain.push(t.elapsed());
    }
    (median(turn), median(plain))
}

/// A completion calling `tool_0` with `arguments`.
fn calling(arguments: &str) -> Value {
    json!({
        "id": "c", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {
            "role": "assistant", "content": null,
            "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "tool_0", "arguments": arguments}}]
        }, "finish_reason": "tool_calls"}]
    })
}

/// CPU time this thread has used (Linux: `/proc/thread-self/schedstat`).
fn thread_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    let ns = stat.split_whitespace().next().and_then(|n| n.parse().ok());
    Duration::from_nanos(ns.unwrap_or(0))
}

/// The agent's own cost of one call whose arguments are 1 MiB, and one
/// `serde_json` parse of those arguments (medians over `runs`).
///
/// A turn that makes the call (the mock answers with it, the call runs in
/// a tool that does nothing, the next request carries it back, the mock
/// answers) is timed in CPU time of the thread that runs the agent and its
/// HTTP client (the mock runs on threads of its own), against the same
/// turn with a call of a few bytes. The difference is what the 1 MiB
/// costs warden: reading the reply, the one parse of the arguments, the
/// history, the context estimate, the events, writing the next request.
pub fn big_call(runs: usize) -> (Duration, Duration) {
    let line = "a line of text, with \"quotes\" and a \\ backslash, as code has\n";
    let content: String = line.repeat((1 << 20) / line.len());
    let big = json!({"path": "big.txt", "content": content}).to_string();
    let small = json!({"path": "big.txt", "content": "x"}).to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let cost = |arguments: &str| -> Duration {
        let mock = MockLlm::start(vec![Reply::Json(calling(arguments)), reply()]);
        let mut client = ClientConfig::new(mock.base_url(), "m");
        client.stream = false;
        let settings = Settings {
            client,
            protocol: Protocol::Native,
            max_turns: 5,
            api_key_env: "WARDEN_BENCH_NO_KEY".into(),
            context_window: Some(1 << 30),
            tools: None,
        };
        let mut agent = Agent::new(
            settings,
            Arc::new(Fifty),
            std::env::temp_dir(),
            None,
            Vec::new(),
        )
        .unwrap();
        let cancel = CancellationToken::new();
        let before = thread_cpu();
        rt.block_on(agent.send("go", &cancel, &mut |_| {})).unwrap();
        let spent = thread_cpu() - before;
        drop(agent);
        spent
    };
    let mut marginal = Vec::with_capacity(runs);
    let mut parse = Vec::with_capacity(runs);
    for _ in 0..runs {
        let with_big = cost(&big);
        let with_small = cost(&small);
        marginal.push(with_big.saturating_sub(with_small));
        let t = Instant::now();
        let v: Value = serde_json::from_str(&big).unwrap();
        std::hint::black_box(v);
        parse.push(t.elapsed());
    }
    (median(marginal), median(parse))
}

/// The agent's own handling of one call whose arguments are 1 MiB, from
/// the model's reply to the result in the history: the one parse of the
/// arguments, the history, the repeat check, the events, the call handed to
/// a tool that does nothing; with `transcript`, the records written too
/// (the call's line, 1 MiB, serialized and written to a file). Against one
/// `serde_json` parse of those arguments (medians).
pub fn big_step(runs: usize, transcript: bool) -> (Duration, Duration) {
    let line = "a line of text, with \"quotes\" and a \\ backslash, as code has\n";
    let content: String = line.repeat((1 << 20) / line.len());
    let big = json!({"path": "big.txt", "content": content}).to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let store = warden_agent::session::SessionStore::new(
        warden_state::StateDir::open(state.path(), "sessions").unwrap(),
    );
    let mut step = Vec::with_capacity(runs);
    let mut parse = Vec::with_capacity(runs);
    for _ in 0..runs {
        let settings = Settings {
            client: ClientConfig::new("http://127.0.0.1:9/v1", "m"),
            protocol: Protocol::Native,
            max_turns: 5,
            api_key_env: "WARDEN_BENCH_NO_KEY".into(),
            context_window: Some(1 << 30),
            tools: None,
        };
        let session = transcript.then(|| store.create().unwrap());
        let mut agent = Agent::new(
            settings,
            Arc::new(Fifty),
            std::env::temp_dir(),
            session,
            Vec::new(),
        )
        .unwrap();
        agent.post("go").unwrap();
        let reply = warden_agent::client::Completion {
            content: String::new(),
            tool_calls: vec![warden_agent::ToolCall::new("c1", "tool_0", big.clone())],
            usage: None,
            finish_reason: Some("tool_calls".into()),
        };
        let cancel = CancellationToken::new();
        let t = Instant::now();
        rt.block_on(agent.run_reply(reply, &cancel, &mut |_| {}))
            .unwrap();
        step.push(t.elapsed());
        drop(agent);
        let t = Instant::now();
        let v: Value = serde_json::from_str(&big).unwrap();
        std::hint::black_box(v);
        parse.push(t.elapsed());
    }
    (median(step), median(parse))
}
