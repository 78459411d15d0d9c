//! Secrets a tool uses but never holds: the host adds each to the tool's
//! HTTP requests to the secret's own hosts, after the allow-list check, and
//! takes it back out of everything that returns to the guest or the model.
//!
//! The invariant: no byte sequence equal to a secret's value (as it is,
//! percent-encoded, JSON- or HTML-escaped, or base64-encoded at any
//! offset) enters the guest's memory or leaves the call. The guest cannot read a request
//! once it is handed to the host, responses are scrubbed on their way in,
//! and the call's output, errors and stderr are scrubbed on their way out.
//! A request that carries a secret asks for its response as it is (no
//! compression, no byte range), and a response to it in any other coding
//! is refused: the scrubber could not see a secret through it.

use std::borrow::Cow;
use std::net::IpAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use base64::Engine as _;
use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Request, Response};
use http_body::{Body, Frame};
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use warden_policy::{Capability, Grants, NetworkAllow};
use warden_state::StateDir;

mod source;

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
    /// The forms scrubbed: the value, percent-encoded, JSON- and
    /// HTML-escaped, base64.
    forms: Vec<Vec<u8>>,
    marker: Bytes,
}

/// A secret whose value could not be read: requests go without it, and
/// the model is told why.
struct Missing {
    hosts: NetworkAllow,
    why: String,
}

/// The secrets of one tool.
#[derive(Default)]
pub(crate) struct Secrets(Vec<Secret>, Vec<Missing>);

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
        Ok(Secrets(out, missing))
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
        let mut out: Cow<'a, [u8]> = Cow::Borrowed(bytes);
        for s in &self.0 {
            for form in &s.forms {
                if let Some(replaced) = replace(&out, form, &s.marker) {
                    out = Cow::Owned(replaced);
                }
            }
        }
        out
    }

    /// The length of the longest end of `bytes` that begins a form (and
    /// so may be a secret the next chunk completes): held back until then.
    fn unfinished(&self, bytes: &[u8]) -> usize {
        let forms = || self.0.iter().flat_map(|s| s.forms.iter());
        let longest = forms().map(Vec::len).max().unwrap_or(0);
        (1..longest.min(bytes.len() + 1))
            .rev()
            .find(|&n| {
                let end = &bytes[bytes.len() - n..];
                forms().any(|f| f.starts_with(end))
            })
            .unwrap_or(0)
    }

    /// `res` with the secrets scrubbed from its headers and body.
    pub(crate) fn scrub_response<B>(
        self: &std::sync::Arc<Self>,
        res: Response<B>,
    ) -> Response<ScrubBody<B>> {
        let (mut parts, body) = res.into_parts();
        for v in parts.headers.values_mut() {
            if let Cow::Owned(b) = self.scrub_bytes(v.as_bytes())
                && let Ok(nv) = HeaderValue::from_bytes(&b)
            {
                *v = nv;
            }
        }
        Response::from_parts(
            parts,
            ScrubBody {
                inner: body,
                secrets: self.clone(),
                held: BytesMut::new(),
                done: false,
            },
        )
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
        let percent = utf8_percent_encode(&value, NON_ALPHANUMERIC).to_string();
        // RFC 3986's unreserved `-._~` kept (Python's `quote`), and the
        // same with a space as `+` (`urlencode`, Go's `QueryEscape`).
        let uri = utf8_percent_encode(&value, UNRESERVED).to_string();
        let uri_plus = uri.replace("%20", "+");
        // `encodeURIComponent` keeps `!'()*` too.
        let ecma = utf8_percent_encode(&value, ECMA).to_string();
        // An HTML form (Java's `URLEncoder`): `*-._` kept, a space is `+`.
        let form = utf8_percent_encode(&value, FORM)
            .to_string()
            .replace("%20", "+");
        // Encoded twice, as a URL carried in another's query.
        let twice = utf8_percent_encode(&uri, UNRESERVED).to_string();
        let json = value.replace('\\', "\\\\").replace('"', "\\\"");
        let mut all = vec![
            value.clone(),
            // JSON must escape `"` and `\`, and may escape `/` (PHP does).
            json.replace('/', "\\/"),
            json,
            // JSON that escapes what HTML holds special as `\u00XX`: .NET
            // (`+` and `'` too, upper case), Go (`<>&`, lower case).
            json_u(&value, "\"&'+<>`", |n| format!("\\u{n:04X}")),
            json_u(&value, "<>&", |n| format!("\\u{n:04x}")),
        ];
        for p in [percent, uri, uri_plus, ecma, form, twice] {
            all.push(lower_hex(&p));
            all.push(p);
        }
        // As an HTML page writes it (a page that shows the request back).
        for (quot, apos, more) in HTML_STYLES {
            all.push(escaped(&value, |c| match c {
                '&' => Some("&amp;".into()),
                '<' => Some("&lt;".into()),
                '>' => Some("&gt;".into()),
                '"' => Some(quot.into()),
                '\'' => Some(apos.into()),
                c => more
                    .iter()
                    .find(|(k, _)| *k == c)
                    .map(|(_, e)| e.to_string()),
            }));
        }
        // Every sign as a numeric reference, as encoders that escape all do.
        let numeric: [fn(u32) -> String; 3] = [
            |n| format!("&#{n};"),
            |n| format!("&#x{n:x};"),
            |n| format!("&#x{n:X};"),
        ];
        for reference in numeric {
            all.push(escaped(&value, |c| {
                (!c.is_ascii_alphanumeric()).then(|| reference(c as u32))
            }));
        }
        for engine in [
            &base64::engine::general_purpose::STANDARD_NO_PAD,
            &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        ] {
            // Whole first, so that a whole one is replaced whole.
            all.push(engine.encode(&value));
            all.extend(base64_cores(engine, value.as_bytes()));
        }
        let mut forms: Vec<Vec<u8>> = Vec::new();
        for f in all {
            if !forms.iter().any(|g| g == f.as_bytes()) {
                forms.push(f.into_bytes());
            }
        }
        Ok(Secret {
            name: name.to_string(),
            hosts: NetworkAllow::new(hosts.iter().map(String::as_str)),
            send,
            marker: Bytes::from(format!("[secret {name}]")),
            value,
            forms,
        })
    }
}

/// All but letters, digits and RFC 3986's unreserved `-._~`.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// What `encodeURIComponent` escapes: all but letters, digits and
/// `-._~!'()*`.
const ECMA: &AsciiSet = &UNRESERVED
    .remove(b'!')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')')
    .remove(b'*');

/// What a form encoding escapes: all but letters, digits and `*-._`.
const FORM: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'*')
    .remove(b'-')
    .remove(b'.')
    .remove(b'_');

/// `value` as a JSON string body in which `special` characters are written
/// as `u` makes them of their number (`\u002B`); `"` and `\` otherwise as
/// `\"` and `\\`.
fn json_u(value: &str, special: &str, u: fn(u32) -> String) -> String {
    escaped(value, |c| match c {
        c if special.contains(c) => Some(u(c as u32)),
        '"' => Some("\\\"".into()),
        '\\' => Some("\\\\".into()),
        _ => None,
    })
}

/// `value` with each character `escape` has a form for written so.
fn escaped(value: &str, escape: impl Fn(char) -> Option<String>) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match escape(c) {
            Some(e) => out.push_str(&e),
            None => out.push(c),
        }
    }
    out
}

/// How an HTML escaper writes `"` and `'` (all write `&amp;`, `&lt;` and
/// `&gt;`), and what else it escapes; any other character stays as it is.
type HtmlStyle = (&'static str, &'static str, &'static [(char, &'static str)]);

const HTML_STYLES: [HtmlStyle; 7] = [
    // Python's `html.escape`.
    ("&quot;", "&#x27;", &[]),
    // Go's `html.EscapeString`, Jinja (MarkupSafe).
    ("&#34;", "&#39;", &[]),
    // lodash's `escape`, Rails.
    ("&quot;", "&#39;", &[]),
    // Go's `html/template`, in text and attribute values.
    (
        "&#34;",
        "&#39;",
        &[('+', "&#43;"), ('=', "&#61;"), ('`', "&#96;")],
    ),
    // PHP's `htmlspecialchars` with `ENT_QUOTES`.
    ("&quot;", "&#039;", &[]),
    // OWASP's rule for HTML content.
    ("&quot;", "&#x27;", &[('/', "&#x2F;")]),
    // XML.
    ("&quot;", "&apos;", &[]),
];

/// `percent` with the hex digits of its escapes in lower case (`%2f`).
fn lower_hex(percent: &str) -> String {
    let mut out = String::with_capacity(percent.len());
    let mut left = 0;
    for c in percent.chars() {
        if c == '%' {
            left = 2;
            out.push(c);
        } else if left > 0 {
            left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The base64 characters that `value` alone decides, wherever it starts in
/// a longer encoded text: for each of the three offsets it may start at
/// within a 3-byte group, the characters whose 6 bits all come from it.
fn base64_cores(engine: &impl base64::Engine, value: &[u8]) -> Vec<String> {
    (0..3)
        .map(|k| {
            let mut padded = vec![0u8; k];
            padded.extend_from_slice(value);
            let text = engine.encode(&padded);
            // Bits [8k, 8k + 8n) are the value's; character i holds bits
            // [6i, 6i + 6).
            let first = (8 * k).div_ceil(6);
            let end = (8 * (k + value.len())) / 6;
            text[first..end.min(text.len())].to_string()
        })
        .collect()
}

/// `hay` with every `needle` replaced by `with`, or `None` when there is none.
fn replace(hay: &[u8], needle: &[u8], with: &[u8]) -> Option<Vec<u8>> {
    let first = memmem(hay, needle, 0)?;
    let mut out = Vec::with_capacity(hay.len());
    let mut at = 0;
    let mut next = Some(first);
    while let Some(i) = next {
        out.extend_from_slice(&hay[at..i]);
        out.extend_from_slice(with);
        at = i + needle.len();
        next = memmem(hay, needle, at);
    }
    out.extend_from_slice(&hay[at..]);
    Some(out)
}

fn memmem(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if needle.is_empty() || hay.len() < from + needle.len() {
        return None;
    }
    hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|i| i + from)
}

/// The content coding of `res`, a response to a request that carried a
/// secret, when it is not the response as it is: refused, since an echo of
/// the secret inside it could not be scrubbed. Scrubbed itself: the server
/// may have put the secret there too.
pub(crate) fn refused_coding<B>(res: &Response<B>, secrets: &Secrets) -> Option<String> {
    let codings: Vec<String> = res
        .headers()
        .get_all(http::header::CONTENT_ENCODING)
        .iter()
        .flat_map(|v| {
            secrets
                .scrub(&String::from_utf8_lossy(v.as_bytes()))
                .split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .collect::<Vec<_>>()
        })
        .filter(|c| !c.is_empty() && c != "identity")
        .collect();
    (!codings.is_empty()).then(|| codings.join(", "))
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

/// A response body with the secrets scrubbed: what could be the start of a
/// secret at the end of one chunk is held until the next one. Trailers are
/// dropped (they could carry an echo and no tool needs them).
pub(crate) struct ScrubBody<B> {
    inner: B,
    secrets: std::sync::Arc<Secrets>,
    held: BytesMut,
    done: bool,
}

impl<B> Body for ScrubBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        loop {
            if this.done {
                if this.held.is_empty() {
                    return Poll::Ready(None);
                }
                let rest = this.held.split().freeze();
                let out = this.secrets.scrub_bytes(&rest).into_owned();
                return Poll::Ready(Some(Ok(Frame::data(Bytes::from(out)))));
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => this.done = true,
                Poll::Ready(Some(Err(e))) => return Poll::Ready(Some(Err(e))),
                Poll::Ready(Some(Ok(frame))) => {
                    let Ok(data) = frame.into_data() else {
                        continue; // trailers: dropped
                    };
                    this.held.extend_from_slice(&data);
                    let scrubbed = this.secrets.scrub_bytes(&this.held).into_owned();
                    // Keep only an end that a form could still continue
                    // from: the rest (a line of an event stream) goes now.
                    let cut = scrubbed.len() - this.secrets.unfinished(&scrubbed);
                    this.held = BytesMut::from(&scrubbed[cut..]);
                    if cut > 0 {
                        return Poll::Ready(Some(Ok(Frame::data(Bytes::copy_from_slice(
                            &scrubbed[..cut],
                        )))));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets(value: &str) -> Secrets {
        Secrets(
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
    fn a_stream_holds_back_only_what_may_begin_a_secret() {
        let s = secrets("s3cr3t-value");
        assert_eq!(s.unfinished(b"data: {}\n\n"), 0);
        assert_eq!(s.unfinished(b"data: s3cr"), 4);
        assert_eq!(s.unfinished(b"data: s3cr3t-valu"), 11);
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
