//! Reading a whole (non-streamed) answer, and the JSON helpers shared with
//! the stream assembly. Parsing goes through `serde_json::Value` rather than
//! typed structs because servers differ in small ways (nulls, missing
//! fields, arguments sent as objects) that should not fail a completion.

use std::collections::HashSet;

use serde_json::Value;

use super::Completion;
use crate::{ToolCall, Usage};

/// Parses a `chat.completion` object: `choices[0].message.{content,
/// tool_calls}`, `choices[0].finish_reason` and `usage`. The calls'
/// arguments are taken out of `v`, not copied.
pub(crate) fn parse_completion(v: &mut Value) -> Result<Completion, String> {
    let taken: Vec<String> = v
        .pointer_mut("/choices/0/message/tool_calls")
        .and_then(Value::as_array_mut)
        .map(|calls| {
            calls
                .iter_mut()
                .map(|c| match c.pointer_mut("/function/arguments") {
                    Some(Value::String(s)) => std::mem::take(s),
                    other => arguments(other.map(|v| &*v)),
                })
                .collect()
        })
        .unwrap_or_default();
    let mut taken = taken.into_iter();
    let v = &*v;
    let Some(choice) = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
    else {
        return Err(format!(
            "response has no choices: {}",
            super::error::truncate(&v.to_string(), 200)
        ));
    };
    let message = choice.get("message").unwrap_or(&Value::Null);
    let content = message
        .get("content")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut tool_calls: Vec<ToolCall> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = c.get("function").unwrap_or(&Value::Null);
                    ToolCall::new(
                        string(c.get("id")),
                        string(f.get("name")),
                        taken.next().unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    unique_ids(&mut tool_calls);
    Ok(Completion {
        content,
        tool_calls,
        usage: usage(v),
        finish_reason: finish_reason(choice),
    })
}

/// Gives every call an id of its own, as servers require when the calls
/// come back: the server's, unless empty or taken by an earlier call; else
/// `call_<n>`, from the call's position up to the first one not taken.
pub(crate) fn unique_ids(calls: &mut [ToolCall]) {
    let mut taken = HashSet::new();
    let kept: Vec<bool> = calls
        .iter()
        .map(|c| !c.id.is_empty() && taken.insert(c.id.clone()))
        .collect();
    for (i, (c, kept)) in calls.iter_mut().zip(kept).enumerate() {
        if !kept {
            c.id = (i..)
                .map(|n| format!("call_{n}"))
                .find(|id| !taken.contains(id))
                .unwrap_or_default();
            taken.insert(c.id.clone());
        }
    }
}

/// The `usage` object of a response or chunk, if any; `total_tokens` is
/// filled in when a server leaves it out.
pub(crate) fn usage(v: &Value) -> Option<Usage> {
    let u = v.get("usage").filter(|u| u.is_object())?;
    let mut usage: Usage = serde_json::from_value(u.clone()).ok()?;
    if usage.total_tokens == 0 {
        usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    }
    Some(usage)
}

/// `finish_reason` of a choice, when set.
pub(crate) fn finish_reason(choice: &Value) -> Option<String> {
    choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// A string field, empty when absent or null.
pub(crate) fn string(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or_default().to_string()
}

/// Tool-call arguments: normally a JSON string, but some servers send the
/// object itself, which is turned back into its JSON text.
pub(crate) fn arguments(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}
