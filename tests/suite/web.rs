//! The web built-ins (`fetch`, `web_search`), secrets the host adds to
//! requests and the tool never sees, and private addresses: all against
//! loopback peers that count their connections.

use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};
use warden_mock_llm::{MockLlm, answer, calls};
use warden_sandbox::ErrorKind;
use warden_tests::{Answer, Sandbox, Tools, WebPeer, err, guests, ok, run, run_ok};

/// The secret of these tests. It must never reach a guest, a sink, the
/// model, a transcript or an event.
const KEY: &str = "brv-k3y-7f3a9c1d2e55";

fn fetch(tools: &Tools, url: &str, more: Value) -> warden_sandbox::CallOutcome {
    let mut args = json!({ "url": url });
    args.as_object_mut()
        .unwrap()
        .extend(more.as_object().unwrap().clone());
    tools.call("fetch", &args.to_string())
}

fn fetch_tools(sb: &Sandbox, peer: &WebPeer, extra: &str) -> Tools {
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"127.0.0.1:{}\"]\n{extra}",
        peer.port
    ));
    sb.toolset(&[])
}

/// Every form of the key a leak could take.
fn forms() -> Vec<String> {
    vec![
        KEY.to_string(),
        base64::engine::general_purpose::STANDARD_NO_PAD.encode(KEY),
    ]
}

fn assert_no_key(what: &str, text: &str) {
    for f in forms() {
        assert!(!text.contains(&f), "the secret leaked into {what}: {text}");
    }
}

#[test]
fn the_web_tools_are_off_until_named_and_then_reach_nothing_not_granted() {
    let peer = WebPeer::start(|_| Answer::ok("text/plain", "hi"));
    let sb = Sandbox::new();
    let tools = sb.toolset(&[]);
    for name in ["fetch", "web_search"] {
        assert!(tools.find(name).is_none(), "{name} is on by default");
    }
    let e = err(fetch(&tools, &peer.url("/"), json!({})));
    assert_eq!(e.kind, ErrorKind::UnknownTool, "{e}");
    assert!(e.message.contains("`[tools.fetch]` section"), "{e}");
    // The file tools keep the workspace.
    assert_eq!(tools.find("read_file").unwrap().grants().dirs().count(), 1);
    let out = run_ok(sb.warden().arg("policy"));
    assert!(out.contains("fetch (builtin): disabled\n"), "{out}");
    // Named: no directory, and no network until hosts are listed.
    sb.policy("[tools.fetch]\n[tools.web_search]\n");
    let tools = sb.toolset(&[]);
    for name in ["fetch", "web_search"] {
        let g = tools.find(name).unwrap().grants();
        assert!(g.caps.is_empty(), "{name}: {:?}", g.caps);
    }
    let e = err(fetch(&tools, &peer.url("/"), json!({})));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    assert!(
        e.message.contains(&format!("127.0.0.1:{}", peer.port))
            && e.message
                .contains("network = [\"HOST\"]` under [tools.fetch]"),
        "{e}"
    );
    assert_eq!(peer.hits(), 0);
}

#[test]
fn fetch_turns_html_into_markdown_with_headings_and_links() {
    let peer = WebPeer::start(|_| {
        Answer::ok(
            "text/html; charset=utf-8",
            "<html><head><title>T</title><script>track()</script></head><body>\
             <nav><a href=\"/menu\">Menu</a></nav>\
             <h1>Weather today</h1><p>Sunny, see <a href=\"https://example.org/forecast\">the \
             forecast</a>.</p><h2>Tomorrow</h2><ul><li>Rain</li></ul></body></html>",
        )
    });
    let sb = Sandbox::new();
    let tools = fetch_tools(&sb, &peer, "");
    let out = ok(fetch(&tools, &peer.url("/page"), json!({})));
    assert!(out.contains("# Weather today"), "{out}");
    assert!(out.contains("## Tomorrow"), "{out}");
    assert!(
        out.contains("[the forecast](https://example.org/forecast)"),
        "{out}"
    );
    assert!(out.contains("Rain"), "{out}");
    // Scripts and navigation are page chrome.
    assert!(!out.contains("track()") && !out.contains("Menu"), "{out}");
    assert!(out.contains("converted to Markdown"), "{out}");
    assert_eq!(peer.hits(), 1);

    // JSON comes through as it is.
    let json_peer = WebPeer::start(|_| Answer::ok("application/json", r#"{"temp": 21}"#));
    let tools = fetch_tools(&sb, &json_peer, "");
    let out = ok(fetch(&tools, &json_peer.url("/"), json!({})));
    assert!(out.ends_with(r#"{"temp": 21}"#), "{out}");
}

#[test]
fn fetch_decodes_a_compressed_page_before_converting_it() {
    // `<html><body><h1>Compressed news</h1><p>All of it, decoded.</p>
    // </body></html>`, as Python's `gzip.compress(page, mtime=0)` writes it.
    let gz = base64::engine::general_purpose::STANDARD
        .decode(
            "H4sIAAAAAAACA7PJKMnNsbNJyk+ptLPJMLRzzs8tKEotLk5NUchLLS+20QeK2RTYOebkKOSnKWSW6CikpCbnp6Sm\
             6NnoF9jZ6EM06oNNAQB5xpdwTAAAAA==",
        )
        .unwrap();
    let peer = WebPeer::start(move |_| Answer {
        headers: vec![
            ("content-type".into(), "text/html".into()),
            ("content-encoding".into(), "gzip".into()),
        ],
        ..Answer::ok("text/html", gz.clone())
    });
    let sb = Sandbox::new();
    let tools = fetch_tools(&sb, &peer, "");
    let out = ok(fetch(&tools, &peer.url("/news"), json!({})));
    assert!(out.contains("# Compressed news"), "{out}");
    assert!(out.contains("All of it, decoded."), "{out}");
    let asked = peer.seen()[0].header("accept-encoding");
    assert_eq!(asked.as_deref(), Some("gzip, deflate, br"));
    // A coding fetch cannot undo says so.
    let zstd = WebPeer::start(|_| Answer {
        headers: vec![("content-encoding".into(), "zstd".into())],
        ..Answer::ok("text/html", "\u{28}\u{b5}\u{2f}\u{fd}")
    });
    let tools = fetch_tools(&sb, &zstd, "");
    let e = err(fetch(&tools, &zstd.url("/"), json!({})));
    assert!(
        e.message.contains(
            "is in the coding `zstd`, which fetch cannot decode (it reads gzip, \
                            deflate and br)"
        ),
        "{e}"
    );
}

#[test]
fn a_5_mb_page_is_served_in_pieces() {
    // Lines numbered so that each piece can be checked.
    let text: String = (0..210_000).map(|i| format!("{i:025}\n")).collect();
    assert!(text.len() >= 5 << 20);
    let body = text.clone();
    let peer = WebPeer::start(move |_| Answer::ok("text/plain", body.clone()));
    let sb = Sandbox::new();
    let tools = fetch_tools(&sb, &peer, "timeout = \"60s\"\n");
    let total = text.len();
    let first = ok(fetch(
        &tools,
        &peer.url("/big"),
        json!({"max_length": 1000}),
    ));
    assert!(
        first.contains(&format!(
            "Length: {total} characters; showing characters 0-1000. Call fetch again with \
             start_index=1000"
        )),
        "{}",
        &first[..300]
    );
    assert!(first.ends_with(&text[..1000]), "{}", &first[..300]);
    let next = ok(fetch(
        &tools,
        &peer.url("/big"),
        json!({"start_index": 1000, "max_length": 1000}),
    ));
    assert!(next.ends_with(&text[1000..2000]));
    let last = ok(fetch(
        &tools,
        &peer.url("/big"),
        json!({"start_index": total - 26}),
    ));
    assert!(last.contains(&format!(
        "showing characters {}-{total}, the end",
        total - 26
    )));
    assert!(last.ends_with("0000000000000000000209999\n"));
    let e = err(fetch(
        &tools,
        &peer.url("/big"),
        json!({"start_index": total}),
    ));
    assert_eq!(e.kind, ErrorKind::InvalidArgs, "{e}");
    assert!(
        e.message.contains(&format!("has {total} characters")),
        "{e}"
    );
}

#[test]
fn a_redirect_to_a_host_that_is_not_granted_is_refused_before_it_is_reached() {
    let other = WebPeer::start(|_| Answer::ok("text/plain", "other"));
    let to = other.url("/landing");
    let peer = WebPeer::start(move |s| {
        if s.target == "/hop" {
            Answer::redirect("/moved")
        } else if s.target == "/moved" {
            Answer::ok("text/plain", "arrived")
        } else {
            Answer::redirect(&to)
        }
    });
    let sb = Sandbox::new();
    let tools = fetch_tools(&sb, &peer, "");
    // A redirect within the granted host is followed.
    let out = ok(fetch(&tools, &peer.url("/hop"), json!({})));
    assert!(out.contains("arrived") && out.contains("/moved"), "{out}");
    let e = err(fetch(&tools, &peer.url("/away"), json!({})));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    assert!(
        e.message.contains(&format!(
            "refused by policy: 127.0.0.1:{} (redirected from {}) is not among the hosts",
            other.port,
            peer.url("/away")
        )),
        "{e}"
    );
    assert_eq!(other.hits(), 0, "the host that is not granted was reached");
    assert_eq!(peer.hits(), 3);
}

#[test]
fn a_binary_response_is_refused_with_its_content_type() {
    let peer = WebPeer::start(|_| Answer::ok("image/png", b"\x89PNG\r\n\x1a\n\0\0\0".to_vec()));
    let sb = Sandbox::new();
    let tools = fetch_tools(&sb, &peer, "");
    let e = err(fetch(&tools, &peer.url("/logo.png"), json!({})));
    assert_eq!(e.kind, ErrorKind::Failed, "{e}");
    assert!(
        e.message
            .contains("is binary content (image/png, 11 bytes)"),
        "{e}"
    );
    assert!(!e.message.contains("PNG"), "{e}");
}

#[test]
fn http_errors_and_dead_ports_say_what_failed() {
    let peer = WebPeer::start(|_| Answer::status(404, "no such page"));
    let sb = Sandbox::new();
    let tools = fetch_tools(&sb, &peer, "");
    let e = err(fetch(&tools, &peer.url("/gone"), json!({})));
    assert_eq!(e.kind, ErrorKind::NotFound, "{e}");
    assert!(
        e.message.contains("HTTP 404") && e.message.contains("no such page"),
        "{e}"
    );
    // A granted port where nothing listens.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = dead.local_addr().unwrap().port();
    drop(dead);
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"127.0.0.1:{port}\"]\n"
    ));
    let tools = sb.toolset(&[]);
    let e = err(fetch(
        &tools,
        &format!("http://127.0.0.1:{port}/"),
        json!({}),
    ));
    assert!(e.message.contains("refused the connection"), "{e}");
}

/// A resolver that cannot answer now (no network: `EAI_AGAIN`) is not
/// reported as a name that does not exist: the model is told to try again,
/// not to fix the URL. Run in a network namespace of its own, which has no
/// route to a DNS server, so nothing leaves the machine.
#[test]
fn a_name_that_cannot_be_resolved_now_is_not_called_unknown() {
    let sb = Sandbox::new();
    sb.policy("[tools.fetch]\nnetwork = [\"example.com\"]\n");
    sb.trust();
    let warden = sb.warden();
    let mut offline = std::process::Command::new("unshare");
    offline
        .args(["--user", "--map-root-user", "--net"])
        .arg(warden.get_program())
        .args(warden.get_args())
        .args(["tools", "call", "fetch", r#"{"url":"http://example.com/"}"#]);
    if let Some(dir) = warden.get_current_dir() {
        offline.current_dir(dir);
    }
    for (k, v) in warden.get_envs() {
        match v {
            Some(v) => offline.env(k, v),
            None => offline.env_remove(k),
        };
    }
    let out = run(&mut offline);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "DNS: the name example.com could not be resolved (temporary failure in name \
             resolution); check the network connection, then try again"
        ),
        "{}",
        out.stderr
    );
}

#[test]
fn a_server_that_never_sends_its_body_stops_at_the_timeout() {
    let peer = WebPeer::start(|_| Answer {
        stall: true,
        ..Answer::ok("text/html", vec![b'x'; 1000])
    });
    let sb = Sandbox::new();
    let tools = fetch_tools(&sb, &peer, "timeout = \"1s\"\n");
    let start = Instant::now();
    let e = err(fetch(&tools, &peer.url("/slow"), json!({})));
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(700), "ended early: {took:?}");
    assert!(took < Duration::from_secs(5), "held for {took:?}");
    assert!(
        e.message
            .contains("timed out waiting for the rest of the body")
            || e.kind == ErrorKind::Timeout,
        "{e}"
    );
    assert_eq!(peer.hits(), 1);
}

/// A fake Brave Search API that answers only requests carrying the key.
fn search_api() -> WebPeer {
    WebPeer::start(|s| {
        if s.header("x-subscription-token").as_deref() != Some(KEY) {
            return Answer::status(401, "missing or wrong X-Subscription-Token");
        }
        Answer::ok(
            "application/json",
            json!({"web": {"results": [
                {"title": "Rust <strong>language</strong>", "url": "https://www.rust-lang.org/",
                 "description": "A language empowering everyone."},
                {"title": "The Book", "url": "https://doc.rust-lang.org/book/",
                 "description": "Learn Rust."}
            ]}})
            .to_string(),
        )
    })
}

fn search_policy(api: &WebPeer, source: &str) -> String {
    format!(
        "[tools.web_search]\nnetwork = [\"127.0.0.1:{p}\"]\nsettings = {{ provider = \"brave\", \
         url = \"http://127.0.0.1:{p}/res/v1/web/search\" }}\n\n\
         [tools.web_search.secrets.brave]\n{source}\nhosts = [\"127.0.0.1:{p}\"]\n\
         header = \"X-Subscription-Token\"\n",
        p = api.port
    )
}

#[test]
fn web_search_with_a_secret_gets_results_and_the_api_saw_the_header() {
    let api = search_api();
    let sb = Sandbox::new();
    sb.secrets_file(&format!("brave = \"{KEY}\"\n"));
    sb.policy(&search_policy(&api, "file = \"brave\""));
    let tools = sb.toolset(&[]);
    let out = ok(tools.call("web_search", r#"{"query":"rust lang","count":2}"#));
    assert_eq!(
        out,
        "1. Rust language\n   https://www.rust-lang.org/\n   A language empowering everyone.\n\
         2. The Book\n   https://doc.rust-lang.org/book/\n   Learn Rust.\n"
    );
    let seen = api.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("x-subscription-token").as_deref(), Some(KEY));
    assert!(seen[0].target.contains("q=rust+lang"), "{}", seen[0].target);

    // Without the secret the API refuses, and the model is told why.
    let policy = search_policy(&api, "file = \"brave\"");
    sb.policy(policy.split("\n[tools.web_search.secrets").next().unwrap());
    let tools = sb.toolset(&[]);
    let e = err(tools.call("web_search", r#"{"query":"rust"}"#));
    assert!(
        e.message.contains("HTTP 401 (a missing or wrong API key"),
        "{e}"
    );
    assert_eq!(api.hits(), 2);
}

#[test]
fn web_search_with_tavily_posts_the_query_and_the_key_is_added_by_the_host() {
    // Tavily takes a JSON POST, its key as a bearer token.
    let api = WebPeer::start(|s| {
        if s.header("authorization") != Some(format!("Bearer {KEY}")) {
            return Answer::status(401, "missing or wrong Authorization");
        }
        if s.method != "POST" || s.header("content-type").as_deref() != Some("application/json") {
            return Answer::status(405, "POST JSON only");
        }
        Answer::ok(
            "application/json",
            json!({"query": "rust", "results": [
                {"title": "Rust", "url": "https://www.rust-lang.org/",
                 "content": "A language empowering everyone.", "score": 0.9}
            ]})
            .to_string(),
        )
    });
    let sb = Sandbox::new();
    sb.secrets_file(&format!("tavily = \"{KEY}\"\n"));
    sb.policy(&format!(
        "[tools.web_search]\nnetwork = [\"127.0.0.1:{p}\"]\nsettings = {{ provider = \"tavily\", \
         url = \"http://127.0.0.1:{p}/search\" }}\n\n\
         [tools.web_search.secrets.tavily]\nfile = \"tavily\"\nhosts = [\"127.0.0.1:{p}\"]\n\
         header = \"Authorization: Bearer {{}}\"\n",
        p = api.port
    ));
    let tools = sb.toolset(&[]);
    let out = ok(tools.call("web_search", r#"{"query":"rust \"lang\"","count":3}"#));
    assert_eq!(
        out,
        "1. Rust\n   https://www.rust-lang.org/\n   A language empowering everyone.\n"
    );
    let seen = api.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        (seen[0].method.as_str(), seen[0].target.as_str()),
        ("POST", "/search")
    );
    let body: Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(body, json!({"query": "rust \"lang\"", "max_results": 3}));
    assert!(!out.contains(KEY));
}

#[test]
fn web_search_without_a_provider_says_it_is_unavailable_and_why() {
    let sb = Sandbox::new();
    sb.policy("[tools.web_search]\n");
    let tools = sb.toolset(&[]);
    let e = err(tools.call("web_search", r#"{"query":"x"}"#));
    assert!(
        e.message
            .contains("web_search is unavailable: no search provider is configured")
            && e.message.contains("[tools.web_search]"),
        "{e}"
    );
}

#[test]
fn a_secret_goes_only_over_https_or_to_a_loopback_address_it_names() {
    let api = search_api();
    let sb = Sandbox::new();
    sb.secrets_file(&format!("brave = \"{KEY}\"\n"));
    // By the name `localhost`, over http: the host withholds the secret.
    sb.policy(&format!(
        "[tools.web_search]\nnetwork = [\"localhost:{p}\", \"127.0.0.1:{p}\"]\n\
         settings = {{ provider = \"brave\", url = \"http://localhost:{p}/s\" }}\n\
         [tools.web_search.secrets.brave]\nfile = \"brave\"\n\
         hosts = [\"localhost:{p}\", \"127.0.0.1:{p}\"]\n\
         header = \"X-Subscription-Token\"\n",
        p = api.port
    ));
    let tools = sb.toolset(&[]);
    let e = err(tools.call("web_search", r#"{"query":"a"}"#));
    assert!(
        e.message.contains(&format!(
            "secret `brave` was not sent to localhost:{}: secrets go only over https",
            api.port
        )),
        "{e}"
    );
    assert_eq!(api.seen().len(), 1);
    assert_eq!(api.seen()[0].header("x-subscription-token"), None);
}

#[test]
fn a_secret_without_a_value_is_not_sent_and_the_model_is_told_why() {
    let api = search_api();
    let sb = Sandbox::new();
    sb.secrets_file("other = \"0123456789\"\n");
    sb.policy(&search_policy(&api, "file = \"brave\""));
    let tools = sb.toolset(&[]);
    let e = err(tools.call("web_search", r#"{"query":"a"}"#));
    assert!(
        e.message.contains("HTTP 401")
            && e.message.contains(
                "secret `brave` was not sent: it comes from `brave` in the user's secrets.toml, \
                 which has no such entry"
            ),
        "{e}"
    );
    assert_eq!(api.seen().len(), 1);
    assert_eq!(api.seen()[0].header("x-subscription-token"), None);
}

#[test]
fn a_call_that_succeeds_without_its_secret_still_says_why_it_was_not_sent() {
    let api = WebPeer::start(|_| Answer::ok("text/plain", "public page"));
    let sb = Sandbox::new();
    sb.secrets_file("brave = { env = \"WARDEN_TEST_NEVER_SET\" }\n");
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"127.0.0.1:{p}\"]\n\n\
         [tools.fetch.secrets.brave]\nfile = \"brave\"\n\
         hosts = [\"127.0.0.1:{p}\"]\nheader = \"X-Subscription-Token\"\n",
        p = api.port
    ));
    let tools = sb.toolset(&[]);
    let out = ok(tools.call("fetch", &json!({ "url": api.url("/") }).to_string()));
    assert!(out.contains("public page"), "{out}");
    assert!(
        out.contains(
            "[warden: secret `brave` was not sent: it comes from $WARDEN_TEST_NEVER_SET (`brave` \
             in the user's secrets.toml), which is not set"
        ),
        "{out}"
    );
    assert_eq!(api.seen()[0].header("x-subscription-token"), None);
}

/// An api that echoes the request it got (head in the body and in a
/// header, a few bytes per write) and redirects with the key in the
/// Location.
fn echo_api(sink: &WebPeer) -> WebPeer {
    let sink = sink.url("/landing");
    WebPeer::start(move |s| {
        let token = s.header("x-subscription-token").unwrap_or_default();
        if s.target == "/redirect" {
            return Answer::redirect(&format!("{sink}?k={token}"));
        }
        if s.target == "/coded" {
            // A coding of the echo (here: reversed) that the guest undoes.
            let reversed: String = s.head.chars().rev().collect();
            return Answer {
                headers: vec![
                    ("content-type".into(), "text/plain".into()),
                    ("content-encoding".into(), "x-reversed".into()),
                ],
                ..Answer::ok("text/plain", reversed)
            };
        }
        Answer {
            headers: vec![
                ("content-type".into(), "text/plain".into()),
                ("x-echo".into(), token.clone()),
                (
                    "x-echo-b64".into(),
                    base64::engine::general_purpose::STANDARD_NO_PAD.encode(&token),
                ),
            ],
            chunk: 3,
            ..Answer::ok("text/plain", s.head.clone())
        }
    })
}

#[test]
fn a_hostile_tool_granted_the_secret_cannot_get_it_to_another_host() {
    let sink = WebPeer::start(|_| Answer::ok("text/plain", "thanks"));
    let api = echo_api(&sink);
    let sb = Sandbox::new();
    sb.secrets_file(&format!("brave = \"{KEY}\"\n"));
    // A tool holding the secret gets no other host (the policy refuses the
    // mix): whatever it learns has nowhere to go.
    sb.policy(&format!(
        "[tools.leak]\nnetwork = [\"127.0.0.1:{a}\"]\n\n\
         [tools.leak.secrets.brave]\nfile = \"brave\"\nhosts = [\"127.0.0.1:{a}\"]\n\
         header = \"X-Subscription-Token\"\n",
        a = api.port,
    ));
    let tools = sb.toolset(&[guests::LEAKY]);
    let out = ok(tools.call(
        "leak",
        &json!({"api": api.url(""), "sink": sink.url("")}).to_string(),
    ));
    // The host did add the key, and the api did echo it (so the test can
    // fail): every echo was scrubbed before the guest read it.
    let api_log = api.log();
    assert!(api_log.contains(KEY), "{api_log}");
    assert!(out.contains("echo: 200"), "{out}");
    assert!(out.contains("[secret brave]"), "{out}");
    // Every attempt to reach the sink was refused before it was sent.
    for attempt in [
        "header: 0",
        "url: 0",
        "body: 0",
        "followed: 0",
        "named: 0",
        "decoded: 0",
    ] {
        assert!(out.contains(attempt), "{attempt}: {out}");
    }
    // The coded echo was asked for as it is, and refused in a coding.
    assert!(out.contains("coded: 0"), "{out}");
    let coded = api.seen().into_iter().find(|s| s.target == "/coded");
    let coded = coded.expect("the coded echo was asked for");
    assert_eq!(coded.header("accept-encoding").as_deref(), Some("identity"));
    assert_eq!(coded.header("range"), None, "{}", coded.head);
    assert_eq!(sink.hits(), 0, "{}", sink.log());
    assert_no_key("the tool's output", &out);
}

#[test]
fn the_secret_never_reaches_the_model_the_transcript_or_json_events() {
    let sink = WebPeer::start(|_| Answer::ok("text/plain", "thanks"));
    let api = echo_api(&sink);
    let sb = Sandbox::new();
    // The user's file reads it from the user's environment.
    sb.secrets_file("brave = { env = \"WARDEN_TEST_BRAVE\" }\n");
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"127.0.0.1:{a}\"]\n\n\
         [tools.fetch.secrets.brave]\nfile = \"brave\"\nhosts = [\"127.0.0.1:{a}\"]\n\
         header = \"X-Subscription-Token\"\n",
        a = api.port
    ));
    run_ok(sb.warden().env("WARDEN_TEST_BRAVE", KEY).arg("trust"));
    let args = json!({ "url": api.url("/echo") }).to_string();
    let mock = MockLlm::start(vec![calls(&[("c1", "fetch", &args)]), answer("done")]);
    let r = run(sb
        .warden()
        .env("WARDEN_TEST_BRAVE", KEY)
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--yes", "--json", "read the page"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        api.log().contains(KEY),
        "the key was not sent: {}",
        api.log()
    );
    assert_no_key("the --json events", &r.stdout);
    assert_no_key("stderr", &r.stderr);
    let events: Vec<Value> = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let result = events
        .iter()
        .find(|e| e["type"] == "tool_result")
        .expect("a tool result event");
    assert_eq!(result["ok"], true, "{result}");
    let bodies: Vec<String> = mock.requests().iter().map(|r| r.body.to_string()).collect();
    assert!(bodies[1].contains("[secret brave]"), "{}", bodies[1]);
    for b in &bodies {
        assert_no_key("a request to the model", b);
    }
    let sessions = sb.home.join("state/warden/sessions");
    let mut transcripts = 0;
    for d in std::fs::read_dir(&sessions).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            assert!(text.contains("[secret brave]"), "{text}");
            assert_no_key("the transcript", &text);
            transcripts += 1;
        }
    }
    assert_eq!(transcripts, 1);
}

#[test]
fn an_untrusted_workspace_gets_no_secret() {
    let api = search_api();
    let sb = Sandbox::new();
    sb.secrets_file("brave = { env = \"WARDEN_TEST_BRAVE\" }\n");
    sb.policy(&search_policy(&api, "file = \"brave\""));
    let args = r#"{"query":"q"}"#;
    let mock = MockLlm::start(vec![calls(&[("c1", "web_search", args)]), answer("done")]);
    let r = run(sb
        .warden()
        .env("WARDEN_TEST_BRAVE", KEY)
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--yes", "search"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Never trusted: the defaults, so no web tool, no network, no secret.
    assert_eq!(api.hits(), 0);
    let tool = &mock.requests()[1].body;
    assert!(
        tool.to_string()
            .contains("tool `web_search` is installed but not enabled"),
        "{tool}"
    );
}

#[test]
fn a_granted_name_that_resolves_to_loopback_is_refused_unless_the_address_is_granted() {
    let peer = WebPeer::start(|_| Answer::ok("text/plain", "local"));
    let sb = Sandbox::new();
    // `localhost` resolves to the loopback address on every system.
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"localhost:{}\"]\n",
        peer.port
    ));
    let tools = sb.toolset(&[]);
    let url = format!("http://localhost:{}/", peer.port);
    let e = err(fetch(&tools, &url, json!({})));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    assert!(
        e.message
            .contains("resolves to a private, loopback or other non-public address")
            && e.message.contains(&format!(
                "The entry `localhost:{}` grants the name, not the address",
                peer.port
            ))
            && e.message.contains(&format!("\"127.0.0.1:{}\"", peer.port)),
        "{e}"
    );
    assert_eq!(peer.hits(), 0, "the loopback peer was reached");
    // `*` grants names, never a private address.
    sb.policy("[tools.fetch]\nnetwork = [\"*\"]\n");
    let tools = sb.toolset(&[]);
    assert_eq!(err(fetch(&tools, &url, json!({}))).kind, ErrorKind::Denied);
    assert_eq!(
        err(fetch(&tools, &peer.url("/"), json!({}))).kind,
        ErrorKind::Denied
    );
    assert_eq!(peer.hits(), 0);
    // The address itself granted: reached by name and by address.
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"localhost:{p}\", \"127.0.0.1:{p}\"]\n",
        p = peer.port
    ));
    let tools = sb.toolset(&[]);
    assert!(ok(fetch(&tools, &url, json!({}))).ends_with("local"));
    assert_eq!(peer.hits(), 1);
}

#[test]
fn the_trust_diff_shows_an_added_secret_and_a_network_entry_for_a_builtin() {
    let sb = Sandbox::new();
    sb.policy("[tools.fetch]\n[tools.web_search]\n");
    sb.trust();
    sb.policy(
        "[tools.fetch]\nnetwork = [\"docs.rs\"]\n\n[tools.web_search]\nnetwork = [\"api.search.brave.com\"]\n\
         settings = { provider = \"brave\" }\n\n[tools.web_search.secrets.brave]\n\
         file = \"brave\"\nhosts = [\"api.search.brave.com\"]\nheader = \"X-Subscription-Token\"\n",
    );
    let shown = run_ok(sb.warden().env("BRAVE_API_KEY", KEY).arg("trust"));
    assert!(shown.contains("+ fetch: network docs.rs"), "{shown}");
    assert!(
        shown.contains(
            "+ web_search: secret brave (your secrets.toml entry `brave`) to \
             api.search.brave.com as header X-Subscription-Token: {}; web_search can read \
             brave's value if api.search.brave.com reflects it"
        ),
        "{shown}"
    );
    assert!(
        shown.contains("+ web_search: setting provider = brave"),
        "{shown}"
    );
    assert_no_key("the trust diff", &shown);
    // `warden policy` and `tools inspect` show it too, never the value.
    let policy = run_ok(sb.warden().env("BRAVE_API_KEY", KEY).arg("policy"));
    assert!(
        policy.contains("  secrets:  brave@api.search.brave.com\n"),
        "{policy}"
    );
    assert_no_key("warden policy", &policy);
    let inspect =
        run_ok(
            sb.warden()
                .env("BRAVE_API_KEY", KEY)
                .args(["tools", "inspect", "web_search"]),
        );
    assert!(
        inspect.contains("secret:brave@api.search.brave.com"),
        "{inspect}"
    );
    assert_no_key("tools inspect", &inspect);
}

#[test]
fn bad_secret_sections_are_refused_with_what_to_write() {
    let sb = Sandbox::new();
    for (section, says) in [
        (
            "hosts = [\"a.com\"]\nheader = \"X-Key\"\n",
            "name its value: `file = \"key\"`, an entry of your secrets file",
        ),
        (
            "file = \"k\"\nheader = \"X-Key\"\n",
            "list the hosts it may be sent to",
        ),
        (
            "file = \"k\"\nhosts = [\"*\"]\nheader = \"X-Key\"\n",
            "`*` would send it to any host: name the hosts of the service",
        ),
        // A wildcard over addresses would match 127.0.0.1 on every port.
        (
            "file = \"k\"\nhosts = [\"*.1\"]\nheader = \"X-Key\"\n",
            "a wildcard covers the names under a domain, never addresses: name the address \
             itself, e.g. \"127.0.0.1:8080\"",
        ),
        (
            "file = \"k\"\nhosts = [\"*.0.0.1\"]\nheader = \"X-Key\"\n",
            "a wildcard covers the names under a domain, never addresses",
        ),
        (
            "file = \"k\"\nhosts = [\"*.com\"]\nheader = \"X-Key\"\n",
            "`*.com` covers names under the public suffix `com`, which belong to many owners: \
             name the hosts of the service, or a wildcard below its own domain",
        ),
        // The workspace may not choose which of the user's values leaves.
        (
            "env = \"OPENAI_API_KEY\"\nhosts = [\"a.com\"]\nheader = \"X-Key\"\n",
            "a workspace cannot take a secret from an environment variable \
             (`env = \"OPENAI_API_KEY\"`): name an entry of your secrets file, `file = \"key\"`; \
             in the secrets file, `key = { env = \"VAR\" }` reads it from your environment",
        ),
        ("file = \"k\"\nhosts = [\"a.com\"]\n", "say how it is sent"),
        (
            "file = \"k\"\nhosts = [\"a.com\"]\nheader = \"Host\"\n",
            "`Host` cannot carry a secret",
        ),
        (
            "file = \"k\"\nhosts = [\"a.com\"]\nheader = \"Authorization: Bearer\"\n",
            "must contain `{}` once",
        ),
    ] {
        sb.policy(&format!("[tools.fetch.secrets.k]\n{section}"));
        let r = run(sb.warden().arg("trust"));
        assert_eq!(r.code, 2, "{section}");
        assert!(
            r.stderr.contains("[tools.fetch]: secret `k`") && r.stderr.contains(says),
            "{section}: {}",
            r.stderr
        );
    }
    // A tool holding a secret and a second host.
    sb.policy(
        "[tools.fetch]\nnetwork = [\"a.com\", \"sink.example.net\"]\n\n\
         [tools.fetch.secrets.k]\nfile = \"k\"\nhosts = [\"a.com\"]\nheader = \"X-Key\"\n",
    );
    let r = run(sb.warden().arg("trust"));
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains(
            "[tools.fetch]: `sink.example.net` is in `network` but is not a host of secret `k`: \
             a tool holding a secret reaches only that secret's hosts, so that what it learns \
             of the value has nowhere else to go; add the host to the secret's `hosts` if the \
             service owns it, or give it to another tool"
        ),
        "{}",
        r.stderr
    );
}

/// A non-loopback IPv4 address of this machine's interfaces, if it has one.
fn own_address() -> Option<std::net::Ipv4Addr> {
    nix::ifaddrs::getifaddrs()
        .ok()?
        .filter_map(|a| a.address?.as_sockaddr_in().map(|s| s.ip()))
        .find(|ip| !ip.is_loopback())
}

#[test]
fn this_machines_own_address_is_refused_under_star_and_through_a_redirect() {
    let Some(own) = own_address() else {
        eprintln!("skipped: this machine has no non-loopback IPv4 address");
        return;
    };
    // A service listening on every address of the machine.
    let service = WebPeer::start_on("0.0.0.0", |_| Answer::ok("text/plain", "internal"));
    let target = format!("http://{own}:{}/admin", service.port);
    let redirector = {
        let target = target.clone();
        WebPeer::start(move |_| Answer::redirect(&target))
    };
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"*\", \"127.0.0.1:{}\"]\n",
        redirector.port
    ));
    let tools = sb.toolset(&[]);
    let e = err(fetch(&tools, &target, json!({})));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    assert!(
        e.message.contains(&format!(
            "{own}:{p} resolves to {own}:{p}, an address of this machine: not connected",
            p = service.port
        )),
        "{e}"
    );
    let e = err(fetch(&tools, &redirector.url("/"), json!({})));
    assert_eq!(e.kind, ErrorKind::Denied, "{e}");
    assert!(e.message.contains("an address of this machine"), "{e}");
    assert_eq!(redirector.hits(), 1, "the redirect was followed");
    assert_eq!(service.hits(), 0, "the machine's own service was reached");
    // Granted by the address itself: reached.
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"{own}:{}\"]\n",
        service.port
    ));
    let tools = sb.toolset(&[]);
    assert!(ok(fetch(&tools, &target, json!({}))).ends_with("internal"));
    assert_eq!(service.hits(), 1);
}
