//! The agent: an OpenAI-compatible chat-completions client, the tool loop,
//! the text tool protocol for models without native tool calling, and
//! append-only session transcripts. It sees tools through [`ToolRunner`],
//! never through wasmtime.

mod agent;
pub mod client;
mod message;
mod prompt;
pub mod session;
pub mod settings;
pub mod textproto;
mod tools;

pub use agent::{Agent, AgentError, Event};
pub use message::{FunctionCall, Message, ToolCall, ToolDef, Usage};
pub use tools::{AgentTool, CallCancel, ToolResult, ToolRunner, Touched, spawn_call};
