//! `warden trust`: show what the workspace configuration would grant, compared
//! with what was last accepted, and accept it.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use warden_policy::{ComponentEntry, ToolGrants, TrustState, diff, sha256_hex};

use crate::workspace::{Workspace, trust_store};

/// The state `warden trust` would record for the files as they are now.
fn current_state(dir: Option<&Path>) -> anyhow::Result<(Workspace, TrustState)> {
    let ws = Workspace::open_current(dir)?;
    let tools = ws.toolset()?;
    crate::render::warnings(&tools);
    let hashes = ws.drop_in_hashes();
    let mut components: BTreeMap<String, ComponentEntry> = hashes
        .into_iter()
        .map(|(file, hash)| {
            (
                file,
                ComponentEntry {
                    hash,
                    tools: Vec::new(),
                },
            )
        })
        .collect();
    for info in tools.host().tools() {
        let file = Path::new(&info.location)
            .file_name()
            .map(|f| f.to_string_lossy().into_owned());
        if let Some(entry) = file.and_then(|f| components.get_mut(&f))
            && info.location.starts_with(&ws.root.display().to_string())
        {
            entry.tools.push(info.spec.name.clone());
        }
    }
    let state = TrustState {
        policy_hash: ws.policy_text.as_deref().map(|t| sha256_hex(t.as_bytes())),
        policy_text: ws.policy_text.clone(),
        components,
        tools: tools
            .enabled()
            .map(|(info, g)| {
                (
                    info.spec.name.clone(),
                    ToolGrants::from_grants(info.origin, g),
                )
            })
            .collect(),
    };
    Ok((ws, state))
}

/// `warden trust [--show]`.
pub fn run(dir: Option<&Path>, show: bool) -> anyhow::Result<u8> {
    let store = trust_store()?;
    let mut out = std::io::stdout().lock();
    if show {
        let ws_root = Workspace::open_current(dir)?.root;
        match store.load(&ws_root)? {
            None => writeln!(
                out,
                "{} has never been trusted: it runs with safe defaults (built-in tools, the workspace only, no drop-ins)",
                ws_root.display()
            )?,
            Some(state) => {
                let mut shown = state.clone();
                shown.policy_text = None;
                writeln!(out, "trusted state of {}:", ws_root.display())?;
                writeln!(out, "{}", serde_json::to_string_pretty(&shown)?)?;
            }
        }
        return Ok(0);
    }
    let (ws, current) = current_state(dir)?;
    let trusted = store.load(&ws.root)?.unwrap_or_default();
    let changes = diff(&trusted, &current);
    if changes.is_empty() {
        writeln!(
            out,
            "nothing changed since {} was last trusted",
            ws.root.display()
        )?;
        return Ok(0);
    }
    writeln!(out, "capability changes in {}:", ws.root.display())?;
    for c in &changes {
        writeln!(out, "  {c}")?;
    }
    store.save(&ws.root, &current)?;
    writeln!(out, "trusted: these apply from the next run on")?;
    Ok(0)
}
