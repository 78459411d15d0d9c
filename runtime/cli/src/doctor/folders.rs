//! warden's own folders: where they are, that they are private, and what
//! they hold; the user config file.

use std::path::Path;

use warden_state::StateDir;
use warden_workspace::Folders;

use super::{Check, human_size};

/// One line per folder, then the config file's.
pub fn checks(folders: &Folders) -> Vec<Check> {
    let mut out = vec![
        folder(
            "state",
            &folders.state,
            "trust records, sessions, undo snapshots",
        ),
        folder("cache", &folders.cache, "compiled components"),
        folder(
            "config",
            &folders.config,
            "config.toml, secrets.toml, AGENTS.md",
        ),
        folder("tools", &folders.data, "your own tools"),
    ];
    out.push(config_file(&folders.config_file()));
    out
}

/// `base/warden` (for "tools", `base/warden/tools`): opened with the
/// checks warden makes before using it, created by nothing here.
fn folder(name: &str, base: &Path, holds: &str) -> Check {
    let rel = if name == "tools" {
        "warden/tools"
    } else {
        "warden"
    };
    let path = base.join(rel);
    let shown = path.display();
    match StateDir::open_existing(base, rel) {
        Ok(None) => Check::pass(format!(
            "{name:6} {shown}: not made yet (warden makes it when first needed)"
        )),
        Ok(Some(dir)) => match dir.usage() {
            Ok(u) => Check::pass(format!(
                "{name:6} {shown}: mode {:04o}, {} in {} file{} ({holds})",
                u.mode,
                human_size(u.bytes),
                u.files,
                if u.files == 1 { "" } else { "s" }
            )),
            Err(e) => Check::fail(
                format!("{name:6} {shown}: cannot be read: {e}"),
                "make it readable by you, or remove it (warden makes it again)",
            ),
        },
        Err(e) => Check::fail(
            format!("{name:6} {shown}: {e}"),
            "warden keeps its files only in a folder of yours, mode 0700, that is no link",
        ),
    }
}

fn config_file(path: &Path) -> Check {
    if std::fs::symlink_metadata(path).is_err() {
        return Check::pass(format!("{} is absent: the defaults apply", path.display()));
    }
    match warden_policy::load_user_config(path) {
        Ok(_) => Check::pass(format!("{} is valid", path.display())),
        Err(e) => Check::fail(format!("{e:#}"), "fix the line it names"),
    }
}
