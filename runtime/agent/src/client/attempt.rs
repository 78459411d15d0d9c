//! One HTTP exchange, and the sorting of its failures into retryable or not.

use std::time::{Duration, Instant, SystemTime};

use reqwest::header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;

use super::error::excerpt;
use super::request::describe;
use super::retry::{Failure, parse_retry_after};
use super::verdict;
use super::{Client, ClientError, ClientEvent, Completion};

/// Sends the request once and reads the whole answer. Until the answer
/// starts, every wait ends at `deadline` too.
pub(crate) async fn run(
    client: &Client,
    body: &bytes::Bytes,
    tools_sent: bool,
    deadline: Instant,
    on_event: &mut (dyn FnMut(ClientEvent<'_>) + Send),
) -> Result<Completion, Failure> {
    let cfg = &client.cfg;
    let endpoint = client.endpoint.as_str();
    let mut builder = client
        .http
        .post(client.url.clone())
        .header(CONTENT_TYPE, "application/json")
        .header(
            ACCEPT,
            if cfg.stream {
                "text/event-stream"
            } else {
                "application/json"
            },
        )
        .body(body.clone());
    if let Some(key) = &cfg.api_key {
        builder = builder.bearer_auth(key);
    }
    let idle = cfg.idle_timeout;
    let resp = match within(idle, deadline, builder.send()).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => return Err(Failure::transient(send_error(client, &e))),
        Err(what) => return Err(Failure::transient(timeout_of(client, what))),
    };
    if !resp.status().is_success() {
        return Err(status_failure(client, resp, tools_sent).await);
    }
    let kind = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.to_ascii_lowercase());
    let is_json = kind.as_deref().is_some_and(|v| v.contains("json"));
    // A server that streams without saying so is read as a stream; any
    // other declared type is read whole and must still be JSON.
    let is_sse = kind
        .as_deref()
        .is_none_or(|v| v.starts_with("text/event-stream"));
    if cfg.stream && is_sse {
        return super::sse::read(client, resp, tools_sent, deadline, on_event).await;
    }
    let bytes = read_body(client, resp, deadline).await?;
    // Read as bytes and parsed once: a long answer (a call with a large
    // argument) is not decoded to text first. Its text is for errors only.
    let text = || String::from_utf8_lossy(&bytes);
    let mut value: Value = serde_json::from_slice(&bytes).map_err(|_| {
        let text = text();
        let found = match kind.as_deref() {
            Some(k) if k.contains("html") || text.trim_start().starts_with('<') => {
                "an HTML page".to_string()
            }
            Some(k) if !is_json => format!(
                "`{}` that is not JSON: {}",
                k.split(';').next().unwrap_or(k),
                excerpt(&text, cfg.api_key.as_deref())
            ),
            _ => format!(
                "something that is not JSON: {}",
                excerpt(&text, cfg.api_key.as_deref())
            ),
        };
        Failure::fatal(ClientError::NotOpenAi {
            endpoint: endpoint.to_string(),
            found,
        })
    })?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        let reason = format!(
            "error in response: {}",
            excerpt(&text(), cfg.api_key.as_deref())
        );
        return Err(Failure::fatal(malformed(endpoint, reason)));
    }
    let completion = super::reply::parse_completion(&mut value)
        .map_err(|reason| Failure::fatal(malformed(endpoint, reason)))?;
    // Whole answers (asked for, or from a server that ignored `stream:
    // true`) are reported too, so that callers need one way to show text.
    if !completion.content.is_empty() {
        on_event(ClientEvent::Text(&completion.content));
    }
    Ok(completion)
}

/// Reads a whole body; a body that stops coming is a timeout, one that is
/// cut a (retryable) stream error.
async fn read_body(
    client: &Client,
    resp: reqwest::Response,
    deadline: Instant,
) -> Result<bytes::Bytes, Failure> {
    match within(client.cfg.idle_timeout, deadline, resp.bytes()).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(e)) => Err(Failure::transient(ClientError::Stream {
            endpoint: client.endpoint.clone(),
            reason: format!("response body cut: {}", describe(&e)),
            attempts: 0,
            earlier: Vec::new(),
        })),
        Err(what) => Err(Failure::transient(timeout_of(client, what))),
    }
}

/// Runs `fut` for at most `idle`, and not past `deadline`; the error says
/// which ran out (`"response"` or `"request"`).
pub(crate) async fn within<F: std::future::Future>(
    idle: Duration,
    deadline: Instant,
    fut: F,
) -> Result<F::Output, &'static str> {
    let left = deadline.saturating_duration_since(Instant::now());
    let (limit, what) = if left < idle {
        (left, "request")
    } else {
        (idle, "response")
    };
    tokio::time::timeout(limit, fut).await.map_err(|_| what)
}

/// The timeout error for `what` ran out (see [`within`]).
fn timeout_of(client: &Client, what: &'static str) -> ClientError {
    let after = if what == "request" {
        client.cfg.request_timeout
    } else {
        client.cfg.idle_timeout
    };
    timeout(&client.endpoint, what, after)
}

/// Sorts an error status: transient ones are retried (honouring
/// `Retry-After`), a refusal of the `tools` field is reported as such, the
/// rest (bad request, auth, not found, …) returns at once.
async fn status_failure(client: &Client, resp: reqwest::Response, tools_sent: bool) -> Failure {
    let endpoint = client.endpoint.clone();
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    // The body only explains the error: a body that does not come must not
    // turn an error status into a timeout.
    let text = match tokio::time::timeout(client.cfg.idle_timeout, resp.text()).await {
        Ok(Ok(text)) => text,
        _ => String::new(),
    };
    verdict::ServerError {
        endpoint: &endpoint,
        status,
        message: &text,
        body: excerpt(&text, client.cfg.api_key.as_deref()),
        in_stream: false,
        tools_sent,
    }
    .failure(retry_after, |body| ClientError::Status {
        endpoint: endpoint.clone(),
        status,
        body,
        hint: status_hint(&client.cfg, status),
        attempts: 0,
        earlier: Vec::new(),
    })
}

/// What to check after an error status the user can fix.
pub(crate) fn status_hint(cfg: &super::ClientConfig, status: u16) -> String {
    let var = cfg.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
    match status {
        401 | 403 if cfg.api_key.is_some() => {
            format!(" (the key comes from ${var}: check that it is valid for this server)")
        }
        401 | 403 => format!(" (no API key was sent: set ${var})"),
        404 => format!(
            " (the model `{}` was asked for: check the model name, and that the base URL ends \
             in /v1)",
            cfg.model
        ),
        _ => String::new(),
    }
}

/// The error of a request that got no response head.
fn send_error(client: &Client, e: &reqwest::Error) -> ClientError {
    let endpoint = client.endpoint.clone();
    if e.is_connect() && e.is_timeout() {
        return timeout(&endpoint, "connect", client.cfg.connect_timeout);
    }
    if e.is_timeout() {
        return timeout(&endpoint, "response", client.cfg.idle_timeout);
    }
    ClientError::Connect {
        endpoint,
        reason: describe(e),
        attempts: 0,
        earlier: Vec::new(),
    }
}

fn timeout(endpoint: &str, what: &'static str, after: Duration) -> ClientError {
    ClientError::Timeout {
        endpoint: endpoint.to_string(),
        what,
        after,
        attempts: 0,
        earlier: Vec::new(),
    }
}

fn malformed(endpoint: &str, reason: String) -> ClientError {
    ClientError::Malformed {
        endpoint: endpoint.to_string(),
        reason,
    }
}
