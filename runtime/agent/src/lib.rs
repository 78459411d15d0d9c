//! The agent: an OpenAI-compatible chat-completions client, the tool loop,
//! the json protocol (one constrained JSON object per reply) and the text
//! protocol for models without working native tool calls, and append-only
//! session transcripts. It sees tools through [`ToolRunner`], never
//! through wasmtime.

mod agent;
pub mod client;
pub mod jsonproto;
mod message;
mod prompt;
pub mod session;
pub mod settings;
pub mod textproto;
mod tools;

pub use agent::{Agent, AgentError, Event};
pub use message::{FunctionCall, Message, ToolCall, ToolDef, Usage};
pub use tools::{AgentTool, CallCancel, ToolResult, ToolRunner, Touched, spawn_call};
