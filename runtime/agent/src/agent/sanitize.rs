//! Tool calls as the agent holds them: each parsed once, when the model's
//! reply is in, into the value the runner, the repeat check and the events
//! all use; and kept in the history in a form the server will take back.
//! Arguments that are not a JSON object (a call cut by the output limit, a
//! model's typo) are never sent back as written, since servers that parse
//! them (llama.cpp) then fail every later request: the history keeps `{}`
//! and the model gets an error naming the problem; a resumed history is
//! repaired the same way.

use std::sync::Arc;

use serde_json::Value;

use crate::{Message, ToolCall};

/// One tool call of a turn. The call itself, as the history keeps it,
/// goes to the history (moved, not copied: its arguments may be long).
#[derive(Debug)]
pub(super) struct ParsedCall {
    /// The call's id.
    pub id: String,
    /// The tool's name ([`UNNAMED`] when the model gave none).
    pub name: String,
    /// Its arguments, parsed once (a JSON object; no arguments is `{}`),
    /// or why they cannot be used: then the call does not run.
    pub args: Result<Arc<Value>, String>,
    /// The arguments as the model wrote them, when they were unusable (for
    /// the error it reads and the events).
    pub raw: Option<String>,
    /// Whether the model gave no name (the call does not run).
    pub nameless: bool,
}

/// Parses `call`'s arguments, the only time they are parsed. Returns the
/// call as the history keeps it (unusable arguments become `{}`, an empty
/// name [`UNNAMED`]) and what the agent runs it from.
pub(super) fn parse(mut call: ToolCall) -> (ToolCall, ParsedCall) {
    let text = &call.function.arguments;
    let args = if text.trim().is_empty() {
        Ok(Value::Object(serde_json::Map::new()))
    } else {
        match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => Ok(v),
            Ok(other) => Err(format!(
                "the arguments are {}, not a JSON object",
                warden_policy::json_kind(&other)
            )),
            Err(e) => Err(format!("the arguments are not valid JSON ({e})")),
        }
    };
    let mut raw = None;
    if args.is_err() {
        raw = Some(std::mem::replace(&mut call.function.arguments, "{}".into()));
    } else if text.trim().is_empty() {
        call.function.arguments = "{}".into();
    }
    let nameless = call.function.name.trim().is_empty();
    if nameless {
        call.function.name = UNNAMED.into();
    }
    let parsed = ParsedCall {
        id: call.id.clone(),
        name: call.function.name.clone(),
        args: args.map(Arc::new),
        raw,
        nameless,
    };
    (call, parsed)
}

/// A call the agent found itself (in the text protocol, or in a reply's
/// text), its arguments already a value: never parsed again.
pub(super) fn made(id: String, name: String, args: Value) -> ParsedCall {
    ParsedCall {
        id,
        name,
        args: Ok(Arc::new(args)),
        raw: None,
        nameless: false,
    }
}

/// The name kept for a call that had none; it runs nothing (see [`NAMELESS`]).
pub(super) const UNNAMED: &str = "unnamed";

/// The error the model reads for a call without a name.
pub(super) const NAMELESS: &str =
    "error: the tool call has no name, so it was not run; call a tool by its name";

/// Why `call` cannot run as the model sent it, as the model reads it; `cut`
/// when the answer stopped at the output token limit.
pub(super) fn unusable(call: &ParsedCall, cut: bool) -> Option<String> {
    if call.nameless {
        return Some(NAMELESS.to_string());
    }
    let problem = call.args.as_ref().err()?;
    Some(refusal(problem, call.raw.as_deref().unwrap_or(""), cut))
}

/// The error the model reads for a call whose arguments were unusable;
/// `cut` when the answer stopped at the output token limit.
fn refusal(problem: &str, arguments: &str, cut: bool) -> String {
    let excerpt = excerpt(arguments, 200);
    if cut {
        format!(
            "error: your answer was cut off at the output token limit in the middle of this \
             call, so {problem} and the call was not run. Its start: {excerpt}. Make the call \
             again with shorter arguments (split a large write into several edits)."
        )
    } else {
        format!(
            "error: {problem}, so the call was not run. You wrote: {excerpt}. Send the \
             arguments as one complete JSON object."
        )
    }
}

/// At most `max` characters of `s`, quoted as a JSON string.
fn excerpt(s: &str, max: usize) -> String {
    let mut cut: String = s.chars().take(max).collect();
    if cut.len() < s.len() {
        cut.push('…');
    }
    Value::from(cut).to_string()
}

/// Repairs a resumed history written by an older version, or cut short by
/// a crash: invalid arguments become `{}`, and calls left without a result
/// get one saying so, so that every request is one a server accepts.
pub(super) fn repair(history: Vec<Message>) -> Vec<Message> {
    let mut out = Vec::with_capacity(history.len());
    let mut pending: Vec<String> = Vec::new();
    for m in history {
        if let Message::Tool { tool_call_id, .. } = &m {
            match pending.iter().position(|id| id == tool_call_id) {
                // Answers in call order, filling any skipped call first.
                Some(i) => {
                    for id in pending.drain(..i).collect::<Vec<_>>() {
                        out.push(unanswered(id));
                    }
                    pending.remove(0);
                }
                // A result for no call of the message before: dropped.
                None => continue,
            }
            out.push(m);
            continue;
        }
        for id in pending.drain(..) {
            out.push(unanswered(id));
        }
        match m {
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let mut seen: Vec<String> = Vec::new();
                let tool_calls: Vec<ToolCall> = tool_calls
                    .into_iter()
                    .map(|c| parse(c).0)
                    .filter(|c| {
                        let fresh = !c.id.is_empty() && !seen.contains(&c.id);
                        seen.push(c.id.clone());
                        fresh
                    })
                    .collect();
                pending = tool_calls.iter().map(|c| c.id.clone()).collect();
                if content.is_none() && tool_calls.is_empty() {
                    continue;
                }
                out.push(Message::Assistant {
                    content,
                    tool_calls,
                });
            }
            other => out.push(other),
        }
    }
    for id in pending {
        out.push(unanswered(id));
    }
    out
}

fn unanswered(id: String) -> Message {
    Message::Tool {
        tool_call_id: id,
        content: "error: this call has no recorded result (the session was interrupted); \
                  run it again if you still need it"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(arguments: &str) -> Option<String> {
        parse(ToolCall::new("a", "t", arguments)).1.args.err()
    }

    #[test]
    fn only_json_objects_pass() {
        assert_eq!(problem(r#"{"path":"a"}"#), None);
        assert_eq!(problem("  "), None);
        assert!(
            problem(r#"{"path": "notes.txt", "offset":"#)
                .unwrap()
                .contains("not valid JSON")
        );
        assert!(
            problem("[1]")
                .unwrap()
                .contains("an array, not a JSON object")
        );
        let (call, kept) = parse(ToolCall::new("a", "", "[1]"));
        assert_eq!(call.function.arguments, "{}");
        assert_eq!(kept.raw.as_deref(), Some("[1]"));
        assert_eq!(call.function.name, UNNAMED);
        assert!(unusable(&kept, false).unwrap().contains("has no name"));
    }

    #[test]
    fn a_poisoned_history_is_repaired() {
        let history = vec![
            Message::User {
                content: "go".into(),
            },
            Message::Assistant {
                content: None,
                tool_calls: vec![
                    ToolCall::new("a", "read_file", r#"{"path": "x", "offset":"#),
                    ToolCall::new("b", "read_file", ""),
                ],
            },
            Message::Tool {
                tool_call_id: "a".into(),
                content: "error".into(),
            },
            Message::User {
                content: "again".into(),
            },
        ];
        let fixed = repair(history);
        let Message::Assistant { tool_calls, .. } = &fixed[1] else {
            panic!("{fixed:?}")
        };
        assert_eq!(tool_calls[0].function.arguments, "{}");
        assert_eq!(tool_calls[1].function.arguments, "{}");
        assert!(
            matches!(&fixed[3], Message::Tool { tool_call_id, content } if tool_call_id == "b" && content.contains("no recorded result"))
        );
        assert!(matches!(&fixed[4], Message::User { .. }));
        assert_eq!(fixed.len(), 5);
    }
}
