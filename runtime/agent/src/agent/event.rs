//! What a turn reports while it runs, and why a task can stop.

use std::time::Duration;

use serde_json::Value;

use crate::client::ClientError;
use crate::{ToolResult, Usage};

/// What happens during a turn, for rendering.
#[derive(Debug)]
pub enum Event<'a> {
    /// Answer text as it streams.
    Text(&'a str),
    /// A failed request is retried after `wait`.
    Retry {
        attempt: u32,
        wait: Duration,
        reason: &'a str,
    },
    /// A retried answer differs from the text already shown: that text is
    /// void and the answer starts again.
    Restart,
    /// The final answer was cut off at the model's output token limit.
    Cut,
    /// Older turns were compacted to fit the context window (estimated
    /// tokens before and after).
    Compacted { before: u64, after: u64 },
    /// The session moved to another tool-call protocol (`json` or
    /// `text`), used from now on, and why.
    Protocol { protocol: &'a str, reason: &'a str },
    /// Something the user should know about how the turn runs.
    Notice(&'a str),
    /// The model kept repeating calls that had already run: warden ended
    /// the task, which changed these paths (the outcome the run reports).
    Stopped { changed: &'a [String] },
    /// Waiting for the model (for a spinner).
    Thinking,
    /// A tool call starts: its arguments as parsed once, or as the model
    /// wrote them when they are unusable (the call does not run).
    ToolStart {
        id: &'a str,
        name: &'a str,
        args: Result<&'a Value, &'a str>,
    },
    /// A tool call finished.
    ToolEnd {
        id: &'a str,
        name: &'a str,
        args: Result<&'a Value, &'a str>,
        result: &'a ToolResult,
    },
    /// One model call answered, with its token usage when the server
    /// counted it (some do not, or not on every reply).
    Usage(Option<Usage>),
}

/// Why a task stopped without a final answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model API failed (after retries).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The model kept calling tools.
    #[error(
        "stopped after {0} model turns without a final answer; raise `max_turns` in [model] \
         (or --max-turns), or split the task"
    )]
    MaxTurns(u32),
    /// The model kept repeating a call it was told it already made.
    #[error(
        "stopped: the model kept repeating the same tool call after being told it already had \
         the result (its earlier calls did run); try a larger model, or rephrase the task"
    )]
    Repeating,
    /// The model answered with neither text nor tool calls (the
    /// `finish_reason`, if any). The empty answer is not kept: strict
    /// servers refuse an assistant message without content.
    #[error(
        "the model returned an empty answer (no text and no tool calls{}): send the message \
         again; if it keeps happening, check the model and the server's chat template",
        finish_note(.0.as_deref())
    )]
    EmptyAnswer(Option<String>),
    /// The user cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The transcript could not be written.
    #[error("cannot write the session transcript: {0}")]
    Session(#[from] std::io::Error),
}

/// What the `finish_reason` of an empty answer tells.
fn finish_note(reason: Option<&str>) -> String {
    match reason {
        Some("length") => ", finish_reason \"length\": the output token limit was reached, \
                           perhaps while the model was reasoning"
            .into(),
        Some(r) => format!(", finish_reason \"{r}\""),
        None => String::new(),
    }
}
