//! `warden policy`: every tool's effective grants.

use std::io::Write;

use serde_json::json;
use std::path::Path;

use warden_policy::{Capability, Grants, McpLaunch, inert, inert_text, mcp_key};

use warden_workspace::Workspace;

use crate::render;

pub fn run(ws: &Workspace, json: bool) -> anyhow::Result<u8> {
    let tools = ws.toolset(Some(render::compiling()))?;
    // Listed from the policy: nothing is started to show what it grants.
    let (servers, server_warnings) = ws.mcp_servers();
    // Which confinement commands get, when some tool or server runs them.
    let runs_programs = tools.entries().iter().any(|e| {
        e.grants
            .as_ref()
            .is_some_and(|g| g.programs().next().is_some())
    }) || servers
        .iter()
        .any(|s| matches!(s.launch, McpLaunch::Command(_)));
    // Where apps and pages would open, when some tool may open them.
    let opens_desktop = tools.entries().iter().any(|e| {
        e.grants
            .as_ref()
            .is_some_and(|g| g.apps().next().is_some() || g.browse().next().is_some())
    });
    let desktop = opens_desktop.then(|| match warden_desktop::display() {
        Ok(d) => format!("apps and pages open on the {d}, outside the sandbox"),
        Err(why) => why,
    });
    let mut out = std::io::stdout().lock();
    if json {
        let list: Vec<_> = tools.entries().iter().map(render::entry_json).collect();
        let doc = json!({
            "workspace": ws.root,
            "policy_file": ws.policy.path(),
            "policy_present": ws.policy.is_present(),
            "tools": list,
            "mcp": servers.iter().map(|s| json!({
                "name": s.name,
                "command": match &s.launch { McpLaunch::Command(argv) => Some(argv), _ => None },
                "url": match &s.launch { McpLaunch::Url(url) => Some(url), _ => None },
                "grants": s.grants,
            })).collect::<Vec<_>>(),
            "warnings": tools.warnings().iter().chain(&server_warnings).collect::<Vec<_>>(),
            "exec_confinement": runs_programs.then(render::confinement_json),
            "desktop": desktop,
            "instructions": ws.instructions.iter().map(|i| json!({
                "source": i.source, "bytes": i.bytes.len(), "prompt_text": i.prompt_text(),
            })).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(0);
    }
    let source = if ws.policy.is_present() {
        inert(&ws.policy.path().display().to_string()).into_owned()
    } else {
        format!(
            "defaults (no {})",
            inert(&ws.policy.path().display().to_string())
        )
    };
    writeln!(out, "workspace: {}", inert(&ws.root.display().to_string()))?;
    writeln!(out, "policy:    {source}")?;
    if runs_programs {
        let lines = render::confinement_lines("             ");
        writeln!(out, "commands:  {}", lines.join("\n"))?;
    }
    if let Some(d) = &desktop {
        writeln!(out, "desktop:   {}", inert(d))?;
    }
    writeln!(out)?;
    for e in tools.entries() {
        let Some(g) = &e.grants else {
            writeln!(out, "{} ({}): disabled", e.info.spec.name, e.info.origin)?;
            continue;
        };
        writeln!(out, "{} ({}):", e.info.spec.name, e.info.origin)?;
        grant_lines(&mut out, g, &ws.root)?;
    }
    for s in &servers {
        let how = match &s.launch {
            McpLaunch::Command(_) => "starts",
            McpLaunch::Url(_) => "at",
        };
        writeln!(
            out,
            "{} (mcp, {how} {}):",
            mcp_key(&s.name),
            inert(&s.launch.shown())
        )?;
        match &s.launch {
            McpLaunch::Command(_) => grant_lines(&mut out, &s.grants, &ws.root)?,
            McpLaunch::Url(_) => url_server_lines(&mut out, &s.grants, &ws.root)?,
        }
    }
    for i in &ws.instructions {
        writeln!(
            out,
            "\ninstructions from {} ({} bytes), in the system prompt:",
            inert(&i.source),
            i.bytes.len()
        )?;
        for line in i.prompt_text().lines() {
            writeln!(out, "  {}", inert_text(line))?;
        }
    }
    drop(out);
    render::warnings(&tools);
    for w in &server_warnings {
        stderr_line!("warning: {}", inert(w));
    }
    Ok(0)
}

/// A tool's (or an MCP server's process's) grants, one line per kind.
fn grant_lines(out: &mut impl Write, g: &Grants, root: &Path) -> std::io::Result<()> {
    if g.dirs().next().is_none() {
        writeln!(out, "  files:    none")?;
    }
    for (path, write) in g.dirs() {
        let mode = if write { "read-write" } else { "read-only " };
        writeln!(
            out,
            "  files:    {mode} {}",
            inert(&path.display().to_string())
        )?;
    }
    // Every other kind on one line each, whatever kinds there are.
    kind_lines(out, g, root, |kind| kind != "files")?;
    writeln!(out, "  limits:   {}", g.limits)
}

/// What applies to an MCP server reached at a URL: no process runs, so
/// only where its requests go, their secrets, and the call limits.
fn url_server_lines(out: &mut impl Write, g: &Grants, root: &Path) -> std::io::Result<()> {
    kind_lines(out, g, root, |kind| matches!(kind, "network" | "secrets"))?;
    let [_, (_, timeout), (_, output)] = g.limits.named();
    writeln!(out, "  limits:   timeout {timeout}, output {output}")
}

/// One line for each kind of capability `shown` picks, with `none` where a
/// common kind is not granted.
fn kind_lines(
    out: &mut impl Write,
    g: &Grants,
    root: &Path,
    shown: impl Fn(&str) -> bool,
) -> std::io::Result<()> {
    for kind in Capability::KINDS.iter().filter(|k| shown(k)) {
        let values: Vec<String> = g
            .caps
            .iter()
            .filter(|c| c.kind() == *kind)
            .map(|c| c.short(root).1)
            .collect();
        // Kinds most tools never have are listed only where present.
        if values.is_empty() && !Capability::SHOWN_WHEN_NONE.contains(kind) {
            continue;
        }
        let shown = match Capability::kind_note(kind) {
            _ if values.is_empty() => "none".to_string(),
            Some(note) => format!("{} ({note})", values.join(", ")),
            None => values.join(", "),
        };
        writeln!(out, "  {:<9} {shown}", format!("{kind}:"))?;
    }
    Ok(())
}
