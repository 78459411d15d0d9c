//! On-disk cache of compiled components, keyed by content and engine, and
//! authenticated: a cache entry is native code, so it is loaded only if its
//! MAC, made with a per-user key kept elsewhere, matches.
//!
//! Whatever the cache folder holds (a swapped entry, a corrupted one, one
//! written by someone without the key), the result is a recompile, never
//! foreign code. Entries are read into memory before use, so a file changed
//! afterwards cannot fault the process (no shared mapping).
//!
//! Beside each entry, what the component answered to `describe()` is kept
//! under the same MAC (`*.tools.json`): later starts list its tools from
//! there and load the component only when one of them is called. A
//! description that does not verify is ignored, and the component is loaded
//! and described again.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use warden_state::StateDir;
use wasmtime::Engine;
use wasmtime::component::Component;

use crate::bindings::GuestSpec;

/// Bytes of the MAC at the end of every entry.
const MAC_LEN: usize = 32;

/// Where compiled components are kept, and the key that vouches for them.
#[derive(Debug)]
pub struct CacheConfig {
    /// The cache folder (`$XDG_CACHE_HOME/warden/compiled`).
    pub dir: StateDir,
    /// A secret of the user's, kept outside the cache folder (see
    /// `warden-workspace`), so that nothing able to write the cache can
    /// make an entry that passes.
    pub key: [u8; 32],
}

/// Counts of what loading did, to prove the cache works.
#[derive(Debug, Default)]
pub struct CacheStats {
    compiled: AtomicUsize,
    reused: AtomicUsize,
    rejected: AtomicUsize,
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
    /// Cache entries refused (bad MAC, unreadable, stale) and recompiled.
    pub fn rejected(&self) -> usize {
        self.rejected.load(Ordering::Relaxed)
    }
}

/// The compile cache (`None`: compile in memory every time).
#[derive(Debug)]
pub(crate) struct CompileCache {
    store: Option<CacheConfig>,
    engine_key: String,
    pub(crate) stats: CacheStats,
}

impl CompileCache {
    pub(crate) fn new(engine: &Engine, store: Option<CacheConfig>) -> CompileCache {
        // DefaultHasher is stable within one build of warden, which is all the
        // key needs: another build may recompile, never load a wrong artifact.
        let mut h = std::collections::hash_map::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut h);
        env!("CARGO_PKG_VERSION").hash(&mut h);
        CompileCache {
            store,
            engine_key: format!("{:016x}", h.finish()),
            stats: CacheStats::default(),
        }
    }

    fn entry_name(&self, hash: &str) -> String {
        format!("{hash}-{}.cwasm", self.engine_key)
    }

    /// Whether loading `hash` would compile (nothing valid-looking cached).
    pub(crate) fn has(&self, hash: &str) -> bool {
        self.store
            .as_ref()
            .is_some_and(|s| s.dir.path().join(self.entry_name(hash)).is_file())
    }

    /// Loads the compiled form of `bytes` (whose SHA-256 is `hash`),
    /// compiling and storing it when the cache has no valid entry.
    pub(crate) fn load(
        &self,
        engine: &Engine,
        hash: &str,
        bytes: &[u8],
    ) -> wasmtime::Result<Component> {
        let Some(store) = &self.store else {
            return self.compile(engine, bytes);
        };
        let name = self.entry_name(hash);
        if let Ok(Some(entry)) = store.dir.read(&name) {
            match verified(&store.key, &name, &entry).map(|code| deserialize(engine, code)) {
                Some(Ok(c)) => {
                    self.stats.reused.fetch_add(1, Ordering::Relaxed);
                    return Ok(c);
                }
                // Forged, corrupt or stale: replaced below.
                _ => {
                    self.stats.rejected.fetch_add(1, Ordering::Relaxed);
                    let _ = store.dir.remove(&name);
                }
            }
        }
        let component = self.compile(engine, bytes)?;
        // Caching is an optimisation: a read-only cache dir must not fail the load.
        if let Ok(mut code) = component.serialize() {
            let mac = mac(&store.key, &name, &code);
            code.extend_from_slice(&mac);
            let _ = store.dir.write_atomic(&name, &code);
        }
        Ok(component)
    }

    fn description_name(&self, hash: &str) -> String {
        format!("{hash}-{}.tools.json", self.engine_key)
    }

    /// What component `hash` answered to `describe()` when it last loaded,
    /// if that was recorded under the user's key: its tools can be listed
    /// without loading it.
    pub(crate) fn description(&self, hash: &str) -> Option<Vec<GuestSpec>> {
        let store = self.store.as_ref()?;
        let name = self.description_name(hash);
        let entry = store.dir.read(&name).ok()??;
        let text = verified(&store.key, &name, &entry)?;
        serde_json::from_slice(text).ok()
    }

    /// Records what component `hash` answered to `describe()`.
    pub(crate) fn remember_description(&self, hash: &str, specs: &[GuestSpec]) {
        let Some(store) = &self.store else {
            return;
        };
        let name = self.description_name(hash);
        let Ok(mut text) = serde_json::to_vec(specs) else {
            return;
        };
        let mac = mac(&store.key, &name, &text);
        text.extend_from_slice(&mac);
        // Like the compiled code, only an optimisation.
        let _ = store.dir.write_atomic(&name, &text);
    }

    fn compile(&self, engine: &Engine, bytes: &[u8]) -> wasmtime::Result<Component> {
        let c = Component::new(engine, bytes)?;
        self.stats.compiled.fetch_add(1, Ordering::Relaxed);
        Ok(c)
    }
}

/// HMAC-SHA256 over the entry's name (which binds it to its source hash and
/// engine) and its code.
fn mac(key: &[u8; 32], name: &str, code: &[u8]) -> [u8; MAC_LEN] {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length works");
    m.update(name.as_bytes());
    m.update(&[0]);
    m.update(code);
    m.finalize().into_bytes().into()
}

/// The code of `entry` if its MAC is right (compared in constant time).
fn verified<'a>(key: &[u8; 32], name: &str, entry: &'a [u8]) -> Option<&'a [u8]> {
    let split = entry.len().checked_sub(MAC_LEN)?;
    let (code, tag) = entry.split_at(split);
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("any key length works");
    m.update(name.as_bytes());
    m.update(&[0]);
    m.update(code);
    m.verify_slice(tag).ok().map(|()| code)
}

#[allow(unsafe_code)]
fn deserialize(engine: &Engine, code: &[u8]) -> wasmtime::Result<Component> {
    // SAFETY: `code` was produced by `Component::serialize` of this engine
    // configuration and stored with a MAC only warden's key can make, which
    // was checked on the bytes in memory; wasmtime also checks its header
    // and engine compatibility. It is copied into fresh memory, so later
    // changes to the file cannot affect it.
    unsafe { Component::deserialize(engine, code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mac_binds_key_name_and_code() {
        let key = [7u8; 32];
        let mut entry = b"code".to_vec();
        entry.extend_from_slice(&mac(&key, "a-e.cwasm", b"code"));
        assert_eq!(verified(&key, "a-e.cwasm", &entry), Some(&b"code"[..]));
        // Another name (an entry swapped in from another component).
        assert_eq!(verified(&key, "b-e.cwasm", &entry), None);
        // Another key (made by someone without the user's key).
        assert_eq!(verified(&[8u8; 32], "a-e.cwasm", &entry), None);
        // A flipped bit, a truncated entry.
        let mut bad = entry.clone();
        bad[0] ^= 1;
        assert_eq!(verified(&key, "a-e.cwasm", &bad), None);
        assert_eq!(verified(&key, "a-e.cwasm", &entry[..10]), None);
    }
}
