//! Asking the user before a tool call, and showing what it will change.

mod preview;

use std::collections::HashSet;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio_util::sync::CancellationToken;
use warden_workspace::{ApprovalRequest, Approve, Verdict};

use crate::prompt::{self, Answer};
use crate::style::paint;

pub use preview::preview;

/// Decides per call, asking on the terminal when it must.
pub struct Approver {
    yes: bool,
    /// The workspace root, which grants inside it are shown relative to.
    workspace: PathBuf,
    interactive: bool,
    fancy: bool,
    always: Mutex<HashSet<String>>,
    // One prompt at a time, even when read-only calls run concurrently.
    prompt: Mutex<()>,
    /// The turn in progress, cancelled by Ctrl-C at a prompt.
    turn: Mutex<Option<CancellationToken>>,
    /// Calls refused because nobody could be asked.
    unasked: AtomicUsize,
}

impl Approver {
    /// `yes` approves everything (`--yes`); grants inside `workspace` are
    /// named relative to it, others by their absolute path.
    pub fn new(yes: bool, workspace: &Path) -> Approver {
        Approver {
            yes,
            workspace: workspace.to_path_buf(),
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            fancy: crate::style::stderr_is_fancy(),
            always: Mutex::new(HashSet::new()),
            prompt: Mutex::new(()),
            turn: Mutex::new(None),
            unasked: AtomicUsize::new(0),
        }
    }

    /// Whether calls that need approval can be asked about (a terminal, or
    /// `--yes`): without either they are all refused.
    pub fn can_approve(&self) -> bool {
        self.yes || self.interactive
    }

    /// The turn that Ctrl-C at a prompt cancels (`None` between turns).
    pub fn set_turn(&self, turn: Option<CancellationToken>) {
        *self.turn.lock().expect("poisoned") = turn;
    }

    /// How many calls were refused because there was no terminal to ask on.
    pub fn refused_unasked(&self) -> usize {
        self.unasked.load(Ordering::SeqCst)
    }
}

impl Approve for Approver {
    fn approve(&self, request: &ApprovalRequest<'_>) -> Verdict {
        let tool = request.tool;
        if self.yes || self.always.lock().expect("poisoned").contains(tool) {
            return Verdict::Allow;
        }
        if !self.interactive {
            self.unasked.fetch_add(1, Ordering::SeqCst);
            return Verdict::Refuse(format!(
                "error (denied): `{tool}` needs the user's approval (it is granted {}), but \
                 warden runs without a terminal and without --yes, so the call was refused. \
                 Do not retry it; say what you would change instead.",
                request.grants.summary(&self.workspace)
            ));
        }
        let _one = self.prompt.lock().expect("poisoned");
        // Calls of one batch wait here together: once Ctrl-C stopped the
        // turn at one prompt, the others are not asked about.
        let stopped = self
            .turn
            .lock()
            .expect("poisoned")
            .as_ref()
            .is_some_and(CancellationToken::is_cancelled);
        if stopped {
            return Verdict::Refuse(format!(
                "error (denied): the user stopped the turn (Ctrl-C) before this `{tool}` call \
                 was asked about. Wait for their next message."
            ));
        }
        let shown = format!(
            "\n{}\n{}Allow? [y]es / [a]lways for {tool} / [n]o (a reason for the model may \
             follow: n use b.txt): ",
            paint(self.fancy, "1", &format!("{tool} wants to run:")),
            preview(request, self.fancy),
        );
        match prompt::ask(&shown) {
            Answer::Interrupted => {
                if let Some(turn) = self.turn.lock().expect("poisoned").as_ref() {
                    turn.cancel();
                }
                Verdict::Refuse(format!(
                    "error (denied): the user refused this `{tool}` call and stopped the turn \
                     (Ctrl-C). Wait for their next message."
                ))
            }
            Answer::Closed => refuse(tool, ""),
            Answer::Line(line) => decide(tool, &line, || {
                self.always
                    .lock()
                    .expect("poisoned")
                    .insert(tool.to_string());
            }),
        }
    }
}

/// The verdict for an answer typed at the prompt; `always` remembers the
/// tool. Anything but yes or always refuses.
fn decide(tool: &str, line: &str, always: impl FnOnce()) -> Verdict {
    let line = line.trim();
    let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    match word.to_ascii_lowercase().as_str() {
        "y" | "yes" if rest.is_empty() => Verdict::Allow,
        "a" | "always" if rest.is_empty() => {
            always();
            Verdict::Allow
        }
        "n" | "no" => refuse(tool, rest.trim()),
        _ => refuse(tool, ""),
    }
}

fn refuse(tool: &str, reason: &str) -> Verdict {
    if reason.is_empty() {
        Verdict::Refuse(format!(
            "error (denied): the user refused this `{tool}` call. Ask them what they want, \
             or try another approach."
        ))
    } else {
        Verdict::Refuse(format!(
            "error (denied): the user refused this `{tool}` call, saying: {reason}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(line: &str) -> (Verdict, bool) {
        let mut remembered = false;
        let v = decide("write_file", line, || remembered = true);
        (v, remembered)
    }

    #[test]
    fn answers_allow_refuse_and_carry_a_reason() {
        assert_eq!(verdict("y"), (Verdict::Allow, false));
        assert_eq!(verdict(" YES "), (Verdict::Allow, false));
        assert_eq!(verdict("a"), (Verdict::Allow, true));
        let Verdict::Refuse(why) = verdict("n  use a new file instead").0 else {
            panic!("refused");
        };
        assert!(why.ends_with("saying: use a new file instead"), "{why}");
        for refused in ["n", "no", "", "yes please", "maybe", "always then"] {
            let (v, remembered) = verdict(refused);
            assert!(
                matches!(v, Verdict::Refuse(ref m) if !m.contains("saying")),
                "{refused}: {v:?}"
            );
            assert!(!remembered);
        }
    }
}
