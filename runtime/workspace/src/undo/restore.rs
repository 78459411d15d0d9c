//! Undo: the last recorded turn put back, path by path, through the
//! grants of the tools that touched them, where each is still as the turn
//! left it.

use std::collections::BTreeSet;
use std::io;
use std::os::fd::BorrowedFd;

use warden_state::StateDir;

use super::beneath::{self, Before, Print};
use super::store::{forget, not_running, note_undone, session_of, turns};
use super::{Entry, Manifest, Undone, holds};
use crate::toolset::Toolset;

/// What undo does with one entry, decided for all before any is touched.
enum Plan<'t> {
    /// Put it back through this handle.
    Restore(BorrowedFd<'t>),
    /// A folder the turn made, with more in it now: remove what the turn
    /// made in it.
    Clear(BorrowedFd<'t>, &'t [(String, Print)]),
    /// It is as before the turn already (through this handle).
    Done(BorrowedFd<'t>),
    /// Left as it is, and why; kept for another undo when `retry`.
    Leave { why: String, retry: bool },
}

/// Restores the last recorded turn in `dir` through the tools of `tools`
/// (each path through the grant of the tool that touched it), if each is
/// still as the turn left it, then forgets that turn; what was not
/// restored stays recorded. `Ok(None)` when there is nothing to undo.
pub fn undo_last(dir: &StateDir, tools: &Toolset) -> io::Result<Option<Undone>> {
    let Some(id) = turns(dir)?.pop() else {
        return Ok(None);
    };
    not_running(dir, &id)?;
    let bytes = dir.read(format!("{id}.json"))?.unwrap_or_default();
    let mut manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| {
        io::Error::other(format!(
            "the undo record {} is damaged ({e}); `warden undo --skip` drops it",
            dir.path().join(format!("{id}.json")).display()
        ))
    })?;
    let mut done = Undone {
        session: manifest.session.clone(),
        ..Undone::default()
    };
    let mut plans: Vec<Plan> = manifest.entries.iter().map(|e| plan(e, tools)).collect();
    // One as before already is put back all the same when a later one that
    // holds it is: that one's snapshot holds what the turn made of it, and
    // entries are restored last first.
    for i in 0..plans.len() {
        let Plan::Done(fd) = plans[i] else { continue };
        let e = &manifest.entries[i];
        let later = manifest.entries.iter().zip(&plans).skip(i + 1);
        if later
            .filter(|(_, p)| matches!(p, Plan::Restore(_)))
            .any(|(o, _)| holds(o, e))
        {
            plans[i] = Plan::Restore(fd);
        }
    }
    // A path inside one left as it is (or holding one) is left with it.
    for i in 0..plans.len() {
        let e = &manifest.entries[i];
        let with = manifest.entries.iter().zip(&plans).find(|(o, p)| {
            matches!(p, Plan::Leave { retry: true, .. }) && (holds(o, e) || holds(e, o))
        });
        if let Some((o, _)) =
            with.filter(|_| matches!(plans[i], Plan::Restore(_) | Plan::Clear(..)))
        {
            let why = format!("left as it is, as {} is", warden_policy::inert(&o.shown));
            plans[i] = Plan::Leave { why, retry: true };
        }
    }
    let mut load = |blob: &str| {
        dir.read(blob)?
            .ok_or_else(|| io::Error::other(format!("snapshot {blob} is missing")))
    };
    let mut pending = Vec::new();
    for (e, plan) in manifest.entries.iter().zip(plans).rev() {
        let shown = warden_policy::inert(&e.shown).into_owned();
        let problem = match plan {
            Plan::Done(_) => {
                done.unchanged.push(shown);
                continue;
            }
            Plan::Leave { why, retry: false } => {
                done.problems.push(format!("{shown}: {why}"));
                continue;
            }
            Plan::Leave { why, .. } => Some(format!("{shown}: {why}")),
            Plan::Restore(fd) => beneath::restore(fd, &e.path, &e.before, &mut load)
                .err()
                .map(|err| format!("{shown}: {err}")),
            Plan::Clear(fd, left) => match beneath::clear(fd, &e.path, left) {
                Err(err) => Some(format!("{shown}: {err}")),
                Ok(c) => {
                    let changed = c.changed.iter().map(|p| {
                        let p = format!("{}{}", e.shown, &p[e.path.len()..]);
                        format!("{}: {CHANGED}", warden_policy::inert(&p))
                    });
                    done.problems.extend(changed);
                    if !c.changed.is_empty() {
                        pending.push(e.clone());
                    }
                    if c.foreign {
                        done.kept.push(shown);
                    } else if c.changed.is_empty() {
                        done.restored.push(shown);
                    }
                    continue;
                }
            },
        };
        match problem {
            None => done.restored.push(shown),
            Some(p) => {
                done.problems.push(p);
                pending.push(e.clone());
            }
        }
    }
    done.problems.extend(
        manifest
            .notes
            .iter()
            .map(|n| warden_policy::inert(n).into_owned()),
    );
    done.restored.dedup();
    done.unchanged.dedup();
    done.unchanged.retain(|p| !done.restored.contains(p));
    let mut seen = BTreeSet::new();
    done.problems.retain(|p| seen.insert(p.clone()));
    // The session's model hears of it with its next message, whichever
    // warden sends it. The files are back whether or not this is kept.
    if !done.restored.is_empty()
        && let Err(e) = note_undone(dir, &done.session, &done.restored)
    {
        done.untold = Some(e.to_string());
    }
    if pending.is_empty() {
        forget(dir, &id)?;
    } else {
        // The notes are said: what is kept is what another undo can do.
        pending.reverse();
        manifest.entries = pending;
        manifest.notes.clear();
        let bytes = serde_json::to_vec(&manifest).map_err(io::Error::other)?;
        dir.write_atomic(format!("{id}.json"), &bytes)?;
        done.pending = true;
    }
    Ok(Some(done))
}

const CHANGED: &str = "changed since the turn (left as it is)";

/// The last recorded turn in `dir` is forgotten without restoring
/// anything (its snapshots go with it), so that the next undo goes to the
/// turn before. Its session and the paths it had recorded (`None`: its
/// record was damaged); `Ok(None)` when there is nothing to undo.
pub fn skip_last(dir: &StateDir) -> io::Result<Option<(String, Option<Vec<String>>)>> {
    let Some(id) = turns(dir)?.pop() else {
        return Ok(None);
    };
    not_running(dir, &id)?;
    // A damaged record is dropped all the same: that is what skipping is for.
    let manifest: Option<Manifest> = dir
        .read(format!("{id}.json"))?
        .and_then(|b| serde_json::from_slice(&b).ok());
    forget(dir, &id)?;
    let session = session_of(&id).to_string();
    let shown = manifest.map(|m| {
        m.entries
            .iter()
            .map(|e| warden_policy::inert(&e.shown).into_owned())
            .collect()
    });
    Ok(Some((session, shown)))
}

/// What to do with `e`: how it is now against what the turn left.
fn plan<'t>(e: &'t Entry, tools: &'t Toolset) -> Plan<'t> {
    let leave = |why: String| Plan::Leave { why, retry: true };
    if let Before::Skipped { reason } = &e.before {
        let why = format!("not snapshotted: {reason}");
        return Plan::Leave { why, retry: false };
    }
    let fd = tools
        .find(&e.tool)
        .filter(|t| t.dirs().mounts().any(|m| m.host == e.mount && m.write))
        .and_then(|t| t.dir_fd(&e.mount));
    let Some(fd) = fd else {
        return leave(format!(
            "`{}` no longer has write access to {}; left as it is",
            e.tool,
            warden_policy::inert(&e.mount.display().to_string())
        ));
    };
    let now = match beneath::print(fd, &e.path) {
        Ok(now) => now,
        Err(err) => {
            return leave(format!(
                "cannot tell whether it changed since the turn: {err}"
            ));
        }
    };
    match (&e.was, &e.left) {
        (Some(was), _) if *was == now => Plan::Done(fd),
        (_, Some(left)) if *left == now => Plan::Restore(fd),
        (Some(Print::Absent), Some(Print::Dir { entries, .. }))
            if matches!(now, Print::Dir { .. }) =>
        {
            Plan::Clear(fd, entries)
        }
        (_, None) => leave("cannot tell whether it changed since the turn; left as it is".into()),
        _ => leave(CHANGED.into()),
    }
}
