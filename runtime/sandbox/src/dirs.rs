//! Granted directories kept open across calls (Linux): a call reuses them
//! only while every granted path still leads to the directory opened.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;

use wasmtime_wasi::filesystem::WasiFilesystemCtx;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::wasi::Mount;

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
pub(crate) struct DirId {
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

/// The host directories a call's preopens are, each with what must not have
/// changed for them to be used.
pub(crate) type Opened = Vec<(PathBuf, DirId)>;

impl DirCache {
    /// The preopens for `mounts`, from the cache or freshly opened, with the
    /// directories they are; `None` when caching is not possible (the caller
    /// then opens them as before).
    #[cfg(target_os = "linux")]
    pub(crate) fn preopens(&self, mounts: &[Mount]) -> Option<(WasiFilesystemCtx, Opened)> {
        let mut now: Opened = Vec::new();
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
            return Some((cached.filesystem.clone(), now));
        }
        let fresh = open_preopens(mounts)?;
        let found = (fresh.filesystem.clone(), fresh.opened.clone());
        entries.insert(mounts.to_vec(), fresh);
        Some(found)
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn preopens(&self, _mounts: &[Mount]) -> Option<(WasiFilesystemCtx, Opened)> {
        None
    }

    /// True while every path of `opened` still leads to the directory that
    /// was opened: what opening the paths now would give.
    #[cfg(target_os = "linux")]
    pub(crate) fn unchanged(opened: &Opened) -> bool {
        opened
            .iter()
            .all(|(path, id)| std::fs::metadata(path).is_ok_and(|meta| DirId::of(&meta) == *id))
    }

    #[cfg(not(target_os = "linux"))]
    pub(crate) fn unchanged(opened: &Opened) -> bool {
        opened.is_empty()
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

pub(crate) fn fs_perms(m: &Mount) -> FsPerms {
    if m.write {
        FsPerms::ReadWrite
    } else {
        FsPerms::ReadOnly
    }
}
