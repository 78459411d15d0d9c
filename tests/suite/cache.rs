//! The compile cache: a second start compiles nothing.

use warden_sandbox::{HostConfig, ToolHost};
use warden_tests::{Sandbox, builtin_fs, guests, run_ok, workspace_source};

fn host(sb: &Sandbox, cache: &std::path::Path) -> ToolHost {
    let mut host = ToolHost::new(HostConfig {
        workspace: sb.ws.clone(),
        cache_dir: Some(cache.to_path_buf()),
        make_ahead: true,
    })
    .unwrap();
    host.load([builtin_fs(), workspace_source(guests::UPPERCASE)]);
    assert!(host.problems().is_empty(), "{:?}", host.problems());
    host
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
    let artifacts = std::fs::read_dir(&cache).unwrap().count();
    assert_eq!(artifacts, 2);
    let second = host(&sb, &cache);
    assert_eq!(
        (
            second.cache_stats().compiled(),
            second.cache_stats().reused()
        ),
        (0, 2)
    );
    assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 2);
}

#[test]
fn a_corrupt_artifact_is_recompiled() {
    let sb = Sandbox::new();
    let cache = sb.home.join("cache");
    drop(host(&sb, &cache));
    for e in std::fs::read_dir(&cache).unwrap() {
        std::fs::write(e.unwrap().path(), b"garbage").unwrap();
    }
    let again = host(&sb, &cache);
    assert_eq!(again.cache_stats().compiled(), 2);
    let third = host(&sb, &cache);
    assert_eq!(third.cache_stats().reused(), 2);
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
    assert_eq!(stats(&sb), (1, 0));
    assert_eq!(stats(&sb), (0, 1));
}
