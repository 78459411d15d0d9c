//! The system prompt: where the model is and what it may reach, in a few lines.

use std::path::Path;

use crate::settings::Protocol;
use crate::{AgentTool, jsonproto, textproto};

/// Builds the system prompt for the protocol in use. Under native tool
/// calling the tools are listed by the request itself; the json and text
/// protocols list them here, with how to call them.
pub fn system_prompt(workspace: &Path, tools: &[AgentTool], protocol: Protocol) -> String {
    let runners: Vec<String> = tools
        .iter()
        .filter(|t| !t.programs.is_empty())
        .map(|t| format!("`{}` may run {}", t.def.name, t.programs.join(", ")))
        .collect();
    let shell = if runners.is_empty() {
        "there is no shell".to_string()
    } else {
        format!(
            "commands run only through tools: {} (confined to that tool's grants)",
            runners.join("; ")
        )
    };
    let mut p = format!(
        "You are warden, an agent that completes tasks in the workspace {ws}.\n\
         - Relative paths resolve in the workspace. A tool sees only the directories granted \
         to it; only tools granted hosts reach the network; {shell}.\n\
         - Read before you edit; make small, exact edits. If a tool fails, read the error and \
         adjust the call.\n\
         - When done, answer briefly with what you did.",
        ws = workspace.display(),
    );
    let desktop: Vec<String> = tools
        .iter()
        .flat_map(|t| {
            let name = &t.def.name;
            let apps =
                (!t.apps.is_empty()).then(|| format!("`{name}` may start {}", t.apps.join(", ")));
            let pages = (!t.browse.is_empty())
                .then(|| format!("`{name}` may open pages of {}", t.browse.join(", ")));
            apps.into_iter().chain(pages)
        })
        .collect();
    if !desktop.is_empty() {
        p.push_str(&format!(
            "\n- The user's desktop: {}. These run in the user's session, outside the sandbox, \
             and stay open after you finish; open one only when the user asks to see something.",
            desktop.join("; ")
        ));
    }
    if tools.is_empty() {
        p.push_str("\n- No tools are available: answer from what you know.");
    }
    let defs = || -> Vec<_> { tools.iter().map(|t| t.def.clone()).collect() };
    match protocol {
        Protocol::Text => {
            p.push_str("\n\n");
            p.push_str(&textproto::instructions(&defs()));
        }
        Protocol::Json => {
            p.push_str("\n\n");
            p.push_str(&jsonproto::instructions(&defs()));
        }
        _ => {}
    }
    p
}

/// Appends instructions files (`(source, text)`) to a system prompt, each
/// under a header naming where it came from.
pub fn add_instructions(prompt: &mut String, instructions: &[(String, String)]) {
    for (source, text) in instructions {
        prompt.push_str(&format!(
            "\n\nInstructions from {source} (follow them where they do not conflict with the \
             rules above):\n{}",
            text.trim_end()
        ));
    }
}

/// Keywords of an argument schema that only validation needs: the host
/// checks every call against the full schema and tells the model what was
/// wrong, so they are left out of what the model reads, which keeps the
/// first request short for small local models.
const VALIDATION_ONLY: [&str; 5] = [
    "minLength",
    "maxLength",
    "minimum",
    "maximum",
    "additionalProperties",
];

/// The schema as offered to the model: without [`VALIDATION_ONLY`]
/// keywords, at any depth.
pub fn schema_for_model(schema: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| !VALIDATION_ONLY.contains(&k.as_str()) || v.is_object())
                .map(|(k, v)| (k.clone(), schema_for_model(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(schema_for_model).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{schema_for_model, system_prompt};
    use crate::settings::Protocol;
    use crate::{AgentTool, ToolDef};

    fn tool(name: &str, apps: &[&str], browse: &[&str]) -> AgentTool {
        AgentTool {
            def: ToolDef {
                name: name.into(),
                description: String::new(),
                parameters: json!({"type": "object"}),
            },
            mutates: true,
            programs: Vec::new(),
            apps: apps.iter().map(|a| a.to_string()).collect(),
            browse: browse.iter().map(|b| b.to_string()).collect(),
        }
    }

    #[test]
    fn the_prompt_lists_the_granted_apps_and_pages_only_when_granted() {
        let ws = std::path::Path::new("/ws");
        let with = system_prompt(
            ws,
            &[
                tool("open_app", &["libreoffice", "xeyes"], &[]),
                tool("browse", &[], &["docs.rs", "*.github.com"]),
            ],
            Protocol::Native,
        );
        assert!(
            with.contains(
                "\n- The user's desktop: `open_app` may start libreoffice, xeyes; `browse` may \
                 open pages of docs.rs, *.github.com. These run in the user's session, outside \
                 the sandbox, and stay open after you finish; open one only when the user asks \
                 to see something."
            ),
            "{with}"
        );
        let without = system_prompt(ws, &[tool("list_apps", &[], &[])], Protocol::Native);
        assert!(!without.contains("desktop"), "{without}");
    }

    #[test]
    fn validation_keywords_are_left_out() {
        let schema = json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "description": "File."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                "minimum": {"type": "integer"},
            },
            "additionalProperties": false,
        });
        assert_eq!(
            schema_for_model(&schema),
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File."},
                    "limit": {"type": "integer"},
                    "minimum": {"type": "integer"},
                },
            })
        );
    }
}
