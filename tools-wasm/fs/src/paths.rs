//! Path checks and lexical path logic. Nothing here touches the file system
//! except [`preopens`]; confinement itself is wasmtime's job.

use crate::error::{ToolError, invalid};

/// Longest path accepted, in bytes.
pub const MAX_PATH: usize = 4096;

/// Checks a path from the model and returns the form to hand to std.
///
/// The result is lexically normalised (`./docs/../a` → `a`), so wasi-libc
/// picks the most specific granted directory for it (a read-only grant
/// nested in a read-write one). A path that climbs above the workspace, or
/// an absolute path under no absolute grant, is refused here with a clear
/// message: wasi-libc would otherwise resolve an unmatched absolute path
/// inside the `.` grant. Confinement itself stays with the runtime.
pub fn resolve(field: &str, path: &str) -> Result<String, ToolError> {
    check(field, path)?;
    let norm = normalize(path);
    if looks_outside(&norm) {
        return Err(ToolError::Denied(outside_message(path)));
    }
    Ok(norm)
}

/// [`resolve`] for the `from` and `to` of a copy or move.
pub fn resolve_pair(from: &str, to: &str) -> Result<(String, String), ToolError> {
    Ok((resolve("from", from)?, resolve("to", to)?))
}

/// Rejects paths std cannot or should not be given: NUL bytes, huge strings.
pub fn check(field: &str, path: &str) -> Result<(), ToolError> {
    if path.contains('\0') {
        return Err(invalid(format!("{field} contains a NUL byte")));
    }
    if path.len() > MAX_PATH {
        return Err(invalid(format!(
            "{field} is {} bytes long; the limit is {MAX_PATH}",
            path.len()
        )));
    }
    Ok(())
}

/// Lexically normalises a path: drops empty and `.` components, resolves
/// `..` against the previous component where there is one. Relative results
/// never start with `./`; the empty relative path is `.`; `/..` is `/`.
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

/// True when normalised path `child` is `parent` or lies under it.
pub fn is_within(child: &str, parent: &str) -> bool {
    match parent {
        "." => !child.starts_with('/') && !escapes(child),
        "/" => child.starts_with('/'),
        _ => {
            child == parent
                || child
                    .strip_prefix(parent)
                    .is_some_and(|rest| rest.starts_with('/'))
        }
    }
}

/// True when normalised relative path `norm` climbs above its start.
fn escapes(norm: &str) -> bool {
    norm == ".." || norm.starts_with("../")
}

/// Names of the directories the host preopened for this call, as the guest
/// sees them (for example `.` or `/workspace`). Empty off wasm32.
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
        #[cfg(not(target_os = "wasi"))]
        {
            Vec::new()
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
    let i = find_preopen_in(path, dirs.iter().map(|(_, name)| name.as_str()))?;
    Some((&dirs[i.0].0, i.1))
}

/// wasi-libc's `__wasilibc_find_abspath` (its working directory is always
/// `/`, so relative and absolute paths are looked up alike): leading `/` of
/// the path and leading `/`, `./` and a lone `.` of the preopen names are
/// dropped; the longest name that matches whole components wins (an empty
/// name matches everything), the last listed among equals; the rest of the
/// path, without leading slashes, is relative to it (`.` when empty).
/// Returns the index of the preopen and the relative path.
fn find_preopen_in<'p, 'a>(
    path: &'p str,
    names: impl DoubleEndedIterator<Item = &'a str> + ExactSizeIterator,
) -> Option<(usize, &'p str)> {
    let path = path.trim_start_matches('/');
    let mut best: Option<(usize, usize)> = None;
    for (i, name) in names.enumerate().rev() {
        let prefix = strip_preopen_name(name);
        if best.is_none_or(|(_, len)| prefix.len() > len) && prefix_matches(prefix, path) {
            best = Some((i, prefix.len()));
        }
    }
    let (i, len) = best?;
    let rel = path[len..].trim_start_matches('/');
    Some((i, if rel.is_empty() { "." } else { rel }))
}

/// The ancestors of normalised path `path` inside the granted directory
/// that holds it, nearest first, for the ignore files that apply to a walk
/// of `path`. Empty off wasm32, and for the root of a grant.
pub fn grant_ancestors(path: &str) -> Vec<crate::rules::Ancestor> {
    let names = preopens();
    match find_preopen_in(path, names.iter().map(String::as_str)) {
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

/// wasi-libc's `strip_prefixes`.
fn strip_preopen_name(mut name: &str) -> &str {
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

/// wasi-libc's `prefix_matches`: `prefix` is a whole-component prefix of
/// `path` (trailing slashes of `prefix` ignored).
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

/// Whether a failure on `path` is best explained by the path lying outside
/// every granted directory.
pub fn looks_outside(path: &str) -> bool {
    looks_outside_in(path, preopens)
}

/// [`looks_outside`] with the preopen names from `preopens`, which is only
/// called for absolute paths (relative ones never need them).
fn looks_outside_in<'a>(path: &str, preopens: impl FnOnce() -> &'a [String]) -> bool {
    let norm = normalize(path);
    if escapes(&norm) {
        return true;
    }
    if !norm.starts_with('/') {
        return false;
    }
    // An absolute path is inside only if an absolute grant contains it. With
    // no absolute grant known, absolute paths are the likely mistake.
    !preopens()
        .iter()
        .map(|p| normalize(p))
        .any(|p| p.starts_with('/') && is_within(&norm, &p))
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
    if is_grant_root_in(path, preopens()) {
        return Err(invalid(format!(
            "refusing to {field} {path:?}: it is the root of a directory granted to this \
             tool (or contains one). Name the entries inside it instead."
        )));
    }
    Ok(())
}

fn is_grant_root_in(path: &str, preopens: &[String]) -> bool {
    let norm = normalize(path);
    if norm == "." || norm == "/" || norm.split('/').all(|c| c == "..") {
        return true;
    }
    preopens
        .iter()
        .map(|p| normalize(p))
        .any(|p| is_within(&p, &norm))
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
    fn normalizes() {
        let cases = [
            ("", "."),
            (".", "."),
            ("./", "."),
            ("./.", "."),
            ("/", "/"),
            ("//", "/"),
            ("/..", "/"),
            ("a/./b/", "a/b"),
            ("a/..", "."),
            ("a/../..", ".."),
            ("../a", "../a"),
            ("./../../a/b/../c", "../../a/c"),
            ("/work/ws/../x", "/work/x"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize(input), want, "{input:?}");
        }
    }

    #[test]
    fn within() {
        assert!(is_within("a/b", "a"));
        assert!(is_within("a", "a"));
        assert!(!is_within("ab", "a"));
        assert!(is_within("a", "."));
        assert!(!is_within("../a", "."));
        assert!(!is_within("/a", "."));
        assert!(is_within("/a", "/"));
    }

    #[test]
    fn checks() {
        assert!(check("path", "a\0b").is_err());
        assert!(check("path", &"a".repeat(MAX_PATH + 1)).is_err());
        assert!(check("path", &"a".repeat(MAX_PATH)).is_ok());
    }

    #[test]
    fn grant_roots() {
        let pre = vec![
            ".".to_string(),
            "/data/ref".to_string(),
            "cache".to_string(),
        ];
        for root in [
            "",
            ".",
            "./",
            "/",
            "..",
            "../..",
            "a/..",
            "/data",
            "/data/ref/",
            "cache",
            "./cache/.",
        ] {
            assert!(is_grant_root_in(root, &pre), "{root:?}");
        }
        for inner in ["a", "./a/b", "/data/ref/x", "cache/x", "../a"] {
            assert!(!is_grant_root_in(inner, &pre), "{inner:?}");
        }
    }

    #[test]
    fn outside() {
        let pre = vec![".".to_string(), "/data".to_string()];
        let pre = || pre.as_slice();
        assert!(looks_outside_in("../x", pre));
        assert!(looks_outside_in("/etc/passwd", pre));
        assert!(!looks_outside_in("/data/x", pre));
        assert!(!looks_outside_in("a/../x", pre));
        assert!(!looks_outside_in("x", pre));
        assert!(looks_outside_in("/data/x", || &[]));
    }

    #[test]
    fn finds_preopens_like_wasi_libc() {
        let names = [".", "/w/ws", "docs", "/w/ws/docs", "/data/"];
        let find = |p| find_preopen_in(p, names.iter().copied());
        assert_eq!(find("a.txt"), Some((0, "a.txt")));
        assert_eq!(find("."), Some((0, ".")));
        assert_eq!(find("docs"), Some((2, ".")));
        assert_eq!(find("docs/a"), Some((2, "a")));
        assert_eq!(find("docsx/a"), Some((0, "docsx/a")));
        assert_eq!(find("/w/ws/a"), Some((1, "a")));
        assert_eq!(find("/w/ws/docs/a/b"), Some((3, "a/b")));
        assert_eq!(find("/data/x"), Some((4, "x")));
        assert_eq!(
            find("/data"),
            Some((0, "data")),
            "the name's slash must match"
        );
        // Like wasi-libc, a relative path can match an absolute name.
        assert_eq!(find("w/ws/a"), Some((1, "a")));
        // Among equal names the last one listed wins.
        assert_eq!(find_preopen_in("a", ["/", "."].into_iter()), Some((1, "a")));
        assert_eq!(find_preopen_in("a", ["b"].into_iter()), None);
    }

    #[test]
    fn ancestors_within_the_grant() {
        let found = |path: &str, names: &[&str]| -> Vec<(String, String)> {
            let (_, rel) = find_preopen_in(path, names.iter().copied()).unwrap();
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
