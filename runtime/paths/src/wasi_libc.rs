//! What wasi-libc does with a path, and the path to hand it so that it
//! opens through the directory [`resolve`](crate::resolve) chose.
//!
//! The fs guest opens files through std, which goes through wasi-libc: it
//! looks the path up among the preopened directories by their names
//! (`__wasilibc_find_abspath`) and opens what remains beneath the one it
//! finds. That lookup is not [`resolve`](crate::resolve)'s: it does not
//! normalize, and a relative path may match an absolute name spelled
//! without its slash. [`guest_path`] bridges the two; the fuzz target
//! `paths` checks that what the guest opens is what the host resolved.

use crate::{Resolved, normalize, show};

/// wasi-libc's `__wasilibc_find_abspath` (its working directory is always
/// `/`, so relative and absolute paths are looked up alike): leading `/` of
/// the path and leading `/`, `./` and a lone `.` of the preopen names are
/// dropped; the longest name that matches whole components wins (an empty
/// name matches everything), the last listed among equals; the rest of the
/// path, without leading slashes, is relative to it (`.` when empty).
/// Returns the index of the preopen and the relative path; `None` when no
/// preopen matches (wasi-libc's `ENOENT`).
pub fn find_preopen<'p, 'a>(
    path: &'p str,
    names: impl DoubleEndedIterator<Item = &'a str> + ExactSizeIterator,
) -> Option<(usize, &'p str)> {
    let path = path.trim_start_matches('/');
    let mut best: Option<(usize, usize)> = None;
    for (i, name) in names.enumerate().rev() {
        let prefix = strip_name(name);
        if best.is_none_or(|(_, len)| prefix.len() > len) && prefix_matches(prefix, path) {
            best = Some((i, prefix.len()));
        }
    }
    let (i, len) = best?;
    let rel = path[len..].trim_start_matches('/');
    Some((i, if rel.is_empty() { "." } else { rel }))
}

/// The path to hand wasi-libc for `r` (what [`resolve`](crate::resolve)
/// made of a path among preopens `names`) so that it opens `r.rel` through
/// the directory `r.mount`: its shown form when wasi-libc takes that there,
/// else the path beneath an absolute name of the same directory (a relative
/// path that spells an absolute grant without its slash), written
/// `/NAME/./REL` where a longer relative name would catch `/NAME/REL`
/// (`/data/x/f` with the workspace's `data/x` granted too). `None` when no
/// form gets there. `same_directory(a, b)`: whether preopens `a` and `b`
/// are one directory (a grant is preopened at its absolute path and at its
/// workspace-relative name).
pub fn guest_path(
    r: &Resolved,
    names: &[String],
    same_directory: impl Fn(usize, usize) -> bool,
) -> Option<String> {
    let lands = |candidate: &str| {
        find_preopen(candidate, names.iter().map(String::as_str))
            .is_some_and(|(j, rel)| normalize(rel) == r.rel && same_directory(j, r.mount))
    };
    if lands(&r.shown) {
        return Some(r.shown.clone());
    }
    let absolute = (0..names.len())
        .filter(|&k| names[k].starts_with('/') && same_directory(k, r.mount))
        .map(|k| normalize(&names[k]));
    // `.` matches no name (names are normalized), so no name longer than
    // the directory's own can catch the second form.
    absolute
        .flat_map(|name| {
            let dotted = match name.as_str() {
                "/" => format!("/./{}", r.rel),
                _ => format!("{name}/./{}", r.rel),
            };
            [show(&name, &r.rel), dotted]
        })
        .find(|candidate| lands(candidate))
}

/// The names the granted directories `dirs` (absolute, normalized paths,
/// each once) are preopened under in workspace `workspace` (`None` when it
/// has no name a guest can be given), each with the index of its
/// directory: every one at its absolute path, and one inside the workspace
/// also at its relative name (the workspace itself at `.`).
///
/// The relative names come first. Among names that match a path equally
/// wasi-libc takes the last listed (`/` and `.` match every path alike, as
/// do `docs` and `/docs`): an absolute path must reach the directory it
/// names, and a relative one whose name loses is handed to the C library
/// under its directory's absolute name instead ([`guest_path`]).
pub fn preopen_names(dirs: &[&str], workspace: Option<&str>) -> Vec<(usize, String)> {
    let relative = dirs.iter().enumerate().filter_map(|(i, abs)| {
        let ws = workspace?;
        let rel = match abs.strip_prefix(ws)? {
            "" => ".",
            rest if ws == "/" => rest,
            rest => rest.strip_prefix('/')?,
        };
        Some((i, rel.to_string()))
    });
    let absolute = dirs.iter().enumerate().map(|(i, abs)| (i, abs.to_string()));
    relative.chain(absolute).collect()
}

/// wasi-libc's `strip_prefixes`.
fn strip_name(mut name: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_opens_where_the_resolver_says() {
        let names: Vec<String> = ["/w/ws", ".", "/w/ws/docs", "docs"]
            .map(String::from)
            .into();
        let twins = |a: usize, b: usize| a / 2 == b / 2;
        let open = |p: &str| guest_path(&crate::resolve(p, &names).unwrap(), &names, twins);
        assert_eq!(open("a.txt").as_deref(), Some("a.txt"));
        assert_eq!(open("docs/../notes.txt").as_deref(), Some("notes.txt"));
        assert_eq!(open("./docs//a").as_deref(), Some("docs/a"));
        assert_eq!(open("/w/ws/docs/a").as_deref(), Some("/w/ws/docs/a"));
        // wasi-libc would take this to /w/ws/a: the resolver's answer is
        // the workspace's w/ws/a, reached through its absolute name.
        assert_eq!(open("w/ws/a").as_deref(), Some("/w/ws/w/ws/a"));
        // Without a twin to go through, no path gets there.
        let r = crate::resolve("w/ws/a", &names).unwrap();
        assert_eq!(guest_path(&r, &names, |a, b| a == b), None);
    }

    #[test]
    fn a_longer_relative_name_does_not_catch_an_absolute_path() {
        // Found by the fuzz target `paths`: wasi-libc took `/data/x/f` to
        // the workspace's `data/x` (the longer name), and the fs tools
        // refused the path as ambiguous.
        let names: Vec<String> = ["data/x", "/data", "/w/ws/data/x"].map(String::from).into();
        let twins = |a: usize, b: usize| a == b || (a != 1 && b != 1);
        let r = crate::resolve("/data/x/f", &names).unwrap();
        assert_eq!((r.mount, r.rel.as_str()), (1, "x/f"));
        let opened = guest_path(&r, &names, twins).unwrap();
        assert_eq!(opened, "/data/./x/f");
        assert_eq!(
            find_preopen(&opened, names.iter().map(String::as_str)),
            Some((1, "./x/f"))
        );
        // And through `/`, past every relative name.
        let names: Vec<String> = ["etc", "/", "/w/ws/etc"].map(String::from).into();
        let r = crate::resolve("/etc/passwd", &names).unwrap();
        assert_eq!(
            guest_path(&r, &names, twins).as_deref(),
            Some("/./etc/passwd")
        );
    }

    #[test]
    fn relative_names_first_so_that_an_absolute_path_reaches_its_grant() {
        let dirs = ["/", "/w/ws", "/w/ws/docs", "/data", "/w/wsx"];
        let names = preopen_names(&dirs, Some("/w/ws"));
        let shown: Vec<(usize, &str)> = names.iter().map(|(i, n)| (*i, n.as_str())).collect();
        assert_eq!(
            shown,
            [
                (1, "."),
                (2, "docs"),
                (0, "/"),
                (1, "/w/ws"),
                (2, "/w/ws/docs"),
                (3, "/data"),
                (4, "/w/wsx")
            ]
        );
        // Found by the fuzz target `paths`: with `/` granted and listed
        // before `.`, wasi-libc opened every absolute path under `/` in
        // the workspace, and the fs tools refused them as ambiguous.
        let guest: Vec<String> = names.iter().map(|(_, n)| n.clone()).collect();
        let twins = |a: usize, b: usize| names[a].0 == names[b].0;
        for (path, dir, rel) in [
            ("/etc/passwd", 0, "etc/passwd"),
            ("a.txt", 1, "a.txt"),
            ("docs/a", 2, "a"),
        ] {
            let r = crate::resolve(path, &guest).unwrap();
            let opened = guest_path(&r, &guest, twins).unwrap();
            let (j, beneath) = find_preopen(&opened, guest.iter().map(String::as_str)).unwrap();
            assert_eq!((names[j].0, beneath), (dir, rel), "{path} as {opened}");
        }
        assert_eq!(
            preopen_names(&["/a"], Some("/")),
            [(0, "a".into()), (0, "/a".into())]
        );
        assert_eq!(preopen_names(&["/a"], None), [(0, "/a".into())]);
    }

    #[test]
    fn finds_preopens_like_wasi_libc() {
        let names = [".", "/w/ws", "docs", "/w/ws/docs", "/data/"];
        let find = |p| find_preopen(p, names.iter().copied());
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
        assert_eq!(find_preopen("a", ["/", "."].into_iter()), Some((1, "a")));
        assert_eq!(find_preopen("a", ["b"].into_iter()), None);
    }
}
