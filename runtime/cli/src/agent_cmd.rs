//! `warden run`, `warden chat`, `warden sessions`: the agent on the terminal.

use std::io::{IsTerminal, Read};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use warden_agent::session::{self, Record};
use warden_agent::settings::{Overrides, Protocol};
use warden_agent::{Agent, AgentError, Usage};

use warden_policy::{inert, inert_text};
use warden_state::StateDir;
use warden_workspace::{ApprovalMode, Journal, SandboxRunner, TurnChanges, Workspace};

use crate::approval::Approver;
use crate::args::{ModelFlags, SessionFlags};
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

/// The session a command continues: `--resume ID`, `--continue` (the last
/// one here), or none.
fn session_to_resume(ws: &Workspace, flags: &SessionFlags) -> anyhow::Result<Option<String>> {
    if let Some(id) = &flags.resume {
        return Ok(Some(id.clone()));
    }
    if !flags.last {
        return Ok(None);
    }
    match ws.sessions()?.latest()? {
        Some(id) => Ok(Some(id)),
        None => bail!(ConfigError(
            "no session to continue in this workspace yet: start one with `warden run \"...\"` \
             or `warden chat`"
                .into()
        )),
    }
}

/// A ready agent and what the front-end keeps beside it.
pub struct Built {
    pub agent: Agent,
    /// The records of a resumed transcript as they were before this start.
    pub records: Vec<Record>,
    /// What each turn changed, for undo.
    pub journal: Arc<Journal>,
    /// The tools (also the agent's), for `/undo`.
    pub runner: Arc<SandboxRunner>,
    /// The approver of its calls, which counts what it refused.
    pub approver: Arc<Approver>,
}

/// Builds the agent: settings, tools, transcript (new or resumed).
pub fn build(ws: &Workspace, flags: &ModelFlags, which: &SessionFlags) -> anyhow::Result<Built> {
    let resume = session_to_resume(ws, which)?;
    let user_cfg = warden_policy::load_user_config(&ws.folders.config_file())
        .map_err(|e| ConfigError(format!("{e:#}")))?;
    let mode = ApprovalMode::resolve(
        flags.approval.as_deref().map(ApprovalMode::parse),
        user_cfg.approval.as_deref().map(ApprovalMode::parse),
        ws.policy.approval().map(ApprovalMode::parse),
    );
    let approver = Arc::new(Approver::new(flags.yes, &ws.root));
    let protocol = match &flags.protocol {
        Some(p) => Some(Protocol::parse(p).ok_or_else(|| {
            ConfigError(format!(
                "unknown protocol `{p}`: use auto, native, json or text"
            ))
        })?),
        None => None,
    };
    let overrides = Overrides {
        base_url: flags.base_url.clone(),
        model: flags.model.clone(),
        no_stream: flags.no_stream,
        protocol,
        max_turns: flags.max_turns,
        tools: flags.tools.clone(),
    };
    let (settings, notes) = crate::endpoint::resolve(&ws.folders, ws.policy.model(), &overrides)?;
    for n in notes {
        stderr_line!("note: {}", inert(&n));
    }
    let tools = ws.toolset_with_mcp(Some(crate::render::compiling()))?;
    crate::render::warnings(&tools);
    if let Some(offered) = &settings.tools {
        let enabled: Vec<&str> = tools
            .enabled()
            .map(|t| t.info().spec.name.as_str())
            .collect();
        if let Some(unknown) = offered.iter().find(|n| !enabled.contains(&n.as_str())) {
            bail!(ConfigError(format!(
                "`{}` in the tools to offer is not an enabled tool; enabled tools: {}",
                inert(unknown),
                inert(&enabled.join(", "))
            )));
        }
    }
    if !approver.can_approve() && tools.enabled().any(|t| mode.asks(t.grants())) {
        stderr_line!(
            "note: no terminal and no --yes: calls that need approval (writes, network) will be \
             refused; pass --yes (or --approval never) to allow them"
        );
    }
    let store = ws.sessions()?;
    let (mut session, records) = match resume.as_deref() {
        Some(id) => store.open(id).map_err(|e| ConfigError(e.to_string()))?,
        None => (
            store
                .create()
                .context("cannot create the session transcript")?,
            Vec::new(),
        ),
    };
    let history = session::messages(&records);
    session.append(&Record::Start {
        ts: session::now(),
        model: settings.client.model.clone(),
        base_url: warden_agent::client::redact_url(&settings.client.base_url),
        workspace: ws.root.display().to_string(),
        protocol: settings.protocol.as_str().to_string(),
    })?;
    let journal = Arc::new(Journal::new(ws.folders.undo(&ws.root)?, session.id()));
    let runner = Arc::new(
        SandboxRunner::new(tools, mode, Box::new(approver.clone())).with_journal(journal.clone()),
    );
    let agent = Agent::new(
        settings,
        runner.clone(),
        ws.root.clone(),
        Some(session),
        history,
    )?
    .with_instructions(
        ws.instructions
            .iter()
            .map(|i| (i.source.clone(), i.prompt_text()))
            .collect(),
    )
    .resume_protocol(&records);
    // Without the cache the endpoint is asked again in each session.
    let agent = match ws.folders.endpoints() {
        Ok(dir) => agent.with_endpoint_cache(dir),
        Err(_) => agent,
    };
    Ok(Built {
        agent,
        records,
        journal,
        runner,
        approver,
    })
}

/// Runs one send with Ctrl-C cancelling it (also at an approval prompt).
/// What undos put back in the session's files since its model last heard
/// is told after the user's words.
fn send(
    rt: &tokio::runtime::Runtime,
    agent: &mut Agent,
    built: (&Approver, &Journal),
    r: &mut Renderer,
    text: &str,
) -> Result<String, AgentError> {
    let (approver, journal) = built;
    let undone = journal.undone().unwrap_or_else(|e| {
        stderr_line!(
            "warning: the model is not told what undo put back: {}",
            inert(&e.to_string())
        );
        Vec::new()
    });
    let noted;
    let text = if undone.is_empty() {
        text
    } else {
        // After the user's words: the transcript's summaries show their
        // first line.
        noted = format!("{text}\n\n{}", undo_note(&undone));
        noted.as_str()
    };
    agent.post(text)?;
    // In the transcript: the model hears of it, with this turn or the next.
    if !undone.is_empty()
        && let Err(e) = journal.told_undone(Some(&undone))
    {
        stderr_line!(
            "warning: the model may be told again what undo put back: {}",
            inert(&e.to_string())
        );
    }
    let cancel = CancellationToken::new();
    approver.set_turn(Some(cancel.clone()));
    let result = until_ctrl_c(rt, &cancel, agent.answer(&cancel, &mut |e| r.on(e)));
    approver.set_turn(None);
    r.stop_spinner();
    result
}

/// Runs `work` to its end, with Ctrl-C cancelling `cancel` meanwhile.
fn until_ctrl_c<F: std::future::Future>(
    rt: &tokio::runtime::Runtime,
    cancel: &CancellationToken,
    work: F,
) -> F::Output {
    let watch = {
        let cancel = cancel.clone();
        rt.spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
            }
        })
    };
    let out = rt.block_on(work);
    watch.abort();
    out
}

/// `warden run`.
pub fn run(
    ws: &Workspace,
    task: Option<String>,
    json: bool,
    flags: &ModelFlags,
    which: &SessionFlags,
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
    let Built {
        mut agent,
        journal,
        approver,
        ..
    } = build(ws, flags, which)?;
    let session_id = agent
        .session()
        .map(|s| s.id().to_string())
        .unwrap_or_default();
    let rt = runtime()?;
    let mut r = Renderer::new(json);
    let result = send(&rt, &mut agent, (&approver, &journal), &mut r, &task);
    let changes = journal.end_turn();
    let tally = r.take_usage();
    let mut usage_value = usage_json(&tally.usage);
    usage_value["model_calls"] = tally.calls.into();
    if !json {
        // The answer ends its line before the usage line (on a terminal,
        // stdout and stderr share the screen).
        match &result {
            Ok(answer) => r.finish_answer(answer),
            Err(_) => r.line_break(),
        }
        if let Some(line) = tally.line() {
            stderr_line!("{line}");
        }
    }
    let reason = match &result {
        Ok(_) => "answered".to_string(),
        Err(e) => e.to_string(),
    };
    // The transcript is complete without this line; losing it loses nothing.
    let _ = agent.finish(&reason);
    match result {
        Ok(answer) => {
            if json {
                r.emit(json!({
                    "type": "final", "text": answer, "session": session_id,
                    "usage": usage_value, "changed": changes.changed,
                }));
            } else {
                report_changes(&changes);
            }
            // The model may say it succeeded; what it was refused says otherwise.
            let refused = approver.refused_unasked();
            if refused > 0 {
                stderr_line!(
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
                r.emit(json!({
                    "type": "error", "message": e.to_string(), "session": session_id,
                    "usage": usage_value, "changed": changes.changed,
                }));
            } else {
                report_changes(&changes);
            }
            stderr_line!("error: {}", inert(&e.to_string()));
            stderr_line!(
                "session {session_id} keeps what was done: `warden run --resume {session_id} \"...\"` continues it"
            );
            Ok(code)
        }
    }
}

/// Token counts as `--json` shows them.
pub fn usage_json(u: &Usage) -> serde_json::Value {
    json!({"prompt_tokens": u.prompt_tokens, "completion_tokens": u.completion_tokens, "total_tokens": u.total_tokens})
}

/// The files a turn changed, and what undo could not keep, on stderr.
fn report_changes(c: &TurnChanges) {
    if !c.changed.is_empty() {
        let shown: Vec<String> = c.changed.iter().map(|p| inert(p).into_owned()).collect();
        stderr_line!(
            "changed: {} (`warden undo` puts them back)",
            shown.join(", ")
        );
    }
    for n in &c.notes {
        stderr_line!("note: {}", inert(n));
    }
}

/// `warden undo` and `/undo`: puts back what the last turn changed (and
/// notes it for that turn's session's model); the exit code.
pub fn undo(ws: &Workspace, tools: &warden_workspace::Toolset) -> anyhow::Result<u8> {
    let dir = ws.folders.undo(&ws.root)?;
    let Some(done) = warden_workspace::undo::undo_last(&dir, tools)? else {
        stderr_line!("nothing to undo in this workspace");
        return Ok(0);
    };
    if !done.restored.is_empty() {
        stderr_line!(
            "restored as before the last turn of session {}: {}",
            done.session,
            done.restored.join(", ")
        );
    }
    if !done.unchanged.is_empty() {
        stderr_line!(
            "already as before the last turn of session {}: {}",
            done.session,
            done.unchanged.join(", ")
        );
    }
    for p in &done.kept {
        stderr_line!("kept {p}: it holds files the turn did not make (the turn's own are removed)");
    }
    for p in &done.problems {
        stderr_line!("not restored: {p}");
    }
    if done.pending {
        stderr_line!(
            "what was not restored stays recorded: `warden undo` tries it again; \
             `warden undo --skip` drops it, so that the next undo goes a turn further back"
        );
    }
    let code = if done.problems.is_empty() {
        0
    } else {
        EXIT_FAILED
    };
    if let Some(why) = &done.untold {
        stderr_line!(
            "warning: the model of session {} will not be told what was put back: {}",
            done.session,
            inert(why)
        );
    }
    Ok(code)
}

/// `warden undo --skip`: drops the last turn's undo record.
pub fn undo_skip(ws: &Workspace) -> anyhow::Result<u8> {
    let dir = ws.folders.undo(&ws.root)?;
    match warden_workspace::undo::skip_last(&dir)? {
        None => stderr_line!("nothing to undo in this workspace"),
        Some((session, paths)) => stderr_line!(
            "dropped the undo record of the last turn of session {} ({}); `warden undo` now \
             goes to the turn before it",
            inert(&session),
            match paths {
                None => "it was damaged: which paths it held is not known".to_string(),
                Some(p) if p.is_empty() => "no path was left in it".to_string(),
                Some(p) => format!("not restored: {}", p.join(", ")),
            }
        ),
    }
    Ok(0)
}

/// What the model is told with the next message after an undo put back
/// `restored`: it must not work from what its earlier results showed.
fn undo_note(restored: &[String]) -> String {
    format!(
        "[warden: the user ran undo. These paths are back as they were before the last turn \
         that changed them, so that turn's changes to them are gone: {}. Read them again \
         before you rely on their contents.]",
        restored.join(", ")
    )
}

/// What a resumed chat picks up: turns so far, the tool protocol it goes
/// on in, and the last thing asked.
fn recap(records: &[Record], protocol: Protocol) -> String {
    let summary = session::total_usage(records);
    let conversation = session::messages(records);
    let asked = session::asked(records);
    let Some(last) = asked.last() else {
        return "resuming with an empty conversation (it was cleared or never started)".into();
    };
    let line = last
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    format!(
        "resuming {} message(s), {} tokens so far, {} tool protocol; last asked: «{}»",
        conversation.len(),
        summary.total_tokens,
        protocol.as_str(),
        crate::sessions_cmd::one_line(line, 70)
    )
}

/// The chat's line history: one JSON string per line, in warden's state
/// folder, read and replaced through the folder's handle (a link planted in
/// its place is never followed).
const HISTORY: &str = "history";

fn load_history(rl: &mut rustyline::DefaultEditor, dir: &StateDir) {
    let Ok(Some(bytes)) = dir.read(HISTORY) else {
        return;
    };
    for line in String::from_utf8_lossy(&bytes).lines() {
        // Lines of another format (an older warden's) are skipped.
        if let Ok(entry) = serde_json::from_str::<String>(line) {
            let _ = rl.add_history_entry(entry);
        }
    }
}

fn save_history(rl: &rustyline::DefaultEditor, dir: &StateDir) -> std::io::Result<()> {
    let mut out = String::new();
    for entry in rl.history().iter() {
        out.push_str(&serde_json::to_string(entry.as_str())?);
        out.push('\n');
    }
    dir.write_atomic(HISTORY, out.as_bytes())
}

/// `warden chat`.
pub fn chat(ws: &Workspace, flags: &ModelFlags, which: &SessionFlags) -> anyhow::Result<u8> {
    let Built {
        mut agent,
        records,
        journal,
        runner,
        approver,
    } = build(ws, flags, which)?;
    let rt = runtime()?;
    let mut rl = rustyline::DefaultEditor::new().context("cannot start the line editor")?;
    let history = ws.folders.history().ok();
    if let Some(dir) = &history {
        load_history(&mut rl, dir);
    }
    let id = agent
        .session()
        .map(|s| s.id().to_string())
        .unwrap_or_default();
    stderr_line!(
        "warden chat — session {id}. /tools, /clear, /undo, /exit; Ctrl-C cancels a turn, \
         Ctrl-D quits."
    );
    if !records.is_empty() {
        stderr_line!("{}", recap(&records, agent.protocol()));
    }
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
                match agent.clear() {
                    Ok(()) => {
                        // A model that forgot everything needs no news of it.
                        let _ = journal.told_undone(None);
                        stderr_line!("conversation cleared (the transcript keeps it)");
                    }
                    Err(e) => stderr_line!("error: {}", inert(&e.to_string())),
                }
                continue;
            }
            "/tools" => {
                for t in agent.tools() {
                    let mode = if t.mutates {
                        "changes files"
                    } else {
                        "read-only"
                    };
                    stderr_line!(
                        "  {:<12} {mode:<13} {}",
                        t.def.name,
                        crate::render::short(&t.def.description, 60)
                    );
                }
                continue;
            }
            "/undo" => {
                if let Err(e) = undo(ws, runner.toolset()) {
                    stderr_line!("error: {}", inert(&format!("{e:#}")));
                }
                continue;
            }
            "/compact" => {
                let cancel = CancellationToken::new();
                let compacted =
                    until_ctrl_c(&rt, &cancel, agent.compact_now(&cancel, &mut |e| r.on(e)));
                r.stop_spinner();
                match compacted {
                    Ok(true) => {
                        stderr_line!("conversation compacted (the transcript keeps it whole)")
                    }
                    Ok(false) => {
                        stderr_line!("nothing to compact: the conversation is short already")
                    }
                    Err(AgentError::Cancelled) => {
                        stderr_line!("\ncompaction cancelled; the conversation is kept as it was")
                    }
                    Err(e) => stderr_line!("error: {}", inert(&e.to_string())),
                }
                continue;
            }
            "/help" => {
                stderr_line!(
                    "/tools  list tools · /compact  shorten older turns · /clear  forget the \
                     conversation · /undo  put back what the last turn changed · /exit  quit"
                );
                continue;
            }
            t if t.starts_with('/') => {
                stderr_line!("unknown command {t}: try /help");
                continue;
            }
            _ => {}
        }
        let result = send(&rt, &mut agent, (&approver, &journal), &mut r, text);
        let changes = journal.end_turn();
        match result {
            Ok(answer) => {
                if r.streamed == 0 {
                    crate::events::out(&inert_text(&answer));
                }
                crate::events::out("\n");
            }
            Err(AgentError::Cancelled) => stderr_line!("\ncancelled; the conversation is kept"),
            Err(e) => stderr_line!("error: {}", inert(&e.to_string())),
        }
        report_changes(&changes);
        if let Some(line) = r.take_usage().line() {
            stderr_line!("{line}");
        }
    }
    if let Some(dir) = &history
        && let Err(e) = save_history(&rl, dir)
    {
        stderr_line!("warning: the line history was not saved: {e}");
    }
    // The transcript is complete without this line; losing it loses nothing.
    let _ = agent.finish("the user quit");
    stderr_line!(
        "session {id} saved: `warden chat --resume {id}` (or `warden chat --continue`) picks it up"
    );
    Ok(0)
}

/// The async runtime of a run or chat; its blocking threads run the tool
/// calls, on stacks sized for them.
fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_stack_size(warden_sandbox::CALL_THREAD_STACK)
        .build()
}
