//! What goes in and comes out of [`Client::complete`](super::Client::complete).

use std::time::Duration;

use serde_json::Value;

use crate::{Message, ToolCall, ToolDef, Usage};

/// One chat-completions request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// Tools offered to the model; when empty the `tools` field is omitted,
    /// so that servers without tool support accept the request.
    pub tools: &'a [ToolDef],
    /// The reply constrained by the server to one JSON value matching a
    /// schema (structured output), in the field the server takes.
    pub format: Option<(Structured, &'a Value)>,
    /// The most tokens the server may generate (`max_tokens`): a bound on
    /// a runaway generation. A server that refuses the field gets the
    /// request again without it, and never again from this client.
    pub max_tokens: Option<u64>,
    /// The caller can do without native tools: two failures of a request
    /// carrying them (a 5xx, an error sent in the stream, a reply cut in
    /// a call) end it with [`ClientError::ToolsFailing`](super::ClientError)
    /// instead of more retries.
    pub tools_optional: bool,
}

impl<'a> Request<'a> {
    /// A request of `messages` offering `tools`, nothing else set.
    pub fn new(messages: &'a [Message], tools: &'a [ToolDef]) -> Request<'a> {
        Request {
            messages,
            tools,
            format: None,
            max_tokens: None,
            tools_optional: false,
        }
    }
}

/// How a server constrains a reply to a JSON schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Structured {
    /// `response_format: {"type": "json_schema", ...}`: OpenAI, llama.cpp,
    /// vLLM, recent Ollama.
    ResponseFormat,
    /// `format: SCHEMA`: Ollama.
    Format,
}

impl Structured {
    /// The name used in the probe cache and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Structured::ResponseFormat => "response_format",
            Structured::Format => "format",
        }
    }

    /// The inverse of [`Structured::as_str`].
    pub fn parse(s: &str) -> Option<Structured> {
        match s {
            "response_format" => Some(Structured::ResponseFormat),
            "format" => Some(Structured::Format),
            _ => None,
        }
    }
}

/// Progress reported while a completion runs.
#[derive(Debug, Clone, PartialEq)]
pub enum ClientEvent<'a> {
    /// A piece of the answer's text, as soon as it arrives (the whole text
    /// at once when not streaming).
    Text(&'a str),
    /// The attempt failed and attempt number `attempt` (2 for the first
    /// retry) starts after `wait`. The whole answer is asked for again, but
    /// text already reported is not reported twice: the new attempt's text
    /// is reported from where the earlier one stopped.
    Retry {
        attempt: u32,
        wait: Duration,
        reason: String,
    },
    /// A retried answer differs from the text already reported: what was
    /// shown is void, and the new answer follows from its start.
    Restart,
}

/// The model's whole answer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Completion {
    /// The text (empty when the model only called tools).
    pub content: String,
    /// Tool calls in index order, arguments as the model wrote them (possibly
    /// malformed JSON). Each has an id of its own: the server's, or
    /// `call_<n>` when it sent none or one already taken.
    pub tool_calls: Vec<ToolCall>,
    /// Token counts, when the server reported them.
    pub usage: Option<Usage>,
    /// Why the model stopped (`stop`, `tool_calls`, `length`, …).
    pub finish_reason: Option<String>,
}
