//! The text the model reads: the protocol's system-prompt section, the
//! results of its calls, and what was wrong with the calls it got wrong.

#[cfg(test)]
mod tests;

use serde_json::Value;

use crate::ToolDef;

/// The system-prompt section teaching the protocol: how to call, the exact
/// syntax with an example, then one line per tool. Empty when there are no
/// tools, so the caller can leave the section out.
pub fn instructions(tools: &[ToolDef]) -> String {
    let Some(first) = tools.first() else {
        return String::new();
    };
    let examples: Vec<(String, String)> = props(first)
        .iter()
        .filter(|(k, _)| required(first).contains(k))
        .map(|(k, schema)| (k.clone(), example_value(schema)))
        .collect();
    let keyword: Vec<String> = examples.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let json: Vec<String> = examples
        .iter()
        .map(|(k, v)| format!("{}: {v}", Value::from(k.as_str())))
        .collect();
    let (name, keyword, json) = (&first.name, keyword.join(", "), json.join(", "));
    let mut s = format!(
        "## Tools\n\n\
         You can call tools. To call one, write this anywhere in your reply, exactly in this form:\n\n\
         [TOOL] tool_name(arguments) [/TOOL]\n\n\
         For example:\n\n\
         [TOOL] {name}({keyword}) [/TOOL]\n\n\
         Arguments are written as name=value, or by position in the order listed below, or as \
         one JSON object: [TOOL] {name}({{{json}}}) [/TOOL]. Strings must be quoted; inside them \
         write \\\" for a quote and \\n for a newline. Numbers, true, false, null, [arrays] and \
         {{objects}} are written as in JSON.\n\n\
         You may make several calls in one reply. Then end your reply: the results come back in \
         the next message as [RESULT tool_name] ... [/RESULT] blocks, in the order of your calls. \
         Never write [RESULT] blocks yourself. When you need no tool, answer without [TOOL].\n\n\
         Available tools:\n"
    );
    s.push_str(&tool_list(tools));
    s
}

/// One line per tool: `- name(param: type, optional?: type) — the first
/// line of its description`.
pub fn tool_list(tools: &[ToolDef]) -> String {
    let mut s = String::new();
    for tool in tools {
        let req = required(tool);
        let params: Vec<String> = props(tool)
            .iter()
            .map(|(k, schema)| {
                format!(
                    "{k}{}: {}",
                    if req.contains(k) { "" } else { "?" },
                    type_name(schema)
                )
            })
            .collect();
        s.push_str(&format!("- {}({})", tool.name, params.join(", ")));
        match tool
            .description
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
        {
            Some(line) => s.push_str(&format!(" — {line}\n")),
            None => s.push('\n'),
        }
    }
    s
}

/// The names of a tool's required parameters.
fn required(t: &ToolDef) -> Vec<String> {
    let list = t.parameters.get("required").and_then(Value::as_array);
    list.map(|r| {
        r.iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect()
    })
    .unwrap_or_default()
}

/// A tool's parameters, in schema order.
fn props(t: &ToolDef) -> serde_json::Map<String, Value> {
    t.parameters
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// A short type for the tool list: `string`, `integer|null`, `array of
/// string`, or the enum's values (`"r"|"w"`).
fn type_name(schema: &Value) -> String {
    if let Some(values) = schema.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("|");
    }
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => match schema.get("items") {
            Some(items) => format!("array of {}", type_name(items)),
            None => "array".into(),
        },
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("|"),
        _ => "any".into(),
    }
}

/// A plausible value for the syntax example, from the schema's own examples
/// when it has some.
fn example_value(schema: &Value) -> String {
    let given = schema
        .get("examples")
        .and_then(|e| e.get(0))
        .or_else(|| schema.get("enum").and_then(|e| e.get(0)));
    if let Some(v) = given {
        return v.to_string();
    }
    let t = schema
        .get("type")
        .map(|t| t.get(0).unwrap_or(t))
        .and_then(Value::as_str)
        .unwrap_or("string");
    match t {
        "integer" => "10".into(),
        "number" => "1.5".into(),
        "boolean" => "true".into(),
        "array" => "[]".into(),
        "object" => "{}".into(),
        _ => "\"...\"".into(),
    }
}

/// One user-message body with the results of the calls, in call order:
/// `[RESULT name]\noutput\n[/RESULT]`, or `[RESULT name ERROR]` for a failure.
pub fn results_message(results: &[(String, Result<String, String>)]) -> String {
    let blocks: Vec<String> = results
        .iter()
        .map(|(name, result)| {
            let (mark, body) = match result {
                Ok(out) => ("", out.trim_end()),
                Err(err) => (" ERROR", err.trim_end()),
            };
            let body = if body.is_empty() { "(no output)" } else { body };
            format!("{RESULT_OPEN}{name}{mark}]\n{body}{RESULT_CLOSE}")
        })
        .collect();
    blocks.join("\n\n")
}

/// Where the first `[RESULT …]` block of `content` starts: a line that is
/// a whole header as [`results_message`] writes it (`[RESULT name]` or
/// `[RESULT name ERROR]`), closed by a `[/RESULT]` line further on. A line
/// that merely begins `[RESULT ` is not one.
fn first_block(content: &str) -> Option<usize> {
    let mut at = 0;
    loop {
        let start = if content[at..].starts_with(RESULT_OPEN) {
            at
        } else {
            at + content[at..].find(&format!("\n{RESULT_OPEN}"))? + 1
        };
        let line_end = content[start..]
            .find('\n')
            .map_or(content.len(), |i| start + i);
        let header = &content[start + RESULT_OPEN.len()..line_end];
        let name = header
            .strip_suffix(']')
            .map(|h| h.strip_suffix(" ERROR").unwrap_or(h));
        let named = name.is_some_and(|n| {
            !n.is_empty() && !n.contains(|c: char| c.is_whitespace() || c == ']' || c == '[')
        });
        if named && content[line_end..].contains(RESULT_CLOSE) {
            return Some(start);
        }
        at = line_end;
    }
}

const RESULT_OPEN: &str = "[RESULT ";
const RESULT_CLOSE: &str = "\n[/RESULT]";
const MALFORMED_START: &str = "These tool calls could not be understood";

/// Whether a user message is one warden wrote with tool results (or the
/// calls it could not understand) under the text protocol.
pub fn is_results_message(content: &str) -> bool {
    content.starts_with(MALFORMED_START) || first_block(content).is_some()
}

/// `content` with the output inside each `[RESULT …]` block replaced by
/// `shorten(output)`; everything else as it was.
pub fn shorten_results(content: &str, shorten: &dyn Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(content.len());
    let mut rest = content;
    while let Some(start) = first_block(rest) {
        let Some(header) = rest[start..].find('\n') else {
            break;
        };
        let body_start = start + header + 1;
        let Some(len) = rest[body_start..].find(RESULT_CLOSE) else {
            break;
        };
        out.push_str(&rest[..body_start]);
        out.push_str(&shorten(&rest[body_start..body_start + len]));
        rest = &rest[body_start + len..];
    }
    out.push_str(rest);
    out
}

/// Longest excerpt of a malformed call quoted back to the model: enough to
/// recognise it, without echoing a whole file it tried to write.
const QUOTE_LIMIT: usize = 300;

/// One user-message body explaining which calls could not be understood
/// (none of them ran), why, and the expected form with an example.
pub fn malformed_message(errors: &[(String, String)]) -> String {
    let mut s = format!("{MALFORMED_START}, so they were not run:\n");
    for (i, (raw, error)) in errors.iter().enumerate() {
        let mut quoted: String = raw.chars().take(QUOTE_LIMIT).collect();
        if quoted.len() < raw.len() {
            quoted.push_str(" …");
        }
        s.push_str(&format!("\n{}. {quoted}\n   Error: {error}\n", i + 1));
    }
    s.push_str("\nA tool call must look exactly like this:\n\n[TOOL] tool_name(name=\"value\", count=3) [/TOOL]\n\n");
    s.push_str("Strings are quoted (\"...\" or '...'); inside them write \\\" for a quote, \\\\ for a backslash ");
    s.push_str("and \\n for a newline. Arguments may also be positional, in the listed order, or one JSON object: ");
    s.push_str("[TOOL] tool_name({\"name\": \"value\"}) [/TOOL]. Send the corrected calls.");
    s
}
