//! The compile cache: a second start compiles nothing.

use std::path::{Path, PathBuf};

use warden_sandbox::{HostConfig, ToolHost};
use warden_tests::{Sandbox, builtin_fs, cache_at, guests, run_ok, workspace_source};

fn host(sb: &Sandbox, cache: &std::path::Path) -> ToolHost {
    let mut config = HostConfig::new(sb.ws.clone());
    config.cache = Some(cache_at(cache));
    let mut host = ToolHost::new(config).unwrap();
    host.load([builtin_fs(), workspace_source(guests::UPPERCASE)]);
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    host
}

fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache.join("warden/compiled"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

#[test]
fn a_second_start_compiles_nothing() {
    let sb = Sandbox::new();
    let cache = sb.home.join("cache");
    let first = host(&sb, &cache);
    assert_eq!(
        (first.cache_stats().compiled(), first.cache_stats().reused()),
        (2, 0)
    );
    assert_eq!(entries(&cache).len(), 2);
    let second = host(&sb, &cache);
    assert_eq!(
        (
            second.cache_stats().compiled(),
            second.cache_stats().reused()
        ),
        (0, 2)
    );
    assert_eq!(entries(&cache).len(), 2);
}

#[test]
fn a_corrupt_artifact_is_recompiled() {
    let sb = Sandbox::new();
    let cache = sb.home.join("cache");
    drop(host(&sb, &cache));
    for e in entries(&cache) {
        std::fs::write(e, b"garbage").unwrap();
    }
    let again = host(&sb, &cache);
    assert_eq!(again.cache_stats().compiled(), 2);
    assert_eq!(again.cache_stats().rejected(), 2);
    let third = host(&sb, &cache);
    assert_eq!(third.cache_stats().reused(), 2);
}

/// Swapping two entries (so that one component's native code sits under
/// another's name) is caught by the MAC: both are recompiled, and the
/// tools still behave as their own component.
#[test]
fn swapped_cache_entries_are_never_run_as_the_other_component() {
    let sb = Sandbox::new();
    let cache = sb.home.join("cache");
    drop(host(&sb, &cache));
    let e = entries(&cache);
    let (a, b) = (std::fs::read(&e[0]).unwrap(), std::fs::read(&e[1]).unwrap());
    std::fs::write(&e[0], &b).unwrap();
    std::fs::write(&e[1], &a).unwrap();
    let again = host(&sb, &cache);
    assert_eq!(
        (
            again.cache_stats().rejected(),
            again.cache_stats().compiled()
        ),
        (2, 2)
    );
    assert!(again.resolve("read_file").is_some() && again.resolve("uppercase").is_some());
}

/// An entry made with another key (someone who can write the cache but
/// cannot read the user's state folder) is refused.
#[test]
fn an_entry_made_with_another_key_is_refused() {
    let sb = Sandbox::new();
    let cache = sb.home.join("cache");
    drop(host(&sb, &cache));
    let mut config = HostConfig::new(sb.ws.clone());
    let mut other = cache_at(&cache);
    other.key = [9; 32];
    config.cache = Some(other);
    let mut h = ToolHost::new(config).unwrap();
    h.load([builtin_fs(), workspace_source(guests::UPPERCASE)]);
    assert_eq!(h.cache_stats().rejected(), 2);
    assert_eq!(h.cache_stats().reused(), 0);
}

#[test]
fn the_cli_reuses_the_cache_across_starts() {
    let sb = Sandbox::new();
    let stats = |sb: &Sandbox| -> (u64, u64) {
        let stdout = run_ok(sb.warden().args(["tools", "list", "--json"]));
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        (
            v["cache"]["compiled"].as_u64().unwrap(),
            v["cache"]["reused"].as_u64().unwrap(),
        )
    };
    // The three built-in components: `fs`, `fetch` and `shell`.
    assert_eq!(stats(&sb), (3, 0));
    assert_eq!(stats(&sb), (0, 3));
}
