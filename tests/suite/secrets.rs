//! Secrets against a hostile tool on the secret's own host: the hold-back
//! oracle, every form an echo may take (header names, percent-encoders,
//! Markdown), codings and lengths. Loopback peers play the secret's host.

use serde_json::json;
use warden_tests::{Answer, Sandbox, WebPeer, guests, ok};

/// The secret of the oracle and header-name tests.
const KEY: &str = "brv-k3y-7f3a9c1d2e55";

/// A key with the signs encoders disagree on, AWS-style.
const AWS: &str = "AKIA/k3y+V4lue=_x9Q";

/// `AWS` as each encoder writes it (Python and JavaScript as their
/// runtimes print it; Go's `PathEscape` keeps `+` and `=`).
const AWS_FORMS: &[(&str, &str)] = &[
    ("as it is, encodeURI", "AKIA/k3y+V4lue=_x9Q"),
    ("Python quote()", "AKIA/k3y%2BV4lue%3D_x9Q"),
    ("Go url.PathEscape", "AKIA%2Fk3y+V4lue=_x9Q"),
    (
        "encodeURIComponent, quote_plus, URLEncoder",
        "AKIA%2Fk3y%2BV4lue%3D_x9Q",
    ),
    ("lower-case hex", "AKIA%2fk3y%2bV4lue%3d_x9Q"),
    ("Python quote(), lower-case hex", "AKIA/k3y%2bV4lue%3d_x9Q"),
    ("encoded twice", "AKIA%252Fk3y%252BV4lue%253D_x9Q"),
    ("every sign", "AKIA%2Fk3y%2BV4lue%3D%5Fx9Q"),
    ("Markdown (htmd)", "AKIA/k3y+V4lue=\\_x9Q"),
];

fn policy(sb: &Sandbox, tool: &str, api: &WebPeer, header: &str) {
    sb.policy(&format!(
        "[tools.{tool}]\nnetwork = [\"127.0.0.1:{p}\"]\n\n\
         [tools.{tool}.secrets.k]\nfile = \"k\"\nhosts = [\"127.0.0.1:{p}\"]\nheader = \"{header}\"\n",
        p = api.port
    ));
}

/// The shape the tool saw for guess `g`.
fn shape<'a>(out: &'a str, g: &str) -> &'a str {
    let prefix = format!("guess {g}: ");
    out.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no guess {g}: {out}"))
}

#[test]
fn the_hold_back_oracle_learns_nothing_from_how_an_echo_of_a_guess_arrives() {
    // Echoes the tool's guess at the end of a body longer than a frame, so
    // the body is cut into frames and its end is where a hold-back was.
    let api = WebPeer::start(|s| {
        if s.header("x-key").as_deref() != Some(KEY) {
            return Answer::status(401, "no key");
        }
        let g = s.target.split("g=").nth(1).unwrap_or_default();
        let mut body = "x".repeat(70_000);
        body.push_str("you asked for: ");
        body.push_str(g);
        Answer {
            chunk: 4096,
            ..Answer::ok("text/plain", body)
        }
    });
    let sb = Sandbox::new();
    sb.secrets_file(&format!("k = \"{KEY}\"\n"));
    policy(&sb, "guess", &api, "X-Key");
    let tools = sb.toolset(&[guests::LEAKY]);
    let alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-";
    let out = ok(tools.call(
        "guess",
        &json!({"api": api.url(""), "alphabet": alphabet, "max": KEY.len()}).to_string(),
    ));
    // The host sent the key with every guess (so the echo was the real
    // procedure), and every guess was answered.
    assert_eq!(api.seen().len(), alphabet.len(), "{out}");
    assert!(
        api.seen()
            .iter()
            .all(|s| s.header("x-key").as_deref() == Some(KEY))
    );
    // The right first sign and a wrong one arrive alike: status, reads and
    // their sizes, length, headers.
    let right = shape(&out, &KEY[..1]);
    assert!(right.starts_with("status 200, reads [65536, "), "{right}");
    assert_eq!(right, shape(&out, "z"));
    for c in alphabet.chars() {
        assert_eq!(shape(&out, &c.to_string()), right, "{c}");
    }
    // No guess stood out: nothing recovered, and the tool stopped there.
    assert!(out.starts_with("recovered: \nrequests: 37\n"), "{out}");
}

#[test]
fn no_encoders_form_of_the_secret_reaches_the_tool_and_the_length_is_not_the_servers() {
    let body: String = AWS_FORMS
        .iter()
        .map(|(who, f)| format!("{who}: <{f}>\n"))
        .collect();
    let served = body.len();
    let api = WebPeer::start(move |s| {
        if s.header("x-aws-key").as_deref() != Some(AWS) {
            return Answer::status(401, "no key");
        }
        Answer {
            chunk: 5,
            ..Answer::ok("text/plain", body.clone())
        }
    });
    let sb = Sandbox::new();
    sb.secrets_file(&format!("aws = \"{AWS}\"\n"));
    sb.policy(&format!(
        "[tools.see]\nnetwork = [\"127.0.0.1:{p}\"]\n\n\
         [tools.see.secrets.k]\nfile = \"aws\"\nhosts = [\"127.0.0.1:{p}\"]\nheader = \"X-Aws-Key\"\n",
        p = api.port
    ));
    let tools = sb.toolset(&[guests::LEAKY]);
    let out = ok(tools.call("see", &json!({"url": api.url("/forms")}).to_string()));
    assert!(out.starts_with("status 200\n"), "{out}");
    for (who, form) in AWS_FORMS {
        assert!(
            out.contains(&format!("{who}: <[secret k]>")),
            "{who}: {out}"
        );
        assert!(!out.contains(form), "{who}: {form} reached the tool: {out}");
    }
    // The server's length would say the secret's; the tool gets none.
    assert!(!out.contains("content-length"), "{out}");
    assert!(!out.contains(&served.to_string()), "{out}");
}

#[test]
fn a_header_named_by_the_secret_does_not_reach_the_tool() {
    let api = WebPeer::start(|s| {
        let key = s.header("x-key").unwrap_or_default();
        Answer {
            headers: vec![
                (key.to_ascii_uppercase(), "named by an echo".into()),
                (format!("x-{key}-tail"), "inside a name".into()),
                ("x-echo".into(), key),
            ],
            ..Answer::ok("text/plain", "ok")
        }
    });
    let sb = Sandbox::new();
    sb.secrets_file(&format!("k = \"{KEY}\"\n"));
    policy(&sb, "see", &api, "X-Key");
    let tools = sb.toolset(&[guests::LEAKY]);
    let out = ok(tools.call("see", &json!({"url": api.url("/")}).to_string()));
    assert!(api.log().contains(KEY), "the key was not sent");
    assert!(out.contains("header x-echo: [secret k]\n"), "{out}");
    assert!(!out.to_ascii_lowercase().contains(KEY), "{out}");
    assert!(
        !out.contains("named by an echo") && !out.contains("inside a name"),
        "{out}"
    );
}

#[test]
fn a_transfer_coding_other_than_chunked_is_refused() {
    let api = WebPeer::start(|s| {
        let framing = if s.target == "/alone" {
            "transfer-encoding: gzip"
        } else {
            "transfer-encoding: gzip, chunked"
        };
        let body = if s.target == "/alone" {
            KEY.as_bytes().to_vec()
        } else {
            format!("{:x}\r\n{KEY}\r\n0\r\n\r\n", KEY.len()).into_bytes()
        };
        Answer {
            framing: Some(framing.into()),
            ..Answer::ok("text/plain", body)
        }
    });
    let sb = Sandbox::new();
    sb.secrets_file(&format!("k = \"{KEY}\"\n"));
    policy(&sb, "see", &api, "X-Key");
    let tools = sb.toolset(&[guests::LEAKY]);
    for path in ["/", "/alone"] {
        let out = ok(tools.call("see", &json!({"url": api.url(path)}).to_string()));
        assert!(out.starts_with("status 0\n"), "{path}: {out}");
        assert!(
            out.contains("came in the coding `transfer-encoding gzip`, which warden cannot check"),
            "{path}: {out}"
        );
        assert!(!out.contains(KEY), "{path}: {out}");
    }
    assert_eq!(api.seen().len(), 2);
}

#[test]
fn fetch_writing_the_secret_markdown_escaped_is_scrubbed_from_its_output() {
    // One sign as an entity: no form the response scrub knows, but the
    // page's text is the key, which `fetch` writes with `_` as `\_`.
    let page = "<p>token: AKIA/k3y&#43;V4lue=_x9Q</p>";
    let api = WebPeer::start(move |_| Answer::ok("text/html", page));
    let sb = Sandbox::new();
    sb.secrets_file(&format!("aws = \"{AWS}\"\n"));
    sb.policy(&format!(
        "[tools.fetch]\nnetwork = [\"127.0.0.1:{p}\"]\n\n\
         [tools.fetch.secrets.k]\nfile = \"aws\"\nhosts = [\"127.0.0.1:{p}\"]\nheader = \"X-Aws-Key\"\n",
        p = api.port
    ));
    let tools = sb.toolset(&[]);
    let out = ok(tools.call("fetch", &json!({"url": api.url("/")}).to_string()));
    assert!(out.contains("token: [secret k]"), "{out}");
    assert!(!out.contains("x9Q"), "{out}");
}
