//! What changed in a turn, and undo.
//!
//! Before each call of a built-in tool that changes files, the paths it
//! will touch are snapshotted through the tool's own directory handles
//! ([`beneath`]) into warden's state folder (`$XDG_STATE_HOME/warden/undo/
//! <workspace id>/`), one manifest per turn. `warden undo` (and `/undo`)
//! puts the last turn's paths back as they were, through the same grants,
//! then forgets that turn, so the next undo goes one turn further back.

pub mod beneath;

use std::collections::BTreeSet;
use std::io;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use warden_policy::Origin;
use warden_sandbox::{BoundTool, Mount};
use warden_state::StateDir;

use crate::toolset::Toolset;
use beneath::{Before, Blobs, TURN_CAP};

/// Turns kept per workspace; older ones are forgotten.
const KEPT_TURNS: usize = 20;

/// One path as it was before a turn touched it.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    /// The tool whose grant reaches it.
    tool: String,
    /// Host path of the granted directory (a mount of the tool).
    mount: PathBuf,
    /// The path beneath that directory.
    path: String,
    /// The path as the model wrote it, for messages.
    shown: String,
    before: Before,
}

/// One turn's snapshots.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Manifest {
    session: String,
    entries: Vec<Entry>,
    /// Files the turn's successful calls changed, as the model named them.
    changed: Vec<String>,
    /// What could not be snapshotted, and why.
    notes: Vec<String>,
}

/// What a turn changed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TurnChanges {
    /// Paths changed by successful calls, as the model named them, sorted.
    pub changed: Vec<String>,
    /// What `warden undo` will not be able to restore.
    pub notes: Vec<String>,
}

/// What an undo did.
#[derive(Debug, Default)]
pub struct Undone {
    /// The session whose turn was undone.
    pub session: String,
    /// Paths put back.
    pub restored: Vec<String>,
    /// Paths left as they are, with the reason.
    pub problems: Vec<String>,
}

#[derive(Default)]
struct Turn {
    id: Option<String>,
    manifest: Manifest,
    blobs: usize,
    bytes: u64,
    changed: BTreeSet<String>,
}

/// Records one session's turns for undo. Shared by the runner (which
/// snapshots before each mutating call) and the front-end (which ends a
/// turn and shows what changed).
pub struct Journal {
    dir: StateDir,
    session: String,
    turn: Mutex<Turn>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("dir", &self.dir.path())
            .field("session", &self.session)
            .finish_non_exhaustive()
    }
}

struct TurnBlobs<'a> {
    dir: &'a StateDir,
    id: &'a str,
    turn: &'a mut Turn,
}

impl Blobs for TurnBlobs<'_> {
    fn put(&mut self, bytes: &[u8]) -> io::Result<String> {
        let name = format!("{}.{}.blob", self.id, self.turn.blobs);
        self.dir.write_atomic(&name, bytes)?;
        self.turn.blobs += 1;
        self.turn.bytes += bytes.len() as u64;
        Ok(name)
    }

    fn room(&self) -> u64 {
        TURN_CAP.saturating_sub(self.turn.bytes)
    }
}

/// The paths a built-in tool's call may change; `None` for a tool whose
/// changes are not known.
fn touched(tool: &BoundTool, args: &Value) -> Option<Vec<String>> {
    if tool.info().origin != Origin::Builtin {
        return None;
    }
    let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    let keys: &[&str] = match tool.info().spec.name.as_str() {
        "write_file" | "edit_file" | "delete" | "mkdir" => &["path"],
        "move" => &["from", "to"],
        "copy" => &["to"],
        _ => return None,
    };
    Some(keys.iter().filter_map(|k| field(k)).collect())
}

impl Journal {
    /// A journal for `session`, kept in `dir`.
    pub fn new(dir: StateDir, session: &str) -> Journal {
        Journal {
            dir,
            session: session.to_string(),
            turn: Mutex::new(Turn::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Turn> {
        self.turn.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Before a call of `tool` that may change files: snapshots what it
    /// will touch. Never fails the call; what cannot be kept is noted.
    pub fn before(&self, tool: &BoundTool, args: &Value) {
        let name = &tool.info().spec.name;
        let mut turn = self.lock();
        let id = turn
            .id
            .get_or_insert_with(|| turn_id(&self.session))
            .clone();
        let Some(paths) = touched(tool, args) else {
            let note = format!("changes made by `{name}` are not tracked and cannot be undone");
            if !turn.manifest.notes.contains(&note) {
                turn.manifest.notes.push(note);
            }
            return;
        };
        let mounts: Vec<Mount> = tool.dirs().mounts().cloned().collect();
        for shown in paths {
            let Some((mount, rel)) = locate(&mounts, &shown) else {
                continue; // outside every grant: the call is refused
            };
            if !mount.write {
                continue; // a read-only grant: the call cannot change it
            }
            let covered = turn
                .manifest
                .entries
                .iter()
                .any(|e| e.mount == mount.host && within(&rel, &e.path));
            if covered {
                continue; // its state before the turn is kept already
            }
            let Some(fd) = tool.dir_fd(&mount.host) else {
                turn.manifest
                    .notes
                    .push(format!("{shown}: not snapshotted on this system"));
                continue;
            };
            let mut blobs = TurnBlobs {
                dir: &self.dir,
                id: &id,
                turn: &mut turn,
            };
            let (path, before) = beneath::snapshot(fd, &rel, &mut blobs);
            if let Before::Skipped { reason } = &before {
                turn.manifest
                    .notes
                    .push(format!("{shown}: not snapshotted: {reason}"));
            }
            turn.manifest.entries.push(Entry {
                tool: name.clone(),
                mount: mount.host.clone(),
                path,
                shown: shown.clone(),
                before,
            });
        }
        self.save(&id, &mut turn);
    }

    /// After a call: a successful one's paths count as changed.
    pub fn after(&self, tool: &BoundTool, args: &Value, ok: bool) {
        if !ok {
            return;
        }
        if let Some(paths) = touched(tool, args) {
            let mut turn = self.lock();
            turn.changed.extend(paths);
            if let Some(id) = turn.id.clone() {
                self.save(&id, &mut turn);
            }
        }
    }

    fn save(&self, id: &str, turn: &mut Turn) {
        turn.manifest.session = self.session.clone();
        turn.manifest.changed = turn.changed.iter().cloned().collect();
        let saved = serde_json::to_vec(&turn.manifest)
            .map_err(io::Error::other)
            .and_then(|bytes| self.dir.write_atomic(format!("{id}.json"), &bytes));
        if let Err(e) = saved {
            let note = format!("the undo record cannot be written: {e}");
            if !turn.manifest.notes.contains(&note) {
                turn.manifest.notes.push(note);
            }
        }
    }

    /// Ends the turn: what it changed, and what undo cannot restore. The
    /// snapshots stay for `warden undo`; old turns are forgotten.
    pub fn end_turn(&self) -> TurnChanges {
        let turn = std::mem::take(&mut *self.lock());
        if turn.id.is_some() {
            prune(&self.dir, KEPT_TURNS);
        }
        TurnChanges {
            changed: turn.changed.into_iter().collect(),
            notes: turn.manifest.notes,
        }
    }
}

/// A turn id that sorts by time: milliseconds since 1970, then the session.
fn turn_id(session: &str) -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis();
    format!("{ms:015}-{session}")
}

/// Turn ids in `dir`, oldest first.
fn turns(dir: &StateDir) -> io::Result<Vec<String>> {
    Ok(dir
        .files()?
        .into_iter()
        .filter_map(|f| f.strip_suffix(".json").map(str::to_string))
        .collect())
}

/// Forgets a turn: its manifest and its blobs.
fn forget(dir: &StateDir, id: &str) -> io::Result<()> {
    for f in dir.files()? {
        if f.strip_prefix(id).is_some_and(|rest| rest.starts_with('.')) {
            dir.remove(&f)?;
        }
    }
    Ok(())
}

/// Forgets every turn of `session` in `dir` (manifests and snapshots), as
/// when its transcript is removed: the snapshots are copies of its files.
/// Returns how many turns it had.
pub fn forget_session(dir: &StateDir, session: &str) -> io::Result<usize> {
    let mut forgotten = 0;
    for id in turns(dir)? {
        // `turn_id`: the time (digits), `-`, then the session.
        if id.split_once('-').is_some_and(|(_, s)| s == session) {
            forget(dir, &id)?;
            forgotten += 1;
        }
    }
    Ok(forgotten)
}

fn prune(dir: &StateDir, keep: usize) {
    if let Ok(ids) = turns(dir) {
        for id in ids.iter().take(ids.len().saturating_sub(keep)) {
            let _ = forget(dir, id);
        }
    }
}

/// Restores the last recorded turn in `dir` through the tools of `tools`
/// (each path through the grant of the tool that touched it), then
/// forgets that turn. `Ok(None)` when there is nothing to undo.
pub fn undo_last(dir: &StateDir, tools: &Toolset) -> io::Result<Option<Undone>> {
    let Some(id) = turns(dir)?.pop() else {
        return Ok(None);
    };
    let bytes = dir.read(format!("{id}.json"))?.unwrap_or_default();
    let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        io::Error::other(format!(
            "the undo record {} is damaged ({e}); remove it to undo an earlier turn",
            dir.path().join(format!("{id}.json")).display()
        ))
    })?;
    let mut done = Undone {
        session: manifest.session.clone(),
        ..Undone::default()
    };
    let mut load = |blob: &str| {
        dir.read(blob)?
            .ok_or_else(|| io::Error::other(format!("snapshot {blob} is missing")))
    };
    for e in manifest.entries.iter().rev() {
        let shown = warden_policy::inert(&e.shown).into_owned();
        let fd = tools
            .find(&e.tool)
            .filter(|t| t.dirs().mounts().any(|m| m.host == e.mount && m.write))
            .and_then(|t| t.dir_fd(&e.mount));
        let Some(fd) = fd else {
            done.problems.push(format!(
                "{shown}: `{}` no longer has write access to {}; left as it is",
                e.tool,
                warden_policy::inert(&e.mount.display().to_string())
            ));
            continue;
        };
        match beneath::restore(fd, &e.path, &e.before, &mut load) {
            Ok(()) => done.restored.push(shown),
            Err(err) => done.problems.push(format!("{shown}: {err}")),
        }
    }
    done.problems.extend(
        manifest
            .notes
            .iter()
            .map(|n| warden_policy::inert(n).into_owned()),
    );
    done.restored.dedup();
    forget(dir, &id)?;
    Ok(Some(done))
}

/// The granted directory through which the tool opens `path`, and the path
/// beneath it, as the built-in `fs` tools resolve it (wasi-libc's lookup:
/// the longest mount name that matches whole components, the last listed
/// among equals). `None` for a path that climbs out or matches no mount.
fn locate<'m>(mounts: &'m [Mount], path: &str) -> Option<(&'m Mount, String)> {
    let norm = normalize(path);
    if norm == ".." || norm.starts_with("../") {
        return None;
    }
    let absolute = norm.starts_with('/');
    let p = norm.trim_start_matches('/');
    let mut best: Option<(usize, usize)> = None;
    for (i, m) in mounts.iter().enumerate().rev() {
        // The tools refuse an absolute path under no absolute grant.
        if absolute && !m.guest.starts_with('/') {
            continue;
        }
        let prefix = strip_mount_name(&m.guest);
        if best.is_none_or(|(_, len)| prefix.len() > len) && prefix_matches(prefix, p) {
            best = Some((i, prefix.len()));
        }
    }
    let (i, len) = best?;
    let rel = p[len..].trim_start_matches('/');
    Some((
        &mounts[i],
        if rel.is_empty() { "." } else { rel }.to_string(),
    ))
}

/// Lexical normalisation, as the fs tools do it.
fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push(".."),
            },
            _ => parts.push(part),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn strip_mount_name(mut name: &str) -> &str {
    loop {
        if let Some(rest) = name.strip_prefix('/') {
            name = rest;
        } else if let Some(rest) = name.strip_prefix("./") {
            name = rest;
        } else if name == "." {
            return "";
        } else {
            return name;
        }
    }
}

fn prefix_matches(prefix: &str, path: &str) -> bool {
    if prefix.is_empty() && !path.starts_with('/') {
        return true;
    }
    if !path.starts_with(prefix) {
        return false;
    }
    let end = prefix.trim_end_matches('/').len();
    matches!(path.as_bytes().get(end), None | Some(b'/'))
}

/// Whether `rel` is `parent` or beneath it (both beneath one mount).
fn within(rel: &str, parent: &str) -> bool {
    let (rel, parent) = (beneath::parts(rel), beneath::parts(parent));
    rel.starts_with(&parent)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mount(host: &str, guest: &str, write: bool) -> Mount {
        Mount {
            host: host.into(),
            guest: guest.into(),
            write,
        }
    }

    #[test]
    fn paths_resolve_to_the_mount_the_tool_would_use() {
        let mounts = [
            mount("/ws", "/ws", true),
            mount("/ws", ".", true),
            mount("/ws/vendor", "/ws/vendor", false),
            mount("/ws/vendor", "vendor", false),
        ];
        let at = |p: &str| locate(&mounts, p).map(|(m, r)| (m.guest.clone(), r));
        assert_eq!(at("a/../b.txt"), Some((".".into(), "b.txt".into())));
        assert_eq!(at("vendor/x"), Some(("vendor".into(), "x".into())));
        assert_eq!(at("/ws/vendor/x"), Some(("/ws/vendor".into(), "x".into())));
        assert_eq!(at("/ws/src/m.rs"), Some(("/ws".into(), "src/m.rs".into())));
        assert_eq!(at("../secret"), None);
        assert_eq!(at("/etc/passwd"), None);
        assert!(within("a/b", "a") && within("a", "a") && !within("ab", "a"));
    }
}
