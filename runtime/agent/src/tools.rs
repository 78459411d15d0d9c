//! How the agent sees tools: a small trait, so it never touches wasmtime.

use std::time::Duration;

use crate::ToolDef;

/// A tool the model may call.
#[derive(Debug, Clone)]
pub struct AgentTool {
    /// Name, description, argument schema.
    pub def: ToolDef,
    /// Whether a call can change state (such calls never run concurrently).
    pub mutates: bool,
}

/// What one call returned.
#[derive(Debug, Clone)]
pub struct ToolResult {
    /// False when the text is an error for the model to act on.
    pub ok: bool,
    /// Output, or the error message.
    pub output: String,
    /// Wall time of the call.
    pub duration: Duration,
}

/// Runs tool calls. Implemented by the sandbox toolset in the CLI; tests may
/// implement it directly. Unknown names and bad arguments come back as a
/// failed [`ToolResult`], never as a panic.
pub trait ToolRunner: Send + Sync + 'static {
    /// The tools to offer.
    fn tools(&self) -> Vec<AgentTool>;
    /// Runs one call, blocking.
    fn call(&self, name: &str, arguments: &str) -> ToolResult;
}
