//! Network grants: HTTP only to the hosts a tool is granted, checked by the
//! host for every request; no sockets; no wait outlives the call's time limit.

use std::time::{Duration, Instant};

use serde_json::json;
use warden_sandbox::ErrorKind;
use warden_tests::Tools as Toolset;
use warden_tests::{HttpPeer, Sandbox, err, guests, ok, run, run_ok};

fn hostile(policy: &str) -> (Sandbox, Toolset) {
    let sb = Sandbox::new();
    sb.policy(policy);
    let tools = sb.toolset(&[guests::HOSTILE]);
    (sb, tools)
}

fn get(tools: &Toolset, url: &str) -> warden_sandbox::CallOutcome {
    tools.call("http_get", &json!({ "url": url }).to_string())
}

#[test]
fn a_tool_without_a_network_grant_reaches_no_host() {
    let peer = HttpPeer::start();
    let (_sb, tools) = hostile("[tools.http_get]\n");
    let e = err(get(&tools, &peer.url("/")));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    let port = peer.port;
    assert!(
        e.message.contains(&format!(
            "network access to 127.0.0.1:{port} was denied: `http_get` is not granted that host"
        )) && e
            .message
            .contains("`network = [\"HOST\"]` under [tools.http_get] in warden.toml"),
        "{e}"
    );
    assert_eq!(peer.hits(), 0, "the request must not leave the host");
}

#[test]
fn a_granted_host_and_port_is_reachable_and_nothing_else() {
    let peer = HttpPeer::start();
    let other = HttpPeer::start();
    let (_sb, tools) = hostile(&format!(
        "[tools.http_get]\nnetwork = [\"127.0.0.1:{}\"]\n",
        peer.port
    ));
    let out = ok(get(&tools, &peer.url("/a?b=c")));
    assert_eq!(out, format!("status=200\nhello from {}", peer.port));
    assert_eq!(peer.hits(), 1);

    // Another port of the same address, and the same port by another name.
    let e = err(get(&tools, &other.url("/")));
    assert!(
        e.message.contains(&format!("127.0.0.1:{}", other.port)),
        "{e}"
    );
    let e = err(get(&tools, &format!("http://localhost:{}/", peer.port)));
    assert!(e.message.contains("localhost"), "{e}");
    assert_eq!(other.hits(), 0);
    assert_eq!(peer.hits(), 1);
}

#[test]
fn a_network_grant_is_only_for_the_tool_that_names_it() {
    let peer = HttpPeer::start();
    let (_sb, tools) = hostile("[tools.http_get]\nnetwork = [\"127.0.0.1\"]\n[tools.net]\n");
    assert!(ok(get(&tools, &peer.url("/"))).starts_with("status=200"));
    // Raw sockets stay closed, for the granted tool's component too.
    let addr = format!("127.0.0.1:{}", peer.port);
    let out = ok(tools.call("net", &json!({ "addr": addr }).to_string()));
    assert!(!out.contains("CONNECTED"), "{out}");
    assert_eq!(peer.hits(), 1);
}

#[test]
fn a_silent_server_cannot_hold_a_call_past_its_time_limit() {
    let peer = HttpPeer::silent();
    let (_sb, tools) = hostile(&format!(
        "[tools.http_get]\nnetwork = [\"127.0.0.1:{}\"]\ntimeout = \"500ms\"\n[tools.ok]\n",
        peer.port
    ));
    let start = Instant::now();
    let outcome = get(&tools, &peer.url("/"));
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "held for {took:?}");
    assert!(took >= Duration::from_millis(450), "ended early: {took:?}");
    match outcome.result {
        Err(e) => assert_eq!(e.kind, ErrorKind::Timeout, "{e}"),
        Ok(out) => assert!(out.contains("Timeout"), "{out}"),
    }
    assert_eq!(peer.hits(), 1);
    assert_eq!(ok(tools.call("ok", "{}")), "ok");
}

#[test]
fn a_sleeping_guest_stops_at_its_timeout() {
    let (_sb, tools) = hostile("[tools.sleep]\ntimeout = \"300ms\"\n[tools.ok]\n");
    let start = Instant::now();
    let e = err(tools.call("sleep", "{}"));
    let took = start.elapsed();
    assert_eq!(e.kind, ErrorKind::Timeout, "{e}");
    assert!(took >= Duration::from_millis(300), "ended early: {took:?}");
    assert!(took < Duration::from_secs(5), "held for {took:?}");
    // A short sleep within the limit still works.
    assert_eq!(ok(tools.call("sleep", r#"{"ms":20}"#)), "slept 20 ms");
    assert_eq!(ok(tools.call("ok", "{}")), "ok");
}

#[test]
fn the_cli_shows_network_grants_and_rejects_urls_in_them() {
    let sb = Sandbox::new();
    sb.drop_in(guests::HOSTILE, "hostile.wasm");
    sb.policy("[tools.http_get]\nnetwork = [\"API.example.com\", \"*.docs.rs:443\"]\n");
    sb.trust();
    let out = run_ok(sb.warden().arg("policy"));
    assert!(
        out.contains(
            "http_get (workspace):\n  files:    none\n  env:      none\n  \
             network:  api.example.com, *.docs.rs:443\n"
        ),
        "{out}"
    );
    let list = run_ok(sb.warden().args(["tools", "list"]));
    assert!(
        list.lines()
            .any(|l| l.starts_with("http_get") && l.contains("net:api.example.com,*.docs.rs:443")),
        "{list}"
    );

    sb.policy("[tools.http_get]\nnetwork = [\"https://api.example.com/v1\"]\n");
    let r = run(sb.warden().arg("trust"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("warden.toml at line 2, column 11")
            && r.stderr
                .contains("write only the host, e.g. \"api.example.com\""),
        "{}",
        r.stderr
    );
}

/// A tool cannot hold open more than 32 requests at once: each would hold
/// a socket of warden's own. The rest are refused before any connection,
/// the model is told why, and the next call starts with none open.
#[test]
fn a_call_holds_at_most_32_requests_open_at_once() {
    let silent = HttpPeer::silent();
    let peer = HttpPeer::start();
    let (_sb, tools) = hostile(&format!(
        "[tools.http_hold]\nnetwork = [\"127.0.0.1\"]\n[tools.http_get]\nnetwork = [\"127.0.0.1:{}\"]\n",
        peer.port
    ));
    let args = json!({ "url": silent.url("/"), "n": 100, "ms": 500 }).to_string();
    let out = ok(tools.call("http_hold", &args));
    assert!(
        out.starts_with("waiting=32 ErrorCode::ConnectionLimitReached=68 answered=0"),
        "{out}"
    );
    assert!(
        out.contains("the tool had 32 HTTP requests open at once, the most a call may"),
        "{out}"
    );
    warden_tests::wait_until("the held requests never connected", || silent.hits() == 32);
    assert_eq!(silent.hits(), 32, "a refused request must not connect");
    // The call's requests ended with it.
    assert!(ok(get(&tools, &peer.url("/"))).starts_with("status=200"));
}

/// `user@host` goes nowhere: the name would reach the server in `Host`
/// while the grant (and any secret) follows the host after it.
#[test]
fn a_url_with_a_user_name_is_not_sent() {
    let peer = HttpPeer::start();
    let (_sb, tools) = hostile(&format!(
        "[tools.http_get]\nnetwork = [\"127.0.0.1:{}\"]\n",
        peer.port
    ));
    let url = format!("http://evil.example@127.0.0.1:{}/", peer.port);
    let out = ok(get(&tools, &url));
    assert!(
        out.starts_with("err: ErrorCode::HttpRequestUriInvalid"),
        "{out}"
    );
    assert!(out.contains("with a user name or password"), "{out}");
    assert_eq!(peer.hits(), 0, "the request must not leave the host");
}
