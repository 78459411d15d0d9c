//! Chat-completions messages, exactly as the OpenAI API spells them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    /// Instructions for the model.
    System { content: String },
    /// What the user said.
    User { content: String },
    /// What the model answered: text, tool calls, or both.
    Assistant {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call, answering `tool_call_id`.
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Id the tool message must echo.
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type", default = "function_type")]
    pub kind: String,
    /// Name and JSON arguments.
    pub function: FunctionCall,
}

fn function_type() -> String {
    "function".into()
}

/// Name and arguments of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// Tool name.
    pub name: String,
    /// Arguments as a JSON string (possibly malformed: models make mistakes).
    pub arguments: String,
}

impl ToolCall {
    /// A function tool call.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> ToolCall {
        ToolCall {
            id: id.into(),
            kind: function_type(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
        }
    }
}

/// A tool offered to the model (sent as `{"type":"function","function":{...}}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ToolDef {
    /// Tool name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

impl ToolDef {
    /// The `tools` entry of a chat-completions request.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// The same entry, serialized from borrowed fields: what a request
    /// body holds, without copying the schema each turn.
    pub(crate) fn wire(&self) -> WireTool<'_> {
        WireTool {
            kind: "function",
            function: WireFunction {
                name: &self.name,
                description: &self.description,
                parameters: &self.parameters,
            },
        }
    }
}

/// [`ToolDef::to_json`], borrowed; fields in the same order.
#[derive(Serialize)]
pub(crate) struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a Value,
}

/// Token counts reported by the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub prompt_tokens: u64,
    #[serde(default)]
    pub completion_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}
