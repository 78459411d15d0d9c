//! What goes in and comes out of [`Client::complete`](super::Client::complete).

use std::time::Duration;

use crate::{Message, ToolCall, ToolDef, Usage};

/// One chat-completions request.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    /// The conversation so far.
    pub messages: &'a [Message],
    /// Tools offered to the model; when empty the `tools` field is omitted,
    /// so that servers without tool support accept the request.
    pub tools: &'a [ToolDef],
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
