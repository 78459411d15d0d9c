//! `warden`: run sandboxed tools for LLM agents.

// `stderr_line!` and `stdout_line!` panic when the stream is closed (`warden run …
// 2>&1 | head`), which would end a run midway: before its changes are
// reported, its session closed or its commands stopped. These write what
// they can and go on.
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}
macro_rules! stderr_text {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr(), $($arg)*);
    }};
}
macro_rules! stdout_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}
macro_rules! stdout_text {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}

mod agent_cmd;
mod approval;
mod args;
mod author;
mod docs_cmd;
mod doctor;
mod endpoint;
mod events;
mod init;
mod mcp_cmd;
mod models_cmd;
mod policy_cmd;
mod prompt;
mod render;
mod sessions_cmd;
mod style;
mod tools_cmd;
mod trust_cmd;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;
use warden_agent::settings::NoModel;
use warden_policy::inert;
use warden_workspace::{Folders, Workspace};

// Host allocations made for a tool call count against its memory limit.
#[global_allocator]
static ALLOC: warden_sandbox::HostAlloc = warden_sandbox::HostAlloc;

/// Exit code of a tool call that returned an error.
const EXIT_TOOL_ERROR: u8 = 1;
/// Exit code of a configuration or usage error.
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    // `warden __confine ...`: warden re-executed to set up the confinement
    // of a command (see warden-confine); before anything else runs.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == warden_confine::HELPER_ARG)
    {
        let rest: Vec<String> = std::env::args_os()
            .skip(2)
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        warden_confine::helper_main(&rest);
    }
    // Commands are confined by the small helper embedded here, run from
    // memory (it starts faster than warden itself would).
    warden_confine::set_helper_image(include_bytes!(env!("WARDEN_CONFINE_HELPER")));
    let cli = args::Cli::parse();
    // Cgroups left by a warden killed during a command go now, not at the
    // next command.
    warden_confine::remove_stale_cgroups();
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            if is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let text = format!("{e:#}");
            // warden's own message of several lines, nothing foreign in it.
            let shown = if e.is::<NoModel>() {
                text.as_str().into()
            } else {
                inert(&text)
            };
            let _ = writeln!(std::io::stderr(), "error: {shown}");
            // Errors that reach here stop before any work: setup, usage,
            // configuration. Failed runs return their own code (3, 130).
            ExitCode::from(EXIT_CONFIG)
        }
    }
}

fn run(cli: args::Cli) -> anyhow::Result<u8> {
    // Made from the definitions alone: no folder, no workspace needed.
    match &cli.command {
        args::Command::Completions { shell } => return docs_cmd::completions(*shell),
        args::Command::Man { dir } => return docs_cmd::man(dir.as_deref()),
        _ => {}
    }
    let folders = Folders::from_env()?;
    let dir = cli.workspace.as_deref();
    match &cli.command {
        args::Command::Init { print } => return init::run(dir, folders, *print),
        args::Command::Doctor {
            model_check,
            endpoint,
        } => return doctor::run(dir, folders, endpoint, *model_check),
        _ => {}
    }
    if let args::Command::Trust { show } = cli.command {
        return trust_cmd::run(dir, folders, show);
    }
    if let args::Command::Mcp { yes, approval } = cli.command {
        return mcp_cmd::run(cli.workspace, folders, yes, approval);
    }
    if let args::Command::Tools {
        command: args::ToolsCommand::New { name, lang, dir },
    } = &cli.command
    {
        return author::new(name, lang, dir.as_deref());
    }
    if matches!(
        cli.command,
        args::Command::Run { .. } | args::Command::Chat { .. }
    ) {
        trust_cmd::ask_on_start(dir, &folders)?;
    }
    let ws = Workspace::open(dir, folders)?;
    for n in &ws.notices {
        stderr_line!("note: {}", inert(n));
    }
    match cli.command {
        args::Command::Tools { command } => tools_cmd::run(&ws, command),
        args::Command::Policy { json } => policy_cmd::run(&ws, json),
        args::Command::Models { json, endpoint } => models_cmd::run(&ws, &endpoint, json),
        args::Command::Run {
            task,
            json,
            session,
            model,
        } => agent_cmd::run(&ws, task, json, &model, &session),
        args::Command::Chat { session, model } => agent_cmd::chat(&ws, &model, &session),
        args::Command::Sessions { json, command } => sessions_cmd::run(&ws, json, command),
        args::Command::Undo { skip: true } => agent_cmd::undo_skip(&ws),
        args::Command::Undo { skip: false } => {
            let tools = ws.toolset(Some(render::compiling()))?;
            agent_cmd::undo(&ws, &tools)
        }
        args::Command::Trust { .. }
        | args::Command::Mcp { .. }
        | args::Command::Init { .. }
        | args::Command::Doctor { .. }
        | args::Command::Completions { .. }
        | args::Command::Man { .. } => unreachable!("handled above"),
    }
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
