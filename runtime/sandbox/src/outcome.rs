//! What a tool call returns: output for the model, or an error it can act on.

use std::fmt;
use std::time::Duration;

use serde::Serialize;

/// Why a call did not produce output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// No tool (or alias) of that name is enabled.
    UnknownTool,
    /// The arguments are not JSON, not an object, or break the schema.
    InvalidArgs,
    /// The guest reported that something named in the call does not exist.
    NotFound,
    /// The sandbox or the guest refused the operation.
    Denied,
    /// The guest reported another failure.
    Failed,
    /// The call ran past its time limit.
    Timeout,
    /// The call tried to use more memory than its limit.
    MemoryLimit,
    /// The guest trapped (a bug or hostile behaviour in the component).
    Crashed,
    /// The user cancelled the call (before it started, or while it ran).
    Cancelled,
}

impl ErrorKind {
    /// Short label shown to the model and the user.
    pub fn label(self) -> &'static str {
        match self {
            ErrorKind::UnknownTool => "unknown tool",
            ErrorKind::InvalidArgs => "invalid arguments",
            ErrorKind::NotFound => "not found",
            ErrorKind::Denied => "denied",
            ErrorKind::Failed => "failed",
            ErrorKind::Timeout => "timed out",
            ErrorKind::MemoryLimit => "memory limit",
            ErrorKind::Crashed => "crashed",
            ErrorKind::Cancelled => "cancelled",
        }
    }
}

/// A failed call, as a value: it goes back to the model, the run goes on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// What kind of failure.
    pub kind: ErrorKind,
    /// What was wrong and how to call correctly.
    pub message: String,
}

impl ToolError {
    /// An error of `kind` with `message`.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> ToolError {
        ToolError {
            kind,
            message: message.into(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error ({}): {}", self.kind.label(), self.message)
    }
}

impl std::error::Error for ToolError {}

/// The result of one sandboxed call.
#[derive(Debug, Clone, Serialize)]
pub struct CallOutcome {
    /// Canonical name of the tool that ran (aliases resolved).
    pub tool: String,
    /// The output, or the error the model should see.
    pub result: Result<String, ToolError>,
    /// True when the output was cut at the output limit.
    pub truncated: bool,
    /// Wall time of the call, validation included.
    #[serde(serialize_with = "ser_micros")]
    pub duration: Duration,
    /// What the guest wrote to stderr (capped), for diagnostics.
    pub stderr: String,
}

impl CallOutcome {
    /// The text the model reads: the output, or the error with its kind.
    pub fn model_text(&self) -> String {
        match &self.result {
            Ok(s) => s.clone(),
            Err(e) => e.to_string(),
        }
    }
}

fn ser_micros<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_micros() as u64)
}

/// Cuts `text` to at most `limit` bytes on a character boundary and says so.
pub fn cap_output(text: String, limit: u64) -> (String, bool) {
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    if text.len() <= limit {
        return (text, false);
    }
    let mut end = limit;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let total = text.len();
    let mut out = text;
    out.truncate(end);
    out.push_str(&format!(
        "\n[output truncated: showing the first {end} of {total} bytes; ask for less, \
         e.g. a smaller range or a narrower pattern]"
    ));
    (out, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_is_capped_on_a_char_boundary_with_a_note() {
        let (s, t) = cap_output("héllo".into(), 2);
        assert!(t);
        assert!(
            s.starts_with("h\n[output truncated: showing the first 1 of 6 bytes"),
            "{s}"
        );
        let (s, t) = cap_output("short".into(), 100);
        assert_eq!((s.as_str(), t), ("short", false));
    }
}
