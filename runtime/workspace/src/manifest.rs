//! The one list of built-in tools: which component each comes from and
//! what it gets without a `[tools.NAME]` section.
//!
//! What a built-in may touch is decided here, not by what its component
//! says about itself: a tool that only looks gets the workspace read-only,
//! so it never needs approval; a tool that changes files gets it
//! read-write, and approval follows from that grant. The web tools are off
//! until a section names them, and then get only what it grants: no
//! directory, and no network until it lists hosts.

use warden_policy::{Baseline, Origin};
use warden_sandbox::ComponentSource;

/// The built-in components, embedded at build time with their SHA-256
/// (see build.rs).
const COMPONENTS: &[(&str, &[u8], &str)] = &[
    (
        "fs",
        include_bytes!(env!("WARDEN_BUILTIN_FS")),
        env!("WARDEN_BUILTIN_FS_SHA256"),
    ),
    (
        "fetch",
        include_bytes!(env!("WARDEN_BUILTIN_FETCH")),
        env!("WARDEN_BUILTIN_FETCH_SHA256"),
    ),
    (
        "shell",
        include_bytes!(env!("WARDEN_BUILTIN_SHELL")),
        env!("WARDEN_BUILTIN_SHELL_SHA256"),
    ),
    (
        "desktop",
        include_bytes!(env!("WARDEN_BUILTIN_DESKTOP")),
        env!("WARDEN_BUILTIN_DESKTOP_SHA256"),
    ),
];

/// Every built-in tool: name, component, baseline.
pub const BUILTIN_TOOLS: &[(&str, &str, Baseline)] = &[
    ("read_file", "fs", Baseline::WorkspaceRead),
    ("list_files", "fs", Baseline::WorkspaceRead),
    ("glob", "fs", Baseline::WorkspaceRead),
    ("grep", "fs", Baseline::WorkspaceRead),
    ("write_file", "fs", Baseline::Workspace),
    ("edit_file", "fs", Baseline::Workspace),
    ("copy", "fs", Baseline::Workspace),
    ("move", "fs", Baseline::Workspace),
    ("mkdir", "fs", Baseline::Workspace),
    ("delete", "fs", Baseline::Workspace),
    ("fetch", "fetch", Baseline::Off),
    ("web_search", "fetch", Baseline::Off),
    // Runs programs: off until warden.toml enables it and grants it `exec`
    // (and so never in a workspace that was never trusted).
    ("shell", "shell", Baseline::Off),
    // The user's desktop: off until warden.toml names them. `open_app`
    // starts only the apps its `apps` grant lists, `browse` opens only
    // pages of its `browse` hosts; `list_apps` and `close_app` see and end
    // only what this session was granted and started.
    ("list_apps", "desktop", Baseline::Off),
    ("open_app", "desktop", Baseline::Off),
    ("close_app", "desktop", Baseline::Off),
    ("browse", "desktop", Baseline::Off),
];

/// The built-in components as sources to load.
pub fn builtin_sources() -> impl Iterator<Item = ComponentSource> {
    COMPONENTS
        .iter()
        .map(|(name, bytes, sha256)| ComponentSource::builtin_hashed(name, bytes, sha256))
}

/// What `tool` gets without a section of its own: its manifest entry for a
/// built-in, nothing for any other (and for a built-in component's tool
/// the manifest does not list).
pub fn baseline(origin: Origin, tool: &str) -> Baseline {
    if origin != Origin::Builtin {
        return Baseline::Off;
    }
    BUILTIN_TOOLS
        .iter()
        .find(|(name, _, _)| *name == tool)
        .map_or(Baseline::Off, |(_, _, b)| *b)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use warden_sandbox::{HostConfig, ToolHost};

    /// The manifest and the components agree: every listed tool exists in
    /// its component, and every tool a built-in component offers is listed.
    #[test]
    fn the_manifest_matches_what_the_components_describe() {
        let dir = tempfile::tempdir().unwrap();
        let mut host = ToolHost::new(HostConfig::new(dir.path().to_path_buf())).unwrap();
        host.load(builtin_sources());
        assert!(host.problems().is_empty(), "{:?}", host.problems());
        let offered: BTreeSet<(String, String)> = host
            .tools()
            .map(|t| {
                let component = t.location.trim_start_matches("builtin:").to_string();
                (t.spec.name.clone(), component)
            })
            .collect();
        let listed: BTreeSet<(String, String)> = BUILTIN_TOOLS
            .iter()
            .map(|(n, c, _)| (n.to_string(), c.to_string()))
            .collect();
        assert_eq!(offered, listed);
        for t in host.tools() {
            let b = baseline(t.origin, &t.spec.name);
            // What looks is read-only; what the component says changes
            // files gets write access (and so approval), or nothing until
            // warden.toml grants it (shell, fetch, web_search).
            if t.location == "builtin:fetch" {
                // The web tools: off until named, then only what is granted.
                assert_eq!(b, Baseline::Off, "{}", t.spec.name);
                assert!(!t.spec.mutates, "{}", t.spec.name);
                continue;
            }
            if t.location == "builtin:desktop" {
                // The desktop tools: off until named; what they start is
                // what they are granted.
                assert_eq!(b, Baseline::Off, "{}", t.spec.name);
                assert_eq!(
                    t.spec.mutates,
                    t.spec.name != "list_apps",
                    "{}",
                    t.spec.name
                );
                continue;
            }
            if t.spec.mutates {
                assert_ne!(b, Baseline::WorkspaceRead, "{}", t.spec.name);
            } else {
                assert_eq!(b, Baseline::WorkspaceRead, "{}", t.spec.name);
            }
        }
    }

    /// The hashes worked out at build time are those of the bytes embedded.
    #[test]
    fn builtin_hashes_are_those_of_their_bytes() {
        for (name, bytes, sha256) in COMPONENTS {
            assert_eq!(warden_policy::sha256_hex(bytes), *sha256, "{name}");
        }
        for source in builtin_sources() {
            assert_eq!(source.sha256(), warden_policy::sha256_hex(&source.bytes));
        }
    }

    #[test]
    fn a_dropin_named_like_a_builtin_gets_nothing() {
        assert_eq!(baseline(Origin::Workspace, "write_file"), Baseline::Off);
        assert_eq!(baseline(Origin::User, "read_file"), Baseline::Off);
        assert_eq!(baseline(Origin::Builtin, "unknown"), Baseline::Off);
    }
}
