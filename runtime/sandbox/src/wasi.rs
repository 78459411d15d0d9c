//! Grants → the WASI context of one call: mounts, environment, stdio, limits.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use warden_policy::{Grants, NetworkAllow};
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::clock::CallClock;
use crate::dirs::{DirCache, Opened, fs_perms};
use crate::net::{Denials, NetGate};

/// Bytes of guest stdout/stderr kept per call; the rest is dropped.
const STDIO_CAP: usize = 64 << 10;

/// The store data of one call.
pub(crate) struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    net: NetGate,
    pub(crate) clock: CallClock,
    pub(crate) table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
    /// The directories mounted, when known: an instance made ahead of its
    /// call is used only while they are unchanged.
    pub(crate) opened: Option<Opened>,
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.net,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Caps the linear memory of the whole instance (the sum over the memories
/// of all its core modules) and remembers when a guest hit the cap, so that
/// the trap that follows is reported as a memory-limit breach.
pub(crate) struct MemoryLimiter {
    limit: usize,
    total: usize,
    pub(crate) hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Called for every memory as it is created (current = 0) and grown.
        let total = (self.total - current.min(self.total)).saturating_add(desired);
        if total > self.limit {
            self.hit = true;
            return Ok(false);
        }
        self.total = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

/// One preopened directory: host path, the name the guest sees, permissions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mount {
    /// Directory on the host.
    pub host: PathBuf,
    /// Name of the preopen inside the guest.
    pub guest: String,
    /// Read-write when true.
    pub write: bool,
}

/// Where each granted directory appears inside the guest.
///
/// Every grant is mounted at its real absolute path, so absolute paths the
/// model copies from the system prompt work. A grant inside the workspace is
/// also mounted at its workspace-relative name (the workspace itself at `.`),
/// so relative paths resolve inside the workspace. A path under no mount does
/// not exist for the guest.
pub fn mounts(grants: &Grants, workspace: &Path) -> Vec<Mount> {
    let mut out = Vec::new();
    for d in &grants.dirs {
        let Some(abs) = d.path.to_str() else {
            continue; // not representable in WASI (non-UTF-8): not mounted
        };
        out.push(Mount {
            host: d.path.clone(),
            guest: abs.to_string(),
            write: d.write,
        });
        if let Ok(rel) = d.path.strip_prefix(workspace) {
            let guest = match rel.to_str() {
                Some("") => ".".to_string(),
                Some(r) => r.to_string(),
                None => continue,
            };
            out.push(Mount {
                host: d.path.clone(),
                guest,
                write: d.write,
            });
        }
    }
    out
}

/// Guest output kept in memory up to a cap; writes past it are dropped but
/// still succeed, so a chatty guest is not killed for printing.
#[derive(Clone, Default)]
pub(crate) struct CappedPipe {
    buf: Arc<Mutex<Vec<u8>>>,
}

impl CappedPipe {
    fn push(&self, bytes: &[u8]) {
        let mut buf = self.buf.lock().expect("stdio buffer poisoned");
        let room = STDIO_CAP.saturating_sub(buf.len());
        buf.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.buf.lock().expect("stdio buffer poisoned")).into_owned()
    }
}

impl IsTerminal for CappedPipe {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for CappedPipe {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }
    fn async_stream(&self) -> Box<dyn tokio::io::AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for CappedPipe {
    async fn ready(&mut self) {}
}

impl OutputStream for CappedPipe {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        self.push(&bytes);
        Ok(())
    }
    fn flush(&mut self) -> StreamResult<()> {
        Ok(())
    }
    fn check_write(&mut self) -> StreamResult<usize> {
        Ok(1 << 20)
    }
}

impl tokio::io::AsyncWrite for CappedPipe {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.push(buf);
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Builds the store data of one call from its grants. No sockets, HTTP only
/// to the granted hosts (refusals are recorded in `denied`), no host
/// environment but the variables named in the grants, no stdin.
pub(crate) fn call_state(
    grants: &Grants,
    workspace: &Path,
    stderr: &CappedPipe,
    denied: &Denials,
    dirs: &DirCache,
) -> Result<CallState, String> {
    let mut b = WasiCtxBuilder::new();
    // Calls already run on their own thread: doing file I/O in place avoids a
    // hop to tokio's blocking pool per operation (10x on small calls). Must be
    // set before the preopens, which capture it.
    b.allow_blocking_current_thread(true);
    let clock = CallClock::new(grants.limits.timeout);
    b.monotonic_clock(clock.clone());
    b.stdout(CappedPipe::default())
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    for name in &grants.env {
        if let Ok(value) = std::env::var(name) {
            b.env(name, value);
        }
    }
    let mounts = mounts(grants, workspace);
    let found = if mounts.is_empty() {
        None
    } else {
        dirs.preopens(&mounts)
    };
    let (cached, opened) = match found {
        Some((preopens, opened)) => (Some(preopens), Some(opened)),
        // No mounts: nothing to check. Opened in place: cannot be checked.
        None => (None, mounts.is_empty().then(Vec::new)),
    };
    if cached.is_none() {
        for m in &mounts {
            b.preopened_dir(&m.host, &m.guest, fs_perms(m))
                .map_err(|e| {
                    format!("cannot open granted directory {}: {e:#}", m.host.display())
                })?;
        }
    }
    // Reported through wasi:cli/environment.initial-cwd for guests that ask.
    if let Some(ws) = workspace
        .to_str()
        .filter(|_| grants.dirs.iter().any(|d| d.path == workspace))
    {
        b.initial_cwd(ws);
    }
    let limit = usize::try_from(grants.limits.memory).unwrap_or(usize::MAX);
    let net = NetGate::new(
        NetworkAllow::new(&grants.network),
        clock.clone(),
        denied.clone(),
    );
    let mut wasi = b.build();
    if let Some(preopens) = cached {
        *wasi.filesystem() = preopens;
    }
    Ok(CallState {
        wasi,
        http: WasiHttpCtx::new(),
        net,
        clock,
        table: ResourceTable::new(),
        limiter: MemoryLimiter {
            limit,
            total: 0,
            hit: false,
        },
        opened,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    #[test]
    fn the_memory_limit_covers_all_memories_of_an_instance() {
        let mut l = MemoryLimiter {
            limit: 64 * MIB,
            total: 0,
            hit: false,
        };
        assert!(l.memory_growing(0, 40 * MIB, None).unwrap());
        // A second memory that alone fits, but not with the first one.
        assert!(!l.memory_growing(0, 30 * MIB, None).unwrap());
        assert!(l.hit);
        // Growing the first memory counts only the difference.
        assert!(l.memory_growing(40 * MIB, 60 * MIB, None).unwrap());
        assert!(!l.memory_growing(60 * MIB, 65 * MIB, None).unwrap());
        assert!(l.memory_growing(0, 4 * MIB, None).unwrap());
    }
}
