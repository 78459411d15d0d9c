//! `warden run`, `warden chat`, `warden sessions`: the agent on the terminal.

use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use warden_agent::session::{self, Record};
use warden_agent::settings::{self, Overrides, Protocol};
use warden_agent::{Agent, AgentError};

use warden_policy::{inert, inert_text};
use warden_workspace::{ApprovalMode, SandboxRunner, Workspace};

use crate::approval::Approver;
use crate::args::ModelFlags;
use crate::events::Renderer;

/// Exit code of a task that failed (API error, turn limit, calls refused
/// for want of a terminal).
pub const EXIT_FAILED: u8 = 3;
/// Exit code of a cancelled task.
pub const EXIT_CANCELLED: u8 = 130;

/// A configuration problem: exit code 2.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// Builds the agent (settings, tools, transcript new or resumed) and the
/// approver its calls go through.
pub fn build(
    ws: &Workspace,
    flags: &ModelFlags,
    resume: Option<&str>,
) -> anyhow::Result<(Agent, Arc<Approver>)> {
    let user_cfg = warden_policy::load_user_config(&ws.folders.config_file())
        .map_err(|e| ConfigError(format!("{e:#}")))?;
    let mode = ApprovalMode::resolve(
        flags.approval.as_deref().map(ApprovalMode::parse),
        user_cfg.approval.as_deref().map(ApprovalMode::parse),
        ws.policy.approval().map(ApprovalMode::parse),
    );
    let approver = Arc::new(Approver::new(flags.yes));
    let env = |k: &str| std::env::var(k).ok();
    let protocol = match &flags.protocol {
        Some(p) => Some(Protocol::parse(p).ok_or_else(|| {
            ConfigError(format!("unknown protocol `{p}`: use auto, native or text"))
        })?),
        None => None,
    };
    let overrides = Overrides {
        base_url: flags.base_url.clone(),
        model: flags.model.clone(),
        no_stream: flags.no_stream,
        protocol,
        max_turns: flags.max_turns,
    };
    let (mut settings, notes) =
        settings::resolve_noted(&user_cfg.model, ws.policy.model(), &env, &overrides)
            .map_err(|e| ConfigError(e.to_string()))?;
    for n in notes {
        eprintln!("note: {}", inert(&n));
    }
    settings::backoff_from_env(&env, &mut settings.client);
    let tools = ws.toolset(Some(crate::render::compiling()))?;
    crate::render::warnings(&tools);
    if !approver.can_approve() && tools.enabled().any(|t| mode.asks(t.grants())) {
        eprintln!(
            "note: no terminal and no --yes: calls that need approval (writes, network) will be \
             refused; pass --yes to allow them"
        );
    }
    let store = ws.sessions()?;
    let (mut session, history) = match resume {
        Some(id) => {
            let (s, records) = store.open(id).map_err(|e| ConfigError(e.to_string()))?;
            (s, session::messages(&records))
        }
        None => (
            store
                .create()
                .context("cannot create the session transcript")?,
            Vec::new(),
        ),
    };
    session.append(&Record::Start {
        ts: session::now(),
        model: settings.client.model.clone(),
        base_url: warden_agent::client::redact_url(&settings.client.base_url),
        workspace: ws.root.display().to_string(),
        protocol: settings.protocol.as_str().to_string(),
    })?;
    let agent = Agent::new(
        settings,
        Arc::new(SandboxRunner::new(tools, mode, Box::new(approver.clone()))),
        ws.root.clone(),
        Some(session),
        history,
    )?;
    Ok((agent, approver))
}

/// Runs one send with Ctrl-C cancelling it (also at an approval prompt).
fn send(
    rt: &tokio::runtime::Runtime,
    agent: &mut Agent,
    approver: &Approver,
    r: &mut Renderer,
    text: &str,
) -> Result<String, AgentError> {
    let cancel = CancellationToken::new();
    approver.set_turn(Some(cancel.clone()));
    let watch = {
        let cancel = cancel.clone();
        rt.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let result = rt.block_on(agent.send(text, &cancel, &mut |e| r.on(e)));
    approver.set_turn(None);
    watch.abort();
    r.stop_spinner();
    result
}

/// `warden run`.
pub fn run(
    ws: &Workspace,
    task: Option<String>,
    json: bool,
    flags: &ModelFlags,
    resume: Option<&str>,
) -> anyhow::Result<u8> {
    let task = match task.filter(|t| t != "-") {
        Some(t) => t,
        None => {
            if std::io::stdin().is_terminal() {
                bail!(ConfigError(
                    "give a task: `warden run \"...\"` or pipe it on stdin".into()
                ));
            }
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read the task from stdin")?;
            s
        }
    };
    if task.trim().is_empty() {
        bail!(ConfigError("the task is empty".into()));
    }
    let (mut agent, approver) = build(ws, flags, resume)?;
    let session_id = agent
        .session()
        .map(|s| s.id().to_string())
        .unwrap_or_default();
    let rt = tokio::runtime::Runtime::new()?;
    let mut r = Renderer::new(json);
    let result = send(&rt, &mut agent, &approver, &mut r, &task);
    let reason = match &result {
        Ok(_) => "answered".to_string(),
        Err(e) => e.to_string(),
    };
    // The transcript is complete without this line; losing it loses nothing.
    let _ = agent.finish(&reason);
    match result {
        Ok(answer) => {
            if json {
                r.emit(json!({"type": "final", "text": answer, "session": session_id}));
            } else {
                if r.streamed == 0 {
                    print!("{}", inert_text(&answer));
                }
                if !answer.ends_with('\n') {
                    println!();
                }
            }
            // The model may say it succeeded; what it was refused says otherwise.
            let refused = approver.refused_unasked();
            if refused > 0 {
                eprintln!(
                    "warden: {refused} call(s) needing approval were refused (no terminal, no \
                     --yes); pass --yes or --approval never to allow them"
                );
                return Ok(EXIT_FAILED);
            }
            Ok(0)
        }
        Err(e) => {
            let code = if matches!(e, AgentError::Cancelled) {
                EXIT_CANCELLED
            } else {
                EXIT_FAILED
            };
            if json {
                r.emit(json!({"type": "error", "message": e.to_string(), "session": session_id}));
            }
            eprintln!("error: {}", inert(&e.to_string()));
            eprintln!(
                "session {session_id} keeps what was done: `warden run --resume {session_id} \"...\"` continues it"
            );
            Ok(code)
        }
    }
}

/// `warden chat`.
pub fn chat(ws: &Workspace, flags: &ModelFlags, resume: Option<&str>) -> anyhow::Result<u8> {
    let (mut agent, approver) = build(ws, flags, resume)?;
    let rt = tokio::runtime::Runtime::new()?;
    let mut rl = rustyline::DefaultEditor::new().context("cannot start the line editor")?;
    let history = ws.folders.history().ok().map(|d| d.path().join("history"));
    if let Some(h) = &history {
        let _ = rl.load_history(h);
    }
    let id = agent
        .session()
        .map(|s| s.id().to_string())
        .unwrap_or_default();
    eprintln!(
        "warden chat — session {id}. /tools, /clear, /exit; Ctrl-C cancels a turn, Ctrl-D quits."
    );
    let mut r = Renderer::new(false);
    loop {
        let line = match rl.readline("› ") {
            Ok(l) => l,
            Err(rustyline::error::ReadlineError::Interrupted) => continue,
            Err(rustyline::error::ReadlineError::Eof) => break,
            Err(e) => return Err(e.into()),
        };
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let _ = rl.add_history_entry(text);
        match text {
            "/exit" | "/quit" => break,
            "/clear" => {
                agent.clear();
                eprintln!("conversation cleared (the transcript keeps it)");
                continue;
            }
            "/tools" => {
                for t in agent.tools() {
                    let mode = if t.mutates {
                        "changes files"
                    } else {
                        "read-only"
                    };
                    eprintln!(
                        "  {:<12} {mode:<13} {}",
                        t.def.name,
                        crate::render::short(&t.def.description, 60)
                    );
                }
                continue;
            }
            "/help" => {
                eprintln!("/tools  list tools · /clear  forget the conversation · /exit  quit");
                continue;
            }
            t if t.starts_with('/') => {
                eprintln!("unknown command {t}: try /help");
                continue;
            }
            _ => {}
        }
        match send(&rt, &mut agent, &approver, &mut r, text) {
            Ok(answer) => {
                if r.streamed == 0 {
                    print!("{}", inert_text(&answer));
                }
                println!();
            }
            Err(AgentError::Cancelled) => eprintln!("\ncancelled; the conversation is kept"),
            Err(e) => eprintln!("error: {}", inert(&e.to_string())),
        }
    }
    if let Some(h) = &history {
        let _ = rl.save_history(h);
    }
    Ok(0)
}

/// `warden sessions`.
pub fn sessions(ws: &Workspace, json: bool) -> anyhow::Result<u8> {
    let store = ws.sessions()?;
    let list = store.list()?;
    let mut out = std::io::stdout().lock();
    if json {
        let v: Vec<_> = list
            .iter()
            .map(|s| json!({"id": s.id, "started": s.started, "updated": s.updated, "title": s.title, "messages": s.messages, "path": s.path}))
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    if list.is_empty() {
        writeln!(out, "no sessions yet in {}", display(store.dir()))?;
        return Ok(0);
    }
    let mut rows = vec![vec![
        "ID".to_string(),
        "UPDATED".into(),
        "MESSAGES".into(),
        "TITLE".into(),
    ]];
    for s in &list {
        rows.push(vec![
            s.id.clone(),
            s.updated.clone(),
            s.messages.to_string(),
            inert(&s.title).into_owned(),
        ]);
    }
    out.write_all(crate::render::table(&rows).as_bytes())?;
    Ok(0)
}

fn display(p: &Path) -> String {
    p.display().to_string()
}
