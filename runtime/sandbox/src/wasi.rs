//! Grants → the WASI context of one call: mounts, environment, stdio, limits.

use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use warden_policy::Grants;
use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamResult};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use crate::alloc::Budget;
use crate::bind::Prepared;
use crate::clock::CallClock;
use crate::net::{Denials, NetGate, Notes};
use crate::watchdog::Slot;

/// Bytes of guest stdout/stderr kept per call; the rest is dropped.
const STDIO_CAP: usize = 64 << 10;

/// The store data of one call.
pub(crate) struct CallState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    net: NetGate,
    pub(crate) clock: CallClock,
    pub(crate) table: ResourceTable,
    /// Files `read-head` read, closed with the store once the call has
    /// answered: a close is a system call the answer need not wait for.
    pub(crate) closing: crate::extras::Closing,
    pub(crate) limiter: MemoryLimiter,
    pub(crate) exec: Arc<crate::process::ExecPlan>,
    /// What the tool may do in the desktop session, and what this call
    /// was checked to do there.
    pub(crate) desktop: crate::desktop::DesktopState,
    /// The watch of the call running in this store: a program it runs is
    /// killed once the call is stopped.
    pub(crate) slot: Arc<Slot>,
}

impl CallState {
    /// The call begins now (its instance may have been made earlier): its
    /// clock reads zero and its time limit runs from here.
    pub(crate) fn start(&mut self, clock: CallClock) {
        self.clock = clock;
        self.net.clock = clock;
    }
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
/// of all its core modules) together with the host memory held for the
/// call (see `alloc.rs`); a breach is remembered in the budget, so that the
/// trap that follows is reported as a memory-limit breach.
pub(crate) struct MemoryLimiter {
    pub(crate) budget: Arc<Budget>,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        // Called for every memory as it is created (current = 0) and grown.
        Ok(self.budget.grow_linear(current, desired))
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
/// not exist for the guest. The order is `warden_paths`'s: the relative
/// names first, so that the guest's C library takes an absolute path to
/// the grant it names.
pub fn mounts(grants: &Grants, workspace: &Path) -> Vec<Mount> {
    // A directory that is not UTF-8 cannot be named in WASI: not mounted.
    let dirs: Vec<(&Path, bool, &str)> = grants
        .dirs()
        .filter_map(|(path, write)| Some((path, write, path.to_str()?)))
        .collect();
    let names: Vec<&str> = dirs.iter().map(|d| d.2).collect();
    warden_paths::wasi_libc::preopen_names(&names, workspace.to_str())
        .into_iter()
        .map(|(i, guest)| Mount {
            host: dirs[i].0.to_path_buf(),
            guest,
            write: dirs[i].1,
        })
        .collect()
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

/// Resource-table entries one call may hold (pollables, streams, HTTP
/// requests and headers, open files): far more than any tool needs, few
/// enough that the table itself stays small.
const TABLE_ENTRIES: usize = 100_000;

/// Largest single `get-random-bytes` answer.
const RANDOM_BYTES: u64 = 1 << 20;

/// Builds the store data of one call from what was prepared when the tool
/// was bound. No sockets, HTTP only to the granted hosts (refusals are
/// recorded in `denied`), no host environment but the granted variables, no
/// stdin.
pub(crate) fn call_state(
    prepared: &Prepared,
    clock: CallClock,
    stderr: &CappedPipe,
    denied: &Denials,
    notes: &Notes,
    budget: Arc<Budget>,
) -> CallState {
    // The monotonic clock is the call's own (see `clock.rs`), read from
    // `CallState::clock`, which `start` resets when the call begins.
    let mut b = WasiCtxBuilder::new();
    b.stdout(CappedPipe::default())
        .stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .max_random_size(RANDOM_BYTES);
    for (name, value) in &prepared.env {
        b.env(name, value);
    }
    if let Some(cwd) = &prepared.initial_cwd {
        // Reported through wasi:cli/environment.initial-cwd for guests that ask.
        b.initial_cwd(cwd);
    }
    let mut wasi = b.build();
    // The granted directories, opened once when the tool was bound: the
    // same handles every call, whatever their paths lead to now.
    *wasi.filesystem() = prepared.preopens.clone();
    let mut table = ResourceTable::new();
    table.set_max_capacity(TABLE_ENTRIES);
    CallState {
        wasi,
        http: WasiHttpCtx::new(),
        net: NetGate::new(
            prepared.allow.clone(),
            prepared.secrets.clone(),
            clock,
            denied.clone(),
            notes.clone(),
        ),
        clock,
        table,
        closing: crate::extras::Closing::default(),
        limiter: MemoryLimiter { budget },
        exec: prepared.exec.clone(),
        desktop: crate::desktop::DesktopState {
            plan: prepared.desktop.clone(),
            call: Arc::default(),
        },
        slot: Arc::default(),
    }
}
