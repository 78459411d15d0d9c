//! Links the binaries with the functions a tool call and an agent turn run
//! placed side by side, in the order of `runtime/cli/hot-functions.txt`
//! (made by `make hot-functions` from a profile of the bench). A call made
//! after the process sat idle finds little of its code in the caches and
//! TLB; packed together, that code spans far fewer pages and lines, and the
//! call answers sooner (`make bench`, "after 1 s idle").
//!
//! Only where rustc links with LLD, its default for x86_64 Linux: another
//! linker (a `linker` set for the target, or in RUSTFLAGS) gets no extra
//! argument. Names the list has and the binary lacks (a renamed function, a
//! new dependency version) are skipped: a stale list costs speed, never a
//! build. This script is also the bench's (`tests/bench/Cargo.toml`).

use std::env;
use std::path::{Path, PathBuf};

const LIST: &str = "runtime/cli/hot-functions.txt";

fn main() {
    let Some(list) = workspace_root().map(|root| root.join(LIST)) else {
        return;
    };
    println!("cargo:rerun-if-changed={}", list.display());
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    // Where the list is, for the bench's check of the link order.
    println!("cargo:rustc-env=WARDEN_HOT_FUNCTIONS={}", list.display());
    if !list.is_file() || !links_with_lld() {
        return;
    }
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// The directory of the workspace's `Cargo.lock`, above this package.
fn workspace_root() -> Option<PathBuf> {
    let dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR")?);
    dir.ancestors()
        .find(|d| d.join("Cargo.lock").is_file())
        .map(Path::to_path_buf)
}

/// Whether rustc's own LLD links the binaries: x86_64 Linux (GNU) with no
/// linker chosen in the cargo config or the rust flags.
fn links_with_lld() -> bool {
    let target = env::var("TARGET").unwrap_or_default();
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    target == "x86_64-unknown-linux-gnu"
        && env::var_os("RUSTC_LINKER").is_none()
        && !flags.contains("linker")
        && !flags.contains("link-self-contained")
        && !flags.contains("fuse-ld")
}
