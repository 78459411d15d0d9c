//! The question put to a user who approves a call through another program
//! (`warden mcp` asks through the MCP client): what the call will do to
//! each file first, from the call's effects, and the program line of each
//! desktop app or page it starts or opens, never cut; then its other
//! arguments, cut to a size with a count of what was left out.

use serde_json::Value;
use warden_policy::inert;

use crate::ApprovalRequest;

/// The question for `request`, whose grants need approval for `needs`;
/// the arguments after the files take at most `budget` bytes.
pub fn question(request: &ApprovalRequest<'_>, needs: &str, budget: usize) -> String {
    let effects = request.effects;
    let mut out = format!(
        "warden: allow `{}`? It needs approval: {}.",
        inert(request.tool),
        inert(needs)
    );
    let desktop = request.desktop.said(request.tool, request.grants);
    if !effects.touches.is_empty() || !desktop.is_empty() {
        out.push_str("\nIt will:");
        for t in &effects.touches {
            out.push_str(&format!("\n  {} {}", t.access.verb(), inert(t.shown())));
            if let Some(why) = t.refused() {
                out.push_str(&format!(" (refused: {why})"));
            }
        }
        for said in desktop {
            out.push_str(&format!("\n  {}", said.sentence));
            if let Some(line) = said.line {
                out.push_str(&format!(":\n    {line}"));
            }
        }
    }
    if !effects.declared {
        out.push_str(&format!(
            "\nIts effects are unknown: `{}` does not declare which files it changes.",
            inert(request.tool)
        ));
    }
    let others: Vec<(&String, &Value)> = request
        .arguments
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| !effects.is_path(name) && !request.desktop.arguments.contains(name))
        .collect();
    if others.is_empty() {
        return out;
    }
    out.push_str("\nWith:");
    let mut left = budget;
    let mut cut = 0usize;
    for (name, value) in others {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        let line = format!("\n  {}: {}", inert(name), inert(&text));
        if line.len() <= left {
            left -= line.len();
            out.push_str(&line);
            continue;
        }
        let mut end = left;
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        out.push_str(&line[..end]);
        cut += line.len() - end;
        left = 0;
    }
    if cut > 0 {
        out.push_str(&format!(" … ({cut} more bytes left out)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use warden_policy::{Grants, Origin};
    use warden_sandbox::{Access, Content, DesktopCall, Effect, Effects, GrantedDirs, Mount};

    fn dirs(ws: &std::path::Path) -> GrantedDirs {
        GrantedDirs::open(&[Mount {
            host: ws.to_path_buf(),
            guest: ".".into(),
            write: true,
        }])
        .unwrap()
    }

    /// The issue-43 case: a long `content` sent before `path` still has
    /// the file named first, whole.
    #[test]
    fn the_file_comes_first_whatever_the_order_and_size_of_the_arguments() {
        let ws = tempfile::tempdir().unwrap();
        let d = dirs(ws.path());
        let args = json!({"content": "x".repeat(10_000), "path": ".git/hooks/pre-commit"});
        let declared = [Effect {
            argument: "path".into(),
            access: Access::Write(Content::Whole("content".into())),
            follow: true,
        }];
        let effects = Effects::of(Some(&declared), &args, &d);
        let grants = Grants::default();
        let request = ApprovalRequest {
            tool: "write_file",
            origin: Origin::Builtin,
            arguments: &args,
            effects: &effects,
            grants: &grants,
            dirs: &d,
            desktop: &DesktopCall::default(),
        };
        let q = question(&request, "rw:.", 200);
        let lines: Vec<&str> = q.lines().collect();
        assert_eq!(
            lines[0],
            "warden: allow `write_file`? It needs approval: rw:.."
        );
        assert_eq!(lines[1], "It will:");
        assert_eq!(lines[2], "  write .git/hooks/pre-commit");
        assert_eq!(lines[3], "With:");
        assert!(lines[4].starts_with("  content: xxx"), "{q}");
        assert!(q.ends_with(" … (9812 more bytes left out)"), "{q}");
        assert!(q.len() < 400, "{q}");
    }

    #[test]
    fn unknown_effects_are_said_and_arguments_shown() {
        let ws = tempfile::tempdir().unwrap();
        let d = dirs(ws.path());
        let args = json!({"command": "make test"});
        let effects = Effects::default();
        let grants = Grants::default();
        let request = ApprovalRequest {
            tool: "shell",
            origin: Origin::Builtin,
            arguments: &args,
            effects: &effects,
            grants: &grants,
            dirs: &d,
            desktop: &DesktopCall::default(),
        };
        assert_eq!(
            question(&request, "exec:sh", 2000),
            "warden: allow `shell`? It needs approval: exec:sh.\nIts effects are unknown: \
             `shell` does not declare which files it changes.\nWith:\n  command: make test"
        );
    }

    /// The question names the program line an app starts with, as the
    /// terminal prompt does (the same `DesktopCall::said`), never cut,
    /// and its file arguments are not repeated as arguments.
    #[test]
    fn a_desktop_launch_is_named_by_its_program_line() {
        use warden_sandbox::{AppRequest, DesktopAction, Launch};
        let ws = tempfile::tempdir().unwrap();
        let d = dirs(ws.path());
        let args = json!({"app": "xeyes", "files": ["report.odt"], "note": "y".repeat(500)});
        let desktop = DesktopCall {
            declared: true,
            actions: vec![DesktopAction::Start {
                request: AppRequest {
                    app: "xeyes".into(),
                    files: vec!["report.odt".into()],
                    urls: Vec::new(),
                },
                plan: Ok(Launch {
                    app: "xeyes".into(),
                    name: "Eyes\u{1b}[2J".into(),
                    argv: vec!["/usr/bin/xeyes".into(), "/ws/my report.odt".into()],
                }),
            }],
            arguments: vec!["app".into(), "files".into()],
        };
        let effects = Effects::default();
        let grants = Grants::default();
        let request = ApprovalRequest {
            tool: "open_app",
            origin: Origin::Builtin,
            arguments: &args,
            effects: &effects,
            grants: &grants,
            dirs: &d,
            desktop: &desktop,
        };
        let q = question(&request, "app:xeyes", 100);
        let lines: Vec<&str> = q.lines().collect();
        assert_eq!(lines[1], "It will:");
        assert!(
            lines[2].starts_with("  start Eyes\\x1b[2J in your desktop session, unconfined"),
            "{q}"
        );
        assert_eq!(lines[3], "    /usr/bin/xeyes '/ws/my report.odt'");
        assert_eq!(lines[5], "With:");
        assert!(lines[6].starts_with("  note: yyy"), "{q}");
        assert!(!q.contains("files:"), "{q}");
    }
}
