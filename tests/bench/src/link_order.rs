//! Whether this binary was linked in the order of the hot-functions list
//! (`runtime/cli/build.rs`): how many of the listed functions it has, and
//! whether they lie in the list's order. A list gone stale (a dependency
//! bumped, the call path reworked) shows here as few found.

use std::collections::HashMap;
use std::process::Command;

/// Functions of the list found in this binary, the list's length, and
/// whether the found ones are placed in list order. `None` when `nm` or
/// the list is missing (the build script found no workspace).
pub fn check() -> Option<(usize, usize, bool)> {
    // Set by the build script the bench shares with `warden`.
    let list = std::fs::read_to_string(option_env!("WARDEN_HOT_FUNCTIONS")?).ok()?;
    let exe = std::env::current_exe().ok()?;
    let out = Command::new("nm")
        .arg("--defined-only")
        .arg(exe)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let addresses: HashMap<&str, u64> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let address = u64::from_str_radix(f.next()?, 16).ok()?;
            Some((f.nth(1)?, address))
        })
        .collect();
    let names: Vec<&str> = list.lines().filter(|l| !l.is_empty()).collect();
    let found: Vec<u64> = names
        .iter()
        .filter_map(|n| addresses.get(n).copied())
        .collect();
    let in_order = found.windows(2).all(|w| w[0] < w[1]);
    Some((found.len(), names.len(), in_order && !found.is_empty()))
}
