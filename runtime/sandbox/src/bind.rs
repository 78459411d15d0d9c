//! Grants → what every call of a tool starts from, worked out once when the
//! toolset is bound: the granted directories opened (and never looked up by
//! path again), the environment values, the network allow-list.

use std::path::Path;
use std::sync::Arc;

use warden_policy::{Grants, NetworkAllow};
use wasmtime_wasi::filesystem::WasiFilesystemCtx;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::wasi::{Mount, mounts};

/// What a call of a bound tool is made from.
pub(crate) struct Prepared {
    /// The preopens: directory handles opened at bind time, cloned (not
    /// reopened) into each call.
    pub(crate) preopens: WasiFilesystemCtx,
    /// Where each granted directory appears inside the guest.
    pub(crate) mounts: Vec<Mount>,
    /// Granted environment variables with their values, read at bind time.
    pub(crate) env: Vec<(String, String)>,
    /// Hosts the tool may send HTTP requests to.
    pub(crate) allow: Arc<NetworkAllow>,
    /// The workspace, when granted: the guest's initial working directory.
    pub(crate) initial_cwd: Option<String>,
    /// The opened granted directories by host path, kept so that the host
    /// can reach files through the same handles as the tool (undo).
    pub(crate) dirs: Vec<(std::path::PathBuf, dir::Handle)>,
}

/// Prepares the calls of a tool with `grants`. Each granted directory is
/// opened once, here; a directory that cannot be opened, or whose path no
/// longer leads to itself, is an error naming it.
pub(crate) fn prepare(grants: &Grants, workspace: &Path) -> Result<Prepared, String> {
    let mounts = mounts(grants, workspace);
    let mut b = WasiCtxBuilder::new();
    // Calls already run on their own thread: doing file I/O in place avoids a
    // hop to tokio's blocking pool per operation (10x on small calls); a
    // blocking operation is interrupted by the watchdog at the deadline.
    // Must be set before the preopens, which capture it.
    b.allow_blocking_current_thread(true);
    let mut opened: Vec<(std::path::PathBuf, dir::Handle)> = Vec::new();
    for m in &mounts {
        if !opened.iter().any(|(p, _)| *p == m.host) {
            let handle = dir::open(&m.host).map_err(|e| {
                format!(
                    "cannot open granted directory {}: {e}",
                    warden_policy::inert(&m.host.display().to_string())
                )
            })?;
            opened.push((m.host.clone(), handle));
        }
        let (_, handle) = opened
            .iter()
            .find(|(p, _)| *p == m.host)
            .expect("opened above");
        let perms = if m.write {
            FsPerms::ReadWrite
        } else {
            FsPerms::ReadOnly
        };
        b.preopened_dir(handle.path(), &m.guest, perms)
            .map_err(|e| format!("cannot open granted directory {}: {e:#}", m.host.display()))?;
    }
    let mut ctx = b.build();
    let preopens = std::mem::take(ctx.filesystem());
    let env = grants
        .env()
        .filter_map(|name| std::env::var(name).ok().map(|v| (name.to_string(), v)))
        .collect();
    let initial_cwd = workspace
        .to_str()
        .filter(|_| grants.dirs().any(|(p, _)| p == workspace))
        .map(str::to_string);
    Ok(Prepared {
        preopens,
        mounts,
        env,
        allow: Arc::new(NetworkAllow::new(grants.hosts())),
        initial_cwd,
        dirs: opened,
    })
}

/// Opening a granted directory so that the handle is exactly the directory
/// the policy named.
#[cfg(target_os = "linux")]
mod dir {
    use std::os::fd::{AsRawFd, OwnedFd};
    use std::path::{Path, PathBuf};

    use rustix::fs::{Mode, OFlags};

    /// An open directory, reachable by wasmtime-wasi through its
    /// `/proc/self/fd` link (which leads to the open directory itself, not
    /// to whatever its path names now).
    pub(crate) struct Handle {
        _fd: OwnedFd,
        link: PathBuf,
    }

    impl Handle {
        pub(super) fn path(&self) -> &Path {
            &self.link
        }

        /// The `O_PATH` descriptor of the directory.
        pub(crate) fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
            Some(std::os::fd::AsFd::as_fd(&self._fd))
        }
    }

    /// Opens `path` (canonical) and checks that the directory opened is the
    /// one at that path: a symlink swapped in between resolving and opening
    /// is refused, never followed.
    pub(super) fn open(path: &Path) -> std::io::Result<Handle> {
        let fd = rustix::fs::open(
            path,
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        let link = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
        let real = std::fs::read_link(&link)?;
        if real != path {
            return Err(std::io::Error::other(format!(
                "it now leads to {} (a symlink or a move since the policy was read); not opened",
                warden_policy::inert(&real.display().to_string())
            )));
        }
        Ok(Handle { _fd: fd, link })
    }
}

#[cfg(not(target_os = "linux"))]
mod dir {
    use std::path::{Path, PathBuf};

    pub(crate) struct Handle(PathBuf);

    impl Handle {
        pub(super) fn path(&self) -> &Path {
            &self.0
        }

        pub(crate) fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
            None
        }
    }

    pub(super) fn open(path: &Path) -> std::io::Result<Handle> {
        Ok(Handle(path.to_path_buf()))
    }
}
