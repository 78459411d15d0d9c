//! Plain-text rendering helpers.

use std::path::Path;

use serde_json::{Value, json};
use warden_policy::{Grants, inert};
use warden_workspace::{Entry, McpTool, McpTools, Toolset};

/// First sentence of a description, cut to `max` characters, inert.
pub fn short(description: &str, max: usize) -> String {
    let first = description.lines().next().unwrap_or("");
    let first = &inert(first);
    let first = match first.find(". ") {
        Some(i) => &first[..=i],
        None => first,
    };
    if first.chars().count() <= max {
        return first.to_string();
    }
    let mut s: String = first.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// The access column: `rw:. env:LANG`, or `disabled`.
pub fn access(grants: Option<&Grants>, workspace: &Path) -> String {
    match grants {
        Some(g) => g.summary(workspace),
        None => "disabled".into(),
    }
}

/// Prints load problems and policy warnings to stderr.
pub fn warnings(tools: &Toolset) {
    for p in tools.host().problems() {
        stderr_line!(
            "warning: skipped {}: {}",
            inert(&p.location),
            inert(&p.reason)
        );
    }
    for w in tools.warnings() {
        stderr_line!("warning: {}", inert(w));
    }
}

/// Tells the user when a component is compiled (seconds for a big one).
pub fn compiling() -> warden_sandbox::OnCompile {
    Box::new(|location, size| {
        if size > 4 << 20 {
            stderr_line!(
                "compiling {} ({} MiB); later starts reuse it",
                inert(location),
                size >> 20
            );
        }
    })
}

/// Rows as aligned columns; the last column is not padded.
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// One tool as JSON, for `tools list --json` and `policy --json`.
pub fn entry_json(e: &Entry) -> Value {
    json!({
        "name": e.info.spec.name,
        "origin": e.info.origin,
        "location": e.info.location,
        "description": e.info.spec.description,
        "aliases": e.info.spec.aliases,
        "mutates": e.info.spec.mutates,
        "enabled": e.grants.is_some(),
        "grants": e.grants,
        "parameters": e.info.spec.parameters,
    })
}

/// One MCP server's tool for `--json` listings, shaped like a loaded tool's.
pub fn mcp_tool_json(mcp: &McpTools, t: &McpTool) -> Value {
    let server = mcp.server(t);
    json!({
        "name": t.def.name,
        "origin": "mcp",
        "location": format!("mcp:{}", server.name),
        "description": t.def.description,
        "aliases": [],
        "mutates": server.grants.needs_approval(),
        "enabled": true,
        "grants": server.grants,
        "parameters": t.def.parameters,
    })
}

/// How commands are confined here, as the confinement itself reports it
/// ([`warden_confine::probe`], which confines `true`): a line of what
/// confines, then each guarantee with whether it holds, indented by
/// `indent`; or why commands are refused. Shared by `warden policy`, the
/// trust diff and `warden doctor`.
pub fn confinement_lines(indent: &str) -> Vec<String> {
    match warden_confine::probe() {
        Ok(m) => std::iter::once(m.to_string())
            .chain(m.lines().into_iter().map(|l| format!("{indent}{l}")))
            .collect(),
        Err(e) => vec![e.to_string()],
    }
}

/// [`confinement_lines`] as JSON.
pub fn confinement_json() -> Value {
    match warden_confine::probe() {
        Ok(m) => serde_json::to_value(&m).unwrap_or(Value::Null),
        Err(e) => json!({ "refused": e.to_string() }),
    }
}
