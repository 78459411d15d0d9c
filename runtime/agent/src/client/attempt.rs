//! One HTTP exchange, and the sorting of its failures into retryable or not.

use std::time::{Duration, SystemTime};

use reqwest::header::{ACCEPT, CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;

use super::error::excerpt;
use super::request::describe;
use super::retry::{Failure, parse_retry_after, retryable_status};
use super::{Client, ClientError, ClientEvent, Completion};

/// Sends the request once and reads the whole answer.
pub(crate) async fn run(
    client: &Client,
    body: &[u8],
    tools_sent: bool,
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
        .body(body.to_vec());
    if let Some(key) = &cfg.api_key {
        builder = builder.bearer_auth(key);
    }
    let idle = cfg.idle_timeout;
    let resp = match tokio::time::timeout(idle, builder.send()).await {
        Ok(Ok(resp)) => resp,
        Ok(Err(e)) => return Err(Failure::transient(send_error(client, &e))),
        Err(_) => return Err(Failure::transient(timeout(endpoint, "response", idle))),
    };
    let status = resp.status().as_u16();
    if !resp.status().is_success() {
        return Err(status_failure(client, resp, tools_sent).await);
    }
    let is_json = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().starts_with("application/json"));
    if cfg.stream && !is_json {
        return super::sse::read(resp, endpoint, idle, on_event).await;
    }
    let text = read_body(resp, endpoint, idle).await?;
    let value: Value = serde_json::from_str(&text).map_err(|e| {
        Failure::fatal(malformed(
            endpoint,
            format!(
                "http {status} response is not json ({e}): {}",
                excerpt(&text, cfg.api_key.as_deref())
            ),
        ))
    })?;
    if value.get("error").is_some_and(|e| !e.is_null()) {
        let reason = format!(
            "error in response: {}",
            excerpt(&text, cfg.api_key.as_deref())
        );
        return Err(Failure::fatal(malformed(endpoint, reason)));
    }
    let completion = super::reply::parse_completion(&value)
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
    resp: reqwest::Response,
    endpoint: &str,
    idle: Duration,
) -> Result<String, Failure> {
    match tokio::time::timeout(idle, resp.text()).await {
        Ok(Ok(text)) => Ok(text),
        Ok(Err(e)) => Err(Failure::transient(ClientError::Stream {
            endpoint: endpoint.to_string(),
            reason: format!("response body cut: {}", describe(&e)),
            attempts: 0,
        })),
        Err(_) => Err(Failure::transient(timeout(endpoint, "response", idle))),
    }
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
    let body = excerpt(&text, client.cfg.api_key.as_deref());
    if tools_sent && matches!(status, 400 | 404 | 422) && rejects_tools(&text) {
        return Failure::fatal(ClientError::ToolsRejected {
            endpoint,
            status,
            body,
        });
    }
    let error = ClientError::Status {
        endpoint,
        status,
        body,
        attempts: 0,
    };
    if retryable_status(status) {
        Failure {
            error,
            retry: true,
            retry_after,
        }
    } else {
        Failure::fatal(error)
    }
}

/// Whether an error body says the server cannot take `tools` (llama.cpp
/// without `--jinja`, Ollama "does not support tools", vLLM without a tool
/// parser, DeepSeek "does not support Function Calling", …). Complaints
/// about the conversation's tool messages mention tools too, but switching
/// protocols would not fix them.
fn rejects_tools(body: &str) -> bool {
    let body = body.to_lowercase();
    let mentions = body.contains("tool") || body.contains("function");
    let about_messages = [
        "tool_call_id",
        "role 'tool'",
        "role \"tool\"",
        "tool message",
    ]
    .iter()
    .any(|m| body.contains(m));
    mentions && !about_messages
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
    }
}

fn timeout(endpoint: &str, what: &'static str, after: Duration) -> ClientError {
    ClientError::Timeout {
        endpoint: endpoint.to_string(),
        what,
        after,
        attempts: 0,
    }
}

fn malformed(endpoint: &str, reason: String) -> ClientError {
    ClientError::Malformed {
        endpoint: endpoint.to_string(),
        reason,
    }
}
