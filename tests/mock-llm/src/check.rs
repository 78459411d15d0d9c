//! What a real chat-completions server would accept.

use std::collections::VecDeque;

use serde_json::Value;

/// Checks that `body` is a valid chat-completions request: `model` a
/// non-empty string; `messages` a non-empty array of system / user /
/// assistant / tool messages; every assistant `tool_calls` entry has an `id`,
/// `type: "function"`, a `function.name` and string `function.arguments`
/// holding a JSON object;
/// the tool messages right after an assistant message answer each of its
/// calls exactly once, in call order, before any other message; no two user
/// messages in a row (the chat templates of many open models refuse them);
/// `tools`
/// entries (if any) have `type: "function"` and a `function.name` and
/// `function.parameters`. The error names the offending message or tool.
pub fn check_chat_body(body: &Value) -> Result<(), String> {
    let Some(obj) = body.as_object() else {
        return Err(format!("body is not a JSON object: {body}"));
    };
    match obj.get("model") {
        Some(Value::String(m)) if !m.is_empty() => {}
        other => return Err(format!("model must be a non-empty string, got {other:?}")),
    }
    if let Some(stream) = obj.get("stream")
        && !stream.is_boolean()
    {
        return Err(format!("stream must be a boolean, got {stream}"));
    }
    let Some(messages) = obj.get("messages").and_then(Value::as_array) else {
        return Err("messages must be an array".into());
    };
    if messages.is_empty() {
        return Err("messages is empty".into());
    }
    check_messages(messages)?;
    if let Some(max) = obj.get("max_tokens")
        && max.as_u64().is_none_or(|n| n == 0)
    {
        return Err(format!("max_tokens must be a positive integer, got {max}"));
    }
    if let Some(format) = obj.get("response_format") {
        let kind = format.get("type").and_then(Value::as_str);
        let schema = format.pointer("/json_schema/schema");
        let name = format.pointer("/json_schema/name").and_then(Value::as_str);
        match (kind, name, schema) {
            (Some("json_schema"), Some(n), Some(Value::Object(_))) if !n.is_empty() => {}
            _ => {
                return Err(format!(
                    "response_format must be {{\"type\": \"json_schema\", \"json_schema\": \
                     {{\"name\": …, \"schema\": {{…}}}}}}, got {format}"
                ));
            }
        }
    }
    match obj.get("tools") {
        None => Ok(()),
        Some(Value::Array(tools)) => tools
            .iter()
            .enumerate()
            .try_for_each(|(i, t)| check_tool(t).map_err(|e| format!("tools[{i}]: {e}"))),
        Some(other) => Err(format!("tools must be an array, got {other}")),
    }
}

/// Roles, contents, and the pairing of tool calls with tool messages.
fn check_messages(messages: &[Value]) -> Result<(), String> {
    // Calls of the latest assistant message still waiting for their answer,
    // in call order, and those already answered.
    let mut pending: VecDeque<String> = VecDeque::new();
    let mut answered: Vec<String> = Vec::new();
    let mut previous = "";
    for (i, m) in messages.iter().enumerate() {
        let at = |e: String| format!("messages[{i}]: {e}");
        let role = m.get("role").and_then(Value::as_str).unwrap_or("");
        if role == "user" && previous == "user" {
            return Err(at(
                "two user messages in a row (templates that need alternating roles refuse this)"
                    .into(),
            ));
        }
        previous = role;
        if role != "tool" && !pending.is_empty() {
            return Err(at(format!(
                "{role:?} message before the tool call(s) {pending:?} were answered"
            )));
        }
        match role {
            "system" | "user" => match m.get("content") {
                Some(Value::String(_) | Value::Array(_)) => {}
                other => {
                    return Err(at(format!(
                        "{role} content must be a string, got {other:?}"
                    )));
                }
            },
            "assistant" => {
                let ids = check_assistant(m).map_err(at)?;
                pending = ids.into();
                answered.clear();
            }
            "tool" => {
                let Some(id) = m.get("tool_call_id").and_then(Value::as_str) else {
                    return Err(at("tool message without a string tool_call_id".into()));
                };
                if !m.get("content").is_some_and(Value::is_string) {
                    return Err(at("tool message content must be a string".into()));
                }
                match pending.front() {
                    Some(first) if first == id => {
                        answered.push(pending.pop_front().unwrap_or_default());
                    }
                    _ if answered.iter().any(|a| a == id) => {
                        return Err(at(format!("tool call {id:?} answered twice")));
                    }
                    Some(first) if pending.iter().any(|p| p == id) => {
                        return Err(at(format!(
                            "tool call {id:?} answered before {first:?} (calls must be answered in order)"
                        )));
                    }
                    _ => {
                        return Err(at(format!(
                            "tool message {id:?} answers no call of the preceding assistant message"
                        )));
                    }
                }
            }
            other => return Err(at(format!("unknown role {other:?}"))),
        }
    }
    if pending.is_empty() {
        Ok(())
    } else {
        Err(format!("tool call(s) {pending:?} never answered"))
    }
}

/// An assistant message; returns the ids of its tool calls.
fn check_assistant(m: &Value) -> Result<Vec<String>, String> {
    let has_text = match m.get("content") {
        None | Some(Value::Null) => false,
        Some(Value::String(_)) => true,
        Some(other) => return Err(format!("assistant content must be a string, got {other}")),
    };
    let calls = match m.get("tool_calls") {
        None | Some(Value::Null) => &[][..],
        Some(Value::Array(calls)) => calls.as_slice(),
        Some(other) => return Err(format!("tool_calls must be an array, got {other}")),
    };
    if !has_text && calls.is_empty() {
        return Err("assistant message has neither content nor tool_calls".into());
    }
    let mut ids: Vec<String> = Vec::new();
    for (j, call) in calls.iter().enumerate() {
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id,
            _ => return Err(format!("tool_calls[{j}] has no id")),
        };
        if ids.iter().any(|seen| seen == id) {
            return Err(format!("tool_calls[{j}]: duplicate id {id:?}"));
        }
        if call.get("type").and_then(Value::as_str) != Some("function") {
            return Err(format!("tool_calls[{j}]: type must be \"function\""));
        }
        let function = call.get("function").unwrap_or(&Value::Null);
        match function.get("name").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => {}
            _ => return Err(format!("tool_calls[{j}]: function.name missing")),
        }
        let Some(arguments) = function.get("arguments").and_then(Value::as_str) else {
            return Err(format!(
                "tool_calls[{j}]: function.arguments must be a string"
            ));
        };
        // Servers that parse the arguments (llama.cpp) fail the whole
        // request when they are not a JSON object.
        if !matches!(
            serde_json::from_str::<Value>(arguments),
            Ok(Value::Object(_))
        ) {
            return Err(format!(
                "tool_calls[{j}]: function.arguments is not a JSON object: {arguments:?}"
            ));
        }
        ids.push(id.to_string());
    }
    Ok(ids)
}

/// One `tools` entry.
fn check_tool(tool: &Value) -> Result<(), String> {
    if tool.get("type").and_then(Value::as_str) != Some("function") {
        return Err("type must be \"function\"".into());
    }
    let function = tool.get("function").unwrap_or(&Value::Null);
    match function.get("name").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => {}
        _ => return Err("function.name missing".into()),
    }
    if !function.get("parameters").is_some_and(Value::is_object) {
        return Err("function.parameters must be an object".into());
    }
    Ok(())
}
