//! The path resolver, against what the fs guest opens. The host resolves
//! a path argument with `warden_paths::resolve` for the approval preview,
//! undo and the event line; the guest resolves it the same way, then hands
//! std a path that wasi-libc looks up among the preopens by name
//! ([`wasi_libc::find_preopen`]). For any path, and the directories a
//! policy grants mounted as the sandbox mounts them, what wasi-libc opens
//! is the directory and the path beneath it the host resolved, and a path
//! the host resolves the guest can always open. For any names at all, the
//! resolver does not panic and its answer is normalized and stable.

use warden_paths::{Resolved, holds_a_grant, normalize, resolve, show, wasi_libc};

/// `data`: a path, the workspace's absolute path, then the granted
/// directories (relative to the workspace or absolute), separated by
/// `0xFF`.
pub fn check(data: &[u8]) {
    let parts: Vec<String> = crate::parts(data)
        .into_iter()
        .map(|p| crate::text(p).into_owned())
        .collect();
    let path = &parts[0];
    let rest = &parts[1.min(parts.len() - 1)..];
    // The names as given: the resolver's own invariants.
    if let Ok(r) = resolve(path, rest) {
        stable(path, &r, rest);
    }
    let _ = holds_a_grant(path, rest);
    let (names, dir) = mounted(
        parts.get(1).map_or("/w", String::as_str),
        parts.get(2..).unwrap_or_default(),
    );
    let twins = |a: usize, b: usize| dir[a] == dir[b];
    let Ok(r) = resolve(path, &names) else {
        return;
    };
    stable(path, &r, &names);
    let guest = wasi_libc::guest_path(&r, &names, twins)
        .unwrap_or_else(|| panic!("the guest cannot open {path:?} ({r:?}) among {names:?}"));
    let (j, rel) = wasi_libc::find_preopen(&guest, names.iter().map(String::as_str))
        .unwrap_or_else(|| panic!("wasi-libc finds no preopen for {guest:?} among {names:?}"));
    assert!(
        twins(j, r.mount) && normalize(rel) == r.rel,
        "{path:?}: the host resolved {:?} beneath {:?}, the guest opens {rel:?} beneath {:?} ({names:?})",
        r.rel,
        names[r.mount],
        names[j]
    );
}

/// The answer for `path` is normalized, shows as it says, and is the same
/// for the path it shows.
fn stable(path: &str, r: &Resolved, names: &[String]) {
    assert_eq!(r.shown, normalize(path));
    assert_eq!(normalize(&r.rel), r.rel, "{r:?}");
    assert!(
        !r.rel.starts_with('/') && r.rel != ".." && !r.rel.starts_with("../"),
        "{r:?}"
    );
    assert_eq!(show(&r.base, &r.rel), r.shown, "{r:?}");
    assert_eq!(resolve(&r.shown, names).as_ref(), Ok(r), "{names:?}");
}

/// The preopen names of the grants `dirs` in workspace `ws`, as the
/// sandbox mounts them ([`wasi_libc::preopen_names`]), with the grant each
/// name is of.
fn mounted(ws: &str, dirs: &[String]) -> (Vec<String>, Vec<usize>) {
    let ws = normalize(&format!("/{ws}"));
    let mut grants: Vec<String> = Vec::new();
    for d in dirs {
        let abs = normalize(&if d.starts_with('/') {
            d.clone()
        } else {
            format!("{ws}/{d}")
        });
        if !grants.contains(&abs) {
            grants.push(abs);
        }
    }
    let grants: Vec<&str> = grants.iter().map(String::as_str).collect();
    wasi_libc::preopen_names(&grants, Some(&ws))
        .into_iter()
        .map(|(i, name)| (name, i))
        .unzip()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::drive;

    #[test]
    fn seeds() {
        drive::replay("paths", super::check);
    }

    /// A path component: the ones that make resolution interesting.
    fn component() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "", ".", "..", "a", "b", "docs", "w", "ws", "x", "docs.bak", "a b", "é",
        ])
        .prop_map(str::to_string)
    }

    fn path() -> impl Strategy<Value = String> {
        (
            any::<bool>(),
            prop::collection::vec(component(), 0..6),
            any::<bool>(),
        )
            .prop_map(|(abs, parts, trailing)| {
                let mut p = parts.join("/");
                if abs {
                    p.insert(0, '/');
                }
                if trailing {
                    p.push('/');
                }
                p
            })
    }

    proptest! {
        #![proptest_config(drive::config(3_000))]

        #[test]
        fn edited_seeds(data in drive::mutated("paths")) {
            super::check(&data);
        }

        #[test]
        fn generated(path in path(), ws in path(), dirs in prop::collection::vec(path(), 0..5)) {
            let mut data = path.into_bytes();
            for part in std::iter::once(ws).chain(dirs) {
                data.push(0xFF);
                data.extend(part.into_bytes());
            }
            super::check(&data);
        }
    }
}
