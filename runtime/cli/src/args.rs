//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Run LLM agent tools as sandboxed WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "warden", version, about)]
pub struct Cli {
    /// Workspace root (default: the current directory).
    #[arg(long, short = 'w', global = true, value_name = "DIR")]
    pub workspace: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List, inspect and call tools without a model.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Show every tool's effective grants in this workspace.
    Policy {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ToolsCommand {
    /// List every tool: name, source, access, description.
    List {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Show one tool's full spec and argument schema.
    Inspect {
        /// Tool name or alias.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Run one sandboxed call and print its result.
    Call {
        /// Tool name or alias.
        name: String,
        /// Arguments as a JSON object (`-` reads them from stdin).
        #[arg(default_value = "{}")]
        args: String,
        /// Print the outcome as JSON.
        #[arg(long)]
        json: bool,
    },
}
