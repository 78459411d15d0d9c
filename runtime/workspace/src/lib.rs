//! What runs in a workspace.
//!
//! This crate owns the decisions between the policy file and the sandbox:
//! where warden keeps its own files ([`Folders`]), which built-ins exist
//! and what they get by default ([`manifest`]), what the user trusted and
//! so what configuration is in force ([`Workspace`]), every enabled tool
//! bound once to its grants ([`Toolset`]), and the agent's
//! [`ToolRunner`](warden_agent::ToolRunner) with approval ([`SandboxRunner`],
//! [`Approve`]). The command-line interface only renders and asks.

mod folders;
pub mod instructions;
pub mod manifest;
mod mcp;
mod mcp_http;
mod question;
mod runner;
mod toolset;
pub mod undo;
mod workspace;

pub use folders::{Folders, Overlap};
pub use instructions::{INSTRUCTIONS_FILE, Instructions};
pub use mcp::{McpServer, McpTool, McpTools};
pub use question::question;
pub use runner::{ApprovalMode, ApprovalRequest, Approve, SandboxRunner, Verdict};
pub use toolset::{Entry, Toolset};
pub use undo::{Journal, TurnChanges, Undone};
pub use workspace::{WORKSPACE_TOOLS, Workspace};

/// Why a workspace cannot be opened. Every one is a configuration problem
/// the user fixes (exit code 2 in the cli).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// warden's own folders are missing, unsafe, or inside the workspace.
    #[error("{0}")]
    Folders(String),
    /// The workspace root cannot be used.
    #[error("{0}")]
    Root(String),
    /// The policy in force does not parse.
    #[error("{0}; fix the policy file, or move it away to use the defaults")]
    Policy(#[source] warden_policy::Error),
    /// The trust record cannot be read or written.
    #[error(transparent)]
    Trust(#[from] warden_policy::Error),
    /// A file warden reads for itself from the workspace (`warden.toml`)
    /// is refused or cannot be read; the message says what to do.
    #[error(transparent)]
    File(warden_policy::Error),
    /// A folder warden reads its own files from (`.warden/tools`) is a
    /// link, not a folder, or cannot be read.
    #[error(transparent)]
    Input(#[from] warden_state::InputError),
    /// The sandbox cannot start, or a tools folder cannot be read.
    #[error(transparent)]
    Sandbox(#[from] warden_sandbox::Error),
}
