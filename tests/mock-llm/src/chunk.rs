//! Builders of `chat.completion.chunk` payloads, as JSON strings ready for
//! [`Reply::Sse`](crate::Reply::Sse).

use serde_json::{Value, json};

/// A chunk with one choice carrying `delta` and `finish_reason`.
fn choice(delta: Value, finish_reason: Option<&str>) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock",
        "choices": [{ "index": 0, "delta": delta, "finish_reason": finish_reason }],
    })
    .to_string()
}

/// A piece of assistant text.
pub fn text(s: &str) -> String {
    choice(json!({ "role": "assistant", "content": s }), None)
}

/// The first delta of tool call `index`: its id and name, no arguments yet.
pub fn tool_call_start(index: u32, id: &str, name: &str) -> String {
    choice(
        json!({ "tool_calls": [{
            "index": index,
            "id": id,
            "type": "function",
            "function": { "name": name, "arguments": "" },
        }] }),
        None,
    )
}

/// A further piece of the arguments of tool call `index`.
pub fn tool_call_args(index: u32, fragment: &str) -> String {
    choice(
        json!({ "tool_calls": [{ "index": index, "function": { "arguments": fragment } }] }),
        None,
    )
}

/// The last choice chunk: an empty delta and `finish_reason`.
pub fn finish(reason: &str) -> String {
    choice(json!({}), Some(reason))
}

/// The `include_usage` chunk: empty `choices` and token counts.
pub fn usage(prompt: u64, completion: u64) -> String {
    json!({
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "mock",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    })
    .to_string()
}

/// The end-of-stream marker, `[DONE]`.
pub fn done() -> String {
    "[DONE]".to_string()
}

/// Tool call `index` as [`tool_call_start`] followed by `args` split into
/// `pieces` fragments (at least one; some are empty when `args` has fewer
/// characters than `pieces`).
pub fn tool_call(index: u32, id: &str, name: &str, args: &str, pieces: usize) -> Vec<String> {
    let chars: Vec<char> = args.chars().collect();
    let pieces = pieces.max(1);
    let mut out = vec![tool_call_start(index, id, name)];
    for p in 0..pieces {
        let (from, to) = (chars.len() * p / pieces, chars.len() * (p + 1) / pieces);
        let fragment: String = chars[from..to].iter().collect();
        out.push(tool_call_args(index, &fragment));
    }
    out
}
