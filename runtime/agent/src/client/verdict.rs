//! How a server's error is handled: one judgement for an error status and
//! for an error the server sends inside a stream (whose `code` stands for
//! the status it would have sent), so that the same failure is retried, or
//! not, however it arrives.

use serde_json::Value;

use super::ClientError;

/// What to do about a server's error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The prompt does not fit the context window: compact, never retry as is.
    Overflow,
    /// The server cannot take `tools`: switch protocols, never retry.
    ToolsRejected,
    /// A transient failure (408, 409, 429, 5xx): retry.
    Retry,
    /// Anything else: retrying the same request cannot help.
    Fatal,
}

/// Judges an error of `status` whose body or message is `message`, on a
/// request that carried tools or not.
pub(crate) fn judge(status: u16, message: &str, tools_sent: bool) -> Verdict {
    if matches!(status, 400 | 413 | 422) && overflows_context(message) {
        Verdict::Overflow
    } else if tools_sent && matches!(status, 400 | 404 | 422) && rejects_tools(message) {
        Verdict::ToolsRejected
    } else if retryable_status(status) {
        Verdict::Retry
    } else {
        Verdict::Fatal
    }
}

/// A server's error, as a status or inside a stream, to be judged.
pub(crate) struct ServerError<'a> {
    /// The endpoint as shown.
    pub endpoint: &'a str,
    /// The status, or the status the stream's error stands for.
    pub status: u16,
    /// The whole body or message, which the judgement reads.
    pub message: &'a str,
    /// The part of it shown to the user.
    pub body: String,
    /// Whether it came inside a stream (the answer had begun).
    pub in_stream: bool,
    /// Whether the request carried tools.
    pub tools_sent: bool,
}

impl ServerError<'_> {
    /// The failure it makes: a context overflow and a refusal of `tools`
    /// as such, never retried; otherwise `error(body)`, retried when its
    /// status is worth it (after `retry_after` when the server said).
    pub(crate) fn failure(
        self,
        retry_after: Option<std::time::Duration>,
        error: impl FnOnce(String) -> ClientError,
    ) -> super::retry::Failure {
        use super::retry::Failure;
        let (endpoint, status, body) = (self.endpoint.to_string(), self.status, self.body);
        match judge(status, self.message, self.tools_sent) {
            Verdict::Overflow => Failure::fatal(ClientError::ContextOverflow {
                endpoint,
                status,
                body,
            }),
            Verdict::ToolsRejected => Failure::fatal(ClientError::ToolsRejected {
                endpoint,
                status,
                body,
            }),
            v => Failure {
                error: error(body),
                retry: v == Verdict::Retry,
                retry_after,
                tools_failure: fails_tools(status, self.in_stream, self.tools_sent),
            },
        }
    }
}

/// Whether a failure of `status` counts against native tool calls on a
/// request that carried them: the server failed while the model answered
/// with tools in reach (llama.cpp's "does not match the expected
/// peg-native format", "Failed to parse tool call", …), whatever the
/// words. In a stream, any server error does (the answer had begun); as a
/// status, a 500 does, not a 502, 503 or 504, which a gateway or a busy
/// server sends before any model ran.
pub(crate) fn fails_tools(status: u16, in_stream: bool, tools_sent: bool) -> bool {
    tools_sent
        && if in_stream {
            status >= 500
        } else {
            status == 500
        }
}

/// Statuses worth retrying: timeout, conflict (some gateways use it for
/// "busy"), rate limit, and server-side errors.
pub(crate) fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429 | 500..=599)
}

/// The status an error sent in a stream stands for: its `code` when that
/// is one, else what its `type` says (OpenAI's names), else 500, a server
/// error; a message about the context window without a code is the 400
/// servers send for it.
pub(crate) fn stream_status(error: &Value, message: &str) -> u16 {
    let code = error.get("code").and_then(|c| match c {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    });
    if let Some(code) = code.filter(|c| (400..600).contains(c)) {
        return code as u16;
    }
    let by_type = match error.get("type").and_then(Value::as_str) {
        Some("invalid_request_error" | "exceed_context_size_error") => Some(400),
        Some("authentication_error") => Some(401),
        Some("permission_error") => Some(403),
        Some("not_found_error") => Some(404),
        Some("rate_limit_error" | "rate_limit_exceeded") => Some(429),
        Some("server_error" | "api_error") => Some(500),
        _ => None,
    };
    by_type.unwrap_or(if overflows_context(message) { 400 } else { 500 })
}

/// Whether an error body says the prompt does not fit the context window
/// (OpenAI `context_length_exceeded`, vLLM "maximum context length",
/// llama.cpp "exceeds the available context size", …).
pub(crate) fn overflows_context(body: &str) -> bool {
    let body = body.to_lowercase();
    [
        "context length",
        "context_length",
        "context window",
        "context size",
        "maximum context",
        "too many tokens",
        "prompt is too long",
        "exceed_context",
    ]
    .iter()
    .any(|m| body.contains(m))
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

/// Whether `error` is a server refusing the `max_tokens` field itself
/// (OpenAI's reasoning models: "Unsupported parameter: 'max_tokens' … use
/// 'max_completion_tokens'"), not the prompt.
pub(crate) fn refuses_max_tokens(error: &ClientError) -> bool {
    match error {
        ClientError::Status {
            status: 400 | 422,
            body,
            ..
        } => body.contains("max_tokens"),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_status_and_the_same_code_in_a_stream_are_judged_alike() {
        let peg = "The model produced output that does not match the expected peg-native format";
        let in_stream = json!({"code": 500, "message": peg, "type": "server_error"});
        assert_eq!(stream_status(&in_stream, peg), 500);
        assert_eq!(judge(500, peg, true), Verdict::Retry);
        assert!(fails_tools(500, false, true) && !fails_tools(500, false, false));
        assert!(!fails_tools(429, false, true) && !fails_tools(429, true, true));
        assert!(fails_tools(503, true, true) && !fails_tools(503, false, true));
        let bad = json!({"code": 400, "message": "bad value for temperature"});
        assert_eq!(
            judge(stream_status(&bad, ""), "bad value", false),
            Verdict::Fatal
        );
        let busy = json!({"type": "rate_limit_exceeded", "message": "slow down"});
        assert_eq!(stream_status(&busy, "slow down"), 429);
        assert_eq!(judge(429, "slow down", true), Verdict::Retry);
        let full = "the request exceeds the available context size, try increasing it";
        assert_eq!(stream_status(&json!({"message": full}), full), 400);
        assert_eq!(judge(400, full, true), Verdict::Overflow);
        assert_eq!(stream_status(&json!({"code": "503"}), "down"), 503);
        assert_eq!(stream_status(&json!({}), "anything"), 500);
        assert_eq!(
            judge(400, "tools param requires --jinja flag", true),
            Verdict::ToolsRejected
        );
        assert_eq!(
            judge(400, "tools param requires --jinja flag", false),
            Verdict::Fatal
        );
        assert_eq!(
            judge(400, "unexpected tool_call_id in message 3", true),
            Verdict::Fatal
        );
    }
}
