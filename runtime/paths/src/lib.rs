//! The one place that turns a path argument into a granted directory and
//! the path beneath it. The fs guest resolves the model's paths with it
//! before it opens anything; the host resolves the same paths with it for
//! the approval preview, undo, the event line and the changed list. Both
//! hand it the same names (the mounts the host preopens for the tool), so
//! both get the same answer.
//!
//! It is lexical: it does not look at the file system. What lies beneath
//! the chosen directory (symbolic links inside it) is for the fd-level
//! walkers that take its answer as input: the kernel beneath the host's
//! handle, wasmtime beneath the guest's preopen.
//!
//! ```
//! use warden_paths::{resolve, Refused};
//!
//! let mounts = ["/w/ws", ".", "/w/ws/docs", "docs"];
//! let r = resolve("docs/../notes.txt", &mounts).unwrap();
//! assert_eq!((r.mount, r.rel.as_str(), r.shown.as_str()), (1, "notes.txt", "notes.txt"));
//! let r = resolve("docs/a.md", &mounts).unwrap();
//! assert_eq!((mounts[r.mount], r.rel.as_str()), ("docs", "a.md"));
//! assert_eq!(resolve("../secret", &mounts), Err(Refused::Climbs));
//! assert_eq!(resolve("/etc/passwd", &mounts), Err(Refused::Outside));
//! ```

pub mod wasi_libc;

/// Longest path accepted, in bytes.
pub const MAX_PATH: usize = 4096;

/// Where a path leads: through which granted directory, to what beneath it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The index, in the names given, of the directory the path is opened
    /// through.
    pub mount: usize,
    /// The path beneath it: relative, normalized, `.` for the directory
    /// itself.
    pub rel: String,
    /// The path as the user and the model are shown it: normalized, and
    /// relative when it was given relative.
    pub shown: String,
    /// The directory's own name as [`Resolved::shown`] writes it (``
    /// for the workspace, `docs`, `/data`): [`show`] joins a path beneath
    /// the directory to it.
    pub base: String,
}

/// Why a path leads nowhere a tool may go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It contains a NUL byte.
    Nul,
    /// It is longer than [`MAX_PATH`] bytes (its length).
    TooLong(usize),
    /// A relative path that climbs above the workspace (`../x`).
    Climbs,
    /// Under none of the granted directories.
    Outside,
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Nul => f.write_str("it contains a NUL byte"),
            Refused::TooLong(n) => write!(f, "it is {n} bytes long; the limit is {MAX_PATH}"),
            Refused::Climbs => f.write_str("it climbs above the workspace"),
            Refused::Outside => f.write_str("it is under none of the granted directories"),
        }
    }
}

impl std::error::Error for Refused {}

/// Resolves `path` (as the model gave it) against the names the tool's
/// granted directories are mounted at (`mounts`: `.` for the workspace, a
/// workspace-relative name such as `docs`, or an absolute path).
///
/// - The path is normalized lexically first (`a/./b//../c` is `a/c`).
/// - A relative path resolves in the directories mounted at relative
///   names, an absolute one in those mounted at absolute names: a relative
///   path never reaches a directory by its absolute name spelled without
///   the slash, nor an absolute path the workspace.
/// - The directory whose name is the longest whole-component prefix wins
///   (a read-only grant nested in a read-write one, for paths under it);
///   among equal names, the last given.
pub fn resolve<S: AsRef<str>>(path: &str, mounts: &[S]) -> Result<Resolved, Refused> {
    if path.contains('\0') {
        return Err(Refused::Nul);
    }
    if path.len() > MAX_PATH {
        return Err(Refused::TooLong(path.len()));
    }
    let norm = normalize(path);
    let absolute = norm.starts_with('/');
    if !absolute && climbs(&norm) {
        return Err(Refused::Climbs);
    }
    let mut best: Option<(usize, String)> = None;
    for (i, name) in mounts.iter().enumerate() {
        let name = normalize(name.as_ref());
        if name.starts_with('/') != absolute || climbs(&name) {
            continue;
        }
        let longer = best.as_ref().is_none_or(|(_, b)| name.len() >= b.len());
        if longer && is_within(&norm, &name) {
            best = Some((i, name));
        }
    }
    let (mount, name) = best.ok_or(Refused::Outside)?;
    let rel = beneath(&norm, &name).to_string();
    let base = if name == "." { String::new() } else { name };
    Ok(Resolved {
        mount,
        rel,
        shown: norm,
        base,
    })
}

/// Path `rel` beneath a directory shown as `base` (a [`Resolved::base`]),
/// as [`Resolved::shown`] writes it.
pub fn show(base: &str, rel: &str) -> String {
    match (base, rel) {
        ("", rel) => rel.to_string(),
        (base, ".") => base.to_string(),
        ("/", rel) => format!("/{rel}"),
        (base, rel) => format!("{base}/{rel}"),
    }
}

/// Lexically normalizes a path: drops empty and `.` components, resolves
/// `..` against the previous component where there is one. Relative
/// results never start with `./`; the empty relative path is `.`; `/..`
/// is `/`.
pub fn normalize(path: &str) -> String {
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

/// Whether normalized path `child` is `parent` (normalized) or lies under
/// it. A relative path lies under `.` unless it climbs out; an absolute
/// one under `/`.
pub fn is_within(child: &str, parent: &str) -> bool {
    match parent {
        "." => !child.starts_with('/') && !climbs(child),
        "/" => child.starts_with('/'),
        _ => {
            child == parent
                || child
                    .strip_prefix(parent)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
    }
}

/// Whether `path` is the root of a granted directory or holds one (`.`,
/// `/`, `..`, a mount's name or an ancestor of one): removing or moving it
/// would take a grant with it.
pub fn holds_a_grant<S: AsRef<str>>(path: &str, mounts: &[S]) -> bool {
    let norm = normalize(path);
    if norm == "." || norm == "/" || norm.split('/').all(|c| c == "..") {
        return true;
    }
    mounts
        .iter()
        .map(|m| normalize(m.as_ref()))
        .any(|m| is_within(&m, &norm))
}

/// Whether normalized relative path `norm` climbs above its start.
fn climbs(norm: &str) -> bool {
    norm == ".." || norm.starts_with("../")
}

/// `norm` without the directory `name` it lies within, `.` when nothing is
/// left.
fn beneath<'p>(norm: &'p str, name: &str) -> &'p str {
    let rest = match name {
        "." => norm,
        "/" => &norm[1..],
        _ => norm[name.len()..].trim_start_matches('/'),
    };
    if rest.is_empty() { "." } else { rest }
}

#[cfg(test)]
mod tests;
