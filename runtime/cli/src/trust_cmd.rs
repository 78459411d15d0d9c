//! `warden trust`: show what the workspace configuration would grant, compared
//! with what was last accepted, and accept it.

use std::io::{IsTerminal, Write};
use std::path::Path;

use warden_policy::{Capability, Change, TrustState, decide, diff, inert, inert_text};
use warden_workspace::{Folders, Workspace};

use crate::prompt::Answer;

/// The state `warden trust` would record for the files as they are now.
fn current_state(
    dir: Option<&Path>,
    folders: Folders,
    warn: bool,
) -> anyhow::Result<(Workspace, TrustState)> {
    let ws = Workspace::open_current(dir, folders)?;
    let tools = ws.toolset(Some(crate::render::compiling()))?;
    if warn {
        crate::render::warnings(&tools);
    }
    let state = ws.state(&tools);
    Ok((ws, state))
}

/// The state to compare against: the trusted one, or for a workspace never
/// trusted what it runs with (so the first diff shows what the files add to
/// the safe defaults).
fn baseline(trusted: Option<TrustState>, ws: &Workspace) -> anyhow::Result<TrustState> {
    match trusted {
        Some(state) => Ok(state),
        None => {
            let safe = ws.safe_defaults();
            Ok(safe.state(&safe.toolset(None)?))
        }
    }
}

/// `warden trust [--show]`.
pub fn run(dir: Option<&Path>, folders: Folders, show: bool) -> anyhow::Result<u8> {
    let mut out = std::io::stdout().lock();
    if show {
        let ws = Workspace::open_current(dir, folders)?;
        let store = ws.trust_store()?;
        let ws_root = ws.root;
        match store.load(&ws_root)? {
            None => writeln!(
                out,
                "{} has never been trusted: it runs with safe defaults (built-in tools, the workspace only, no drop-ins)",
                inert(&ws_root.display().to_string())
            )?,
            Some(state) => {
                let mut shown = state.clone();
                shown.policy_text = None;
                writeln!(
                    out,
                    "trusted state of {}:",
                    inert(&ws_root.display().to_string())
                )?;
                writeln!(
                    out,
                    "{}",
                    inert_text(&serde_json::to_string_pretty(&shown)?)
                )?;
            }
        }
        return Ok(0);
    }
    let (ws, current) = current_state(dir, folders, true)?;
    let store = ws.trust_store()?;
    let changes = diff(&baseline(store.load(&ws.root)?, &ws)?, &current);
    if changes.is_empty() {
        writeln!(
            out,
            "nothing changed since {} was last trusted",
            inert(&ws.root.display().to_string())
        )?;
        return Ok(0);
    }
    show_changes(&mut out, &ws.root, &changes)?;
    store.save(&ws.root, &current)?;
    writeln!(out, "trusted: these apply from the next run on")?;
    Ok(0)
}

/// After `warden init`: what the new file grants beyond what runs here
/// now, accepted on a terminal if the user says so.
pub fn offer(root: &Path, folders: Folders) -> anyhow::Result<()> {
    let (ws, current) = current_state(Some(root), folders, true)?;
    let store = ws.trust_store()?;
    let changes = diff(&baseline(store.load(&ws.root)?, &ws)?, &current);
    let mut out = std::io::stdout().lock();
    if changes.is_empty() {
        writeln!(out, "it grants nothing beyond what runs here now")?;
        return Ok(());
    }
    show_changes(&mut out, &ws.root, &changes)?;
    drop(out);
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        stdout_line!("not trusted yet: review it, then accept it with `warden trust`");
        return Ok(());
    }
    if confirm("Trust it now? [y/N] ")? {
        store.save(&ws.root, &current)?;
        stdout_line!("trusted: these apply from the next run on");
    } else {
        stdout_line!("not trusted: accept it later with `warden trust`");
    }
    Ok(())
}

fn show_changes(out: &mut impl Write, root: &Path, changes: &[Change]) -> std::io::Result<()> {
    writeln!(
        out,
        "capability changes in {}:",
        inert(&root.display().to_string())
    )?;
    for c in changes {
        // Paths and names in a change are shown inert by its Display.
        writeln!(out, "  {c}")?;
    }
    if changes.iter().any(Change::runs_programs) {
        if let Some(note) = Capability::kind_note("exec") {
            writeln!(out, "programs: {note}")?;
        }
        let lines = crate::render::confinement_lines("  ");
        writeln!(out, "commands run here under {}", lines.join("\n"))?;
    }
    Ok(())
}

/// Before `run` or `chat` on a terminal: when the workspace configuration
/// differs from what was trusted, shows the capability diff and asks once.
/// Without a terminal nothing is asked and nothing is accepted. Files that do
/// not parse are left to the normal start, which reports them.
pub fn ask_on_start(dir: Option<&Path>, folders: &Folders) -> anyhow::Result<()> {
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return Ok(());
    }
    let Ok(ws) = Workspace::open_current(dir, folders.clone()) else {
        return Ok(());
    };
    let store = ws.trust_store()?;
    let Ok(trusted) = store.load(&ws.root) else {
        return Ok(());
    };
    // Files as trusted, or nothing to trust: no question, and no component
    // has to be loaded to know it.
    if untrusted(&ws, trusted.as_ref()).is_empty() {
        return Ok(());
    }
    let Ok(tools) = ws.toolset(Some(crate::render::compiling())) else {
        return Ok(());
    };
    let current = ws.state(&tools);
    let Ok(before) = baseline(trusted, &ws) else {
        return Ok(());
    };
    let changes = diff(&before, &current);
    if changes.is_empty() {
        return Ok(());
    }
    if ask(&ws.root, &changes)? {
        store.save(&ws.root, &current)?;
        stderr_line!("trusted: these apply now");
    } else {
        stderr_line!(
            "not trusted: running with the last trusted configuration; `warden trust` accepts it later"
        );
    }
    Ok(())
}

/// What in the workspace's files (as opened by `Workspace::open_current`)
/// differs from what was trusted, one line each with what to do; none
/// when they are as trusted, or hold nothing to trust.
pub fn untrusted(ws: &Workspace, trusted: Option<&TrustState>) -> Vec<String> {
    let mut lines = decide(trusted, ws.policy_text.as_deref(), &ws.drop_in_hashes()).notices;
    if trusted.and_then(|t| t.instructions_hash.clone()) != ws.instructions_hash() {
        lines.push(format!(
            "{} is new or changed since you trusted this workspace: not given to the model; \
             review and accept with `warden trust`",
            warden_workspace::INSTRUCTIONS_FILE
        ));
    }
    lines
}

fn ask(root: &Path, changes: &[Change]) -> anyhow::Result<bool> {
    let mut shown = Vec::new();
    show_changes(&mut shown, root, changes)?;
    shown.extend_from_slice(b"Trust these changes and apply them now? [y/N] ");
    confirm(&String::from_utf8_lossy(&shown))
}

/// A yes-or-no `question` on the terminal; no unless "y" or "yes". Ctrl-C
/// ends warden.
fn confirm(question: &str) -> anyhow::Result<bool> {
    // Typeahead cannot answer it (see `prompt`).
    match crate::prompt::ask(question) {
        Answer::Line(answer) => Ok(matches!(
            answer.trim().to_ascii_lowercase().as_str(),
            "y" | "yes"
        )),
        Answer::Closed => Ok(false),
        Answer::Interrupted => {
            stderr_line!("cancelled: nothing trusted, nothing run");
            std::process::exit(crate::agent_cmd::EXIT_CANCELLED.into());
        }
    }
}
