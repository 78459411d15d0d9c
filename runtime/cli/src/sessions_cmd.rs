//! `warden sessions`: list, show and remove this workspace's transcripts.

use std::fmt::Write as _;
use std::io::Write;

use anyhow::{Context as _, bail};
use serde_json::json;
use warden_agent::Message;
use warden_agent::session::{Record, SessionError, total_usage};
use warden_policy::{inert, inert_text};
use warden_workspace::Workspace;

use crate::agent_cmd::{ConfigError, usage_json};
use crate::args::SessionsCommand;

/// Lines of a tool result or system prompt shown by `sessions show`.
const SHOWN_LINES: usize = 20;

/// `warden sessions [show ID | rm ID... | rm --all]`.
pub fn run(ws: &Workspace, json: bool, command: Option<SessionsCommand>) -> anyhow::Result<u8> {
    match command {
        None => list(ws, json),
        Some(SessionsCommand::Show { id }) => show(ws, &id),
        Some(SessionsCommand::Rm { ids, all }) => remove(ws, ids, all),
    }
}

fn not_found(e: SessionError) -> anyhow::Error {
    match e {
        e @ (SessionError::NotFound { .. } | SessionError::Corrupt { .. }) => {
            ConfigError(e.to_string()).into()
        }
        e => e.into(),
    }
}

fn list(ws: &Workspace, json: bool) -> anyhow::Result<u8> {
    let store = ws.sessions()?;
    let list = store.list()?;
    let mut out = std::io::stdout().lock();
    if json {
        let v: Vec<_> = list
            .iter()
            .map(|s| {
                json!({
                    "id": s.id, "started": s.started, "updated": s.updated, "title": s.title,
                    "messages": s.messages, "turns": s.turns, "usage": usage_json(&s.usage),
                    "protocol": s.protocol, "path": s.path,
                })
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    if list.is_empty() {
        writeln!(out, "no sessions yet in {}", store.dir().display())?;
        return Ok(0);
    }
    let mut rows = vec![vec![
        "ID".to_string(),
        "UPDATED".into(),
        "TURNS".into(),
        "TOKENS".into(),
        "PROTOCOL".into(),
        "TITLE".into(),
    ]];
    for s in &list {
        rows.push(vec![
            s.id.clone(),
            s.updated.clone(),
            s.turns.to_string(),
            s.usage.total_tokens.to_string(),
            s.protocol.clone(),
            inert(&s.title).into_owned(),
        ]);
    }
    out.write_all(crate::render::table(&rows).as_bytes())?;
    Ok(0)
}

fn remove(ws: &Workspace, ids: Vec<String>, all: bool) -> anyhow::Result<u8> {
    let store = ws.sessions()?;
    // Each is held (locked) from the check to its removal: no warden opens
    // it in between, and a typo, or a session another warden has open,
    // removes nothing.
    let mut held = Vec::new();
    if all {
        // All but those that cannot be held, which are kept and said so.
        for id in store.list()?.into_iter().map(|s| s.id) {
            match store.hold(&id) {
                Ok(h) => held.push(h),
                Err(SessionError::InUse { .. }) => {
                    stderr_line!("kept session {}: another warden has it open", inert(&id))
                }
                Err(e) => stderr_line!("kept session {}: {}", inert(&id), inert(&e.to_string())),
            }
        }
    } else {
        for id in &ids {
            match store.hold(id) {
                Ok(h) => held.push(h),
                Err(SessionError::InUse { .. }) => {
                    return Err(ConfigError(format!(
                        "session {} is open in another warden, so nothing was removed; quit \
                         that warden first",
                        inert(id)
                    ))
                    .into());
                }
                Err(e) => return Err(not_found(e)),
            }
        }
    }
    // Their undo snapshots go with them: copies of files they changed.
    let undo = ws.folders.undo(&ws.root)?;
    let (mut removed, mut turns) = (0, 0);
    for h in held {
        let id = h.id().to_string();
        store.remove(h).map_err(not_found)?;
        removed += 1;
        turns += warden_workspace::undo::forget_session(&undo, &id)
            .with_context(|| format!("cannot remove the undo snapshots of session {id}"))?;
    }
    match turns {
        0 => stderr_line!("removed {removed} session(s)"),
        n => {
            stderr_line!("removed {removed} session(s) and the undo snapshots of their {n} turn(s)")
        }
    }
    Ok(0)
}

fn show(ws: &Workspace, id: &str) -> anyhow::Result<u8> {
    let records = ws.sessions()?.read(id).map_err(not_found)?;
    if records.is_empty() {
        bail!(ConfigError(format!("session {id} is empty")));
    }
    let mut out = std::io::stdout().lock();
    out.write_all(render(&records).as_bytes())?;
    Ok(0)
}

/// A transcript as text a person reads; every foreign string inert.
fn render(records: &[Record]) -> String {
    let mut s = String::new();
    for r in records {
        match r {
            Record::Start {
                ts,
                model,
                base_url,
                protocol,
                ..
            } => {
                let _ = writeln!(
                    s,
                    "── start · {} · model {} at {} · protocol {}",
                    inert(ts),
                    inert(model),
                    inert(base_url),
                    inert(protocol)
                );
            }
            Record::Protocol {
                ts,
                protocol,
                reason,
            } => {
                let _ = writeln!(
                    s,
                    "── protocol · {}: {} from now on ({})",
                    inert(ts),
                    inert(protocol),
                    inert(reason)
                );
            }
            Record::Message {
                ts,
                message: Message::User { content },
            } if warden_agent::textproto::is_results_message(content) => {
                // The tool result records before it say the same, with
                // more; what could not be run is said only here.
                let _ = writeln!(s, "── tool results sent to the model · {}", inert(ts));
                s.push_str(&first_lines(content, SHOWN_LINES));
            }
            Record::Message { ts, message } => message_text(&mut s, ts, message),
            Record::ToolResult {
                ts,
                name,
                ok,
                output,
                duration_ms,
                ..
            } => {
                let mark = if *ok { "ok" } else { "failed" };
                let _ = writeln!(
                    s,
                    "── {} {mark} · {} · {duration_ms} ms",
                    inert(name),
                    inert(ts)
                );
                s.push_str(&first_lines(output, SHOWN_LINES));
            }
            Record::Usage { .. } => {}
            Record::Error { ts, message } => {
                let _ = writeln!(s, "── error · {}: {}", inert(ts), inert(message));
            }
            Record::Clear { ts } => {
                let _ = writeln!(
                    s,
                    "── cleared · {} (a resumed session starts here)",
                    inert(ts)
                );
            }
            Record::Compacted {
                ts,
                before_tokens,
                after_tokens,
                history,
            } => {
                let _ = writeln!(
                    s,
                    "── compacted · {}: about {before_tokens} → {after_tokens} tokens, {} \
                     messages kept (a resumed session goes on from them)",
                    inert(ts),
                    history.len()
                );
            }
            Record::End { ts, reason } => {
                let _ = writeln!(s, "── end · {}: {}", inert(ts), inert(reason));
            }
        }
    }
    let u = total_usage(records);
    let _ = writeln!(
        s,
        "tokens: {} in, {} out",
        u.prompt_tokens, u.completion_tokens
    );
    s
}

fn message_text(s: &mut String, ts: &str, m: &Message) {
    match m {
        Message::System { content } => {
            let _ = writeln!(s, "── system prompt · {}", inert(ts));
            s.push_str(&first_lines(content, 3));
        }
        Message::User { content } => {
            let _ = writeln!(s, "── user · {}", inert(ts));
            s.push_str(&first_lines(content, usize::MAX));
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let _ = writeln!(s, "── assistant · {}", inert(ts));
            if let Some(c) = content.as_deref().filter(|c| !c.is_empty()) {
                s.push_str(&first_lines(c, usize::MAX));
            }
            for c in tool_calls {
                let _ = writeln!(
                    s,
                    "  → {} {}",
                    inert(&c.function.name),
                    one_line(&c.function.arguments, 200)
                );
            }
        }
        // The tool result record right before it says the same, with more.
        Message::Tool { .. } => {}
    }
}

/// The first `max` lines of `text`, inert, each ending in a newline, with
/// a note of how many were left out.
fn first_lines(text: &str, max: usize) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = text.lines().collect();
    for l in lines.iter().take(max) {
        out.push_str(&inert_text(l));
        out.push('\n');
    }
    if lines.len() > max {
        let _ = writeln!(out, "… {} more line(s)", lines.len() - max);
    }
    out
}

/// `text` on one line of at most `max` characters, inert.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = inert(&text.replace('\n', " ")).into_owned();
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use warden_agent::ToolCall;

    #[test]
    fn a_transcript_reads_as_text_with_escapes_made_inert() {
        let records = vec![
            Record::Message {
                ts: "t1".into(),
                message: Message::User {
                    content: "fix \x1b[31mit\nplease".into(),
                },
            },
            Record::Message {
                ts: "t2".into(),
                message: Message::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall::new("c", "read_file", r#"{"path":"a"}"#)],
                },
            },
            Record::ToolResult {
                ts: "t3".into(),
                id: "c".into(),
                name: "read_file".into(),
                ok: true,
                output: (1..=25).map(|i| format!("{i}\n")).collect(),
                duration_ms: 4,
            },
            Record::Clear { ts: "t4".into() },
        ];
        let text = render(&records);
        assert!(!text.contains('\x1b'), "{text}");
        assert!(
            text.contains("── user · t1\nfix \\x1b[31mit\nplease\n"),
            "{text}"
        );
        assert!(text.contains("  → read_file {\"path\":\"a\"}\n"), "{text}");
        assert!(text.contains("── read_file ok · t3 · 4 ms\n1\n"), "{text}");
        assert!(text.contains("20\n… 5 more line(s)\n"), "{text}");
        assert!(text.contains("── cleared · t4"), "{text}");
    }
}
