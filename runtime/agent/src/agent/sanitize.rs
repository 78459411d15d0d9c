//! Tool calls the server will take back: arguments that are not a JSON
//! object (a call cut by the output limit, a model's typo) are never sent
//! back as written, since servers that parse them (llama.cpp) then fail
//! every later request. The history keeps `{}` and the model gets an error
//! naming the problem; a resumed history is repaired the same way.

use serde_json::Value;

use crate::{Message, ToolCall};

/// Why `arguments` cannot go back to the server as they are, or `None` when
/// they are a JSON object (or empty, which means no arguments).
pub(super) fn problem(arguments: &str) -> Option<String> {
    if arguments.trim().is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(Value::Object(_)) => None,
        Ok(other) => Some(format!(
            "the arguments are {}, not a JSON object",
            warden_policy::json_kind(&other)
        )),
        Err(e) => Some(format!("the arguments are not valid JSON ({e})")),
    }
}

/// The name kept for a call that had none; it runs nothing (see [`NAMELESS`]).
pub(super) const UNNAMED: &str = "unnamed";

/// The error the model reads for a call without a name.
pub(super) const NAMELESS: &str =
    "error: the tool call has no name, so it was not run; call a tool by its name";

/// The calls as they may be kept and sent back: empty or invalid arguments
/// become `{}`, an empty name [`UNNAMED`].
pub(super) fn for_history(calls: &[ToolCall]) -> Vec<ToolCall> {
    calls
        .iter()
        .map(|c| {
            let mut c = c.clone();
            if c.function.arguments.trim().is_empty() || problem(&c.function.arguments).is_some() {
                c.function.arguments = "{}".into();
            }
            if c.function.name.trim().is_empty() {
                c.function.name = UNNAMED.into();
            }
            c
        })
        .collect()
}

/// The error the model reads for a call whose arguments were unusable;
/// `cut` when the answer stopped at the output token limit.
pub(super) fn refusal(problem: &str, arguments: &str, cut: bool) -> String {
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
                let tool_calls: Vec<ToolCall> = for_history(&tool_calls)
                    .into_iter()
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
