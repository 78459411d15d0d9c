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
    /// Write a commented warden.toml for the project here (Rust, Node,
    /// Python, Go, make, git) and offer to trust it. Never replaces one.
    Init {
        /// Print the file instead of writing it.
        #[arg(long)]
        print: bool,
    },
    /// Check this machine and workspace: command confinement, the model
    /// endpoint, warden's folders, trust. Exit 0 when every check passes.
    Doctor {
        /// Also send the endpoint two tiny requests (a few tokens each):
        /// one with a tool, one asking for a JSON-schema answer.
        #[arg(long)]
        model_check: bool,
        #[command(flatten)]
        endpoint: EndpointFlags,
    },
    /// List the models the endpoint serves, marking the one in use.
    Models {
        /// Print JSON instead of a list.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        endpoint: EndpointFlags,
    },
    /// List, inspect and call tools without a model.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// Run one task with the model, then exit.
    Run {
        /// The task (`-` or nothing: read it from stdin).
        task: Option<String>,
        /// Print one JSON event per line instead of text.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        session: SessionFlags,
        #[command(flatten)]
        model: ModelFlags,
    },
    /// Talk with the model interactively.
    Chat {
        #[command(flatten)]
        session: SessionFlags,
        #[command(flatten)]
        model: ModelFlags,
    },
    /// List recorded sessions, newest first; show or remove one.
    #[command(args_conflicts_with_subcommands = true)]
    Sessions {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        #[command(subcommand)]
        command: Option<SessionsCommand>,
    },
    /// Put back the files the last turn changed (run again to go further back).
    Undo {
        /// Drop the last turn's undo record without restoring anything, so
        /// that the next `warden undo` goes to the turn before it.
        #[arg(long)]
        skip: bool,
    },
    /// Show what warden.toml and .warden/tools would grant, compared with
    /// what was last accepted, and accept it.
    Trust {
        /// Print the accepted state instead.
        #[arg(long)]
        show: bool,
    },
    /// Serve this workspace's trusted, enabled tools to an MCP client on
    /// stdio (Claude Code, Codex CLI, Goose, ...).
    Mcp {
        /// Allow calls that need approval (writes, network); without it the
        /// client's user is asked (elicitation), or, when the client cannot
        /// ask, they are refused.
        #[arg(long, short = 'y')]
        yes: bool,
        /// Which calls need approval: never, writes or always. Overrides
        /// the user config and warden.toml.
        #[arg(long, value_name = "WHEN", value_parser = ["never", "writes", "always"])]
        approval: Option<String>,
    },
    /// Show every tool's effective grants in this workspace.
    Policy {
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Print the shell completion script, e.g. `source <(warden completions
    /// bash)` in ~/.bashrc.
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), e.g. `warden man | man -l -`.
    Man {
        /// Write warden.1 and a page per command (warden-run.1, ...) into
        /// this folder instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

/// Which endpoint and model to ask, over the configured ones.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EndpointFlags {
    /// Chat-completions endpoint, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model name.
    #[arg(long)]
    pub model: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Print a session's transcript, readable.
    Show {
        /// Session id (see `warden sessions`).
        id: String,
    },
    /// Delete recorded sessions.
    Rm {
        /// Session ids.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        ids: Vec<String>,
        /// Delete every session of this workspace.
        #[arg(long)]
        all: bool,
    },
}

/// Which session a task continues.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SessionFlags {
    /// Continue a session (see `warden sessions`).
    #[arg(long, value_name = "ID")]
    pub resume: Option<String>,
    /// Continue the last session of this workspace.
    #[arg(long = "continue", short = 'c', conflicts_with = "resume")]
    pub last: bool,
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
    /// Start a tool project in a new folder NAME: the example tool, the
    /// WIT contract and a README with the build command.
    New {
        /// The tool's name (snake_case); also the folder's.
        name: String,
        /// The language to write it in.
        #[arg(long, value_parser = ["rust", "python", "js"])]
        lang: String,
        /// Where to create the folder (default: the current directory).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Install a built component into .warden/tools (or with --user, your
    /// tools folder) and print the warden.toml lines it needs. Grants nothing.
    Add {
        /// The component (.wasm).
        file: PathBuf,
        /// Install for every workspace of yours, not only this one.
        #[arg(long)]
        user: bool,
        /// Replace an installed file of the same name.
        #[arg(long)]
        force: bool,
    },
    /// Compile every component this workspace loads into the cache now,
    /// instead of at its first use.
    Compile,
}

/// Model settings that override the configuration files and environment.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct ModelFlags {
    /// Chat-completions endpoint, e.g. http://127.0.0.1:8080/v1.
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Model name.
    #[arg(long)]
    pub model: Option<String>,
    /// Ask for whole answers instead of a stream.
    #[arg(long)]
    pub no_stream: bool,
    /// Tool calling: auto, native, json or text.
    #[arg(long, value_name = "PROTOCOL")]
    pub protocol: Option<String>,
    /// Model round trips per task.
    #[arg(long, value_name = "N")]
    pub max_turns: Option<u32>,
    /// Offer only these tools to the model (comma-separated), e.g.
    /// `--tools read_file,grep`: a shorter prompt for small models.
    #[arg(long, value_name = "NAMES", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Approve every tool call without asking.
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// When to ask before a tool call: never, writes (calls of tools that
    /// can change files or reach the network) or always. Overrides the
    /// user config and warden.toml.
    #[arg(long, value_name = "WHEN", value_parser = ["never", "writes", "always"])]
    pub approval: Option<String>,
}
