//! Hostile guests: each is stopped by the runtime, and the next call works.

use std::time::{Duration, Instant};

use serde_json::json;
use warden_sandbox::ErrorKind;
use warden_tests::Tools as Toolset;
use warden_tests::{Sandbox, err, guests, ok, run_ok};

const POLICY: &str = r#"
[limits]
timeout = "2s"
memory = "64MiB"
output = "64KiB"

[tools.spin]
timeout = "300ms"
[tools.bomb]
[tools.flood]
[tools.recurse]
[tools.env_dump]
[tools.net]
[tools.ok]
[tools.fail]
[tools.strict]
[tools.count]
[tools.sleep]
timeout = "400ms"
"#;

fn hostile() -> (Sandbox, Toolset) {
    let sb = Sandbox::new();
    sb.policy(POLICY);
    let tools = sb.toolset(&[guests::HOSTILE]);
    (sb, tools)
}

/// After a hostile call, other tools (and the same component) still work.
fn still_healthy(tools: &Toolset) {
    assert_eq!(ok(tools.call("ok", "{}")), "ok");
    assert!(ok(tools.call("read_file", r#"{"path":"hello.txt"}"#)).contains("hello"));
}

#[test]
fn an_infinite_loop_stops_at_its_timeout() {
    let (_sb, tools) = hostile();
    let start = Instant::now();
    let e = err(tools.call("spin", "{}"));
    let took = start.elapsed();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(
        e.message.contains("300 ms") && e.message.contains("timeout"),
        "{e}"
    );
    assert!(
        took >= Duration::from_millis(300),
        "stopped too early: {took:?}"
    );
    assert!(took < Duration::from_secs(5), "stopped too late: {took:?}");
    still_healthy(&tools);
}

#[test]
fn a_memory_bomb_stops_at_its_limit() {
    let (_sb, tools) = hostile();
    let e = err(tools.call("bomb", "{}"));
    assert_eq!(e.kind, ErrorKind::MemoryLimit, "{e}");
    assert!(e.message.contains("64 MiB"), "{e}");
    still_healthy(&tools);
}

#[test]
fn an_output_flood_is_truncated() {
    let (_sb, tools) = hostile();
    let out = tools.call("flood", r#"{"bytes": 5000000}"#);
    assert!(out.truncated);
    let text = ok(out);
    assert!(text.len() < 70 * 1024, "{}", text.len());
    assert!(text.starts_with("xxxx"));
    assert!(
        text.contains("[output truncated: showing the first 65536 of 5000000 bytes"),
        "{}",
        &text[text.len() - 200..]
    );
    still_healthy(&tools);
}

#[test]
fn deep_recursion_traps_cleanly() {
    let (_sb, tools) = hostile();
    let e = err(tools.call("recurse", "{}"));
    assert_eq!(e.kind, ErrorKind::Crashed, "{e}");
    assert!(e.message.contains("stack"), "{e}");
    still_healthy(&tools);
}

#[test]
fn the_guest_sees_none_of_the_host_environment() {
    let sb = Sandbox::new();
    sb.drop_in(guests::HOSTILE, "hostile.wasm");
    sb.policy("[tools.env_dump]\n");
    sb.trust();
    let run = |sb: &Sandbox| {
        run_ok(
            sb.warden()
                .args(["tools", "call", "env_dump"])
                .env("OPENAI_API_KEY", "sk-test-host-secret")
                .env("WARDEN_TEST_VISIBLE", "granted-value"),
        )
    };
    let out = run(&sb);
    assert_eq!(out.lines().next(), Some("count=0"), "{out}");
    assert!(!out.contains("sk-test-host-secret"));

    // Only a variable granted by name is passed, and nothing else.
    sb.policy("[tools.env_dump]\nenv = [\"WARDEN_TEST_VISIBLE\"]\n");
    sb.trust();
    let out = run(&sb);
    assert!(out.starts_with("count=1\n"), "{out}");
    assert!(out.contains("WARDEN_TEST_VISIBLE=granted-value"), "{out}");
    assert!(!out.contains("sk-test-host-secret"), "{out}");
}

#[test]
fn sockets_and_name_lookups_are_denied() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    listener.set_nonblocking(true).unwrap();
    let (_sb, tools) = hostile();
    let out = ok(tools.call("net", &json!({"addr": addr}).to_string()));
    for kind in ["tcp", "udp", "dns"] {
        let line = out
            .lines()
            .find(|l| l.starts_with(kind))
            .unwrap_or_else(|| panic!("{out}"));
        assert!(line.contains("denied"), "{line}");
    }
    assert!(
        listener.accept().is_err(),
        "the guest reached the host listener"
    );
    still_healthy(&tools);
}

#[test]
fn guest_errors_and_schema_violations_come_back_as_values() {
    let (_sb, tools) = hostile();
    let e = err(tools.call("fail", "{}"));
    assert_eq!(
        (e.kind, e.message.as_str()),
        (ErrorKind::Failed, "deliberate failure")
    );
    let e = err(tools.call("strict", r#"{"n": 0}"#));
    assert_eq!(e.kind, ErrorKind::InvalidArgs);
    assert!(e.message.contains("{n: integer}"), "{e}");
    let e = err(tools.call("strict", "not json"));
    assert!(e.message.contains("not valid JSON"), "{e}");
    assert_eq!(ok(tools.call("strict", r#"{"n": 3}"#)), "n=3");
    let e = err(tools.call("reed_file", "{}"));
    assert_eq!(e.kind, ErrorKind::UnknownTool);
    assert!(e.message.contains("Did you mean `read_file`?"), "{e}");
}

#[test]
fn hostile_calls_in_parallel_do_not_disturb_each_other() {
    let (_sb, tools) = hostile();
    std::thread::scope(|s| {
        let spin = s.spawn(|| tools.call("spin", "{}"));
        let bomb = s.spawn(|| tools.call("bomb", "{}"));
        let good: Vec<_> = (0..8).map(|_| s.spawn(|| tools.call("ok", "{}"))).collect();
        for g in good {
            assert_eq!(ok(g.join().unwrap()), "ok");
        }
        assert_eq!(err(spin.join().unwrap()).kind, ErrorKind::Timeout);
        assert_eq!(err(bomb.join().unwrap()).kind, ErrorKind::MemoryLimit);
    });
}

#[test]
fn every_call_gets_an_instance_of_its_own() {
    let (_sb, tools) = hostile();
    let first = "call 1 of this instance";
    for _ in 0..6 {
        assert_eq!(ok(tools.call("count", "{}")), first);
    }
    std::thread::sleep(Duration::from_millis(50)); // instances made ahead
    for _ in 0..3 {
        assert_eq!(ok(tools.call("count", "{}")), first);
    }
    std::thread::scope(|s| {
        let calls: Vec<_> = (0..8)
            .map(|_| s.spawn(|| tools.call("count", "{}")))
            .collect();
        for c in calls {
            assert_eq!(ok(c.join().unwrap()), first);
        }
    });
}

#[test]
fn the_time_limit_starts_with_the_call_not_with_its_instance() {
    let (_sb, tools) = hostile();
    assert_eq!(ok(tools.call("sleep", r#"{"ms":5}"#)), "slept 5 ms");
    // Instances for the next calls are made now and wait longer than the
    // 400 ms limit: neither their clock nor their deadline may have run.
    std::thread::sleep(Duration::from_millis(700));
    let start = Instant::now();
    assert_eq!(ok(tools.call("sleep", r#"{"ms":200}"#)), "slept 200 ms");
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200),
        "the sleep was cut: {took:?}"
    );
    std::thread::sleep(Duration::from_millis(700));
    let start = Instant::now();
    let e = err(tools.call("sleep", r#"{"ms":5000}"#));
    let took = start.elapsed();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(
        took >= Duration::from_millis(400),
        "stopped early: {took:?}"
    );
    assert!(took < Duration::from_secs(3), "stopped late: {took:?}");
}
