//! Reading a streamed answer: the event stream ([`events`](super::events))
//! of `chat.completion.chunk` payloads, assembled into one [`Completion`].
//!
//! [`Reading`] is the whole of it without the network and the clock; the
//! request's [`read`] feeds it the body as it arrives, within the time
//! limits, and [`read_sse_body`] a body already received.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

use super::error::{server_message, truncate};
use super::events::{Decoder, Event};
use super::reply::{arguments, finish_reason, string, unique_ids, usage};
use super::retry::Failure;
use super::verdict;
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
/// it is a cut stream, worth a retry (and, cut in a tool call, a failure
/// of native tool calls). An error the server reports mid-stream (an
/// `error` object in a chunk, an `error` event, or llama.cpp's `error:`
/// line) is judged as the status its code stands for: retried or not as
/// that status would be; its message is what the user sees.
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
    let server_error = |(status, message): (u16, String)| {
        verdict::ServerError {
            endpoint,
            status,
            message: &message,
            body: truncate(&message, 400),
            in_stream: true,
            tools_sent,
        }
        .failure(None, |_| {
            stream_error(Stop::Server((status, message.clone())).to_string())
        })
    };
    // A stream cut while a tool call was coming counts against native calls.
    let cut = |reason: String, in_call: bool| Failure {
        tools_failure: tools_sent && in_call,
        ..Failure::transient(stream_error(reason))
    };
    let fail = |stop: Stop, in_call: bool| match stop {
        Stop::Server(error) => server_error(error),
        Stop::Malformed(_) => Failure::fatal(stream_error(stop.to_string())),
        Stop::Cut => cut(stop.to_string(), in_call),
    };
    let mut body = resp.bytes_stream();
    let mut reading = Reading::default();
    loop {
        let waited = if reading.finished() {
            tokio::time::timeout(AFTER_FINISH.min(idle), body.next())
                .await
                .map_err(|_| "stream")
        } else if reading.started() {
            tokio::time::timeout(idle, body.next())
                .await
                .map_err(|_| "stream")
        } else {
            super::attempt::within(idle, deadline, body.next())
                .await
                .map_err(|what| if what == "request" { what } else { "stream" })
        };
        let next = match waited {
            Ok(next) => next,
            Err(_) if reading.finished() => return Ok(reading.finish()),
            Err(what) => {
                if let Some(error) = reading.take_error() {
                    return Err(server_error(error));
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
        match next {
            Some(Ok(bytes)) => match reading.feed(&bytes, on_event) {
                Ok(None) => {}
                Ok(Some(done)) => return Ok(done),
                Err(stop) => return Err(fail(stop, reading.in_call())),
            },
            Some(Err(e)) => {
                if reading.finished() {
                    return Ok(reading.finish());
                }
                if let Some(error) = reading.take_error() {
                    return Err(server_error(error));
                }
                let reason = format!("stream cut: {}", super::request::describe(&e));
                return Err(cut(reason, reading.in_call()));
            }
            None => {
                let in_call = reading.in_call();
                return reading.end().map_err(|stop| fail(stop, in_call));
            }
        }
    }
}

/// Reads a streamed answer from a body already received, in the pieces it
/// came in: what a streaming request makes of it, without the network and
/// the clock (for tests and fuzzing). The error is the reason the request
/// would report.
pub fn read_sse_body<B: AsRef<[u8]>>(
    pieces: impl IntoIterator<Item = B>,
    on_event: &mut (dyn FnMut(ClientEvent<'_>) + Send),
) -> Result<Completion, String> {
    let mut reading = Reading::default();
    for piece in pieces {
        match reading.feed(piece.as_ref(), on_event) {
            Ok(None) => {}
            Ok(Some(done)) => return Ok(done),
            Err(stop) => return Err(stop.to_string()),
        }
    }
    reading.end().map_err(|stop| stop.to_string())
}

/// Why a stream gives no answer.
#[derive(Debug)]
enum Stop {
    /// The server said it failed: the status its error stands for, and
    /// its message.
    Server((u16, String)),
    /// A chunk that is not JSON.
    Malformed(String),
    /// The body ended before the answer did.
    Cut,
}

impl std::fmt::Display for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stop::Server((status, message)) => {
                write!(
                    f,
                    "server error in stream ({status}): {}",
                    truncate(message, 400)
                )
            }
            Stop::Malformed(reason) => f.write_str(reason),
            Stop::Cut => f.write_str("stream ended before [DONE] and without a finish_reason"),
        }
    }
}

/// A stream being read: its events decoded, its chunks assembled.
#[derive(Debug, Default)]
struct Reading {
    decoder: Decoder,
    asm: Assembler,
    /// Events decoded and not yet handled (kept for its allocation).
    events: Vec<Event>,
}

impl Reading {
    fn finished(&self) -> bool {
        self.asm.finished()
    }

    fn started(&self) -> bool {
        self.asm.started()
    }

    /// Whether a tool call was coming: a stream that stops now is cut in it.
    fn in_call(&self) -> bool {
        self.asm.in_call()
    }

    /// The status and message of the last `error:` line not yet taken.
    fn take_error(&mut self) -> Option<(u16, String)> {
        self.decoder.take_error().map(|payload| error_of(&payload))
    }

    /// Handles the next piece of the body; the answer once `[DONE]` came.
    fn feed(
        &mut self,
        bytes: &[u8],
        on_event: &mut (dyn FnMut(ClientEvent<'_>) + Send),
    ) -> Result<Option<Completion>, Stop> {
        let mut events = std::mem::take(&mut self.events);
        self.decoder.feed(bytes, &mut events);
        for event in events.drain(..) {
            let data = event.data.trim();
            if event.event == "error" {
                return Err(Stop::Server(error_of(data)));
            }
            if data == "[DONE]" {
                // llama.cpp ends with `[DONE]` after its `error:` line too.
                if !self.asm.finished()
                    && let Some(error) = self.take_error()
                {
                    return Err(Stop::Server(error));
                }
                return Ok(Some(std::mem::take(&mut self.asm).finish()));
            }
            if data.is_empty() {
                continue;
            }
            let chunk: Value = serde_json::from_str(data).map_err(|e| {
                Stop::Malformed(format!("malformed chunk ({e}): {}", truncate(data, 200)))
            })?;
            if chunk.get("error").is_some_and(|e| !e.is_null()) {
                return Err(Stop::Server(error_in(&chunk)));
            }
            self.asm.push(&chunk, on_event);
        }
        self.events = events;
        Ok(None)
    }

    /// The body ended: the answer, if the model finished it.
    fn end(mut self) -> Result<Completion, Stop> {
        if self.finished() {
            return Ok(self.finish());
        }
        match self.take_error() {
            Some(error) => Err(Stop::Server(error)),
            None => Err(Stop::Cut),
        }
    }

    fn finish(self) -> Completion {
        self.asm.finish()
    }
}

/// The status an error payload stands for and its message: the server's
/// own words when it is JSON in a known shape, else the payload itself.
fn error_of(payload: &str) -> (u16, String) {
    let payload = payload.trim();
    match serde_json::from_str::<Value>(payload) {
        Ok(v) if v.is_object() => error_in(&v),
        _ => (
            verdict::stream_status(&Value::Null, payload),
            payload.to_string(),
        ),
    }
}

/// The status and message of an error object, or of a chunk holding one
/// under `error`.
fn error_in(v: &Value) -> (u16, String) {
    let error = v.get("error").filter(|e| e.is_object()).unwrap_or(v);
    let message = server_message(v).unwrap_or_default();
    (verdict::stream_status(error, &message), message)
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

    /// Whether a tool call was coming: a stream that stops now is cut in it.
    pub fn in_call(&self) -> bool {
        !self.calls.is_empty()
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
