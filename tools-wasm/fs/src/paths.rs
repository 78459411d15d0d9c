//! The model's paths, resolved by the one resolver (`warden-paths`, which
//! the host uses for the approval preview, undo and the event line) against
//! the names of the directories the host preopened. Nothing here touches
//! the file system except [`preopens`]; confinement itself is wasmtime's
//! job.

use crate::error::{ToolError, invalid};
use warden_paths::wasi_libc;
pub use warden_paths::{MAX_PATH, Refused, is_within, normalize};

/// Resolves a path from the model and returns the form to hand to std: one
/// that wasi-libc opens through the very directory the resolver chose (a
/// read-only grant nested in a read-write one, for paths under it). A path
/// under no granted directory, or one climbing above the workspace, is
/// refused here with a clear message.
pub fn resolve(field: &str, path: &str) -> Result<String, ToolError> {
    let names = preopens();
    let resolved = warden_paths::resolve(path, names).map_err(|e| refused(field, path, &e))?;
    open_path(path, resolved, names, same_directory)
}

/// [`resolve`] for the `from` and `to` of a copy or move.
pub fn resolve_pair(from: &str, to: &str) -> Result<(String, String), ToolError> {
    Ok((resolve("from", from)?, resolve("to", to)?))
}

/// The error for a path the resolver refused.
fn refused(field: &str, path: &str, why: &Refused) -> ToolError {
    match why {
        Refused::Nul => invalid(format!("{field} contains a NUL byte")),
        Refused::TooLong(n) => invalid(format!(
            "{field} is {n} bytes long; the limit is {MAX_PATH}"
        )),
        Refused::Climbs | Refused::Outside => ToolError::Denied(outside_message(path)),
    }
}

/// The path std opens for `r`: one that wasi-libc (whose working directory
/// is `/`, so that it looks relative and absolute paths up alike) takes to
/// the directory the resolver chose; an error when the names of the grants
/// leave none.
fn open_path(
    path: &str,
    r: warden_paths::Resolved,
    names: &[String],
    same_directory: impl Fn(usize, usize) -> bool,
) -> Result<String, ToolError> {
    wasi_libc::guest_path(&r, names, same_directory).ok_or_else(|| {
        ToolError::Failed(format!(
            "{path} cannot be opened through the directory it names: the names of the \
             granted directories are ambiguous to this component's C library; use an \
             absolute path"
        ))
    })
}

/// Whether preopens `a` and `b` are the same directory (one grant is
/// preopened at its absolute path and at its workspace-relative name).
fn same_directory(a: usize, b: usize) -> bool {
    if a == b {
        return true;
    }
    #[cfg(target_os = "wasi")]
    {
        let dirs = directories();
        dirs[a].0.is_same_object(&dirs[b].0)
    }
    #[cfg(not(target_os = "wasi"))]
    false
}

/// Rejects paths std cannot or should not be given: NUL bytes, huge strings.
pub fn check(field: &str, path: &str) -> Result<(), ToolError> {
    match warden_paths::resolve(path, &["."]) {
        Err(e @ (Refused::Nul | Refused::TooLong(_))) => Err(refused(field, path, &e)),
        _ => Ok(()),
    }
}

/// Names of the directories the host preopened for this call, as the guest
/// sees them (for example `.` or `/workspace`); `.` alone off wasm32.
///
/// Asked of the host once per instance (each call runs in a fresh one), and
/// only when a path or a message needs them.
pub fn preopens() -> &'static [String] {
    static PREOPENS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    PREOPENS.get_or_init(|| {
        #[cfg(target_os = "wasi")]
        {
            directories().iter().map(|(_, name)| name.clone()).collect()
        }
        // Native runs (unit tests) work in the current directory.
        #[cfg(not(target_os = "wasi"))]
        {
            vec![".".to_string()]
        }
    })
}

/// The preopened directories with their names, asked of the host once per
/// instance. These are handles of our own, apart from wasi-libc's.
#[cfg(target_os = "wasi")]
fn directories() -> &'static [(wasip2::filesystem::types::Descriptor, String)] {
    static DIRS: std::sync::OnceLock<Vec<(wasip2::filesystem::types::Descriptor, String)>> =
        std::sync::OnceLock::new();
    DIRS.get_or_init(wasip2::filesystem::preopens::get_directories)
}

/// The preopened directory through which wasi-libc would open `path`, and
/// the path relative to it; `None` when no preopen matches (wasi-libc's
/// ENOENT). Code that talks to `wasi:filesystem` directly uses this so that
/// it resolves every path exactly as std does.
#[cfg(target_os = "wasi")]
pub fn find_preopen(path: &str) -> Option<(&'static wasip2::filesystem::types::Descriptor, &str)> {
    let dirs = directories();
    let i = wasi_libc::find_preopen(path, dirs.iter().map(|(_, name)| name.as_str()))?;
    Some((&dirs[i.0].0, i.1))
}

/// The ancestors of normalised path `path` inside the granted directory
/// that holds it, nearest first, for the ignore files that apply to a walk
/// of `path`. Empty off wasm32, and for the root of a grant.
pub fn grant_ancestors(path: &str) -> Vec<crate::rules::Ancestor> {
    let names = preopens();
    match wasi_libc::find_preopen(path, names.iter().map(String::as_str)) {
        Some((_, rel)) => ancestors_in(path, rel),
        None => Vec::new(),
    }
}

/// The ancestors of normalised `path` that lie within its last `rel`
/// components (its path inside its grant), nearest first.
fn ancestors_in(path: &str, rel: &str) -> Vec<crate::rules::Ancestor> {
    let depth = if rel == "." {
        0
    } else {
        rel.split('/').count()
    };
    let mut out = Vec::with_capacity(depth);
    let mut dir = path;
    for _ in 0..depth {
        let cut = dir.rfind('/');
        let parent = match cut {
            Some(0) => "/",
            Some(i) => &dir[..i],
            None => ".",
        };
        let below = &path[cut.map_or(0, |i| i + 1)..];
        out.push(crate::rules::Ancestor {
            path: parent.to_string(),
            below: format!("{below}/"),
        });
        dir = parent;
    }
    out
}

/// Whether a failure on `path` is best explained by the path lying outside
/// every granted directory.
pub fn looks_outside(path: &str) -> bool {
    matches!(
        warden_paths::resolve(path, preopens()),
        Err(Refused::Climbs | Refused::Outside)
    )
}

/// The message for a path outside every grant, naming the grants if known.
pub fn outside_message(path: &str) -> String {
    let granted = preopens();
    let mut msg = format!("{path} is outside the directories this tool may access");
    if !granted.is_empty() {
        msg.push_str(&format!(" (granted: {})", granted.join(", ")));
    }
    msg.push_str("; use a path inside them (relative paths resolve in the workspace)");
    msg
}

/// Refuses paths that are, or contain, the root of a granted directory:
/// `.`, `./`, ``, `/`, `..`, a preopen name or an ancestor of one.
pub fn refuse_grant_root(field: &str, path: &str) -> Result<(), ToolError> {
    if warden_paths::holds_a_grant(path, preopens()) {
        return Err(invalid(format!(
            "refusing to {field} {path:?}: it is the root of a directory granted to this \
             tool (or contains one). Name the entries inside it instead."
        )));
    }
    Ok(())
}

/// Joins a walk's base path (as the model gave it) and a relative path
/// found under it, so that the result can be passed back to other tools.
pub fn display_join(base: &str, rel: &str) -> String {
    if normalize(base) == "." && !base.starts_with('/') && !base.contains("..") {
        return rel.to_string();
    }
    if base.ends_with('/') {
        format!("{base}{rel}")
    } else {
        format!("{base}/{rel}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ambiguous_path_is_refused_not_misrouted() {
        let names: Vec<String> = ["/w/ws", "."].map(String::from).into();
        let r = warden_paths::resolve("w/ws/a", &names).unwrap();
        let e = open_path("w/ws/a", r, &names, |a, b| a == b).unwrap_err();
        assert!(format!("{e:?}").contains("ambiguous"), "{e:?}");
    }

    #[test]
    fn ancestors_within_the_grant() {
        let found = |path: &str, names: &[&str]| -> Vec<(String, String)> {
            let (_, rel) = wasi_libc::find_preopen(path, names.iter().copied()).unwrap();
            ancestors_in(path, rel)
                .into_iter()
                .map(|a| (a.path, a.below))
                .collect()
        };
        let pair = |a: &str, b: &str| (a.to_string(), b.to_string());
        assert_eq!(
            found("src/sub", &["."]),
            [pair("src", "sub/"), pair(".", "src/sub/")]
        );
        assert_eq!(found(".", &["."]), []);
        assert_eq!(found("/w/ws/a", &[".", "/w/ws"]), [pair("/w/ws", "a/")]);
        assert_eq!(found("/w", &["/"]), [pair("/", "w/")]);
    }

    #[test]
    fn joins() {
        assert_eq!(display_join(".", "a/b"), "a/b");
        assert_eq!(display_join("./", "a"), "a");
        assert_eq!(display_join("", "a"), "a");
        assert_eq!(display_join("src", "a"), "src/a");
        assert_eq!(display_join("src/", "a"), "src/a");
        assert_eq!(display_join("/", "a"), "/a");
        assert_eq!(display_join("/ws", "a"), "/ws/a");
        assert_eq!(display_join("..", "a"), "../a");
    }
}
