//! Embeds the confinement helper (`warden-confine-helper`, built before
//! warden by `make`, like the built-in tools): warden runs it from memory
//! for every confined command.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let checkout = manifest.ancestors().nth(2).expect("runtime/cli");
    // Where `make helper` builds it: on Linux for the musl target of this
    // architecture (linked statically, it starts several times faster).
    let built = match std::env::var("CARGO_CFG_TARGET_OS").as_deref() {
        Ok("linux") => format!(
            "target/{}-unknown-linux-musl/release",
            std::env::var("CARGO_CFG_TARGET_ARCH").unwrap()
        ),
        _ => "target/release".to_string(),
    };
    let helper = std::env::var_os("WARDEN_CONFINE_HELPER")
        .map(PathBuf::from)
        .unwrap_or_else(|| checkout.join(built).join("warden-confine-helper"));
    println!("cargo:rerun-if-env-changed=WARDEN_CONFINE_HELPER");
    println!("cargo:rerun-if-changed={}", helper.display());
    let sources = [
        checkout.join("runtime/confine/src"),
        checkout.join("runtime/confine-helper/src"),
    ];
    for dir in &sources {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    let Ok(built) = std::fs::metadata(&helper).and_then(|m| m.modified()) else {
        // `cargo::error` ends the build with this line alone.
        println!(
            "cargo::error=the confinement helper {} is not built: run `make install` (it builds \
             the helper and the tools, then installs warden), or `make helper` first",
            helper.display()
        );
        return;
    };
    // A helper older than its sources would confine commands as the code
    // no longer says.
    if let Some(newer) = sources.iter().find_map(|d| newer_than(d, built)) {
        println!(
            "cargo::error=the confinement helper {} is older than {}: run `make helper` (or \
             `make build`) to rebuild it first",
            helper.display(),
            newer.display()
        );
        return;
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let copy = out.join("warden-confine-helper");
    std::fs::copy(&helper, &copy).unwrap();
    println!("cargo:rustc-env=WARDEN_CONFINE_HELPER={}", copy.display());
}

/// A file under `dir` changed after `than`, if any.
fn newer_than(dir: &Path, than: SystemTime) -> Option<PathBuf> {
    for entry in std::fs::read_dir(dir).ok()?.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if let Some(found) = newer_than(&path, than) {
                return Some(found);
            }
        } else if entry
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t > than)
        {
            return Some(path);
        }
    }
    None
}
