//! warden's own files: the trust store, sessions, the compile cache, undo
//! snapshots. They live in per-user folders (XDG) outside every workspace,
//! and every one of them is reached without following a symlink: a
//! [`StateDir`] is a folder warden created (mode 0700, owned by the user,
//! opened `O_NOFOLLOW`), and every file in it is opened relative to that
//! handle with `O_NOFOLLOW`. A link planted where warden keeps its state
//! makes the operation fail; it never redirects a write.
//!
//! The files warden reads for itself from a workspace (`warden.toml`,
//! `.warden/tools/*`, `AGENTS.md`) are held to the same rule by
//! [`InputDir`]: opened beneath the workspace without following a link,
//! regular files only, without waiting, and capped in size, so a file a
//! cloned repository ships cannot redirect, stall or exhaust warden.
//!
//! ```no_run
//! use warden_state::StateDir;
//! let dir = StateDir::open(std::path::Path::new("/home/u/.local/state"), "warden/trust").unwrap();
//! dir.write_atomic("record.json", b"{}").unwrap();
//! assert_eq!(dir.read("record.json").unwrap().as_deref(), Some(&b"{}"[..]));
//!
//! let ws = warden_state::InputDir::workspace(std::path::Path::new("/home/u/project")).unwrap();
//! let policy = ws.read("warden.toml", 1 << 20).unwrap(); // None: there is none
//! ```

mod dir;
mod input;
mod usage;

pub use dir::{DirLock, StateDir};
pub use input::{InputDir, InputError, Why};
pub use usage::Usage;
