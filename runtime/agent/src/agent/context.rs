//! Context that never overflows: every request is estimated before it is
//! sent, and when it would not fit the model's window the older turns are
//! compacted — old tool outputs shortened first, then the older part of the
//! conversation replaced by a summary written by the model. The transcript
//! keeps everything; only what is sent shrinks.

use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError, Event};
use crate::client::Request;
use crate::session::{Record, now};
use crate::{Message, ToolDef, textproto};

/// Bytes per token assumed by the estimate: tokenizers average about 4
/// bytes per token on English and code, so 3 overestimates, which is the
/// safe side.
const BYTES_PER_TOKEN: u64 = 3;

/// Requests estimated above this many tokens ask the server for the window
/// when none is configured; smaller ones fit every model. (With tools to
/// offer, the first request asks, for the bound on what it generates.)
const PROBE_ABOVE: u64 = 3_000;

/// A tool output longer than this is shortened when compacting.
const SHORT_OUTPUT: usize = 600;

/// The estimated tokens of a message (its JSON, plus a few for framing).
pub(super) fn message_tokens(m: &Message) -> u64 {
    message_len(m).div_ceil(BYTES_PER_TOKEN) + 4
}

/// The length of `m` as compact JSON, worked out without writing it: the
/// estimate runs before every request over the whole conversation, and a
/// long tool call or output is counted in one vectorized pass over its
/// bytes instead of being escaped each time.
fn message_len(m: &Message) -> u64 {
    match m {
        Message::System { content } => 28 + str_len(content),
        Message::User { content } => 26 + str_len(content),
        Message::Tool {
            tool_call_id,
            content,
        } => 42 + str_len(tool_call_id) + str_len(content),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let content = content.as_ref().map_or(0, |c| 11 + str_len(c));
            let calls = match tool_calls.len() {
                0 => 0,
                n => 16 + (n as u64 - 1) + tool_calls.iter().map(call_len).sum::<u64>(),
            };
            20 + content + calls
        }
    }
}

/// The length of one tool call as compact JSON.
fn call_len(c: &crate::ToolCall) -> u64 {
    49 + str_len(&c.id)
        + str_len(&c.kind)
        + str_len(&c.function.name)
        + str_len(&c.function.arguments)
}

/// The length of `s` as a JSON string, quotes included, escaped as
/// serde_json escapes it.
fn str_len(s: &str) -> u64 {
    let b = s.as_bytes();
    // Counted in blocks of 255 into bytes, which vectorizes: the escapes
    // of two bytes, then (only when there are control characters) those
    // without a short form, which take six.
    let count = |hit: fn(u8) -> bool| -> u64 {
        b.chunks(255)
            .map(|block| block.iter().fold(0u8, |n, &c| n + hit(c) as u8) as u64)
            .sum()
    };
    let mut extra = count(|c| c < 0x20 || c == b'"' || c == b'\\');
    if count(|c| c < 0x20) > 0 {
        extra += 4 * count(|c| c < 0x20 && !matches!(c, b'\n' | b'\r' | b'\t' | 0x08 | 0x0c));
    }
    s.len() as u64 + 2 + extra
}

/// The estimated prompt tokens of a request.
pub(crate) fn request_tokens(history: &[Message], tools: &[ToolDef]) -> u64 {
    let tools: u64 = tools
        .iter()
        .map(|t| json_len(&t.wire()).div_ceil(BYTES_PER_TOKEN))
        .sum();
    history.iter().map(message_tokens).sum::<u64>() + tools
}

/// The length of `v` as compact JSON, counted as it is written (every
/// turn estimates the whole conversation: no copy of it is made).
fn json_len(v: &impl serde::Serialize) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut n = Count(0);
    match serde_json::to_writer(&mut n, v) {
        Ok(()) => n.0,
        Err(_) => 0,
    }
}

/// The prompt budget of a window: what is left after room for the answer.
fn budget(window: u64) -> u64 {
    window - (window / 4).min(4_096)
}

impl Agent {
    /// Compacts the conversation when the next request would not fit;
    /// returns the request's estimated tokens, as it will be sent.
    pub(super) async fn fit(
        &mut self,
        tools: &[ToolDef],
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<u64, AgentError> {
        let used = request_tokens(&self.history, tools);
        let wanted = used > PROBE_ABOVE || !self.specs.is_empty();
        if self.window.is_none() && !self.window_probed && wanted {
            self.window_probed = true;
            // A server slow to say its window is waited on like the model.
            on(Event::Thinking);
            self.window = tokio::select! {
                biased;
                () = cancel.cancelled() => return Err(AgentError::Cancelled),
                w = self.client.context_window() => w,
            };
        }
        let Some(window) = self.window else {
            return Ok(used);
        };
        if used <= budget(window) {
            return Ok(used);
        }
        // Well below the budget, so that the next turns fit too.
        let target = budget(window) * 7 / 10;
        if self
            .compact(target, budget(window), tools, cancel, on)
            .await?
        {
            Ok(request_tokens(&self.history, tools))
        } else {
            Ok(used)
        }
    }

    /// Compacts the conversation now, to about half its size (`/compact`).
    /// Whether anything was made shorter (a short conversation is not).
    pub async fn compact_now(
        &mut self,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<bool, AgentError> {
        let tools = self.offered();
        // Half of the conversation; the system prompt and tools stay.
        let fixed = request_tokens(&self.history[..1], &tools);
        let total = request_tokens(&self.history, &tools);
        let target = fixed + (total - fixed) / 2;
        self.compact(target, total, &tools, cancel, on).await
    }

    /// Shrinks the history towards `target` estimated tokens: old tool
    /// outputs first, then a summary of the older turns; then, only if it
    /// is still over `limit`, the latest outputs too. Whether it is shorter.
    async fn compact(
        &mut self,
        target: u64,
        limit: u64,
        tools: &[ToolDef],
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<bool, AgentError> {
        let before = request_tokens(&self.history, tools);
        let recent = self.last_turn_start();
        self.shorten_outputs(1..recent, target, tools);
        if request_tokens(&self.history, tools) > target {
            self.summarize(target, tools, cancel, on).await?;
        }
        if request_tokens(&self.history, tools) > limit {
            let all = 1..self.history.len();
            self.shorten_outputs(all, target, tools);
        }
        let after = request_tokens(&self.history, tools);
        if after < before {
            // What is sent from now on, so that a resumed session goes on
            // from it (not from the whole conversation, compacted again).
            self.record(Record::Compacted {
                ts: now(),
                before_tokens: before,
                after_tokens: after,
                history: self.history[1..].to_vec(),
            })?;
            on(Event::Compacted { before, after });
        }
        Ok(after < before)
    }

    /// Where the latest model turn starts: the last assistant message, or
    /// the last user message after it.
    fn last_turn_start(&self) -> usize {
        self.history
            .iter()
            .rposition(|m| matches!(m, Message::Assistant { .. } | Message::User { .. }))
            .unwrap_or(self.history.len())
            .max(1)
    }

    /// Shortens tool outputs in `range`, oldest first, until the request is
    /// estimated at `target` or less.
    fn shorten_outputs(&mut self, range: std::ops::Range<usize>, target: u64, tools: &[ToolDef]) {
        let mut used = request_tokens(&self.history, tools);
        for i in range {
            if used <= target {
                return;
            }
            // Outputs come as tool messages, or under the text protocol as
            // blocks of a user message warden wrote.
            let (content, results) = match &mut self.history[i] {
                Message::Tool { content, .. } => (content, false),
                Message::User { content } if textproto::is_results_message(content) => {
                    (content, true)
                }
                _ => continue,
            };
            if content.len() <= SHORT_OUTPUT {
                continue;
            }
            let old = content.len() as u64;
            *content = if results {
                textproto::shorten_results(content, &|out| {
                    if out.len() <= SHORT_OUTPUT {
                        out.to_string()
                    } else {
                        shortened(out)
                    }
                })
            } else {
                shortened(content)
            };
            used = used.saturating_sub(old.saturating_sub(content.len() as u64) / BYTES_PER_TOKEN);
        }
    }

    /// Replaces the older part of the conversation with a summary by the
    /// model (or, if that fails, a list of what was done), keeping the
    /// latest turns and the current request verbatim.
    async fn summarize(
        &mut self,
        target: u64,
        tools: &[ToolDef],
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<(), AgentError> {
        // Keep the newest messages worth up to half the target, starting at
        // a user or assistant message (a tool result needs its call).
        let mut keep = self.history.len();
        let mut kept = 0;
        while keep > 1 {
            let t = message_tokens(&self.history[keep - 1]);
            if kept + t > target / 2 {
                break;
            }
            kept += t;
            keep -= 1;
        }
        let latest = self.last_turn_start();
        keep = keep.min(latest);
        while keep < latest && matches!(self.history[keep], Message::Tool { .. }) {
            keep += 1;
        }
        // Summarizing a few messages saves little: the outputs are the bulk.
        let older_tokens: u64 = self.history[1..keep.max(1)]
            .iter()
            .map(message_tokens)
            .sum();
        if keep <= 1 || older_tokens < target / 4 {
            return Ok(());
        }
        let older: Vec<Message> = self.history[1..keep].to_vec();
        // What the user asked for this task (not tool results sent as a
        // user message), and whether a message kept verbatim holds it.
        let request = self.request.clone().or_else(|| {
            older.iter().rev().find_map(|m| match m {
                Message::User { content } if !textproto::is_results_message(content) => {
                    Some(content.clone())
                }
                _ => None,
            })
        });
        let current_request_kept = request.as_deref().is_some_and(|r| {
            self.history[keep..]
                .iter()
                .any(|m| matches!(m, Message::User { content } if content.contains(r)))
        });
        let budget_bytes = (target / 2).saturating_sub(request_tokens(&self.history[..1], tools))
            * BYTES_PER_TOKEN;
        let answered = tokio::select! {
            s = self.summary_by_model(&older, budget_bytes as usize) => s,
            _ = cancel.cancelled() => return Err(AgentError::Cancelled),
        };
        let mut summary = None;
        // The summary's call and tokens are spent like any others: counted.
        if let Some((text, usage)) = answered {
            if let Some(usage) = usage {
                self.record(Record::Usage { ts: now(), usage })?;
            }
            on(Event::Usage(usage));
            summary = text;
        }
        let summary = summary.unwrap_or_else(|| summary_by_list(&older));
        let mut text = format!(
            "[The earlier conversation was compacted to fit the context window. Summary:]\n{summary}"
        );
        if let (Some(request), false) = (request, current_request_kept) {
            text.push_str("\n\n[The current request, verbatim:]\n");
            text.push_str(&request);
        }
        let mut rest = self.history.split_off(keep);
        self.history.truncate(1);
        match rest.first_mut() {
            Some(Message::User { content }) => {
                *content = format!("{text}\n\n{content}");
            }
            _ => self.history.push(Message::User { content: text }),
        }
        self.history.append(&mut rest);
        Ok(())
    }

    /// Asks the model, without tools, for a summary of `older`, shown to it
    /// in at most `max_bytes`: once it answered, the summary (`None` when
    /// the answer is none) and the tokens the call reported; `None` when
    /// the call failed.
    async fn summary_by_model(
        &self,
        older: &[Message],
        max_bytes: usize,
    ) -> Option<(Option<String>, Option<crate::Usage>)> {
        let messages = [
            Message::System {
                content: "You condense a conversation between a user and a coding agent into \
                          notes the agent continues from. Keep the user's requests, decisions, \
                          file paths, what was changed and found, errors, and what remains to \
                          do. At most 200 words, plain text."
                    .into(),
            },
            Message::User {
                content: render(older, max_bytes.max(2_000)),
            },
        ];
        let request = Request::new(&messages, &[]);
        let c = self.client.complete(request, &mut |_| {}).await.ok()?;
        let text = c.content.trim();
        let summary = (!text.is_empty() && c.tool_calls.is_empty()).then(|| cut(text, 3_000));
        Some((summary, c.usage))
    }
}

/// A tool output cut to its start, saying how much was left out.
fn shortened(content: &str) -> String {
    let head = cut(content, SHORT_OUTPUT / 2);
    format!(
        "{head}\n[… {} more bytes left out to fit the context window; call the tool again if \
         you need them]",
        content.len() - head.len().min(content.len())
    )
}

/// At most `max` bytes of `s`, cut at a character boundary.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The conversation as text for the summarizer, each message cut short,
/// the whole at most `max_bytes` (the oldest messages dropped first).
fn render(messages: &[Message], max_bytes: usize) -> String {
    let mut lines: Vec<String> = messages
        .iter()
        .map(|m| match m {
            Message::System { content } => format!("SYSTEM: {}", cut(content, 300)),
            // Under the text protocol, tool results come as user messages.
            Message::User { content } if textproto::is_results_message(content) => {
                format!("RESULT: {}", cut(content, 300))
            }
            Message::User { content } => format!("USER: {}", cut(content, 1_000)),
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut s = format!("AGENT: {}", cut(content.as_deref().unwrap_or(""), 600));
                for c in tool_calls {
                    s.push_str(&format!(
                        "\n  called {}({})",
                        c.function.name,
                        cut(&c.function.arguments, 200)
                    ));
                }
                s
            }
            Message::Tool { content, .. } => format!("RESULT: {}", cut(content, 300)),
        })
        .collect();
    while lines.len() > 1 && lines.iter().map(|l| l.len() + 1).sum::<usize>() > max_bytes {
        lines.remove(0);
    }
    lines.join("\n")
}

/// What was done, as a list, when the model could not summarize.
fn summary_by_list(messages: &[Message]) -> String {
    let mut out = Vec::new();
    for m in messages {
        match m {
            Message::User { content } if !textproto::is_results_message(content) => {
                out.push(format!("- the user asked: {}", cut(content, 300)))
            }
            Message::Assistant {
                tool_calls,
                content,
            } => {
                for c in tool_calls {
                    out.push(format!(
                        "- called {}({})",
                        c.function.name,
                        cut(&c.function.arguments, 120)
                    ));
                }
                // Calls of the text protocol are in the reply's text.
                let text_calls = content.iter().flat_map(|c| c.lines()).filter_map(|l| {
                    let call = l.trim().strip_prefix("[TOOL]")?;
                    Some(call.trim().trim_end_matches("[/TOOL]").trim_end())
                });
                for call in text_calls {
                    out.push(format!("- called {}", cut(call, 120)));
                }
            }
            _ => {}
        }
    }
    while out.iter().map(|l| l.len() + 1).sum::<usize>() > 4_000 && out.len() > 1 {
        out.remove(0);
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_protocol_results_are_not_what_the_user_asked_and_its_calls_are_listed() {
        let results = textproto::results_message(&[("read_file".into(), Ok("fn main".into()))]);
        let messages = [
            Message::User {
                content: "fix the parser".into(),
            },
            Message::Assistant {
                content: Some("Reading.\n[TOOL] read_file(path=\"src/a.rs\") [/TOOL]".into()),
                tool_calls: Vec::new(),
            },
            Message::User {
                content: results.clone(),
            },
        ];
        let list = summary_by_list(&messages);
        assert_eq!(
            list,
            "- the user asked: fix the parser\n- called read_file(path=\"src/a.rs\")"
        );
        let shown = render(&messages, 10_000);
        assert!(shown.contains("USER: fix the parser"), "{shown}");
        assert!(shown.contains("RESULT: [RESULT read_file]"), "{shown}");
        assert!(!shown.contains("USER: [RESULT"), "{shown}");
    }

    #[test]
    fn estimates_overcount_and_shortening_keeps_the_start() {
        let m = Message::Tool {
            tool_call_id: "a".into(),
            content: "x".repeat(3_000),
        };
        assert!(message_tokens(&m) > 1_000);
        // Counted as written: the same length as the JSON text.
        let text = serde_json::to_string(&m).unwrap();
        assert_eq!(message_tokens(&m), (text.len() as u64).div_ceil(3) + 4);
        let odd = "q\"b\\n\nr\rt\tf\u{8}\u{c}\u{1}\u{1f}é✓";
        for m in [
            Message::System {
                content: odd.into(),
            },
            Message::User {
                content: odd.into(),
            },
            Message::Tool {
                tool_call_id: odd.into(),
                content: odd.into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![],
            },
            Message::Assistant {
                content: Some(odd.into()),
                tool_calls: vec![
                    crate::ToolCall::new(odd, odd, odd),
                    crate::ToolCall::new("b", "n", "{}"),
                ],
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![crate::ToolCall::new("b", "n", odd)],
            },
        ] {
            let text = serde_json::to_string(&m).unwrap();
            assert_eq!(message_len(&m), text.len() as u64, "{text}");
        }
        let t = ToolDef {
            name: "n".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
        };
        assert_eq!(
            request_tokens(&[], std::slice::from_ref(&t)),
            (t.to_json().to_string().len() as u64).div_ceil(3)
        );
        let s = shortened(&"é".repeat(1_000));
        assert!(
            s.starts_with("éé") && s.contains("1700 more bytes left out"),
            "{s}"
        );
        assert_eq!(budget(8_000), 6_000);
        assert_eq!(budget(100_000), 100_000 - 4_096);
    }
}
