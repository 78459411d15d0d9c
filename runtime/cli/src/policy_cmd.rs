//! `warden policy`: every tool's effective grants.

use std::io::Write;

use serde_json::json;

use crate::render;
use crate::workspace::Workspace;

pub fn run(ws: &Workspace, json: bool) -> anyhow::Result<u8> {
    let tools = ws.toolset()?;
    let mut out = std::io::stdout().lock();
    if json {
        let list: Vec<_> = tools.entries().iter().map(render::entry_json).collect();
        let doc = json!({
            "workspace": ws.root,
            "policy_file": ws.policy.path(),
            "policy_present": ws.policy.is_present(),
            "tools": list,
            "warnings": tools.warnings(),
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(0);
    }
    let source = if ws.policy.is_present() {
        ws.policy.path().display().to_string()
    } else {
        format!("defaults (no {})", ws.policy.path().display())
    };
    writeln!(out, "workspace: {}", ws.root.display())?;
    writeln!(out, "policy:    {source}")?;
    writeln!(out)?;
    for e in tools.entries() {
        let Some(g) = &e.grants else {
            writeln!(out, "{} ({}): disabled", e.info.spec.name, e.info.origin)?;
            continue;
        };
        writeln!(out, "{} ({}):", e.info.spec.name, e.info.origin)?;
        if g.dirs.is_empty() {
            writeln!(out, "  files:    none")?;
        }
        for d in &g.dirs {
            let mode = if d.write { "read-write" } else { "read-only " };
            writeln!(out, "  files:    {mode} {}", d.path.display())?;
        }
        writeln!(out, "  env:      {}", list_or_none(&g.env))?;
        writeln!(out, "  network:  {}", list_or_none(&g.network))?;
        writeln!(out, "  limits:   {}", g.limits)?;
    }
    drop(out);
    render::warnings(&tools);
    Ok(0)
}

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_string()
    } else {
        items.join(", ")
    }
}
