//! What changed in a turn, and undo.
//!
//! Before each call that changes files, the paths its effects say it will
//! change (the one value the approval preview also shows:
//! [`warden_sandbox::Effects`]) are snapshotted through the tool's own
//! directory handles ([`beneath`]) into warden's state folder
//! (`$XDG_STATE_HOME/warden/undo/<workspace id>/`), one manifest per turn
//! ([`journal`]; the records are kept by [`store`]). `warden undo` (and
//! `/undo`) puts the last turn's paths back as they were, through the same
//! grants, then forgets that turn, so the next undo goes one turn further
//! back ([`restore`]). A path is put back only if it is still as the turn
//! left it (recorded after each call that touched it); what is not put back
//! stays recorded. A tool that does not declare its effects cannot be
//! undone, and the turn says so.

pub mod beneath;
mod journal;
mod restore;
mod store;
#[cfg(test)]
mod tests;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use beneath::{Before, Print};
pub use journal::Journal;
pub use restore::{skip_last, undo_last};
pub use store::forget_session;

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

/// Whether `outer`'s path holds `inner`'s (or is it), in the same mount.
fn holds(outer: &Entry, inner: &Entry) -> bool {
    outer.mount == inner.mount && within(&inner.path, &outer.path)
}

/// Whether `rel` is `parent` or beneath it (both beneath one mount).
fn within(rel: &str, parent: &str) -> bool {
    let (rel, parent) = (beneath::parts(rel), beneath::parts(parent));
    rel.starts_with(&parent)
}
