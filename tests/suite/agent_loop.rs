//! The agent loop as a library: concurrency, call order, cancellation, turn limit.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use tokio_util::sync::CancellationToken;
use warden_agent::client::ClientConfig;
use warden_agent::settings::{Protocol, Settings};
use warden_agent::{Agent, AgentError, AgentTool, CallCancel, ToolDef, ToolResult, ToolRunner};
use warden_mock_llm::{MockLlm, answer, calls, check_chat_body};

/// Tools that sleep: `slow_read` (read-only) and `slow_write` (mutates).
struct Slow;

impl ToolRunner for Slow {
    fn tools(&self) -> Vec<AgentTool> {
        ["slow_read", "slow_write"]
            .iter()
            .map(|n| AgentTool {
                def: ToolDef {
                    name: n.to_string(),
                    description: "sleeps".into(),
                    parameters: json!({"type": "object", "properties": {"tag": {"type": "string"}}}),
                },
                mutates: *n == "slow_write",
                programs: Vec::new(),
                apps: Vec::new(),
                browse: Vec::new(),
            })
            .collect()
    }

    fn call(&self, name: &str, arguments: &serde_json::Value, cancel: &CallCancel) -> ToolResult {
        let start = Instant::now();
        while start.elapsed() < Duration::from_millis(400) {
            if cancel.is_cancelled() {
                return ToolResult {
                    ok: false,
                    output: "cancelled".into(),
                    error_kind: Some("cancelled".into()),
                    duration: start.elapsed(),
                    ..ToolResult::default()
                };
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        ToolResult {
            ok: true,
            output: format!("{name} {arguments}"),
            duration: start.elapsed(),
            ..ToolResult::default()
        }
    }
}

fn agent(mock: &MockLlm, max_turns: u32) -> Agent {
    let mut client = ClientConfig::new(mock.base_url(), "test-model");
    client.backoff_base = Duration::from_millis(5);
    let settings = Settings {
        client,
        protocol: Protocol::Native,
        max_turns,
        api_key_env: "OPENAI_API_KEY".into(),
        context_window: None,
        tools: None,
    };
    Agent::new(
        settings,
        Arc::new(Slow),
        std::env::temp_dir(),
        None,
        Vec::new(),
    )
    .unwrap()
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn read_only_calls_run_concurrently_and_results_keep_call_order() {
    let mock = MockLlm::start(vec![
        calls(&[
            ("r1", "slow_read", r#"{"tag":"a"}"#),
            ("r2", "slow_read", r#"{"tag":"b"}"#),
        ]),
        answer("done"),
    ]);
    let mut agent = agent(&mock, 5);
    let start = Instant::now();
    let answer = rt()
        .block_on(agent.send("go", &CancellationToken::new(), &mut |_| {}))
        .unwrap();
    let took = start.elapsed();
    assert_eq!(answer, "done");
    assert!(
        took < Duration::from_millis(750),
        "two 400 ms calls took {took:?}: not concurrent"
    );
    let body = &mock.requests()[1].body;
    check_chat_body(body).unwrap();
    let tools: Vec<_> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        tools,
        [
            ("r1", r#"slow_read {"tag":"a"}"#),
            ("r2", r#"slow_read {"tag":"b"}"#)
        ]
    );
}

#[test]
fn mutating_calls_run_one_after_another() {
    let mock = MockLlm::start(vec![
        calls(&[("w1", "slow_write", "{}"), ("w2", "slow_write", "{}")]),
        answer("done"),
    ]);
    let mut agent = agent(&mock, 5);
    let start = Instant::now();
    rt().block_on(agent.send("go", &CancellationToken::new(), &mut |_| {}))
        .unwrap();
    assert!(start.elapsed() >= Duration::from_millis(800));
}

#[test]
fn the_turn_limit_ends_the_run_with_a_clear_message() {
    let mock = MockLlm::start(vec![
        calls(&[("a", "slow_read", "{}")]),
        calls(&[("b", "slow_read", "{}")]),
    ]);
    let mut agent = agent(&mock, 2);
    let e = rt()
        .block_on(agent.send("go", &CancellationToken::new(), &mut |_| {}))
        .unwrap_err();
    assert!(matches!(e, AgentError::MaxTurns(2)));
    assert!(e.to_string().contains("max_turns"), "{e}");
}

#[test]
fn cancelling_during_tool_calls_keeps_the_history_valid() {
    let mock = MockLlm::start(vec![
        calls(&[("w1", "slow_write", "{}"), ("w2", "slow_write", "{}")]),
        answer("after cancel"),
    ]);
    let mut agent = agent(&mock, 5);
    let rt = rt();
    let cancel = CancellationToken::new();
    let c2 = cancel.clone();
    rt.spawn(async move {
        tokio::time::sleep(Duration::from_millis(200)).await;
        c2.cancel();
    });
    let e = rt
        .block_on(agent.send("go", &cancel, &mut |_| {}))
        .unwrap_err();
    assert!(matches!(e, AgentError::Cancelled));
    // The conversation goes on, and the next request is still valid.
    let answer = rt
        .block_on(agent.send("again", &CancellationToken::new(), &mut |_| {}))
        .unwrap();
    assert_eq!(answer, "after cancel");
    let body = &mock.requests()[1].body;
    check_chat_body(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    assert!(body.to_string().contains("cancelled by the user"));
    // The running write was stopped, not waited for: it never finished.
    let tool_texts: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(tool_texts.len(), 2, "{tool_texts:?}");
    assert!(
        tool_texts.iter().all(|t| !t.contains("slow_write {}")),
        "{tool_texts:?}"
    );
}
