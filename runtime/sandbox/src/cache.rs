//! On-disk cache of compiled components, keyed by content and engine.
//!
//! A component is compiled once; later starts map the artifact from disk.
//! The key covers the component bytes, the wasmtime version and the engine
//! configuration, so a change of any of them compiles afresh.

use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use wasmtime::Engine;
use wasmtime::component::Component;

/// Counts of what loading did, to prove the cache works.
#[derive(Debug, Default)]
pub struct CacheStats {
    compiled: AtomicUsize,
    reused: AtomicUsize,
}

impl CacheStats {
    /// Components compiled from source in this process.
    pub fn compiled(&self) -> usize {
        self.compiled.load(Ordering::Relaxed)
    }
    /// Components loaded from the on-disk cache in this process.
    pub fn reused(&self) -> usize {
        self.reused.load(Ordering::Relaxed)
    }
}

/// The compile cache (a folder; `None` compiles in memory every time).
#[derive(Debug)]
pub(crate) struct CompileCache {
    dir: Option<PathBuf>,
    engine_key: String,
    pub(crate) stats: CacheStats,
}

impl CompileCache {
    pub(crate) fn new(engine: &Engine, dir: Option<PathBuf>) -> CompileCache {
        // DefaultHasher is stable within one build of warden, which is all the
        // key needs: another build may recompile, never load a wrong artifact.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        CompileCache {
            dir,
            engine_key: format!("{:016x}", h.finish()),
            stats: CacheStats::default(),
        }
    }

    fn artifact(&self, hash: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        Some(dir.join(format!("{hash}-{}.cwasm", self.engine_key)))
    }

    /// Loads the compiled form of `bytes` (whose SHA-256 is `hash`), compiling
    /// and storing it when the cache has none.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        hash: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<Component> {
        if let Some(path) = self.artifact(hash) {
            if path.is_file() {
                if let Ok(c) = deserialize(engine, &path) {
                    self.stats.reused.fetch_add(1, Ordering::Relaxed);
                    return Ok(c);
                }
                // A corrupt or stale artifact is replaced below.
                let _ = std::fs::remove_file(&path);
            }
            let component = self.compile(engine, bytes)?;
            // Caching is an optimisation: a read-only cache dir must not fail the load.
            let _ = store(&path, &component);
            return Ok(component);
        }
        self.compile(engine, bytes)
    }

    fn compile(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
        let c = Component::new(engine, bytes)?;
        self.stats.compiled.fetch_add(1, Ordering::Relaxed);
        Ok(c)
    }
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, path: &Path) -> wasmtime::Result<Component> {
    // SAFETY: the artifact was written by `store` below from a component this
    // engine compiled; wasmtime checks its header and engine compatibility.
    // The cache folder is per-user (XDG cache), not reachable by any tool.
    unsafe { Component::deserialize_file(engine, path) }
}

fn store(path: &Path, component: &Component) -> std::io::Result<()> {
    let dir = path.parent().expect("artifact path has a parent");
    std::fs::create_dir_all(dir)?;
    let bytes = component.serialize().map_err(std::io::Error::other)?;
    // Write then rename, so a concurrent start never maps a half-written file.
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
