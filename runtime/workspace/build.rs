//! Embeds the built-in tool components (see src/manifest.rs).

use std::path::PathBuf;

use sha2::{Digest, Sha256};

const BUILTINS: &[&str] = &["fs", "fetch", "shell", "desktop"];

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let dir = std::env::var_os("WARDEN_TOOLS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // The checkout's target folder, where `make tools` puts them.
            let checkout = manifest.ancestors().nth(2).expect("runtime/workspace");
            checkout.join("target/wasm32-wasip2/release")
        });
    println!("cargo:rerun-if-env-changed=WARDEN_TOOLS_DIR");
    for name in BUILTINS {
        let path = dir.join(format!("{name}.wasm"));
        println!("cargo:rerun-if-changed={}", path.display());
        if !path.is_file() {
            // `cargo::error` ends the build with this line alone, where a
            // panic would bury it in a backtrace.
            println!(
                "cargo::error=the built-in tool {} is not built: run `make install` (it builds \
                 the tools, then installs warden), or `make tools` first",
                path.display()
            );
            return;
        }
        // The bytes embedded and the hash they are known by come from one
        // read: a copy in OUT_DIR, so that a rebuilt component cannot slip
        // in between.
        let bytes = std::fs::read(&path).unwrap();
        let copy = out.join(format!("{name}.wasm"));
        std::fs::write(&copy, &bytes).unwrap();
        let hash: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let var = format!("WARDEN_BUILTIN_{}", name.to_uppercase());
        println!("cargo:rustc-env={var}={}", copy.display());
        println!("cargo:rustc-env={var}_SHA256={hash}");
    }
}
