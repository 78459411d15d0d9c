//! The constrained protocol (`protocol = "json"`), for small models: every
//! reply is one JSON object, a call of one offered tool with arguments
//! valid against its schema, or the final answer. The server enforces it
//! through structured output ([`step_schema`], a `oneOf` over the tools
//! and the answer), so a model that would drift into prose or a broken
//! call cannot; [`parse_step`] reads the object once.
//!
//! Results come back in a shape small models follow: the result, then the
//! task restated with the calls made so far and what is left to decide
//! (the agent writes that part).

#[cfg(test)]
mod tests;

use serde_json::{Map, Value, json};

use crate::ToolDef;

/// The schema every reply must match: `{"tool": NAME, "arguments": {…}}`
/// for one of `tools` (its arguments' schema as the model reads it), or
/// `{"answer": "…"}`. Definitions a tool's schema keeps under `$defs` are
/// moved to the root, renamed after the tool, so that its references
/// still resolve.
pub fn step_schema(tools: &[ToolDef]) -> Value {
    let mut defs = Map::new();
    let mut steps: Vec<Value> = tools
        .iter()
        .map(|t| {
            json!({
                "type": "object",
                "properties": {
                    "tool": {"type": "string", "enum": [t.name]},
                    "arguments": hoist(&t.name, &t.parameters, &mut defs),
                },
                "required": ["tool", "arguments"],
                "additionalProperties": false,
            })
        })
        .collect();
    steps.push(json!({
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": false,
    }));
    let mut schema = json!({ "oneOf": steps });
    if !defs.is_empty() {
        schema["$defs"] = Value::Object(defs);
    }
    schema
}

/// `schema` without its own definitions, which go to `defs` as
/// `TOOL.NAME`, and its references to them rewritten.
fn hoist(tool: &str, schema: &Value, defs: &mut Map<String, Value>) -> Value {
    let mut schema = schema.clone();
    let Some(object) = schema.as_object_mut() else {
        return schema;
    };
    let mut own = Vec::new();
    for key in ["$defs", "definitions"] {
        if let Some(Value::Object(found)) = object.remove(key) {
            own.extend(found.into_iter().map(|(name, def)| (key, name, def)));
        }
    }
    if own.is_empty() {
        return schema;
    }
    let renamed: Vec<(String, String)> = own
        .iter()
        .map(|(key, name, _)| (format!("#/{key}/{name}"), format!("#/$defs/{tool}.{name}")))
        .collect();
    for (_, name, mut def) in own {
        rename_refs(&mut def, &renamed);
        defs.insert(format!("{tool}.{name}"), def);
    }
    rename_refs(&mut schema, &renamed);
    schema
}

/// Rewrites every `$ref` found in `renamed` (old, new).
fn rename_refs(v: &mut Value, renamed: &[(String, String)]) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                if k == "$ref"
                    && let Value::String(r) = child
                    && let Some((_, new)) = renamed.iter().find(|(old, _)| old == r)
                {
                    *r = new.clone();
                } else {
                    rename_refs(child, renamed);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| rename_refs(i, renamed)),
        _ => {}
    }
}

/// The system-prompt section teaching the protocol: the two shapes of a
/// reply, then one line per tool.
pub fn instructions(tools: &[ToolDef]) -> String {
    let example = tools.first().map_or("read_file", |t| t.name.as_str());
    format!(
        "## How to reply\n\n\
         Every reply is exactly one JSON object and nothing else:\n\
         - to call a tool: {{\"tool\": \"{example}\", \"arguments\": {{...}}}}, with the \
         arguments the tool takes;\n\
         - when the task is done: {{\"answer\": \"what you did, briefly\"}}.\n\n\
         One call per reply. Its result comes back in the next message, with the task and the \
         calls made so far. Do not repeat a call whose result you have.\n\n\
         Tools:\n{}",
        crate::textproto::tool_list(tools)
    )
}

/// One reply of the model, read.
#[derive(Debug, PartialEq)]
pub enum Step {
    /// A call of tool `name` with its argument object.
    Call { name: String, arguments: Value },
    /// The final answer.
    Answer(String),
    /// A reply that is neither: why, for the model.
    Invalid(String),
}

/// Reads a reply, parsing it once; the arguments are moved out of the
/// parsed object, never parsed again. A reply that is not JSON at all
/// (from a server that ignored the schema) is taken as the answer, as a
/// reply without calls is under native tool calling.
pub fn parse_step(content: &str) -> Step {
    let text = unfenced(content.trim());
    let value = match serde_json::from_str::<Value>(text) {
        Ok(v) => v,
        Err(e) if text.starts_with('{') => {
            return Step::Invalid(format!("the reply is not valid JSON ({e})"));
        }
        Err(_) => return Step::Answer(content.trim().to_string()),
    };
    let Value::Object(mut object) = value else {
        return Step::Invalid(format!(
            "the reply is {}, not a JSON object",
            warden_policy::json_kind(&value)
        ));
    };
    match (object.remove("tool"), object.remove("answer")) {
        (Some(Value::String(name)), _) => match object.remove("arguments") {
            None | Some(Value::Null) => Step::Call {
                name,
                arguments: Value::Object(Map::new()),
            },
            Some(arguments @ Value::Object(_)) => Step::Call { name, arguments },
            Some(other) => Step::Invalid(format!(
                "\"arguments\" is {}, not a JSON object",
                warden_policy::json_kind(&other)
            )),
        },
        (Some(other), _) => Step::Invalid(format!(
            "\"tool\" is {}, not a tool's name",
            warden_policy::json_kind(&other)
        )),
        (None, Some(Value::String(answer))) => Step::Answer(answer),
        (None, Some(other)) => Step::Answer(other.to_string()),
        (None, None) => Step::Invalid("the object has neither \"tool\" nor \"answer\"".into()),
    }
}

/// The body of a ```` ```json ```` fence around the whole text, or the text.
fn unfenced(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("```") else {
        return text;
    };
    let Some((_, body)) = inner.split_once('\n') else {
        return text;
    };
    body.trim_end()
        .strip_suffix("```")
        .map_or(text, |b| b.trim())
}

/// What the model is told after a reply that was not a valid step.
pub fn invalid_message(error: &str) -> String {
    format!(
        "Your reply was not a valid step: {error}. Reply with exactly one JSON object: \
         {{\"tool\": \"NAME\", \"arguments\": {{...}}}} to call a tool, or {{\"answer\": \
         \"...\"}} when the task is done."
    )
}

/// The next step's choice, as the model is asked it after each result.
pub const NEXT: &str = "Decide the next step: if the task is done, reply {\"answer\": \"...\"} \
                        with what you did; if not, call the tool for the next step.";
