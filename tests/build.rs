//! Generates a path constant per test guest and built-in component, and fails
//! the build with a clear message when one has not been built.

use std::fmt::Write;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("../target"));
    let wasm_dir = target.join("wasm32-wasip2/release");
    let mut guests: Vec<String> = std::fs::read_dir(manifest.join("guests"))
        .expect("tests/guests exists")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    guests.sort();
    let mut code = String::new();
    for (name, how) in guests
        .iter()
        .map(|g| (g.as_str(), "make test-guests"))
        .chain([
            ("fs", "make tools"),
            ("fetch", "make tools"),
            ("uppercase", "make tools"),
        ])
    {
        let path = wasm_dir.join(format!("{name}.wasm"));
        println!("cargo:rerun-if-changed={}", path.display());
        if !path.is_file() {
            panic!(
                "{} is missing: run `{how}` before the tests",
                path.display()
            );
        }
        writeln!(
            code,
            "/// `{name}.wasm`\npub const {}: &str = {:?};",
            name.to_uppercase(),
            path.display().to_string()
        )
        .unwrap();
    }
    println!("cargo:rerun-if-changed=guests");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("guests.rs");
    std::fs::write(out, code).unwrap();
}
