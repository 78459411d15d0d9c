//! Secrets a tool uses but never holds: the host adds each to the tool's
//! HTTP requests to the secret's own hosts, after the allow-list check, and
//! takes it back out of everything that returns to the guest or the model.
//!
//! The boundary is the policy's: a tool holding a secret reaches only that
//! secret's hosts. The scrub is a second line (`warden-scrub`): no byte
//! sequence equal to a form of a secret's value (as it is, percent-encoded as
//! common encoders write it, JSON-, HTML- or Markdown-escaped, or
//! base64-encoded at any offset) enters the guest's memory or leaves the
//! call, in a header's name or value or a body; how a body arrives does not
//! depend on its content (`body.rs`), and a scrubbed response has no
//! `Content-Length`. The guest cannot read a request once it is handed to
//! the host, responses are scrubbed on their way in, and the call's output,
//! errors and stderr are scrubbed on their way out. A request that carries
//! a secret asks for its response as it is (no compression, no byte
//! range), and a response to it in any other content or transfer coding
//! is refused: the scrubber could not see a secret through it.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use http::{HeaderName, HeaderValue, Request, Response};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use warden_policy::{Capability, Grants, NetworkAllow};
use warden_scrub::Scrubber;
use warden_state::StateDir;

mod body;
mod source;

pub(crate) use body::ScrubBody;

/// The per-user secrets file, in warden's config folder.
pub const SECRETS_FILE: &str = "secrets.toml";

/// How a secret goes into a request.
#[derive(Debug, Clone)]
enum Send {
    Header(HeaderName, String),
    Query(String),
}

/// One secret, resolved: its value stays in the host.
struct Secret {
    name: String,
    hosts: NetworkAllow,
    send: Send,
    value: String,
}

/// A secret whose value could not be read: requests go without it, and
/// the model is told why.
struct Missing {
    hosts: NetworkAllow,
    why: String,
}

/// The secrets of one tool, and the scrubber of their values.
#[derive(Default)]
pub(crate) struct Secrets(Vec<Secret>, Vec<Missing>, Arc<Scrubber>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.0.iter().map(|s| s.name.as_str()).collect();
        f.debug_tuple("Secrets").field(&names).finish()
    }
}

impl Secrets {
    /// Reads the value of every secret `grants` name from the user's
    /// secrets file in `config` (opened beneath warden's private config
    /// folder without following links), or the user's variable an entry
    /// names. A value that is missing or unusable is not sent; each request
    /// to its hosts then says why. A tool that could read a value itself
    /// (granted its variable) is not bound.
    pub(crate) fn resolve(grants: &Grants, config: Option<&StateDir>) -> Result<Secrets, String> {
        let env = |name: &str| std::env::var(name).ok();
        let mut sources = source::Sources::new(config, &env);
        let mut out = Vec::new();
        let mut missing = Vec::new();
        for cap in grants.secrets() {
            let Capability::Secret {
                name,
                source,
                hosts,
                send,
            } = cap
            else {
                continue;
            };
            match sources.value(name, source, grants)? {
                Ok(v) => out.push(Secret::new(name, hosts, send, v)?),
                Err(why) => missing.push(Missing {
                    hosts: NetworkAllow::new(hosts.iter().map(String::as_str)),
                    why: format!("secret `{name}` was not sent: {why}"),
                }),
            }
        }
        Ok(Secrets::new(out, missing))
    }

    fn new(secrets: Vec<Secret>, missing: Vec<Missing>) -> Secrets {
        let mut scrubber = Scrubber::default();
        for s in &secrets {
            scrubber.add(&s.value, format!("[secret {}]", s.name));
        }
        Secrets(secrets, missing, Arc::new(scrubber))
    }

    /// Whether the tool has no secret.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds each secret meant for `host:port` to `req`. Only over https,
    /// or in the clear to a loopback address the secret names itself (a
    /// test server). Returns what the model should know (secrets withheld
    /// because the request was not over https, or missing), and whether a
    /// secret was added: the response must then pass [`refused_coding`].
    pub(crate) fn inject<B>(
        &self,
        req: &mut Request<B>,
        host: &str,
        port: u16,
        tls: bool,
    ) -> (Vec<String>, bool) {
        let mut sent = false;
        let mut withheld: Vec<String> = self
            .1
            .iter()
            .filter(|m| m.hosts.allows(host, port))
            .map(|m| m.why.clone())
            .collect();
        for s in self.0.iter().filter(|s| s.hosts.allows(host, port)) {
            let loopback = host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<IpAddr>()
                .is_ok_and(|ip| ip.is_loopback());
            if !tls && !loopback {
                withheld.push(format!(
                    "secret `{}` was not sent to {host}:{port}: secrets go only over https; \
                     use an https:// URL",
                    s.name
                ));
                continue;
            }
            sent = true;
            match &s.send {
                Send::Header(name, template) => {
                    let v = template.replace("{}", &s.value);
                    if let Ok(mut v) = HeaderValue::from_str(&v) {
                        v.set_sensitive(true);
                        // Whatever the guest put there is replaced, not joined.
                        req.headers_mut().insert(name.clone(), v);
                    }
                }
                Send::Query(param) => {
                    let uri = req.uri().clone();
                    let kept: Vec<&str> = uri
                        .query()
                        .unwrap_or_default()
                        .split('&')
                        .filter(|kv| !kv.is_empty() && kv.split('=').next() != Some(param.as_str()))
                        .collect();
                    let enc = utf8_percent_encode(&s.value, NON_ALPHANUMERIC);
                    let mut pq = format!("{}?", uri.path());
                    for kv in kept {
                        pq.push_str(kv);
                        pq.push('&');
                    }
                    pq.push_str(&format!("{param}={enc}"));
                    let mut parts = uri.into_parts();
                    if let Ok(p) = pq.parse() {
                        parts.path_and_query = Some(p);
                        if let Ok(u) = http::Uri::from_parts(parts) {
                            *req.uri_mut() = u;
                        }
                    }
                }
            }
        }
        if sent {
            // An echo of the secret must come back where the scrubber can
            // see it: whole, not compressed, not in slices.
            let h = req.headers_mut();
            h.insert(
                http::header::ACCEPT_ENCODING,
                HeaderValue::from_static("identity"),
            );
            h.remove(http::header::RANGE);
            h.remove(http::header::IF_RANGE);
            h.remove(http::header::TE);
        }
        (withheld, sent)
    }

    /// `text` with every form of every secret replaced by `[secret NAME]`.
    pub(crate) fn scrub<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.0.is_empty() {
            return Cow::Borrowed(text);
        }
        let bytes = self.scrub_bytes(text.as_bytes());
        match bytes {
            Cow::Borrowed(_) => Cow::Borrowed(text),
            Cow::Owned(b) => Cow::Owned(String::from_utf8_lossy(&b).into_owned()),
        }
    }

    fn scrub_bytes<'a>(&self, bytes: &'a [u8]) -> Cow<'a, [u8]> {
        self.2.scrub(bytes)
    }

    /// `res` with the secrets scrubbed from its headers and body.
    pub(crate) fn scrub_response<B>(&self, res: Response<B>) -> Response<ScrubBody<B>> {
        let (mut parts, body) = res.into_parts();
        // A header named by an echo goes whole; the length is the server's,
        // not what the tool will read.
        let headers = std::mem::take(&mut parts.headers);
        let mut name = None;
        for (n, mut v) in headers {
            if n.is_some() {
                name = n;
            }
            let Some(n) = &name else { continue };
            if self.2.in_name(n.as_str().as_bytes()) || *n == http::header::CONTENT_LENGTH {
                continue;
            }
            if let Cow::Owned(b) = self.scrub_bytes(v.as_bytes())
                && let Ok(nv) = HeaderValue::from_bytes(&b)
            {
                v = nv;
            }
            parts.headers.append(n.clone(), v);
        }
        Response::from_parts(parts, ScrubBody::new(body, self.2.clone()))
    }
}

impl Secret {
    fn new(name: &str, hosts: &[String], send: &str, value: String) -> Result<Secret, String> {
        let send = if let Some(h) = send.strip_prefix("header ") {
            let (n, t) = h.split_once(':').unwrap_or((h, "{}"));
            let n = HeaderName::from_bytes(n.trim().as_bytes())
                .map_err(|_| format!("secret `{name}`: bad header name `{n}`"))?;
            Send::Header(n, t.trim().to_string())
        } else if let Some(q) = send.strip_prefix("query ") {
            Send::Query(q.to_string())
        } else {
            return Err(format!("secret `{name}`: unknown way to send it `{send}`"));
        };
        Ok(Secret {
            name: name.to_string(),
            hosts: NetworkAllow::new(hosts.iter().map(String::as_str)),
            send,
            value,
        })
    }
}

/// The coding of `res`, a response to a request that carried a secret,
/// when it is not the response as it is: a `Content-Encoding` other than
/// `identity`, or a `Transfer-Encoding` other than `chunked` (which the
/// connection undoes). Refused, since an echo of the secret inside it could
/// not be scrubbed. Scrubbed itself: the server may have put the secret
/// there too.
pub(crate) fn refused_coding<B>(res: &Response<B>, secrets: &Secrets) -> Option<String> {
    let codings = |header: http::HeaderName, fine: &'static str| {
        res.headers()
            .get_all(header)
            .iter()
            .flat_map(|v| {
                secrets
                    .scrub(&String::from_utf8_lossy(v.as_bytes()))
                    .split(',')
                    .map(|c| c.trim().to_ascii_lowercase())
                    .collect::<Vec<_>>()
            })
            .filter(move |c| !c.is_empty() && c != fine)
            .collect::<Vec<_>>()
    };
    let content = codings(http::header::CONTENT_ENCODING, "identity");
    let transfer = codings(http::header::TRANSFER_ENCODING, "chunked");
    let shown: Vec<String> = content
        .into_iter()
        .chain(
            transfer
                .into_iter()
                .map(|c| format!("transfer-encoding {c}")),
        )
        .collect();
    (!shown.is_empty()).then(|| shown.join(", "))
}

/// What the model is told when a response was refused by [`refused_coding`].
pub(crate) fn coding_note(host: &str, port: u16, coding: &str) -> String {
    format!(
        "the response from {host}:{port} to a request carrying a secret came in the coding \
         `{}`, which warden cannot check for the secret, so it was refused; the server must \
         answer `Accept-Encoding: identity` uncompressed",
        warden_policy::inert(coding)
    )
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use base64::Engine as _;

    pub(crate) fn secrets(value: &str) -> Secrets {
        Secrets::new(
            vec![
                Secret::new(
                    "key",
                    &["api.example.com".into()],
                    "header X-Key",
                    value.into(),
                )
                .unwrap(),
            ],
            Vec::new(),
        )
    }

    #[test]
    fn every_form_of_the_value_is_scrubbed() {
        let s = secrets("s3cr3t/value+1");
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD.encode("s3cr3t/value+1");
        let text = format!("a s3cr3t/value+1 b s3cr3t%2Fvalue%2B1 c {b64} d");
        assert_eq!(
            s.scrub(&text),
            "a [secret key] b [secret key] c [secret key] d"
        );
        assert_eq!(s.scrub("nothing here"), "nothing here");
    }

    #[test]
    fn the_value_is_scrubbed_inside_longer_encodings_and_escapes() {
        let value = "s3cr3t/value+1";
        let s = secrets(value);
        for engine in [
            &base64::engine::general_purpose::STANDARD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            // The value at each offset of a 3-byte group, within more text.
            for before in ["", "a", "ab", "Bearer "] {
                let text = engine.encode(format!("{before}{value} and more"));
                let scrubbed = s.scrub(&text);
                assert!(scrubbed.contains("[secret key]"), "{before:?}: {scrubbed}");
            }
        }
        assert_eq!(
            s.scrub(r#"{"k":"s3cr3t\/value+1"} s3cr3t%2fvalue%2b1"#),
            r#"{"k":"[secret key]"} [secret key]"#
        );
    }

    /// How common encoders write a value in a URL or in JSON.
    #[test]
    fn the_value_is_scrubbed_as_encoders_write_it() {
        let s = secrets("ab-cd/e f+g=~'<");
        for (who, form) in [
            ("encodeURIComponent", "ab-cd%2Fe%20f%2Bg%3D~'%3C"),
            ("Python quote(safe='')", "ab-cd%2Fe%20f%2Bg%3D~%27%3C"),
            ("Python urlencode", "ab-cd%2Fe+f%2Bg%3D~%27%3C"),
            ("Java URLEncoder", "ab-cd%2Fe+f%2Bg%3D%7E%27%3C"),
            ("lower-case hex", "ab-cd%2fe%20f%2bg%3d~%27%3c"),
            ("encoded twice", "ab-cd%252Fe%2520f%252Bg%253D~%2527%253C"),
            ("JSON.stringify", "ab-cd/e f+g=~'<"),
            (".NET System.Text.Json", "ab-cd/e f\\u002Bg=~\\u0027\\u003C"),
            ("Go encoding/json", "ab-cd/e f+g=~'\\u003c"),
        ] {
            assert_eq!(
                s.scrub(&format!("<{form}>")),
                "<[secret key]>",
                "{who}: {form}"
            );
        }
    }

    /// A page that shows the request back (an error page, a debug echo)
    /// writes it HTML-escaped.
    #[test]
    fn the_value_is_scrubbed_as_html_escapers_write_it() {
        let s = secrets("ab-cd/e f+g=~'<&");
        for (who, form) in [
            ("Python html.escape", "ab-cd/e f+g=~&#x27;&lt;&amp;"),
            ("Go html.EscapeString, Jinja", "ab-cd/e f+g=~&#39;&lt;&amp;"),
            ("Go html/template", "ab-cd/e f&#43;g&#61;~&#39;&lt;&amp;"),
            ("PHP htmlspecialchars", "ab-cd/e f+g=~&#039;&lt;&amp;"),
            ("OWASP", "ab-cd&#x2F;e f+g=~&#x27;&lt;&amp;"),
            ("XML", "ab-cd/e f+g=~&apos;&lt;&amp;"),
            (
                "every sign, decimal",
                "ab&#45;cd&#47;e&#32;f&#43;g&#61;&#126;&#39;&#60;&#38;",
            ),
            (
                "every sign, hex",
                "ab&#x2d;cd&#x2f;e&#x20;f&#x2b;g&#x3d;&#x7e;&#x27;&#x3c;&#x26;",
            ),
            (
                "every sign, upper-case hex",
                "ab&#x2D;cd&#x2F;e&#x20;f&#x2B;g&#x3D;&#x7E;&#x27;&#x3C;&#x26;",
            ),
        ] {
            assert_eq!(
                s.scrub(&format!("<p>{form}</p>")),
                "<p>[secret key]</p>",
                "{who}: {form}"
            );
        }
        // A token of letters, digits and `+/=` (base64), as Go's template
        // and OWASP write it.
        let s = secrets("Zm9v+YmFy/YmF6=");
        for form in ["Zm9v&#43;YmFy/YmF6&#61;", "Zm9v+YmFy&#x2F;YmF6="] {
            assert_eq!(s.scrub(form), "[secret key]", "{form}");
        }
    }

    #[test]
    fn a_request_carrying_a_secret_asks_for_its_answer_as_it_is() {
        let s = secrets("s3cr3t-value");
        let mut r = Request::new(());
        r.headers_mut()
            .insert("accept-encoding", HeaderValue::from_static("gzip, br"));
        r.headers_mut()
            .insert("range", HeaderValue::from_static("bytes=2-9"));
        assert!(s.inject(&mut r, "api.example.com", 443, true).1);
        assert_eq!(r.headers()["accept-encoding"], "identity");
        assert!(r.headers().get("range").is_none());
        let coded = |c: &str| {
            let mut res = Response::new(());
            res.headers_mut()
                .insert("content-encoding", HeaderValue::from_str(c).unwrap());
            refused_coding(&res, &s)
        };
        assert_eq!(coded("gzip").as_deref(), Some("gzip"));
        assert_eq!(coded("identity"), None);
        // A transfer coding the connection does not undo, alone or before
        // `chunked`.
        let transfer = |c: &str| {
            let mut res = Response::new(());
            res.headers_mut()
                .insert("transfer-encoding", HeaderValue::from_str(c).unwrap());
            refused_coding(&res, &s)
        };
        assert_eq!(transfer("gzip").as_deref(), Some("transfer-encoding gzip"));
        assert_eq!(
            transfer("gzip, chunked").as_deref(),
            Some("transfer-encoding gzip")
        );
        assert_eq!(transfer("chunked"), None);
        assert_eq!(refused_coding(&Response::new(()), &s), None);
        // An echo of the secret there is scrubbed before it is lower-cased.
        let s = secrets("S3cr3t-Value");
        let mut res = Response::new(());
        res.headers_mut().insert(
            "content-encoding",
            HeaderValue::from_static("gzip, S3cr3t-Value"),
        );
        assert_eq!(
            refused_coding(&res, &s).as_deref(),
            Some("gzip, [secret key]")
        );
    }

    #[test]
    fn header_names_holding_the_secret_and_the_length_do_not_reach_the_tool() {
        let s = std::sync::Arc::new(secrets("S3cr3t-Value-42"));
        let res = Response::builder()
            .header("s3cr3t-value-42", "named by an echo")
            .header("x-s3cr3t-value-42-tail", "inside a name")
            .header("x-echo", "S3cr3t-Value-42")
            .header("content-length", "1234")
            .header("x-other", "kept")
            .body(())
            .unwrap();
        let res = s.scrub_response(res);
        let h = res.headers();
        assert_eq!(h.len(), 2, "{h:?}");
        assert_eq!(h["x-echo"], "[secret key]");
        assert_eq!(h["x-other"], "kept");
    }

    #[test]
    fn the_header_goes_only_to_its_hosts_and_over_https() {
        let s = secrets("s3cr3t-value");
        let mut r = Request::new(());
        assert_eq!(
            s.inject(&mut r, "other.example.com", 443, true),
            (vec![], false)
        );
        assert!(r.headers().is_empty());
        let (notes, sent) = s.inject(&mut r, "api.example.com", 80, false);
        assert!(!sent);
        assert!(notes[0].contains("secret `key` was not sent"), "{notes:?}");
        assert!(r.headers().is_empty());
        r.headers_mut()
            .insert("x-key", HeaderValue::from_static("guest"));
        s.inject(&mut r, "api.example.com", 443, true);
        assert_eq!(r.headers().get_all("x-key").iter().count(), 1);
        assert_eq!(r.headers()["x-key"], "s3cr3t-value");
    }
}
