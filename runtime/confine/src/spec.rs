//! What to run and under which limits; what came back.

use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// One program to run confined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Spec {
    /// Absolute path of the program.
    pub program: PathBuf,
    /// Arguments after the program name (`argv[1..]`).
    pub args: Vec<String>,
    /// Working directory; it must lie inside a grant to be usable.
    pub cwd: PathBuf,
    /// The whole environment, exactly: nothing of warden's is inherited.
    pub env: Vec<(String, String)>,
    /// Directories the process may read (and execute from).
    pub read: Vec<PathBuf>,
    /// Directories the process may read and write.
    pub write: Vec<PathBuf>,
    /// Device and inode of granted directories as the caller opened them
    /// (any of `read` and `write`): a run whose path now leads to another
    /// directory (moved, or replaced by a link since) is refused.
    #[serde(default)]
    pub pinned: Vec<(PathBuf, u64, u64)>,
    /// Programs the process may read and run wherever they are, each a
    /// regular file by a path with no symlink on it: only that file is
    /// allowed, and a run is refused if a symlink is on its path now or it
    /// is no longer a regular file (a program inside a write grant swapped
    /// for a link to a folder must not open that folder).
    #[serde(default)]
    pub programs: Vec<PathBuf>,
    /// Whether the process shares the host's network; otherwise it gets an
    /// empty network namespace (no interface but a down loopback).
    pub network: bool,
    /// Wall-clock limit of the whole run, descendants included.
    pub timeout: Duration,
    /// Memory in bytes: the data (heap and private writable mappings) of
    /// each process (`RLIMIT_DATA`), and, where a memory cgroup is
    /// available, of all the run's processes together.
    pub memory: u64,
    /// Processes (and threads) the run may hold at once.
    pub processes: u64,
    /// Bytes of stdout and of stderr kept each: the head and the tail.
    pub output: usize,
    /// Which mechanism may confine it (default: [`default_confinement`]).
    #[serde(default)]
    pub confinement: Confinement,
}

/// Which mechanism confines a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Confinement {
    /// Namespaces where they can be made, else Landlock and seccomp alone.
    #[default]
    Auto,
    /// Namespaces, Landlock and seccomp, or nothing runs (`confinement =
    /// "namespaces"`: never run with less).
    Namespaces,
    /// Landlock and seccomp alone, even where namespaces could be made.
    Landlock,
}

impl Confinement {
    /// The word of the setting: `auto`, `namespaces`, `landlock`.
    pub fn word(self) -> &'static str {
        match self {
            Confinement::Auto => "auto",
            Confinement::Namespaces => "namespaces",
            Confinement::Landlock => "landlock",
        }
    }

    /// The setting from its word.
    pub fn from_word(word: &str) -> Option<Confinement> {
        [
            Confinement::Auto,
            Confinement::Namespaces,
            Confinement::Landlock,
        ]
        .into_iter()
        .find(|c| c.word() == word)
    }
}

static DEFAULT_CONFINEMENT: AtomicU8 = AtomicU8::new(0);

/// Sets the mechanism [`Spec::new`] asks for, for the whole process (from
/// the workspace's and the user's `confinement` setting).
pub fn set_default_confinement(c: Confinement) {
    DEFAULT_CONFINEMENT.store(c as u8, Ordering::SeqCst);
}

/// The mechanism [`Spec::new`] asks for: [`Confinement::Auto`] unless
/// [`set_default_confinement`] said otherwise.
pub fn default_confinement() -> Confinement {
    match DEFAULT_CONFINEMENT.load(Ordering::SeqCst) {
        1 => Confinement::Namespaces,
        2 => Confinement::Landlock,
        _ => Confinement::Auto,
    }
}

impl Spec {
    /// A spec for `program` with no grants, no network and default limits:
    /// 30 s, 1 GiB per process, 256 processes, 64 KiB of output per stream.
    pub fn new(program: impl Into<PathBuf>, cwd: impl Into<PathBuf>) -> Spec {
        Spec {
            program: program.into(),
            args: Vec::new(),
            cwd: cwd.into(),
            env: Vec::new(),
            read: Vec::new(),
            write: Vec::new(),
            pinned: Vec::new(),
            programs: Vec::new(),
            network: false,
            timeout: Duration::from_secs(30),
            memory: 1 << 30,
            processes: 256,
            output: 64 << 10,
            confinement: default_confinement(),
        }
    }

    /// Why this spec's grants cannot be enforced, if they cannot (see
    /// [`unenforceable`]); every run refuses such a spec.
    pub fn unenforceable(&self) -> Option<String> {
        unenforceable(&self.read, &self.write)
    }
}

/// Why directory grants `read` and `write` cannot be enforced on a
/// process, if they cannot: Landlock adds up what each rule allows, so a
/// read-only directory inside a read-write one would be writable. Refused,
/// never run with more than granted.
pub fn unenforceable(read: &[PathBuf], write: &[PathBuf]) -> Option<String> {
    let (inner, outer) = read.iter().find_map(|r| {
        let outer = write.iter().find(|w| r.starts_with(w))?;
        Some((r, outer))
    })?;
    Some(format!(
        "these grants cannot be enforced on a process: the read-only directory {} lies inside \
         the read-write directory {}, and the kernel (Landlock) cannot make it read-only there; \
         grant directories that do not nest that way",
        inner.display(),
        outer.display()
    ))
}

/// How the program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// It exited with this code.
    Exited(i32),
    /// A signal ended it (its number).
    Signaled(i32),
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Exited(c) => write!(f, "exit code {c}"),
            Status::Signaled(s) => write!(f, "killed by signal {s}"),
        }
    }
}

/// A limit that ended or shortened the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The wall-clock limit: everything in the run was killed.
    Timeout,
    /// Output past the cap was elided from the middle.
    Output,
    /// The run's processes together passed the memory limit (where a
    /// memory cgroup bounds them): the kernel killed one.
    Memory,
}

/// The result of [`run`](crate::run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// How the program ended (after a timeout: killed).
    pub status: Status,
    /// Its standard output, the middle elided past the cap.
    pub stdout: String,
    /// Its standard error, the middle elided past the cap.
    pub stderr: String,
    /// Whether the wall-clock limit ended it.
    pub timed_out: bool,
    /// The limits it reached, in the order above.
    pub limits: Vec<Limit>,
}

/// The confinement in force, as the helper that set it up reports it:
/// what [`probe`](crate::probe) returns, and what `warden policy` and
/// `warden doctor` list, guarantee by guarantee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mechanism {
    /// [`Confinement::Namespaces`] or [`Confinement::Landlock`].
    pub kind: Confinement,
    /// One line: what confines a run.
    pub summary: String,
    /// Why not namespaces, where the run fell back to Landlock and
    /// seccomp alone.
    #[serde(default)]
    pub fallback: Option<String>,
    /// What holds for a run here, and what does not.
    pub guarantees: Vec<Guarantee>,
}

/// One promise about a confined run, and whether it holds here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Guarantee {
    /// What is promised: "no process outlives the call".
    pub what: String,
    /// Whether this mechanism keeps it here.
    pub holds: bool,
    /// By what it holds, or why it does not.
    pub how: String,
}

impl Mechanism {
    /// Whether the guarantee whose text begins with `what` holds.
    pub fn holds(&self, what: &str) -> Option<bool> {
        self.guarantees
            .iter()
            .find(|g| g.what.starts_with(what))
            .map(|g| g.holds)
    }

    /// The guarantees as listing lines: `✓ what (how)` or `✗ what — how`.
    pub fn lines(&self) -> Vec<String> {
        self.guarantees
            .iter()
            .map(|g| {
                if g.holds {
                    format!("\u{2713} {} ({})", g.what, g.how)
                } else {
                    format!("\u{2717} {} \u{2014} {}", g.what, g.how)
                }
            })
            .collect()
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.summary)?;
        if let Some(why) = &self.fallback {
            write!(f, " ({why})")?;
        }
        Ok(())
    }
}

/// Why processes cannot be confined here: what the kernel lacks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("commands cannot be confined here: {missing}; warden never runs a command unconfined")]
pub struct Unavailable {
    /// What is missing, e.g. "Landlock is not enabled in this kernel".
    pub missing: String,
}

/// Why a run did not happen or did not finish normally.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kernel cannot confine it; nothing was run.
    #[error(transparent)]
    Unavailable(#[from] Unavailable),
    /// Confinement was set up but the process could not start in it (a
    /// granted directory or the working directory is missing).
    #[error("{0}")]
    Setup(String),
    /// The confinement helper could not be started or read.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The cause.
        source: std::io::Error,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
