//! What changed in a turn, and undo.
//!
//! Before each call of a built-in tool that changes files, the paths it
//! will touch are snapshotted through the tool's own directory handles
//! ([`beneath`]) into warden's state folder (`$XDG_STATE_HOME/warden/undo/
//! <workspace id>/`), one manifest per turn. `warden undo` (and `/undo`)
//! puts the last turn's paths back as they were, through the same grants,
//! then forgets that turn, so the next undo goes one turn further back.
//! A path is put back only if it is still as the turn left it (recorded
//! after each call that touched it); what is not put back stays recorded.

pub mod beneath;

use std::collections::BTreeSet;
use std::fs::{File, TryLockError};
use std::io;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use warden_policy::Origin;
use warden_sandbox::{BoundTool, Mount};
use warden_state::StateDir;

use crate::toolset::Toolset;
use beneath::{Before, Blobs, Print, TURN_CAP};

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
    /// The path as the model would name it, for messages.
    shown: String,
    before: Before,
    /// What was there before the turn, and what the turn left there;
    /// `None` when it could not be read.
    #[serde(default)]
    was: Option<Print>,
    #[serde(default)]
    left: Option<Print>,
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
    /// Paths already as before the turn (nothing to put back).
    pub unchanged: Vec<String>,
    /// Paths left as they are, with the reason.
    pub problems: Vec<String>,
    /// Folders the turn made that stay: something else is in them now.
    pub kept: Vec<String>,
    /// What was not restored stays recorded for another undo.
    pub pending: bool,
    /// Why the session's model will not be told what was put back.
    pub untold: Option<String>,
}

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

    /// Before a call of `tool` that may change files: snapshots what it
    /// will touch. Never fails the call; what cannot be kept is noted.
    pub fn before(&self, tool: &BoundTool, args: &Value) {
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
        let Some(paths) = touched(tool, args) else {
            let note = format!("changes made by `{name}` are not tracked and cannot be undone");
            if !turn.manifest.notes.contains(&note) {
                turn.manifest.notes.push(note);
                // Recorded now: the turn is the last one, and an undo must
                // say it cannot put it back, not undo the turn before.
                self.save(&id, &mut turn);
            }
            return;
        };
        let mounts: Vec<Mount> = tool.dirs().mounts().cloned().collect();
        // The file tools write through a last symlink; the others act on it.
        let follow = matches!(name.as_str(), "write_file" | "edit_file");
        turn.touching.clear();
        for shown in paths {
            let Some((mount, rel, base)) = locate(&mounts, &shown) else {
                continue; // outside every grant: the call is refused
            };
            if !mount.write {
                continue; // a read-only grant: the call cannot change it
            }
            let Some(fd) = tool.dir_fd(&mount.host) else {
                turn.manifest
                    .notes
                    .push(format!("{shown}: not snapshotted on this system"));
                continue;
            };
            let real = beneath::resolve(fd, &rel, follow);
            let at = real.as_deref().unwrap_or(&rel);
            let related =
                |e: &Entry| e.mount == mount.host && (within(at, &e.path) || within(&e.path, at));
            let touching: Vec<usize> = (0..turn.manifest.entries.len())
                .filter(|&i| related(&turn.manifest.entries[i]))
                .collect();
            turn.touching.extend(touching);
            let covered = turn
                .manifest
                .entries
                .iter()
                .any(|e| e.mount == mount.host && within(at, &e.path));
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
                    rel,
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
                mount: mount.host.clone(),
                shown: named(&base, &path),
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
    pub fn after(&self, tool: &BoundTool, args: &Value, ok: bool) {
        if let Some(paths) = touched(tool, args) {
            let mut turn = self.lock();
            for i in std::mem::take(&mut turn.touching) {
                let e = &mut turn.manifest.entries[i];
                e.left = tool
                    .dir_fd(&e.mount)
                    .and_then(|fd| beneath::print(fd, &e.path).ok());
            }
            if ok {
                turn.changed.extend(paths);
            }
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

/// The session a turn id belongs to.
fn session_of(id: &str) -> &str {
    id.split_once('-').map_or("", |(_, s)| s)
}

/// The mark of a running turn (not a turn: turns end in `.json`).
fn running_file(id: &str) -> String {
    format!("{id}.running")
}

/// Marks turn `id` as running, until the returned file is closed (at the
/// end of the turn, or when its warden ends however it ends): an undo run
/// meanwhile, from another warden, refuses it ([`not_running`]). `None`
/// when the mark cannot be made; the turn's record then fails to be
/// written as well, and says so.
fn mark_running(dir: &StateDir, id: &str) -> Option<File> {
    let file = dir.create_new(running_file(id)).ok()?;
    file.try_lock().ok()?;
    Some(file)
}

/// Refuses turn `id` while it runs in another warden: undoing it would
/// race its calls, and the turn would write its record back afterwards.
/// A mark no warden holds (its warden was killed mid-turn) is removed.
fn not_running(dir: &StateDir, id: &str) -> io::Result<()> {
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

/// Where the paths undone in `session`'s turns wait for its model to be
/// told (not a turn: turns end in `.json`).
fn undone_file(session: &str) -> String {
    format!("{session}.undone")
}

/// The paths undone in `session`'s turns that its model was not told of.
/// A damaged list is taken as empty: it only ever adds a note.
fn read_undone(dir: &StateDir, session: &str) -> io::Result<Vec<String>> {
    Ok(dir
        .read(undone_file(session))?
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default())
}

/// Adds `restored` to what `session`'s model is to be told.
fn note_undone(dir: &StateDir, session: &str, restored: &[String]) -> io::Result<()> {
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
fn write_undone(dir: &StateDir, session: &str, undone: &[String]) -> io::Result<()> {
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
fn prune(dir: &StateDir, keep: usize) {
    if let Ok(ids) = turns(dir) {
        for id in ids.iter().take(ids.len().saturating_sub(keep)) {
            if not_running(dir, id).is_ok() {
                let _ = forget(dir, id);
            }
        }
    }
}

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

/// The granted directory through which the tool opens `path`, the path
/// beneath it, and the directory's name as `path` gives it, as the built-in
/// `fs` tools resolve it (wasi-libc's lookup: the longest mount name that
/// matches whole components, the last listed among equals). `None` for a
/// path that climbs out or matches no mount.
fn locate<'m>(mounts: &'m [Mount], path: &str) -> Option<(&'m Mount, String, String)> {
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
    let base = &norm[..norm.len() - rel.len()];
    Some((
        &mounts[i],
        if rel.is_empty() { "." } else { rel }.to_string(),
        base.to_string(),
    ))
}

/// `path` beneath a mount named `base` (as [`locate`] gives it).
fn named(base: &str, path: &str) -> String {
    match base.trim_end_matches('/') {
        "" if base.starts_with('/') => format!("/{path}"),
        "" | "." => path.to_string(),
        base => format!("{base}/{path}"),
    }
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

/// Whether `outer`'s path holds `inner`'s (or is it), in the same mount.
fn holds(outer: &Entry, inner: &Entry) -> bool {
    outer.mount == inner.mount && within(&inner.path, &outer.path)
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

    /// Pruning keeps the turn another warden is running, however old:
    /// that warden's next record would name snapshots that are gone.
    #[test]
    fn pruning_keeps_a_turn_that_is_still_running() {
        let base = tempfile::tempdir().unwrap();
        let dir = StateDir::open(base.path(), "undo").unwrap();
        let ids: Vec<String> = (0..5).map(|i| format!("{i:015}-s{i}")).collect();
        for id in &ids {
            dir.write_atomic(format!("{id}.json"), b"{}").unwrap();
            dir.write_atomic(format!("{id}.0.blob"), b"x").unwrap();
        }
        let running = mark_running(&dir, &ids[0]).expect("a running mark");
        // A mark no warden holds any more (its warden was killed).
        drop(mark_running(&dir, &ids[1]));
        prune(&dir, 2);
        let left = turns(&dir).unwrap();
        assert_eq!(left, [ids[0].clone(), ids[3].clone(), ids[4].clone()]);
        assert!(dir.read(format!("{}.0.blob", ids[0])).unwrap().is_some());
        drop(running);
        prune(&dir, 2);
        assert_eq!(turns(&dir).unwrap(), [ids[3].clone(), ids[4].clone()]);
    }

    /// What the model was told goes; what another warden's undo added
    /// meanwhile stays for the next message.
    #[test]
    fn only_the_undone_paths_the_model_was_told_of_are_forgotten() {
        let base = tempfile::tempdir().unwrap();
        let journal = Journal::new(StateDir::open(base.path(), "undo").unwrap(), "s1");
        note_undone(&journal.dir, "s1", &["a".into(), "b".into()]).unwrap();
        let told = journal.undone().unwrap();
        assert_eq!(told, ["a", "b"]);
        note_undone(&journal.dir, "s1", &["c".into()]).unwrap();
        journal.told_undone(Some(&told)).unwrap();
        assert_eq!(journal.undone().unwrap(), ["c"]);
        journal.told_undone(None).unwrap();
        assert!(journal.undone().unwrap().is_empty());
    }

    /// Two wardens noting undone paths of one session at once (each with
    /// its own handle on the folder, as two processes have) lose none.
    #[test]
    fn undone_paths_noted_at_once_by_two_wardens_are_all_kept() {
        let base = tempfile::tempdir().unwrap();
        let writers: Vec<_> = (0..2)
            .map(|w| {
                let dir = StateDir::open(base.path(), "undo").unwrap();
                std::thread::spawn(move || {
                    for i in 0..40 {
                        note_undone(&dir, "s1", &[format!("{w}-{i}")]).unwrap();
                    }
                })
            })
            .collect();
        for w in writers {
            w.join().unwrap();
        }
        let dir = StateDir::open(base.path(), "undo").unwrap();
        let mut undone = read_undone(&dir, "s1").unwrap();
        undone.sort();
        let mut all: Vec<String> = (0..2)
            .flat_map(|w| (0..40).map(move |i| format!("{w}-{i}")))
            .collect();
        all.sort();
        assert_eq!(undone, all);
    }

    #[test]
    fn paths_resolve_to_the_mount_the_tool_would_use() {
        let mounts = [
            mount("/ws", "/ws", true),
            mount("/ws", ".", true),
            mount("/ws/vendor", "/ws/vendor", false),
            mount("/ws/vendor", "vendor", false),
        ];
        let at = |p: &str| locate(&mounts, p).map(|(m, r, _)| (m.guest.clone(), r));
        assert_eq!(at("a/../b.txt"), Some((".".into(), "b.txt".into())));
        assert_eq!(at("vendor/x"), Some(("vendor".into(), "x".into())));
        assert_eq!(at("/ws/vendor/x"), Some(("/ws/vendor".into(), "x".into())));
        assert_eq!(at("/ws/src/m.rs"), Some(("/ws".into(), "src/m.rs".into())));
        assert_eq!(at("../secret"), None);
        assert_eq!(at("/etc/passwd"), None);
        assert!(within("a/b", "a") && within("a", "a") && !within("ab", "a"));
    }
}
