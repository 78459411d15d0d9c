//! What can go wrong talking to the server, worded for a human.

use std::fmt;
use std::time::Duration;

use serde_json::Value;

/// Longest body excerpt kept in an error, in characters.
const EXCERPT_CHARS: usize = 400;

/// A failed completion. Every message names the endpoint; none contains the
/// API key. After retries, `earlier` holds the cause of each failed attempt
/// but the last, so that the message names every one.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The server answered with an error status (after retries for 408, 409,
    /// 429 and 5xx). `body` is the server's `error.message` when it sent
    /// JSON, else an excerpt of the body; `hint` says what to check (the
    /// model name after a 404, the key variable after a 401).
    #[error("{endpoint} answered http {status}{}: {body}{hint}", Attempts(*.attempts, .earlier))]
    Status {
        endpoint: String,
        status: u16,
        body: String,
        hint: String,
        attempts: u32,
        earlier: Vec<String>,
    },
    /// No connection (`"connect"`), no response head (`"response"`), no
    /// stream chunk (`"stream"`) within `after`, or no answer within the
    /// request's deadline (`"request"`). The message says what the silence
    /// means and which setting to raise.
    #[error("{endpoint}: {what} timed out after {}{}{}", Secs(*.after), Attempts(*.attempts, .earlier), timeout_hint(.what))]
    Timeout {
        endpoint: String,
        what: &'static str,
        after: Duration,
        attempts: u32,
        earlier: Vec<String>,
    },
    /// The server could not be reached.
    #[error("cannot connect to {endpoint}{}: {reason}", Attempts(*.attempts, .earlier))]
    Connect {
        endpoint: String,
        reason: String,
        attempts: u32,
        earlier: Vec<String>,
    },
    /// The stream was cut (after all retries), malformed, or carried an
    /// `error` object.
    #[error("stream from {endpoint} failed{}: {reason}", Attempts(*.attempts, .earlier))]
    Stream {
        endpoint: String,
        reason: String,
        attempts: u32,
        earlier: Vec<String>,
    },
    /// The server refused the `tools` field (400/404/422 mentioning tools
    /// or functions), or failed twice to parse the model's tool calls (500):
    /// the caller should switch to the text tool protocol. Never retried.
    #[error("{endpoint} rejected native tool calling (http {status}): {body}")]
    ToolsRejected {
        endpoint: String,
        status: u16,
        body: String,
    },
    /// The server failed twice on requests offering native tool calls (an
    /// error status of 500 or more, an error sent in the stream, a reply
    /// cut in a call): the caller should stop offering them. `causes` are
    /// the failures, in order. Only for a request that said it can do
    /// without tools.
    #[error(
        "{endpoint} failed twice while the model answered with native tools offered ({})",
        .causes.join("; ")
    )]
    ToolsFailing {
        endpoint: String,
        causes: Vec<String>,
    },
    /// The request does not fit in the model's context window (a 400 saying
    /// so): the conversation must be shortened. Never retried as is.
    #[error(
        "{endpoint}: the conversation exceeds the model's context window (http {status}): {body}"
    )]
    ContextOverflow {
        endpoint: String,
        status: u16,
        body: String,
    },
    /// A 200 whose body is not chat completions (an HTML page, plain text):
    /// the base URL points somewhere else. Never retried.
    #[error(
        "{endpoint} answered {found}: this is not an OpenAI-compatible endpoint: check the \
         base URL (it usually ends in /v1, e.g. http://127.0.0.1:8080/v1)"
    )]
    NotOpenAi { endpoint: String, found: String },
    /// The configuration or a response could not be understood.
    #[error("{endpoint}: {reason}")]
    Malformed { endpoint: String, reason: String },
}

impl ClientError {
    /// The server refused the credentials (401 or 403): retrying cannot help,
    /// the API key has to change.
    pub fn is_auth(&self) -> bool {
        matches!(
            self,
            ClientError::Status {
                status: 401 | 403,
                ..
            }
        )
    }

    /// Records how many attempts were made before giving up, and the causes
    /// of the failed attempts before the last.
    pub(crate) fn with_attempts(mut self, n: u32, causes: Vec<String>) -> ClientError {
        match &mut self {
            ClientError::Status {
                attempts, earlier, ..
            }
            | ClientError::Timeout {
                attempts, earlier, ..
            }
            | ClientError::Connect {
                attempts, earlier, ..
            }
            | ClientError::Stream {
                attempts, earlier, ..
            } => {
                *attempts = n;
                *earlier = causes;
            }
            ClientError::ToolsRejected { .. }
            | ClientError::ToolsFailing { .. }
            | ClientError::ContextOverflow { .. }
            | ClientError::NotOpenAi { .. }
            | ClientError::Malformed { .. } => {}
        }
        self
    }

    /// The error without the endpoint, for [`ClientEvent::Retry`](super::ClientEvent)
    /// reasons: the caller knows where it is talking to.
    pub(crate) fn brief(&self) -> String {
        match self {
            ClientError::Status { status, body, .. }
            | ClientError::ToolsRejected { status, body, .. }
            | ClientError::ContextOverflow { status, body, .. } => format!("http {status}: {body}"),
            ClientError::Timeout { what, after, .. } => {
                format!("{what} timed out after {}", Secs(*after))
            }
            ClientError::Connect { reason, .. } => format!("cannot connect: {reason}"),
            ClientError::Stream { reason, .. } | ClientError::Malformed { reason, .. } => {
                reason.clone()
            }
            ClientError::ToolsFailing { causes, .. } => causes.join("; "),
            ClientError::NotOpenAi { found, .. } => {
                format!("not an OpenAI-compatible answer: {found}")
            }
        }
    }
}

/// What a silence means, and what to change.
fn timeout_hint(what: &str) -> &'static str {
    match what {
        "request" => " (raise `request_timeout` in [model] for a slow server)",
        // The server took the request and went quiet mid-answer.
        "stream" => {
            ": the server sent nothing for that long while the model was answering (llama-server \
             sends nothing while the model writes a tool call); raise `idle_timeout` in [model] \
             if its calls take longer"
        }
        "response" => {
            ": no answer began in that time (the server is busy, or, without streaming, \
             generates the whole answer first); raise `idle_timeout` in [model] for a slow model"
        }
        _ => "",
    }
}

/// ` after N attempts` when more than one attempt was made, with the causes
/// of the attempts before the last: ` after 3 attempts (attempt 1: http 500:
/// boom; attempt 2: stream cut)`.
struct Attempts<'a>(u32, &'a [String]);

impl fmt::Display for Attempts<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 <= 1 {
            return Ok(());
        }
        write!(f, " after {} attempts", self.0)?;
        if !self.1.is_empty() {
            let causes: Vec<String> = (1..)
                .zip(self.1)
                .map(|(i, c)| format!("attempt {i}: {}", truncate(c, 160)))
                .collect();
            write!(f, " ({})", causes.join("; "))?;
        }
        Ok(())
    }
}

/// A duration as a person would say it: `300ms`, `10s`, `1.5s`.
struct Secs(Duration);

impl fmt::Display for Secs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms < 1000 {
            write!(f, "{ms}ms")
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{:.1}s", self.0.as_secs_f64())
        }
    }
}

/// What to show of an error body: the server's own message when the body is
/// JSON (`error.message`, `error` as a string, `message`, `detail`), else the
/// body itself; whitespace-collapsed, at most 400 characters, with the API
/// key (should a server echo it) blanked out.
pub(crate) fn excerpt(body: &str, api_key: Option<&str>) -> String {
    let message = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|v| server_message(&v))
        .unwrap_or_else(|| body.to_string());
    let mut text = message.split_whitespace().collect::<Vec<_>>().join(" ");
    if let Some(key) = api_key.filter(|k| !k.is_empty()) {
        text = text.replace(key, "[redacted]");
    }
    if text.is_empty() {
        return "(empty body)".into();
    }
    truncate(&text, EXCERPT_CHARS)
}

/// The human-readable message of a JSON error body, in the shapes used by
/// OpenAI, llama.cpp, vLLM (`{"object":"error","message":…}`), Ollama
/// (`{"error":"…"}`) and FastAPI (`{"detail":…}`).
pub(crate) fn server_message(v: &Value) -> Option<String> {
    let as_text = |v: &Value| match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        other => Some(other.to_string()),
    };
    if let Some(err) = v.get("error") {
        if let Some(m) = err.get("message").and_then(as_text) {
            return Some(m);
        }
        return as_text(err);
    }
    v.get("message")
        .and_then(as_text)
        .or_else(|| v.get("detail").and_then(as_text))
}

/// At most `max` characters of `s`, ending in `…` when cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
