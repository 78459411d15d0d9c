//! The turns' records in warden's state folder: manifests and snapshots,
//! the marks of running turns, and the paths the model is to be told were
//! undone.

use std::fs::TryLockError;
use std::io;

use warden_state::StateDir;

/// The session a turn id belongs to.
pub(super) fn session_of(id: &str) -> &str {
    id.split_once('-').map_or("", |(_, s)| s)
}

/// The mark of a running turn (not a turn: turns end in `.json`).
pub(super) fn running_file(id: &str) -> String {
    format!("{id}.running")
}

/// Refuses turn `id` while it runs in another warden: undoing it would
/// race its calls, and the turn would write its record back afterwards.
/// A mark no warden holds (its warden was killed mid-turn) is removed.
pub(super) fn not_running(dir: &StateDir, id: &str) -> io::Result<()> {
    let name = running_file(id);
    let file = match dir.open_read(&name) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        opened => opened?,
    };
    match file.try_lock() {
        Ok(()) => dir.remove(&name),
        Err(TryLockError::WouldBlock) => Err(io::Error::new(
            io::ErrorKind::ResourceBusy,
            format!(
                "the last turn, of session {}, is still running in another warden: undo it \
                 once that turn has ended",
                warden_policy::inert(session_of(id))
            ),
        )),
        Err(TryLockError::Error(e)) => Err(e),
    }
}

/// Turn ids in `dir`, oldest first.
pub(super) fn turns(dir: &StateDir) -> io::Result<Vec<String>> {
    Ok(dir
        .files()?
        .into_iter()
        .filter_map(|f| f.strip_suffix(".json").map(str::to_string))
        .collect())
}

/// Forgets a turn: its manifest and its blobs.
pub(super) fn forget(dir: &StateDir, id: &str) -> io::Result<()> {
    for f in dir.files()? {
        if f.strip_prefix(id).is_some_and(|rest| rest.starts_with('.')) {
            dir.remove(&f)?;
        }
    }
    Ok(())
}

/// Where the paths undone in `session`'s turns wait for its model to be
/// told (not a turn: turns end in `.json`).
pub(super) fn undone_file(session: &str) -> String {
    format!("{session}.undone")
}

/// The paths undone in `session`'s turns that its model was not told of.
/// A damaged list is taken as empty: it only ever adds a note.
pub(super) fn read_undone(dir: &StateDir, session: &str) -> io::Result<Vec<String>> {
    Ok(dir
        .read(undone_file(session))?
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default())
}

/// Adds `restored` to what `session`'s model is to be told.
pub(super) fn note_undone(dir: &StateDir, session: &str, restored: &[String]) -> io::Result<()> {
    // Another warden of the session may be forgetting what its model was
    // told, or noting an undo of its own, at the same moment.
    let _held = dir.lock()?;
    let mut undone = read_undone(dir, session)?;
    for p in restored {
        if !undone.contains(p) {
            undone.push(p.clone());
        }
    }
    write_undone(dir, session, &undone)
}

/// Writes what `session`'s model is to be told; nothing left, no file (a
/// missing one is no error, a damaged one goes too).
pub(super) fn write_undone(dir: &StateDir, session: &str, undone: &[String]) -> io::Result<()> {
    if undone.is_empty() {
        return dir.remove(undone_file(session));
    }
    let bytes = serde_json::to_vec(undone).map_err(io::Error::other)?;
    dir.write_atomic(undone_file(session), &bytes)
}

/// Forgets every turn of `session` in `dir` (manifests and snapshots), as
/// when its transcript is removed: the snapshots are copies of its files.
/// Returns how many turns it had.
pub fn forget_session(dir: &StateDir, session: &str) -> io::Result<usize> {
    dir.remove(undone_file(session))?;
    let mut forgotten = 0;
    for id in turns(dir)? {
        // `turn_id`: the time (digits), `-`, then the session.
        if session_of(&id) == session {
            forget(dir, &id)?;
            forgotten += 1;
        }
    }
    Ok(forgotten)
}

/// Forgets all but the last `keep` turns, except a turn still running in
/// another warden: its later records would name snapshots gone.
pub(super) fn prune(dir: &StateDir, keep: usize) {
    if let Ok(ids) = turns(dir) {
        for id in ids.iter().take(ids.len().saturating_sub(keep)) {
            if not_running(dir, id).is_ok() {
                let _ = forget(dir, id);
            }
        }
    }
}
