//! `warden models` through the real binary, against the mock on loopback.

use serde_json::json;
use warden_mock_llm::MockLlm;
use warden_tests::{Run, Sandbox, run};

fn models(sb: &Sandbox, url: &str, model: &str, args: &[&str]) -> Run {
    run(sb
        .warden()
        .env("OPENAI_BASE_URL", url)
        .env("WARDEN_MODEL", model)
        .arg("models")
        .args(args))
}

fn three() -> MockLlm {
    let mock = MockLlm::start(vec![]);
    mock.set_models(json!({"object": "list", "data": [
        {"id": "small", "object": "model"},
        {"id": "qwen2.5-coder", "object": "model", "max_model_len": 32768},
        {"id": "evil\u{1b}[2J", "object": "model", "meta": {"n_ctx": 4096}},
    ]}));
    mock
}

#[test]
fn the_list_marks_the_model_in_use_with_its_window() {
    let sb = Sandbox::new();
    let mock = three();
    let r = models(&sb, &mock.base_url(), "qwen2.5-coder", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout,
        "  small\n\
         * qwen2.5-coder  32768 tokens\n  \
         evil\\x1b[2J    4096 tokens\n"
    );
    assert_eq!(r.stderr, "");
    assert!(mock.requests().is_empty(), "only /models is asked");
    let r = models(&sb, &mock.base_url(), "missing", &["--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(doc["model"], "missing");
    assert_eq!(
        doc["models"][1],
        json!({"id": "qwen2.5-coder", "context_window": 32768, "in_use": false})
    );
    let r = models(&sb, &mock.base_url(), "missing", &[]);
    assert_eq!(
        r.stderr,
        "note: the model in use, `missing`, is not in this list: pick one with --model, \
         WARDEN_MODEL or `[model] model`\n"
    );
}

#[test]
fn an_endpoint_that_does_not_list_models_is_an_error() {
    let sb = Sandbox::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = models(&sb, &format!("http://127.0.0.1:{port}/v1"), "m", &[]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.starts_with(&format!(
            "error: cannot connect to http://127.0.0.1:{port}/v1/models: "
        )),
        "{}",
        r.stderr
    );
    // A base URL without /v1: the mock has no /models there.
    let mock = MockLlm::start(vec![]);
    let root = mock.base_url().trim_end_matches("/v1").to_string();
    let r = models(&sb, &root, "m", &[]);
    assert_eq!(r.code, 3);
    assert!(
        r.stderr.contains(
            "answered http 404: mock: no route for /models (this server lists no models there: \
             check that the base URL ends in /v1)"
        ),
        "{}",
        r.stderr
    );
}
