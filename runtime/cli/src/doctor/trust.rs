//! The workspace: whether warden runs in it, and whether its files are
//! as the user trusted them.

use std::path::Path;

use warden_policy::POLICY_FILE;
use warden_workspace::{Folders, WORKSPACE_TOOLS, Workspace};

use super::Check;

/// The workspace as it runs (for its trusted `[model]`), and its lines.
pub fn checks(dir: Option<&Path>, folders: &Folders) -> (Option<Workspace>, Vec<Check>) {
    let ws = match Workspace::open(dir, folders.clone()) {
        Ok(ws) => ws,
        Err(e) => {
            return (
                None,
                vec![Check::fail(
                    format!("{e:#}"),
                    "run warden in a project folder, or pass one with -w",
                )],
            );
        }
    };
    let root = ws.root.display().to_string();
    let line = match Workspace::open_current(dir, folders.clone()) {
        Err(e) => Check::fail(
            format!("{root}: {e:#}"),
            format!("fix {POLICY_FILE}, then run `warden trust`"),
        ),
        Ok(current) => {
            let trusted = ws.trusted();
            let pending = crate::trust_cmd::untrusted(&current, trusted);
            match (pending.first(), trusted) {
                (Some(first), _) => {
                    let more = match pending.len() {
                        1 => String::new(),
                        n => format!(" (and {} more)", n - 1),
                    };
                    Check::fail(
                        format!("{root}: {first}{more}"),
                        "review it with `warden trust`, which shows each change and accepts it",
                    )
                }
                (None, Some(_)) => Check::pass(format!("{root}: trusted, as its files are now")),
                (None, None) => Check::pass(format!(
                    "{root}: no {POLICY_FILE} or {WORKSPACE_TOOLS}: the built-in tools with \
                     their defaults (`warden init` writes a {POLICY_FILE})"
                )),
            }
        }
    };
    (Some(ws), vec![line])
}
