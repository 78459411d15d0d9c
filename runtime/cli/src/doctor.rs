//! `warden doctor`: one line per check, ✓ or ✗ with what to do, in four
//! groups: commands (their confinement), the model endpoint, warden's own
//! folders, and the workspace's trust. Exit 0 when every check passes, 1
//! otherwise.
//!
//! - `commands`: the confinement commands get here;
//! - `model`: the endpoint, its models and (asked) what requests it takes;
//! - `folders`: state, cache, config and tools folders;
//! - `trust`: the workspace.

mod commands;
mod folders;
mod model;
mod trust;

use std::io::IsTerminal;
use std::path::Path;

use warden_policy::inert;
use warden_workspace::Folders;

use crate::args::EndpointFlags;
use crate::style::paint;

/// Exit code when a check failed.
const EXIT_FAILED_CHECK: u8 = 1;

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Passed: what holds.
    Pass(String),
    /// Failed: what is wrong, and what to do.
    Fail { what: String, fix: String },
    /// Not checked, or worth knowing: neither passes nor fails.
    Note(String),
}

impl Check {
    fn pass(what: impl Into<String>) -> Check {
        Check::Pass(what.into())
    }

    fn fail(what: impl Into<String>, fix: impl Into<String>) -> Check {
        Check::Fail {
            what: what.into(),
            fix: fix.into(),
        }
    }

    fn note(what: impl Into<String>) -> Check {
        Check::Note(what.into())
    }

    /// The line, inert: paths and server messages are foreign text.
    fn line(&self, colour: bool) -> String {
        match self {
            Check::Pass(what) => format!("  {} {}", paint(colour, "32", "✓"), inert(what)),
            Check::Fail { what, fix } => format!(
                "  {} {} {} {}",
                paint(colour, "31", "✗"),
                inert(what),
                paint(colour, "2", "→"),
                inert(fix)
            ),
            Check::Note(what) => format!("  {} {}", paint(colour, "2", "·"), inert(what)),
        }
    }
}

/// `warden doctor [--model-check]`.
pub fn run(
    dir: Option<&Path>,
    folders: Folders,
    endpoint: &EndpointFlags,
    model_check: bool,
) -> anyhow::Result<u8> {
    let colour = std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let (workspace, workspace_checks) = trust::checks(dir, &folders);
    let model_section = workspace
        .as_ref()
        .map(|ws| ws.policy.model().clone())
        .unwrap_or_default();
    let groups: [(&str, Vec<Check>); 4] = [
        ("commands", commands::checks()),
        (
            "model",
            model::checks(&folders, &model_section, endpoint, model_check),
        ),
        ("folders", folders::checks(&folders)),
        ("workspace", workspace_checks),
    ];
    let mut failed = 0;
    for (name, checks) in &groups {
        stdout_line!("{}", paint(colour, "1", name));
        for c in checks {
            failed += usize::from(matches!(c, Check::Fail { .. }));
            stdout_line!("{}", c.line(colour));
        }
    }
    if failed == 0 {
        stdout_line!("every check passed");
        Ok(0)
    } else {
        let s = if failed == 1 { "" } else { "s" };
        stdout_line!("{failed} check{s} failed");
        Ok(EXIT_FAILED_CHECK)
    }
}

/// A size as people read it: `812 B`, `4.2 KiB`, `1.5 MiB`.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_marked_and_inert() {
        assert_eq!(Check::pass("ok").line(false), "  ✓ ok");
        assert_eq!(
            Check::fail("bad \x1b[2J", "do this").line(false),
            "  ✗ bad \\x1b[2J → do this"
        );
        assert_eq!(Check::note("skipped").line(false), "  · skipped");
    }

    #[test]
    fn sizes_read_as_people_say_them() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(5 << 20), "5.0 MiB");
    }
}
