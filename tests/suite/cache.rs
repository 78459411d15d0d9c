//! The compile cache: a second start compiles nothing, and lists tools
//! without loading their components.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use warden_policy::Grants;
use warden_sandbox::{CallControl, ErrorKind, HostConfig, ToolHost};
use warden_tests::{Sandbox, builtin_fs, cache_at, guests, ok, run_ok, workspace_source};

fn host(sb: &Sandbox, cache: &std::path::Path) -> Arc<ToolHost> {
    let mut config = HostConfig::new(sb.ws.clone());
    config.cache = Some(cache_at(cache));
    let mut host = ToolHost::new(config).unwrap();
    host.load([builtin_fs(), workspace_source(guests::UPPERCASE)]);
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    Arc::new(host)
}

/// Calls a tool of each component, so that both are loaded, and checks
/// that each behaves as itself.
fn call_both(host: &Arc<ToolHost>) {
    let none = Grants::default();
    let upper = host.bind("uppercase", &none).unwrap();
    assert_eq!(
        ok(upper.call_text(r#"{"text":"abc"}"#, &CallControl::new())),
        "ABC"
    );
    // Nothing is granted to it: the fs component itself says so.
    let read = host.bind("read_file", &none).unwrap();
    let out = read.call_text(r#"{"path":"hello.txt"}"#, &CallControl::new());
    let e = out.result.unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::NotFound | ErrorKind::Denied),
        "{e:?}"
    );
}

/// The compiled entries (not the recorded descriptions).
fn entries(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache.join("warden/compiled"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "cwasm"))
        .collect();
    v.sort();
    v
}

/// What each component described, recorded beside its compiled entry.
fn descriptions(cache: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(cache.join("warden/compiled"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".tools.json"))
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
    assert_eq!(descriptions(&cache).len(), 2);
    let second = host(&sb, &cache);
    // Listed from the descriptions: nothing is loaded before a call.
    assert_eq!(
        (
            second.cache_stats().compiled(),
            second.cache_stats().reused()
        ),
        (0, 0)
    );
    assert!(second.resolve("read_file").is_some() && second.resolve("uppercase").is_some());
    call_both(&second);
    call_both(&second);
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
    for e in entries(&cache).into_iter().chain(descriptions(&cache)) {
        std::fs::write(e, b"garbage").unwrap();
    }
    let again = host(&sb, &cache);
    assert_eq!(again.cache_stats().compiled(), 2);
    assert_eq!(again.cache_stats().rejected(), 2);
    call_both(&again);
    let third = host(&sb, &cache);
    call_both(&third);
    assert_eq!(third.cache_stats().reused(), 2);
    assert_eq!(third.cache_stats().rejected(), 0);
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
    // The components load at their first call.
    call_both(&again);
    assert_eq!(
        (
            again.cache_stats().rejected(),
            again.cache_stats().compiled()
        ),
        (2, 2)
    );
}

/// Swapped descriptions (one component's tools listed under another's
/// hash) are refused by the MAC too: both components are loaded and
/// described again, and each tool comes from its own component.
#[test]
fn swapped_descriptions_are_refused() {
    let sb = Sandbox::new();
    let cache = sb.home.join("cache");
    drop(host(&sb, &cache));
    let d = descriptions(&cache);
    let (a, b) = (std::fs::read(&d[0]).unwrap(), std::fs::read(&d[1]).unwrap());
    std::fs::write(&d[0], &b).unwrap();
    std::fs::write(&d[1], &a).unwrap();
    let again = host(&sb, &cache);
    assert_eq!(again.cache_stats().reused(), 2);
    assert_eq!(again.resolve("read_file").unwrap().location, "builtin:fs");
    assert_eq!(
        again.resolve("uppercase").unwrap().location,
        guests::UPPERCASE
    );
    call_both(&again);
    // Described again: the next start lists them without loading.
    let third = host(&sb, &cache);
    assert_eq!(third.cache_stats().reused(), 0);
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
    let sb = Sandbox::with_own_cache();
    let stats = |sb: &Sandbox| -> (u64, u64) {
        let stdout = run_ok(sb.warden().args(["tools", "list", "--json"]));
        let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
        (
            v["cache"]["compiled"].as_u64().unwrap(),
            v["cache"]["reused"].as_u64().unwrap(),
        )
    };
    // The four built-in components: `fs`, `fetch`, `shell` and `desktop`.
    assert_eq!(stats(&sb), (4, 0));
    // Listed from what they described: none is loaded again.
    assert_eq!(stats(&sb), (0, 0));
    // A call loads its component from the cache.
    let out = run_ok(
        sb.warden()
            .args(["tools", "call", "read_file", r#"{"path":"hello.txt"}"#]),
    );
    assert!(out.contains("hello"), "{out}");
    let out = run_ok(sb.warden().args(["tools", "compile"]));
    assert!(
        out.contains("0 component(s) compiled, 4 already in the cache"),
        "{out}"
    );
}
