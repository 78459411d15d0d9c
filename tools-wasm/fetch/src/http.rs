//! GET (and POST, for search APIs) through `wasi:http`: redirects followed
//! here (so the host checks each hop as a new request), every wait bounded
//! by the call's deadline, the body capped, and every failure said in words
//! the model can act on.

use std::time::Duration;

use url::Url;
use wasip2::clocks::monotonic_clock;
use wasip2::http::outgoing_handler::{RequestOptions, handle};
use wasip2::http::types::{
    ErrorCode, Fields, IncomingResponse, Method, OutgoingBody, OutgoingRequest, Scheme,
};
use wasip2::io::poll::poll;
use wasip2::io::streams::StreamError;

use crate::ToolError;

/// Redirects followed before giving up.
pub const MAX_REDIRECTS: usize = 10;
/// Largest body read, in bytes.
pub const MAX_BODY: usize = 16 << 20;

/// A response read whole.
pub struct Page {
    /// Where it finally came from, after redirects.
    pub url: Url,
    /// HTTP status.
    pub status: u16,
    /// The `content-type` header, if any.
    pub content_type: Option<String>,
    /// The body.
    pub body: Vec<u8>,
}

/// When the call must have answered: a little before the host's own
/// deadline, so that a slow server yields a message instead of a kill.
#[derive(Clone, Copy)]
pub struct Deadline(u64);

impl Deadline {
    /// Four fifths of the call's time limit, on the call's clock.
    pub fn from_host() -> Deadline {
        let limit = crate::bindings::warden::tool::call::time_limit();
        Deadline(limit / 5 * 4)
    }

    fn left(self) -> u64 {
        self.0.saturating_sub(monotonic_clock::now()).max(1)
    }

    /// Whether the deadline has come (to the millisecond).
    fn passed(self) -> bool {
        monotonic_clock::now().saturating_add(1_000_000) >= self.0
    }

    /// The time the call allows, for messages.
    pub fn shown(self) -> String {
        format!("{:.1}s", Duration::from_nanos(self.0).as_secs_f64())
    }

    /// Waits for `ready` until the deadline; false when it passed first.
    fn wait(self, ready: &wasip2::io::poll::Pollable) -> bool {
        let timer = monotonic_clock::subscribe_instant(self.0);
        let done = poll(&[ready, &timer]);
        done.contains(&0)
    }
}

/// GETs `url` with `headers`, following redirects; each hop is a new
/// request the host checks on its own.
pub fn get(url: &str, headers: &[(&str, &str)], deadline: Deadline) -> Result<Page, ToolError> {
    let mut url = parse(url)?;
    let mut from: Option<Url> = None;
    for _ in 0..=MAX_REDIRECTS {
        let res = once(&url, headers, None, deadline, from.as_ref())?;
        let status = res.status();
        let location = header(&res.headers(), "location");
        if matches!(status, 301 | 302 | 303 | 307 | 308)
            && let Some(loc) = location
        {
            let next = url.join(&loc).map_err(|e| {
                ToolError::Failed(format!(
                    "{url} redirected to `{loc}`, which is not a valid URL ({e})"
                ))
            })?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(ToolError::Failed(format!(
                    "{url} redirected to {next}: only http and https are followed"
                )));
            }
            from = Some(url);
            url = next;
            continue;
        }
        let content_type = header(&res.headers(), "content-type");
        let body = read_body(res, &url, deadline)?;
        return Ok(Page {
            url,
            status,
            content_type,
            body,
        });
    }
    Err(ToolError::Failed(format!(
        "more than {MAX_REDIRECTS} redirects, the last to {url}: the site redirects in a loop"
    )))
}

/// POSTs `body` to `url` with `headers`: one request, no redirect followed
/// (the body would go to a host it was not written for).
pub fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    deadline: Deadline,
) -> Result<Page, ToolError> {
    let url = parse(url)?;
    let res = once(&url, headers, Some(body), deadline, None)?;
    let status = res.status();
    let content_type = header(&res.headers(), "content-type");
    let body = read_body(res, &url, deadline)?;
    Ok(Page {
        url,
        status,
        content_type,
        body,
    })
}

fn parse(url: &str) -> Result<Url, ToolError> {
    let u = Url::parse(url).map_err(|e| {
        ToolError::InvalidArgs(format!(
            "`{url}` is not a URL ({e}): give a full address like https://example.com/page"
        ))
    })?;
    if !matches!(u.scheme(), "http" | "https") {
        return Err(ToolError::InvalidArgs(format!(
            "`{url}`: only http:// and https:// URLs can be fetched"
        )));
    }
    if u.host_str().is_none() {
        return Err(ToolError::InvalidArgs(format!("`{url}` has no host")));
    }
    Ok(u)
}

fn header(fields: &Fields, name: &str) -> Option<String> {
    fields
        .get(name)
        .first()
        .map(|v| String::from_utf8_lossy(v).trim().to_string())
}

fn authority(url: &Url) -> String {
    let host = url.host_str().unwrap_or_default();
    match url.port() {
        Some(p) => format!("{host}:{p}"),
        None => host.to_string(),
    }
}

fn host_port(url: &Url) -> String {
    format!(
        "{}:{}",
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// One request, no redirect: a GET, or a POST of `body`.
fn once(
    url: &Url,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
    deadline: Deadline,
    from: Option<&Url>,
) -> Result<IncomingResponse, ToolError> {
    let fields = Fields::new();
    let _ = fields.append("user-agent", b"warden-fetch/0.1");
    // Undone by `decode`; a request carrying a secret is asked for as it
    // is by the host.
    let _ = fields.append("accept-encoding", b"gzip, deflate, br");
    for (k, v) in headers {
        let _ = fields.append(k, v.as_bytes());
    }
    if let Some(body) = body {
        let _ = fields.append("content-length", body.len().to_string().as_bytes());
    }
    let req = OutgoingRequest::new(fields);
    let sending = match body {
        Some(body) => {
            let _ = req.set_method(&Method::Post);
            Some((req.body().expect("the body of a new request"), body))
        }
        None => None,
    };
    let scheme = if url.scheme() == "https" {
        Scheme::Https
    } else {
        Scheme::Http
    };
    let path = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    let set = req
        .set_scheme(Some(&scheme))
        .and(req.set_authority(Some(&authority(url))))
        .and(req.set_path_with_query(Some(&path)));
    if set.is_err() {
        return Err(ToolError::InvalidArgs(format!(
            "`{url}` cannot be requested"
        )));
    }
    let left = deadline.left();
    let options = RequestOptions::new();
    let _ = options.set_connect_timeout(Some(left));
    let _ = options.set_first_byte_timeout(Some(left));
    let _ = options.set_between_bytes_timeout(Some(left));
    let pending = handle(req, Some(options)).map_err(|c| explain(&c, url, from, deadline))?;
    if let Some((out, body)) = sending {
        send_body(out, body).map_err(|why| {
            ToolError::Failed(format!("sending the request body to {url} failed: {why}"))
        })?;
    }
    if !deadline.wait(&pending.subscribe()) {
        return Err(timeout(url, deadline, "an answer"));
    }
    match pending.get() {
        Some(Ok(Ok(r))) => Ok(r),
        Some(Ok(Err(code))) => Err(explain(&code, url, from, deadline)),
        Some(Err(())) | None => Err(ToolError::Failed(format!("no response from {url}"))),
    }
}

/// Writes `body` to a request's outgoing body, then ends it.
fn send_body(out: OutgoingBody, body: &[u8]) -> Result<(), String> {
    {
        let stream = out.write().map_err(|()| "no body stream".to_string())?;
        // The most one blocking write may take.
        for chunk in body.chunks(4096) {
            stream
                .blocking_write_and_flush(chunk)
                .map_err(|e| format!("{e:?}"))?;
        }
    }
    OutgoingBody::finish(out, None).map_err(|c| format!("{c:?}"))
}

/// The body of `res`, at most [`MAX_BODY`] bytes, its content codings
/// undone (within the same cap).
fn read_body(res: IncomingResponse, url: &Url, deadline: Deadline) -> Result<Vec<u8>, ToolError> {
    let encoding = header(&res.headers(), "content-encoding");
    let body = read_raw(res, url, deadline)?;
    match encoding {
        Some(e) => crate::decode::decode(body, &e, MAX_BODY, url.as_str()),
        None => Ok(body),
    }
}

fn read_raw(res: IncomingResponse, url: &Url, deadline: Deadline) -> Result<Vec<u8>, ToolError> {
    if let Some(n) = header(&res.headers(), "content-length").and_then(|v| v.parse::<u64>().ok())
        && n > MAX_BODY as u64
    {
        return Err(too_large(url, Some(n)));
    }
    let body = res
        .consume()
        .map_err(|()| ToolError::Failed(format!("the response from {url} has no body")))?;
    let stream = body
        .stream()
        .map_err(|()| ToolError::Failed(format!("the body of {url} cannot be read")))?;
    let mut out = Vec::new();
    loop {
        match stream.read(64 << 10) {
            Ok(chunk) if chunk.is_empty() => {
                if !deadline.wait(&stream.subscribe()) {
                    return Err(timeout(url, deadline, "the rest of the body"));
                }
            }
            Ok(chunk) => {
                out.extend_from_slice(&chunk);
                if out.len() > MAX_BODY {
                    return Err(too_large(url, None));
                }
            }
            Err(StreamError::Closed) => break,
            Err(StreamError::LastOperationFailed(e)) => {
                let code = wasip2::http::types::http_error_code(&e);
                // The host's wait between bytes is set to end at this
                // deadline: under load it ends the read first (the error
                // then carries no code, only its text).
                if deadline.passed()
                    || matches!(
                        code,
                        Some(ErrorCode::ConnectionReadTimeout | ErrorCode::HttpResponseTimeout)
                    )
                {
                    return Err(timeout(url, deadline, "the rest of the body"));
                }
                let why = code
                    .map(|c| format!("{c:?}"))
                    .unwrap_or_else(|| e.to_debug_string());
                return Err(ToolError::Failed(format!(
                    "reading the body of {url} failed: {why}"
                )));
            }
        }
    }
    Ok(out)
}

fn too_large(url: &Url, n: Option<u64>) -> ToolError {
    let size = n.map_or(String::new(), |n| format!(" ({n} bytes)"));
    ToolError::Failed(format!(
        "the response from {url} is too large{size}: fetch reads at most {} MiB",
        MAX_BODY >> 20
    ))
}

fn timeout(url: &Url, deadline: Deadline, what: &str) -> ToolError {
    ToolError::Failed(format!(
        "timed out waiting for {what} from {}: no answer within {} (the call's time limit); \
         try again later or another source",
        host_port(url),
        deadline.shown()
    ))
}

/// The words for a failed request.
fn explain(code: &ErrorCode, url: &Url, from: Option<&Url>, deadline: Deadline) -> ToolError {
    let hp = host_port(url);
    let via = from.map_or(String::new(), |f| format!(" (redirected from {f})"));
    match code {
        ErrorCode::HttpRequestDenied => ToolError::Denied(format!(
            "refused by policy: {hp}{via} is not among the hosts this tool may reach"
        )),
        ErrorCode::DestinationIpProhibited => ToolError::Denied(format!(
            "refused by policy: {hp}{via} resolves to a private, loopback or other \
             non-public address, or one of this machine's, which is reached only when that \
             address itself is granted"
        )),
        ErrorCode::DnsError(e) => {
            let why = e.rcode.clone().unwrap_or_else(|| "no such host".into());
            // The resolver could not answer now (the host's words for
            // EAI_AGAIN, `send::TRY_AGAIN`): the name may be fine.
            let next = if why.starts_with("temporary") {
                "check the network connection, then try again"
            } else {
                "check the URL"
            };
            ToolError::Failed(format!(
                "DNS: the name {} could not be resolved{via} ({why}); {next}",
                url.host_str().unwrap_or_default(),
            ))
        }
        ErrorCode::DnsTimeout => ToolError::Failed(format!(
            "DNS: resolving {} timed out{via}",
            url.host_str().unwrap_or_default()
        )),
        ErrorCode::ConnectionRefused => ToolError::Failed(format!(
            "{hp}{via} refused the connection: nothing listens there"
        )),
        ErrorCode::ConnectionTimeout
        | ErrorCode::ConnectionReadTimeout
        | ErrorCode::HttpResponseTimeout => timeout(url, deadline, "an answer"),
        ErrorCode::TlsCertificateError | ErrorCode::TlsProtocolError => ToolError::Failed(format!(
            "TLS with {hp}{via} failed ({code:?}): the site's certificate or TLS setup is not accepted"
        )),
        other => ToolError::Failed(format!("the request to {hp}{via} failed: {other:?}")),
    }
}
