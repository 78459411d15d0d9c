//! Assembling a streamed answer from `chat.completion.chunk` events.

use std::time::Instant;

use eventsource_stream::{EventStreamError, Eventsource};
use futures_util::StreamExt;
use serde_json::Value;

use super::error::{server_message, truncate};
use super::reply::{arguments, finish_reason, string, usage};
use super::retry::Failure;
use super::{Client, ClientError, ClientEvent, Completion};
use crate::{ToolCall, Usage};

/// Reads the SSE body of `resp` to the end, reporting text as it arrives.
///
/// Every chunk must come within `idle`, and before the answer starts, not
/// after `deadline`. A stream that stops before `[DONE]` is accepted once a
/// `finish_reason` was seen (some servers drop the connection right after
/// it); otherwise it is a cut stream, worth a retry. So is an `error` event:
/// servers report their own failures mid-stream that way.
pub(crate) async fn read(
    client: &Client,
    resp: reqwest::Response,
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
    let mut events = resp.bytes_stream().eventsource();
    let mut asm = Assembler::default();
    loop {
        let waited = if asm.started() {
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
                let reason = "stream ended before [DONE] and without a finish_reason".to_string();
                return Err(Failure::transient(stream_error(reason)));
            }
        };
        let data = event.data.trim();
        if data == "[DONE]" {
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
            if super::attempt::overflows_context(&message) {
                return Err(Failure::fatal(ClientError::ContextOverflow {
                    endpoint: endpoint.to_string(),
                    status: 200,
                    body: truncate(&message, 400),
                }));
            }
            let reason = format!("server error in stream: {}", truncate(&message, 400));
            return Err(Failure::transient(stream_error(reason)));
        }
        asm.push(&chunk, on_event);
    }
}

/// The answer so far.
#[derive(Debug, Default)]
pub(crate) struct Assembler {
    content: String,
    calls: Vec<PartialCall>,
    usage: Option<Usage>,
    finish_reason: Option<String>,
}

/// A tool call whose pieces are still arriving.
#[derive(Debug)]
struct PartialCall {
    index: u64,
    id: String,
    name: String,
    arguments: String,
}

impl Assembler {
    /// Whether the model said it was done (a `finish_reason` was seen).
    pub fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Whether the answer started: text or a tool call arrived.
    pub fn started(&self) -> bool {
        !self.content.is_empty() || !self.calls.is_empty()
    }

    /// Adds one chunk: text is reported and appended, tool-call deltas are
    /// merged by `index`, `usage` and `finish_reason` recorded. Unknown
    /// fields (`reasoning_content`, `logprobs`, …) are ignored.
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

    /// Merges one `tool_calls[]` delta into the call with the same `index`.
    fn merge_call(&mut self, delta: &Value) {
        let id = string(delta.get("id"));
        let index = match delta.get("index").and_then(Value::as_u64) {
            Some(i) => i,
            // Without an index (a few servers omit it), a new id starts a new
            // call and anything else continues the latest one.
            None => match self.calls.iter().find(|c| !id.is_empty() && c.id == id) {
                Some(c) => c.index,
                None if id.is_empty() && !self.calls.is_empty() => self.calls.last().unwrap().index,
                None => self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0),
            },
        };
        let pos = match self.calls.iter().position(|c| c.index == index) {
            Some(pos) => pos,
            None => {
                self.calls.push(PartialCall {
                    index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
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

    /// The assembled answer, calls in index order.
    pub fn finish(mut self) -> Completion {
        self.calls.sort_by_key(|c| c.index);
        let tool_calls = self
            .calls
            .into_iter()
            .map(|c| {
                let id = if c.id.is_empty() {
                    format!("call_{}", c.index)
                } else {
                    c.id
                };
                ToolCall::new(id, c.name, c.arguments)
            })
            .collect();
        Completion {
            content: self.content,
            tool_calls,
            usage: self.usage,
            finish_reason: self.finish_reason,
        }
    }
}
