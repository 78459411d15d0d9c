//! Asking the user before a tool call, and showing what it will change.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use crate::style::paint;

/// When to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Never ask.
    Never,
    /// Ask for calls of tools that change state.
    Writes,
    /// Ask for every call.
    Always,
}

impl Mode {
    /// From the policy value ("never", "writes", "always").
    pub fn parse(s: &str) -> Mode {
        match s {
            "never" => Mode::Never,
            "always" => Mode::Always,
            _ => Mode::Writes,
        }
    }
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run the call.
    Allow,
    /// Refuse it, with the message the model sees.
    Refuse(String),
}

/// Decides per call, asking on the terminal when it must.
pub struct Approver {
    mode: Mode,
    yes: bool,
    interactive: bool,
    fancy: bool,
    workspace: PathBuf,
    always: Mutex<HashSet<String>>,
    // One prompt at a time, even when read-only calls run concurrently.
    prompt: Mutex<()>,
}

impl Approver {
    /// `yes` approves everything (`--yes`).
    pub fn new(mode: Mode, yes: bool, workspace: PathBuf) -> Approver {
        Approver {
            mode,
            yes,
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            fancy: crate::style::stderr_is_fancy(),
            workspace,
            always: Mutex::new(HashSet::new()),
            prompt: Mutex::new(()),
        }
    }

    /// Whether `tool` may run with `arguments`.
    pub fn check(&self, tool: &str, mutates: bool, arguments: &str) -> Verdict {
        let needed = match self.mode {
            Mode::Never => false,
            Mode::Writes => mutates,
            Mode::Always => true,
        };
        if !needed || self.yes || self.always.lock().expect("poisoned").contains(tool) {
            return Verdict::Allow;
        }
        if !self.interactive {
            return Verdict::Refuse(format!(
                "error (denied): `{tool}` needs the user's approval (approval = \"{}\" in warden.toml), \
                 but warden runs without a terminal and without --yes, so the call was refused. \
                 Do not retry it; say what you would change instead.",
                if self.mode == Mode::Always {
                    "always"
                } else {
                    "writes"
                }
            ));
        }
        let _one = self.prompt.lock().expect("poisoned");
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "\n{}",
            paint(self.fancy, "1", &format!("{tool} wants to run:"))
        );
        let _ = write!(
            err,
            "{}",
            preview(tool, arguments, &self.workspace, self.fancy)
        );
        let _ = write!(
            err,
            "Allow? [y]es / [n]o / [a]lways for {tool} in this session: "
        );
        let _ = err.flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            answer.clear();
        }
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Verdict::Allow,
            "a" | "always" => {
                self.always
                    .lock()
                    .expect("poisoned")
                    .insert(tool.to_string());
                Verdict::Allow
            }
            _ => Verdict::Refuse(format!(
                "error (denied): the user refused this `{tool}` call. Ask them what they want, \
                 or try another approach."
            )),
        }
    }
}

/// What a call will do: a diff for file writes and edits, else the arguments.
pub fn preview(tool: &str, arguments: &str, workspace: &Path, fancy: bool) -> String {
    let args: Value = serde_json::from_str(arguments).unwrap_or(Value::Null);
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    match (tool, s("path")) {
        ("write_file", Some(path)) => {
            let old = std::fs::read_to_string(workspace.join(path)).unwrap_or_default();
            let new = s("content").unwrap_or("");
            format!("  {path}\n{}", diff(&old, new, fancy))
        }
        ("edit_file", Some(path)) => {
            format!(
                "  {path}\n{}",
                diff(
                    s("old_text").unwrap_or(""),
                    s("new_text").unwrap_or(""),
                    fancy
                )
            )
        }
        _ => format!(
            "  {}\n",
            serde_json::to_string_pretty(&args).unwrap_or_else(|_| arguments.into())
        ),
    }
}

fn diff(old: &str, new: &str, fancy: bool) -> String {
    let mut out = String::new();
    for change in TextDiff::from_lines(old, new).iter_all_changes() {
        let (sign, code) = match change.tag() {
            ChangeTag::Delete => ("-", "31"),
            ChangeTag::Insert => ("+", "32"),
            ChangeTag::Equal => (" ", ""),
        };
        let line = format!("{sign} {}", change.value().trim_end_matches('\n'));
        out.push_str(&if code.is_empty() {
            line
        } else {
            paint(fancy, code, &line)
        });
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_preview_is_a_line_diff_against_the_current_file() {
        let dir = std::env::temp_dir().join(format!("warden-approval-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("a.txt"), "one\ntwo\n").unwrap();
        let p = preview(
            "write_file",
            r#"{"path":"a.txt","content":"one\nthree\n"}"#,
            &dir,
            false,
        );
        assert_eq!(p, "  a.txt\n  one\n- two\n+ three\n");
        let p = preview(
            "edit_file",
            r#"{"path":"a.txt","old_text":"two","new_text":"2"}"#,
            &dir,
            false,
        );
        assert_eq!(p, "  a.txt\n- two\n+ 2\n");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn non_interactive_runs_refuse_writes_unless_yes() {
        let a = Approver {
            interactive: false,
            ..Approver::new(Mode::Writes, false, PathBuf::from("."))
        };
        assert_eq!(a.check("read_file", false, "{}"), Verdict::Allow);
        assert!(
            matches!(a.check("write_file", true, "{}"), Verdict::Refuse(m) if m.contains("--yes"))
        );
        let yes = Approver {
            interactive: false,
            ..Approver::new(Mode::Writes, true, PathBuf::from("."))
        };
        assert_eq!(yes.check("write_file", true, "{}"), Verdict::Allow);
        let never = Approver {
            interactive: false,
            ..Approver::new(Mode::Never, false, PathBuf::from("."))
        };
        assert_eq!(never.check("write_file", true, "{}"), Verdict::Allow);
        let always = Approver {
            interactive: false,
            ..Approver::new(Mode::Always, false, PathBuf::from("."))
        };
        assert!(matches!(
            always.check("read_file", false, "{}"),
            Verdict::Refuse(_)
        ));
    }
}
