//! Assembling a streamed answer from `chat.completion.chunk` events.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::StreamExt;
use serde_json::Value;

use super::error::{server_message, truncate};
use super::reply::{arguments, finish_reason, string, unique_ids, usage};
use super::retry::Failure;
use super::{Client, ClientError, ClientEvent, Completion};
use crate::{ToolCall, Usage};

/// How long to wait, once a `finish_reason` was seen, for the usage chunk
/// that may follow: a server that sends neither `[DONE]` nor closes the
/// stream must not hold a finished answer for the whole idle timeout.
const AFTER_FINISH: Duration = Duration::from_secs(2);

/// Reads the SSE body of `resp` to the end, reporting text as it arrives.
///
/// Every chunk must come within `idle`, and before the answer starts, not
/// after `deadline`. A stream that stops before `[DONE]` is accepted once a
/// `finish_reason` was seen (some servers drop the connection right after
/// it, or go quiet: then [`AFTER_FINISH`] is waited, not `idle`); otherwise
/// it is a cut stream, worth a retry. So is an error the server reports
/// mid-stream (an `error` object in a chunk, an `error` event, or
/// llama.cpp's `error:` line): its message is what the user sees.
pub(crate) async fn read(
    client: &Client,
    resp: reqwest::Response,
    tools_sent: bool,
    deadline: Instant,
    on_event: &mut (dyn FnMut(ClientEvent<'_>) + Send),
) -> Result<Completion, Failure> {
    let endpoint = client.endpoint.as_str();
    let idle = client.cfg.idle_timeout;
    let stream_error = |reason: String| ClientError::Stream {
        endpoint: endpoint.to_string(),
        reason,
        attempts: 0,
        earlier: Vec::new(),
    };
    let server_error = |message: &str| {
        if super::attempt::overflows_context(message) {
            return Failure::fatal(ClientError::ContextOverflow {
                endpoint: endpoint.to_string(),
                status: 200,
                body: truncate(message, 400),
            });
        }
        let reason = format!("server error in stream: {}", truncate(message, 400));
        Failure {
            tool_parse: tools_sent && super::attempt::fails_tool_parsing(message),
            ..Failure::transient(stream_error(reason))
        }
    };
    // The SSE parser drops fields it does not know, llama.cpp's `error:`
    // among them: the raw bytes are watched for it on the way in.
    let dropped = Arc::new(Mutex::new(ErrorLines::default()));
    let mut events = resp
        .bytes_stream()
        .inspect({
            let dropped = dropped.clone();
            move |bytes| {
                if let Ok(bytes) = bytes {
                    lock(&dropped).feed(bytes);
                }
            }
        })
        .eventsource();
    let dropped_error = || lock(&dropped).last.take();
    let mut asm = Assembler::default();
    loop {
        let waited = if asm.finished() {
            tokio::time::timeout(AFTER_FINISH.min(idle), events.next())
                .await
                .map_err(|_| "stream")
        } else if asm.started() {
            tokio::time::timeout(idle, events.next())
                .await
                .map_err(|_| "stream")
        } else {
            super::attempt::within(idle, deadline, events.next())
                .await
                .map_err(|what| if what == "request" { what } else { "stream" })
        };
        let next = match waited {
            Ok(next) => next,
            Err(_) if asm.finished() => return Ok(asm.finish()),
            Err(what) => {
                if let Some(message) = dropped_error() {
                    return Err(server_error(&message));
                }
                return Err(Failure::transient(ClientError::Timeout {
                    endpoint: endpoint.to_string(),
                    what,
                    after: if what == "request" {
                        client.cfg.request_timeout
                    } else {
                        idle
                    },
                    attempts: 0,
                    earlier: Vec::new(),
                }));
            }
        };
        let event = match next {
            Some(Ok(event)) => event,
            Some(Err(EventStreamError::Transport(e))) => {
                if asm.finished() {
                    return Ok(asm.finish());
                }
                if let Some(message) = dropped_error() {
                    return Err(server_error(&message));
                }
                let reason = format!("stream cut: {}", super::request::describe(&e));
                return Err(Failure::transient(stream_error(reason)));
            }
            Some(Err(e)) => {
                return Err(Failure::fatal(stream_error(format!(
                    "malformed event stream: {e}"
                ))));
            }
            None if asm.finished() => return Ok(asm.finish()),
            None => {
                if let Some(message) = dropped_error() {
                    return Err(server_error(&message));
                }
                let reason = "stream ended before [DONE] and without a finish_reason".to_string();
                return Err(Failure::transient(stream_error(reason)));
            }
        };
        let data = event.data.trim();
        if event.event == "error" {
            return Err(server_error(&message_of(data)));
        }
        if data == "[DONE]" {
            // llama.cpp ends with `[DONE]` after its `error:` line too.
            if !asm.finished()
                && let Some(message) = dropped_error()
            {
                return Err(server_error(&message));
            }
            return Ok(asm.finish());
        }
        if data.is_empty() {
            continue;
        }
        let chunk: Value = serde_json::from_str(data).map_err(|e| {
            let reason = format!("malformed chunk ({e}): {}", truncate(data, 200));
            Failure::fatal(stream_error(reason))
        })?;
        if chunk.get("error").is_some_and(|e| !e.is_null()) {
            let message = server_message(&chunk).unwrap_or_default();
            return Err(server_error(&message));
        }
        asm.push(&chunk, on_event);
    }
}

/// The message of an error payload: the server's own words when it is JSON
/// in a known shape, else the payload itself.
fn message_of(payload: &str) -> String {
    let payload = payload.trim();
    serde_json::from_str::<Value>(payload)
        .ok()
        .and_then(|v| server_message(&v))
        .unwrap_or_else(|| payload.to_string())
}

/// Locks, ignoring poisoning (the data is a plain record).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Longest `error:` line kept, in bytes.
const ERROR_LINE_MAX: usize = 16 * 1024;

/// Watches raw SSE bytes for `error: …` lines, which llama.cpp uses to report
/// a failure mid-stream and which SSE parsers drop (`error` is no SSE field).
#[derive(Debug, Default)]
struct ErrorLines {
    /// The start of the current line; only an `error:` line is kept whole.
    line: Vec<u8>,
    /// The payload of the last complete `error:` line not yet taken.
    last: Option<String>,
}

impl ErrorLines {
    fn feed(&mut self, bytes: &[u8]) {
        const FIELD: &[u8] = b"error:";
        for &b in bytes {
            if b == b'\n' || b == b'\r' {
                if let Some(payload) = self.line.strip_prefix(FIELD) {
                    self.last = Some(message_of(&String::from_utf8_lossy(payload)));
                }
                self.line.clear();
            } else if self.line.len() < FIELD.len()
                || (self.line.starts_with(FIELD) && self.line.len() < ERROR_LINE_MAX)
            {
                self.line.push(b);
            }
        }
    }
}

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    content: String,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    /// A chunk with a choice arrived (text, a call, or reasoning).
    streaming: bool,
}

/// A tool call whose pieces are still arriving.
#[derive(Debug)]
struct PartialCall {
    /// Where the call goes in the answer; unique.
    index: u64,
    /// The `index` the server gave, which several calls may share.
    wire: Option<u64>,
    id: String,
    name: String,
    arguments: String,
}

impl Assembler {
    /// Whether the model said it was done (a `finish_reason` was seen).
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Whether the answer started: a chunk with a choice arrived. Reasoning
    /// counts: a model that thinks aloud for minutes is answering.
    pub fn started(&self) -> bool {
        self.streaming
    }

    /// Adds one chunk: text is reported and appended, tool-call deltas are
    /// merged by `index` and `id`, `usage` and `finish_reason` recorded.
    /// Reasoning (`reasoning_content`, `reasoning`) only shows the answer
    /// is under way; other unknown fields (`logprobs`, …) are ignored.
    pub fn push(&mut self, chunk: &Value, on_event: &mut (dyn FnMut(ClientEvent<'_>) + Send)) {
        if let Some(u) = usage(chunk) {
            self.usage = Some(u);
        }
        // The usage chunk of `include_usage` has an empty `choices`.
        let Some(choice) = chunk
            .get("choices")
            .and_then(Value::as_array)
            .and_then(|c| c.first())
        else {
            return;
        };
        self.streaming = true;
        let delta = choice.get("delta").unwrap_or(&Value::Null);
        if let Some(text) = delta.get("content").and_then(Value::as_str)
            && !text.is_empty()
        {
            on_event(ClientEvent::Text(text));
            self.content.push_str(text);
        }
        if let Some(calls) = delta.get("tool_calls").and_then(Value::as_array) {
            for call in calls {
                self.merge_call(call);
            }
        }
        if let Some(reason) = finish_reason(choice) {
            self.finish_reason = Some(reason);
        }
    }

    /// Merges one `tool_calls[]` delta into the call it continues.
    ///
    /// Calls are told apart by `index`, except that a new `id` starts a new
    /// call even at an index in use: some servers (sglang, LiteLLM bridges)
    /// send every parallel call at index 0. Deltas without an id continue
    /// the latest call at their index.
    fn merge_call(&mut self, delta: &Value) {
        let id = string(delta.get("id"));
        let wire = delta.get("index").and_then(Value::as_u64);
        let found = match wire {
            Some(_) => self.calls.iter().rposition(|c| c.wire == wire),
            // Without an index (a few servers omit it), a new id starts a new
            // call and anything else continues the latest one.
            None if id.is_empty() => self.calls.len().checked_sub(1),
            None => self.calls.iter().position(|c| c.id == id),
        };
        let pos = match found {
            Some(pos)
                if id.is_empty() || self.calls[pos].id.is_empty() || self.calls[pos].id == id =>
            {
                pos
            }
            _ => self.start_call(wire),
        };
        let call = &mut self.calls[pos];
        let repeated_id = !id.is_empty() && id == call.id;
        if call.id.is_empty() {
            call.id = id;
        }
        let function = delta.get("function").unwrap_or(&Value::Null);
        let name = string(function.get("name"));
        // Names may arrive in pieces, but some servers repeat the whole name
        // (with the id) in every delta: a piece arriving once the arguments
        // started, or equal to the name so far under the same id, is a repeat.
        let repeat = !call.arguments.is_empty() || (repeated_id && name == call.name);
        if !repeat {
            call.name.push_str(&name);
        }
        call.arguments
            .push_str(&arguments(function.get("arguments")));
    }

    /// Adds an empty call and returns its position: at the server's index
    /// when that is free, else after every call so far.
    fn start_call(&mut self, wire: Option<u64>) -> usize {
        let next = self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0);
        let index = match wire {
            Some(i) if self.calls.iter().all(|c| c.index != i) => i,
            _ => next,
        };
        self.calls.push(PartialCall {
            index,
            wire,
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
        self.calls.len() - 1
    }

    /// The assembled answer, calls in index order.
    pub fn finish(mut self) -> Completion {
        self.calls.sort_by_key(|c| c.index);
        let mut tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|c| ToolCall::new(c.id, c.name, c.arguments))
            .collect();
        unique_ids(&mut tool_calls);
        Completion {
            content: self.content,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
        }
    }
}
