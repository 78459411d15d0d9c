//! Grants → the WASI context of one call: mounts, environment, stdio, limits.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use warden_policy::Grants;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::filesystem::WasiFilesystemCtx;
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

/// Bytes of guest stdout/stderr kept per call; the rest is dropped.
const STDIO_CAP: usize = 64 << 10;

/// The store data of one call.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    pub(crate) limiter: MemoryLimiter,
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// Caps each linear memory and remembers when a guest hit the cap, so that
/// the trap that follows is reported as a memory-limit breach.
pub(crate) struct MemoryLimiter {
    limit: usize,
    pub(crate) hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.limit {
            self.hit = true;
            return Ok(false);
        }
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

/// The granted directories of earlier calls, kept open and shared by later
/// calls with the same mounts, instead of opening every directory again on
/// every call (two `open` and two `close` system calls for the workspace).
///
/// An entry is used only while each of its host paths still leads (following
/// symlinks, as opening it would) to the very directory that was opened, with
/// the same mode and owner; otherwise the mounts are opened afresh, so a call
/// sees exactly what opening the paths at its start would give it. The
/// permissions come from the mounts, which are the key.
#[derive(Default)]
pub(crate) struct DirCache {
    entries: Mutex<HashMap<Vec<Mount>, CachedDirs>>,
}

struct CachedDirs {
    /// Each distinct host path with the identity of the directory opened.
    opened: Vec<(PathBuf, DirId)>,
    /// The preopens, ready to clone into a call's WASI context.
    filesystem: WasiFilesystemCtx,
}

/// What must not have changed for a kept directory handle to be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct DirId {
    dev: u64,
    ino: u64,
    mode: u32,
    uid: u32,
    gid: u32,
}

#[cfg(target_os = "linux")]
impl DirId {
    fn of(meta: &std::fs::Metadata) -> DirId {
        use std::os::unix::fs::MetadataExt;
        DirId {
            dev: meta.dev(),
            ino: meta.ino(),
            mode: meta.mode(),
            uid: meta.uid(),
            gid: meta.gid(),
        }
    }
}

impl DirCache {
    /// The preopens for `mounts`, from the cache or freshly opened; `None`
    /// when caching is not possible (the caller then opens them as before).
    #[cfg(target_os = "linux")]
    fn preopens(&self, mounts: &[Mount]) -> Option<WasiFilesystemCtx> {
        let mut now: Vec<(PathBuf, DirId)> = Vec::new();
        for m in mounts {
            if now.iter().all(|(p, _)| *p != m.host) {
                let meta = std::fs::metadata(&m.host).ok()?;
                now.push((m.host.clone(), DirId::of(&meta)));
            }
        }
        let mut entries = self.entries.lock().expect("dir cache poisoned");
        if let Some(cached) = entries.get(mounts)
            && cached.opened == now
        {
            return Some(cached.filesystem.clone());
        }
        let fresh = open_preopens(mounts)?;
        let filesystem = fresh.filesystem.clone();
        entries.insert(mounts.to_vec(), fresh);
        Some(filesystem)
    }

    #[cfg(not(target_os = "linux"))]
    fn preopens(&self, _mounts: &[Mount]) -> Option<WasiFilesystemCtx> {
        None
    }
}

/// Opens each distinct host directory of `mounts` once (as wasmtime-wasi
/// does: `O_PATH | O_DIRECTORY`, following symlinks), records what was
/// opened, and hands wasmtime-wasi that very directory through its
/// `/proc/self/fd` link, so the recorded identity is the preopen's.
#[cfg(target_os = "linux")]
fn open_preopens(mounts: &[Mount]) -> Option<CachedDirs> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;

    let mut handles: Vec<(PathBuf, std::fs::File)> = Vec::new();
    let mut opened = Vec::new();
    for m in mounts {
        if handles.iter().any(|(p, _)| *p == m.host) {
            continue;
        }
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(&m.host)
            .ok()?;
        opened.push((m.host.clone(), DirId::of(&dir.metadata().ok()?)));
        handles.push((m.host.clone(), dir));
    }
    let mut b = WasiCtxBuilder::new();
    // Captured by each preopen, as in `call_state`.
    b.allow_blocking_current_thread(true);
    for m in mounts {
        let (_, dir) = handles.iter().find(|(p, _)| *p == m.host)?;
        let link = format!("/proc/self/fd/{}", dir.as_raw_fd());
        b.preopened_dir(&link, &m.guest, fs_perms(m)).ok()?;
    }
    let mut ctx = b.build();
    Some(CachedDirs {
        opened,
        filesystem: std::mem::take(ctx.filesystem()),
    })
}

fn fs_perms(m: &Mount) -> FsPerms {
    if m.write {
        FsPerms::ReadWrite
    } else {
        FsPerms::ReadOnly
    }
}

/// Builds the store data of one call from its grants. No network, no host
/// environment but the variables named in the grants, no stdin.
pub(crate) fn call_state(
    grants: &Grants,
    workspace: &Path,
    stderr: &CappedPipe,
    dirs: &DirCache,
) -> Result<CallState, String> {
    let mut b = WasiCtxBuilder::new();
    // Calls already run on their own thread: doing file I/O in place avoids a
    // hop to tokio's blocking pool per operation (10x on small calls). Must be
    // set before the preopens, which capture it.
    b.allow_blocking_current_thread(true);
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
    let cached = if mounts.is_empty() {
        None
    } else {
        dirs.preopens(&mounts)
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
    let mut wasi = b.build();
    if let Some(preopens) = cached {
        *wasi.filesystem() = preopens;
    }
    Ok(CallState {
        wasi,
        table: ResourceTable::new(),
        limiter: MemoryLimiter { limit, hit: false },
    })
}
