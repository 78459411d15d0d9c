//! Tool calls a model wrote in its text although native calls were offered:
//! small models put them in `<tool_call>` tags (the Hermes and Qwen
//! templates), in a ```` ```json ```` fence, or as bare JSON, and servers
//! whose parser misses them pass them on as prose.

use serde_json::{Map, Value};

/// A call found in the text: tool name and argument object.
pub type InlineCall = (String, Map<String, Value>);

/// The calls written in `content`, and the prose around them; `None` when
/// there is none. Only a JSON object naming a known tool (`known`) and its
/// arguments counts, so that an answer that merely contains JSON stays an
/// answer. Tags and fences count only at the end of the text: one with
/// prose after it is an example the model shows ("the call would be: …
/// That is all."), not a call it makes.
pub fn inline_calls(
    content: &str,
    known: &dyn Fn(&str) -> bool,
) -> Option<(String, Vec<InlineCall>)> {
    let (prose, calls) = tagged(content, known)
        .or_else(|| fenced(content, known))
        .or_else(|| {
            let calls = calls_in(content.trim(), known)?;
            Some((String::new(), calls))
        })?;
    (!calls.is_empty()).then(|| (prose.trim().to_string(), calls))
}

/// `<tool_call> {…} </tool_call>`, as often as written, the last ending
/// the text; a missing closing tag at the end is forgiven.
fn tagged(content: &str, known: &dyn Fn(&str) -> bool) -> Option<(String, Vec<InlineCall>)> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let lower = content.to_ascii_lowercase();
    let mut prose = String::new();
    let mut calls = Vec::new();
    let mut pos = 0;
    while let Some(found) = lower[pos..].find(OPEN) {
        let start = pos + found;
        let body_start = start + OPEN.len();
        prose.push_str(&content[pos..start]);
        // The call read whole first, so that a closing tag inside one of
        // its strings does not end it; else up to the tag (a fence inside).
        if let Some((value, used)) = json_then(&content[body_start..], CLOSE, true) {
            calls.extend(calls_of(&value, known)?);
            pos = body_start + used;
            continue;
        }
        let (body_end, next) = match lower[body_start..].find(CLOSE) {
            Some(i) => (body_start + i, body_start + i + CLOSE.len()),
            None => (content.len(), content.len()),
        };
        let body = strip_fence(content[body_start..body_end].trim());
        calls.extend(calls_in(body, known)?);
        pos = next;
    }
    // Prose after the calls makes them examples.
    if calls.is_empty() || !content[pos..].trim().is_empty() {
        return None;
    }
    Some((prose, calls))
}

/// Code fences (```` ```json ````, ```` ``` ````, ```` ```tool_call ````) whose
/// whole body is a call; other fences stay in the prose.
fn fenced(content: &str, known: &dyn Fn(&str) -> bool) -> Option<(String, Vec<InlineCall>)> {
    let mut prose = String::new();
    let mut calls = Vec::new();
    let mut rest = content;
    // What follows the last call fence: prose there makes them examples.
    let mut after_call = "";
    while let Some(open) = rest.find("```") {
        let after_open = &rest[open + 3..];
        let Some(line_end) = after_open.find('\n') else {
            break;
        };
        let body_start = open + 3 + line_end;
        // A call read whole, so that a fence inside one of its strings
        // (a Markdown file's content) does not end it.
        let whole = json_then(&rest[body_start..], "```", false)
            .and_then(|(value, used)| Some((calls_of(&value, known)?, body_start + used)));
        if let Some((found, end)) = whole {
            prose.push_str(&rest[..open]);
            calls.extend(found);
            after_call = &rest[end..];
            rest = &rest[end..];
            continue;
        }
        let Some(close) = after_open[line_end..].find("```") else {
            break;
        };
        let body = &after_open[line_end..line_end + close];
        let end = body_start + close + 3;
        match calls_in(body.trim(), known) {
            Some(found) => {
                prose.push_str(&rest[..open]);
                calls.extend(found);
                after_call = &rest[end..];
            }
            None => prose.push_str(&rest[..end]),
        }
        rest = &rest[end..];
    }
    if calls.is_empty() || !after_call.trim().is_empty() {
        return None;
    }
    prose.push_str(rest);
    Some((prose, calls))
}

/// The body of a fence around the whole text, or the text.
fn strip_fence(s: &str) -> &str {
    let Some(inner) = s.strip_prefix("```") else {
        return s;
    };
    let inner = inner.split_once('\n').map_or("", |(_, body)| body);
    inner.trim_end().strip_suffix("```").unwrap_or(inner).trim()
}

/// One call object, or an array of them; `None` if anything else.
fn calls_in(text: &str, known: &dyn Fn(&str) -> bool) -> Option<Vec<InlineCall>> {
    if !text.starts_with(['{', '[']) {
        return None;
    }
    calls_of(&serde_json::from_str::<Value>(text).ok()?, known)
}

/// The calls of one call object or a non-empty array of them.
fn calls_of(value: &Value, known: &dyn Fn(&str) -> bool) -> Option<Vec<InlineCall>> {
    match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(|v| call(v, known)).collect(),
        Value::Object(_) => Some(vec![call(value, known)?]),
        _ => None,
    }
}

/// A JSON object or array at the start of `text` (after white space),
/// followed by `close` (any case), or by the end of the text when `open`;
/// with the bytes it and `close` take.
fn json_then(text: &str, close: &str, open: bool) -> Option<(Value, usize)> {
    let lead = text.len() - text.trim_start().len();
    if !text[lead..].starts_with(['{', '[']) {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(&text[lead..]).into_iter::<Value>();
    let value = values.next()?.ok()?;
    let end = lead + values.byte_offset();
    let after = &text[end..];
    let at = end + (after.len() - after.trim_start().len());
    let rest = &text[at..];
    if rest.is_empty() && open {
        return Some((value, text.len()));
    }
    rest.get(..close.len())
        .filter(|r| r.eq_ignore_ascii_case(close))
        .map(|_| (value, at + close.len()))
}

/// `{"name": …, "arguments": {…}}` (also `parameters`, arguments as a JSON
/// string, or OpenAI's `{"function": {…}}` wrapping) naming a known tool.
fn call(v: &Value, known: &dyn Fn(&str) -> bool) -> Option<InlineCall> {
    let v = v.get("function").filter(|f| f.is_object()).unwrap_or(v);
    let name = v.get("name")?.as_str()?;
    if !known(name) {
        return None;
    }
    let args = ["arguments", "parameters", "args"]
        .iter()
        .find_map(|k| v.get(*k))?;
    let args = match args {
        Value::Object(o) => o.clone(),
        Value::String(s) => match serde_json::from_str(s).ok()? {
            Value::Object(o) => o,
            _ => return None,
        },
        _ => return None,
    };
    Some((name.to_string(), args))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known(n: &str) -> bool {
        matches!(n, "read_file" | "write_file")
    }

    fn names(c: &[InlineCall]) -> Vec<(&str, String)> {
        c.iter()
            .map(|(n, a)| (n.as_str(), Value::Object(a.clone()).to_string()))
            .collect()
    }

    #[test]
    fn bare_json_a_fence_and_tags_are_calls() {
        let (prose, calls) = inline_calls(
            r#" {"name": "read_file", "arguments": {"path": "a"}} "#,
            &known,
        )
        .unwrap();
        assert_eq!(prose, "");
        assert_eq!(
            names(&calls),
            [("read_file", r#"{"path":"a"}"#.to_string())]
        );

        let text = "I will read it.\n```json\n{\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": \\\"b\\\"}\"}\n```\n";
        let (prose, calls) = inline_calls(text, &known).unwrap();
        assert_eq!(prose, "I will read it.");
        assert_eq!(
            names(&calls),
            [("read_file", r#"{"path":"b"}"#.to_string())]
        );

        let text = "<tool_call>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"c\"}}\n</tool_call>\n<tool_call>{\"name\": \"write_file\", \"parameters\": {\"path\": \"d\"}}";
        let (prose, calls) = inline_calls(text, &known).unwrap();
        assert_eq!(prose, "");
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[1].0, "write_file");
    }

    #[test]
    fn json_that_is_not_a_known_call_stays_prose() {
        assert!(inline_calls(r#"{"name": "Ada", "arguments": {}}"#, &known).is_none());
        assert!(inline_calls(r#"{"name": "read_file"}"#, &known).is_none());
        assert!(inline_calls("```json\n{\"a\": 1}\n```", &known).is_none());
        assert!(inline_calls("Use read_file to read.", &known).is_none());
        let text =
            "```rust\nfn main() {}\n```\n```json\n{\"name\":\"read_file\",\"arguments\":{}}\n```";
        let (prose, calls) = inline_calls(text, &known).unwrap();
        assert_eq!(prose, "```rust\nfn main() {}\n```");
        assert_eq!(calls.len(), 1);
    }

    #[test]
    fn a_fence_or_tag_with_prose_after_it_is_an_example_not_a_call() {
        let call = r#"{"name": "write_file", "arguments": {"path": "a"}}"#;
        for text in [
            format!("To write a file, the model would emit:\n```json\n{call}\n```\nThat is all."),
            format!("```json\n{call}\n```\nThat is the call."),
            format!("The call is {call}"),
            format!("{call}\nThat is the call."),
            format!("The model would write <tool_call>{call}</tool_call> and stop. That is all."),
            format!("<tool_call>{call}</tool_call>\nThat is the call."),
        ] {
            assert!(inline_calls(&text, &known).is_none(), "{text}");
        }
        // Ending the reply, after prose, with a fence or two: calls.
        let text = format!("Writing it.\n```json\n{call}\n```\n\n```\n{call}\n```\n");
        let (prose, calls) = inline_calls(&text, &known).unwrap();
        assert_eq!((prose.as_str(), calls.len()), ("Writing it.", 2));
        let text = format!("Writing it.\n<tool_call>{call}</tool_call>\n<tool_call>{call}");
        let (prose, calls) = inline_calls(&text, &known).unwrap();
        assert_eq!((prose.as_str(), calls.len()), ("Writing it.", 2));
    }

    #[test]
    fn numbers_arrive_as_written() {
        // Found by the fuzz target `textproto`: without serde_json's
        // `float_roundtrip`, this came back as ...864e-80.
        let text = r#"<tool_call>{"name": "read_file", "arguments": {"limit": 1.4298186808876865e-80}}</tool_call>"#;
        let (_, calls) = inline_calls(text, &known).unwrap();
        assert_eq!(
            calls[0].1["limit"].as_f64(),
            Some(1.4298186808876865e-80_f64)
        );
    }

    #[test]
    fn a_closing_tag_or_fence_inside_an_argument_does_not_end_the_call() {
        // Found by the fuzz target `textproto`: the call ended at the first
        // `</tool_call>` or ```` ``` ```` and, cut short, was taken for prose.
        let call = r#"{"name": "write_file", "arguments": {"path": "a.md", "content": "```rust\nfn main() {}\n```\n</tool_call>"}}"#;
        for text in [
            format!("Writing it.\n<tool_call>\n{call}\n</tool_call>"),
            format!("Writing it.\n<tool_call>{call}"),
            format!("Writing it.\n```json\n{call}\n```\n"),
        ] {
            let (prose, calls) = inline_calls(&text, &known).unwrap_or_else(|| panic!("{text}"));
            assert_eq!(prose, "Writing it.");
            assert_eq!(
                calls[0].1["content"], "```rust\nfn main() {}\n```\n</tool_call>",
                "{text}"
            );
        }
        // With prose after it, still an example.
        let text = format!("<tool_call>{call}</tool_call> is how. That is all.");
        assert!(inline_calls(&text, &known).is_none());
    }
}
