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
