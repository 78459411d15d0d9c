//! `warden tools list | inspect | call` (`new`, `add`, `compile`: `author`).

use std::io::{Read, Write};

use anyhow::{Context, bail};
use serde_json::json;
use warden_policy::{inert, inert_text};
use warden_sandbox::CallControl;
use warden_workspace::{McpTool, McpTools, Toolset, Workspace};

use crate::args::ToolsCommand;
use crate::render;
use crate::{EXIT_CONFIG, EXIT_TOOL_ERROR};

pub fn run(ws: &Workspace, command: ToolsCommand) -> anyhow::Result<u8> {
    match &command {
        ToolsCommand::Add { file, user, force } => {
            return crate::author::add(ws, file, *user, *force);
        }
        ToolsCommand::Compile => return crate::author::compile(ws),
        ToolsCommand::New { .. } => unreachable!("handled before the workspace opens"),
        _ => {}
    }
    let tools = match command {
        // Inspecting needs no server process.
        ToolsCommand::Inspect { .. } => ws.toolset(Some(render::compiling()))?,
        _ => ws.toolset_with_mcp(Some(render::compiling()))?,
    };
    match command {
        ToolsCommand::List { json } => list(ws, &tools, json),
        ToolsCommand::Inspect { name, json } => inspect(ws, &tools, &name, json),
        ToolsCommand::Call { name, args, json } => call(&tools, &name, args, json),
        ToolsCommand::Add { .. } | ToolsCommand::Compile | ToolsCommand::New { .. } => {
            unreachable!("handled above")
        }
    }
}

fn list(ws: &Workspace, tools: &Toolset, json: bool) -> anyhow::Result<u8> {
    let mut out = std::io::stdout().lock();
    if json {
        let mut list: Vec<_> = tools.entries().iter().map(render::entry_json).collect();
        if let Some(mcp) = tools.mcp() {
            list.extend(mcp.tools().iter().map(|t| render::mcp_tool_json(mcp, t)));
        }
        let doc = json!({
            "tools": list,
            "problems": tools.host().problems(),
            "warnings": tools.warnings(),
            "cache": {
                "compiled": tools.host().cache_stats().compiled(),
                "reused": tools.host().cache_stats().reused(),
            },
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(0);
    }
    let mut rows = vec![vec![
        "NAME".to_string(),
        "SOURCE".into(),
        "ACCESS".into(),
        "DESCRIPTION".into(),
    ]];
    for e in tools.entries() {
        rows.push(vec![
            e.info.spec.name.clone(),
            e.info.origin.to_string(),
            render::access(e.grants.as_ref(), &ws.root),
            render::short(&e.info.spec.description, 60),
        ]);
    }
    for (mcp, t) in tools
        .mcp()
        .into_iter()
        .flat_map(|m| m.tools().iter().map(move |t| (m, t)))
    {
        rows.push(vec![
            t.def.name.clone(),
            "mcp".into(),
            render::access(Some(&mcp.server(t).grants), &ws.root),
            render::short(&t.def.description, 60),
        ]);
    }
    out.write_all(render::table(&rows).as_bytes())?;
    drop(out);
    render::warnings(tools);
    if tools.entries().iter().any(|e| e.grants.is_none()) {
        stderr_line!("note: disabled tools are enabled by a `[tools.NAME]` section in warden.toml");
    }
    Ok(0)
}

fn inspect(ws: &Workspace, tools: &Toolset, name: &str, json: bool) -> anyhow::Result<u8> {
    let Some(info) = tools.host().resolve(name) else {
        bail!(
            "no tool named `{}`: `warden tools list` shows what is installed",
            inert(name)
        );
    };
    let entry = tools
        .entries()
        .iter()
        .find(|e| e.info.spec.name == info.spec.name)
        .expect("resolved tools have an entry");
    let mut out = std::io::stdout().lock();
    if json {
        let doc = json!({
            "spec": info.spec,
            "origin": info.origin,
            "location": info.location,
            "hash": info.hash,
            "enabled": entry.grants.is_some(),
            "grants": entry.grants,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
        return Ok(0);
    }
    let s = &info.spec;
    writeln!(out, "{}", s.name)?;
    writeln!(
        out,
        "  {}",
        inert_text(&s.description).replace('\n', "\n  ")
    )?;
    writeln!(out)?;
    if !s.aliases.is_empty() {
        writeln!(out, "aliases:  {}", s.aliases.join(", "))?;
    }
    writeln!(out, "mutates:  {}", if s.mutates { "yes" } else { "no" })?;
    writeln!(out, "source:   {} ({})", info.origin, inert(&info.location))?;
    writeln!(out, "sha256:   {}", info.hash)?;
    match &entry.grants {
        Some(g) => {
            writeln!(out, "access:   {}", g.summary(&ws.root))?;
            writeln!(out, "limits:   {}", g.limits)?;
        }
        None => writeln!(
            out,
            "access:   disabled (add `[tools.{}]` to warden.toml)",
            s.name
        )?,
    }
    writeln!(out, "parameters:")?;
    writeln!(
        out,
        "{}",
        inert_text(&serde_json::to_string_pretty(&s.parameters)?)
    )?;
    Ok(0)
}

fn call(tools: &Toolset, name: &str, args: String, json: bool) -> anyhow::Result<u8> {
    let args = if args == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .context("cannot read arguments from stdin")?;
        s
    } else {
        args
    };
    if let Some((mcp, tool)) = tools.mcp().and_then(|m| m.find(name).map(|t| (m, t))) {
        return call_mcp(mcp, tool, &args, json);
    }
    if tools.host().resolve(name).is_none() && tools.find(name).is_none() {
        render::warnings(tools);
    }
    let outcome = tools.call(name, &args, &CallControl::new());
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{}", serde_json::to_string_pretty(&outcome)?)?;
    } else if let Ok(text) = &outcome.result {
        out.write_all(inert_text(text).as_bytes())?;
        if !text.ends_with('\n') {
            writeln!(out)?;
        }
    }
    drop(out);
    match &outcome.result {
        Ok(_) => Ok(0),
        Err(e) => {
            if !json {
                stderr_line!("{}", inert_text(&e.to_string()));
            }
            Ok(
                if e.kind == warden_sandbox::ErrorKind::UnknownTool
                    && tools.host().resolve(name).is_none()
                {
                    EXIT_CONFIG
                } else {
                    EXIT_TOOL_ERROR
                },
            )
        }
    }
}

/// `warden tools call` of an MCP server's tool: the same call the model
/// makes, without approval (the user typed it).
fn call_mcp(mcp: &McpTools, tool: &McpTool, args: &str, json: bool) -> anyhow::Result<u8> {
    let args: serde_json::Value = match serde_json::from_str(args) {
        Ok(v) => v,
        Err(e) => bail!("the arguments are not valid JSON: {e}"),
    };
    let result = mcp.call(tool, args, &warden_agent::CallCancel::default());
    let mut out = std::io::stdout().lock();
    if json {
        let doc = json!({
            "tool": tool.def.name,
            "ok": result.ok,
            "error_kind": result.error_kind,
            "output": result.output,
            "truncated": result.truncated,
        });
        writeln!(out, "{}", serde_json::to_string_pretty(&doc)?)?;
    } else if result.ok {
        out.write_all(inert_text(&result.output).as_bytes())?;
        if !result.output.ends_with('\n') {
            writeln!(out)?;
        }
    } else {
        stderr_line!("{}", inert_text(&result.output));
    }
    Ok(if result.ok { 0 } else { EXIT_TOOL_ERROR })
}
