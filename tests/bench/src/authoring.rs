//! The example tools in Rust, Python and JavaScript (`make examples`):
//! first load (compile), cached load and per-call median, as ratios to the
//! Rust example measured in the same run.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use warden_policy::Origin;
use warden_sandbox::{ComponentSource, HostConfig, ToolHost};
use warden_tests::{Sandbox, cache_at};

use crate::{ms, ratio, time, us};

#[derive(Clone, Copy)]
struct Figures {
    size: usize,
    first_load: Duration,
    cached_load: Duration,
    call: Duration,
}

/// Loads `path` into a fresh host using the cache in `cache`.
fn load(ws: &Path, cache: &Path, path: &Path) -> Duration {
    let mut config = HostConfig::new(ws.to_path_buf());
    config.cache = Some(cache_at(cache));
    let mut host = ToolHost::new(config).expect("host");
    let source = ComponentSource::from_file(path, Origin::User).expect("example");
    let t = Instant::now();
    host.load([source]);
    let took = t.elapsed();
    assert!(
        host.problems().is_empty(),
        "{}: {:?}",
        path.display(),
        host.problems()
    );
    took
}

fn measure(path: &Path) -> Figures {
    let sb = Sandbox::new();
    let cache = tempfile::tempdir().unwrap();
    let first_load = load(&sb.ws, cache.path(), path);
    let cached_load = crate::median((0..5).map(|_| load(&sb.ws, cache.path(), path)).collect());
    sb.policy("[tools.word_count]\n");
    let tools = sb.toolset(&[path.to_str().unwrap()]);
    let args = r#"{"text":"one two two three"}"#;
    let out = tools.call("word_count", args);
    assert_eq!(out.result.as_deref(), Ok("4 words"), "{}", out.stderr);
    for _ in 0..20 {
        tools.call("word_count", args);
    }
    let call = time(200, || tools.call("word_count", args));
    Figures {
        size: std::fs::read(path).unwrap().len(),
        first_load,
        cached_load,
        call,
    }
}

pub fn run() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/examples");
    println!();
    println!(
        "example tools (word_count): load and call, as ratios to the Rust example (make examples)"
    );
    let rust = dir.join("word_count_rust.wasm");
    if !rust.is_file() {
        println!(
            "  skipped: {} is missing: run `make examples`",
            rust.display()
        );
        return;
    }
    let base = measure(&rust);
    for lang in ["rust", "python", "js"] {
        let path = dir.join(format!("word_count_{lang}.wasm"));
        if !path.is_file() {
            println!(
                "  {lang:<7} skipped: not built (its toolchain is missing: make authoring-toolchains)"
            );
            continue;
        }
        let f = if lang == "rust" { base } else { measure(&path) };
        println!(
            "  {lang:<7} {:>6.1} MB  first load {:>10} ({:>6.1}x)  cached load {:>10} ({:>5.1}x)  \
             call {:>10} ({:>5.1}x)",
            f.size as f64 / 1e6,
            ms(f.first_load),
            ratio(f.first_load, base.first_load),
            ms(f.cached_load),
            ratio(f.cached_load, base.cached_load),
            us(f.call),
            ratio(f.call, base.call),
        );
    }
}
