//! Recording a turn: before each call, what it will change is snapshotted;
//! after it, how the call left it; at the end, what the turn changed.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use warden_sandbox::{BoundTool, Effects};
use warden_state::StateDir;

use super::beneath::{self, Before, Blobs, TURN_CAP};
use super::store::{forget, prune, read_undone, running_file, write_undone};
use super::{Entry, Manifest, TurnChanges, holds, within};

/// Turns kept per workspace; older ones are forgotten.
const KEPT_TURNS: usize = 20;

#[derive(Default)]
struct Turn {
    id: Option<String>,
    manifest: Manifest,
    blobs: usize,
    bytes: u64,
    changed: BTreeSet<String>,
    /// The entries the running call may change.
    touching: Vec<usize>,
    /// Held while the turn runs: see [`mark_running`].
    running: Option<File>,
}

/// Records one session's turns for undo. Shared by the runner (which
/// snapshots before each mutating call) and the front-end (which ends a
/// turn and shows what changed).
pub struct Journal {
    pub(super) dir: StateDir,
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

    /// The paths undos put back in this session's turns since its model
    /// was last told, as the model named them. They stay until
    /// [`Journal::told_undone`]: the model hears of them once, with the
    /// next message that reaches its transcript.
    pub fn undone(&self) -> io::Result<Vec<String>> {
        read_undone(&self.dir, &self.session)
    }

    /// Forgets the paths `told` of what [`Journal::undone`] lists (the
    /// model was told of them), or all of them (`None`: it forgot
    /// everything). Paths an undo in another warden added since stay, for
    /// the next message.
    pub fn told_undone(&self, told: Option<&[String]>) -> io::Result<()> {
        let _held = self.dir.lock()?;
        let left: Vec<String> = match told {
            None => Vec::new(),
            Some(told) => read_undone(&self.dir, &self.session)?
                .into_iter()
                .filter(|p| !told.contains(p))
                .collect(),
        };
        write_undone(&self.dir, &self.session, &left)
    }

    /// Before a call of `tool` that may change files: snapshots what its
    /// `effects` say it will change. Never fails the call; what cannot be
    /// kept is noted.
    pub fn before(&self, tool: &BoundTool, effects: &Effects) {
        let name = &tool.info().spec.name;
        let mut turn = self.lock();
        let id = match &turn.id {
            Some(id) => id.clone(),
            None => {
                let id = turn_id(&self.session);
                // Before its first record: an undo that finds the record
                // finds the mark.
                turn.running = mark_running(&self.dir, &id);
                turn.id = Some(id.clone());
                id
            }
        };
        if !effects.declared {
            let note = format!(
                "changes made by `{name}` are not tracked and cannot be undone (its effects \
                 are unknown: it does not declare which files it changes)"
            );
            if !turn.manifest.notes.contains(&note) {
                turn.manifest.notes.push(note);
                // Recorded now: the turn is the last one, and an undo must
                // say it cannot put it back, not undo the turn before.
                self.save(&id, &mut turn);
            }
            return;
        }
        turn.touching.clear();
        for touch in effects.changes() {
            let Ok(at) = &touch.at else {
                continue; // outside every grant: the call is refused
            };
            if !at.writable {
                continue; // a read-only grant: the call cannot change it
            }
            let Some(fd) = tool.dir_fd(&at.host) else {
                let note = format!("{}: not snapshotted on this system", at.shown);
                turn.manifest.notes.push(note);
                continue;
            };
            let real = beneath::resolve(fd, &at.rel, touch.follow);
            let here = real.as_deref().unwrap_or(&at.rel);
            let related =
                |e: &Entry| e.mount == at.host && (within(here, &e.path) || within(&e.path, here));
            let touching: Vec<usize> = (0..turn.manifest.entries.len())
                .filter(|&i| related(&turn.manifest.entries[i]))
                .collect();
            turn.touching.extend(touching);
            let covered = turn
                .manifest
                .entries
                .iter()
                .any(|e| e.mount == at.host && within(here, &e.path));
            if covered {
                continue; // its state before the turn is kept already
            }
            let (path, before) = match real {
                Ok(real) => {
                    let mut blobs = TurnBlobs {
                        dir: &self.dir,
                        id: &id,
                        turn: &mut turn,
                    };
                    beneath::snapshot(fd, &real, &mut blobs)
                }
                Err(e) => (
                    at.rel.clone(),
                    Before::Skipped {
                        reason: e.to_string(),
                    },
                ),
            };
            let was = beneath::print(fd, &path).ok();
            let i = turn.manifest.entries.len();
            turn.touching.push(i);
            turn.manifest.entries.push(Entry {
                tool: name.clone(),
                mount: at.host.clone(),
                shown: warden_paths::show(&at.base, &path),
                path,
                before,
                left: was.clone(),
                was,
            });
        }
        self.save(&id, &mut turn);
    }

    /// After a call: what it touched is recorded as the turn leaves it; a
    /// successful call's paths count as changed.
    pub fn after(&self, tool: &BoundTool, effects: &Effects, ok: bool) {
        if !effects.declared {
            return;
        }
        let mut turn = self.lock();
        for i in std::mem::take(&mut turn.touching) {
            let e = &mut turn.manifest.entries[i];
            e.left = tool
                .dir_fd(&e.mount)
                .and_then(|fd| beneath::print(fd, &e.path).ok());
        }
        if ok {
            let changed = effects.changes().filter(|t| t.refused().is_none());
            turn.changed.extend(changed.map(|t| t.shown().to_string()));
        }
        if let Some(id) = turn.id.clone() {
            self.save(&id, &mut turn);
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
    /// snapshots stay for `warden undo`; old turns are forgotten. What the
    /// turn left as it found it is dropped: a turn that changed nothing
    /// leaves no record.
    pub fn end_turn(&self) -> TurnChanges {
        let mut turn = std::mem::take(&mut *self.lock());
        if let Some(id) = turn.id.clone() {
            let all = turn.manifest.entries.len();
            // An entry the turn left as it found it goes, unless a later
            // one that stays holds it: that one's snapshot was taken after
            // the turn changed it, and only this one puts it back after.
            let entries = &turn.manifest.entries;
            let mut keep = vec![false; all];
            for i in (0..all).rev() {
                let e = &entries[i];
                keep[i] = e.was.is_none()
                    || e.was != e.left
                    || (i + 1..all).any(|j| keep[j] && holds(&entries[j], e));
            }
            turn.manifest.entries = std::mem::take(&mut turn.manifest.entries)
                .into_iter()
                .zip(keep)
                .filter_map(|(e, keep)| keep.then_some(e))
                .collect();
            if turn.manifest.entries.is_empty() && turn.manifest.notes.is_empty() {
                let _ = forget(&self.dir, &id);
            } else if turn.manifest.entries.len() < all {
                self.save(&id, &mut turn);
            }
            prune(&self.dir, KEPT_TURNS);
            // Removed while still held: an undo finds no mark, or a held one.
            let _ = self.dir.remove(running_file(&id));
        }
        drop(turn.running.take());
        let skipped = turn
            .manifest
            .entries
            .iter()
            .filter_map(|e| match &e.before {
                Before::Skipped { reason } => {
                    Some(format!("{}: not snapshotted: {reason}", e.shown))
                }
                _ => None,
            });
        TurnChanges {
            changed: turn.changed.into_iter().collect(),
            notes: skipped.chain(turn.manifest.notes).collect(),
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

/// Marks turn `id` as running, until the returned file is closed (at the
/// end of the turn, or when its warden ends however it ends): an undo run
/// meanwhile, from another warden, refuses it ([`not_running`]). `None`
/// when the mark cannot be made; the turn's record then fails to be
/// written as well, and says so.
pub(super) fn mark_running(dir: &StateDir, id: &str) -> Option<File> {
    let file = dir.create_new(running_file(id)).ok()?;
    file.try_lock().ok()?;
    Some(file)
}
