//! The host extras (`warden:tool/host-extras`).
//!
//! `call`: the call's time limit, so a long search can stop in time.
//!
//! `host-fs`, on a directory handle the guest already holds, so it grants
//! nothing new:
//! - `list-dir`: the directory's entries in one call, typed from the
//!   listing (`d_type`) instead of a `stat` per entry as WASI's
//!   `read-directory` does. No path is resolved, and a symbolic link is
//!   reported as one, never followed.
//! - `read-head`: a regular file's size and first bytes in one call, where
//!   WASI takes three (`stat-at`, `open-at`, `read`) and the host one more
//!   system call (`open-at` asks what it opened). Its path resolves beneath
//!   the handle as `open-at` resolves it, and its last component is never
//!   followed: it reads only what the guest could read itself.

use wasmtime::component::{HasData, Linker, Resource, ResourceTable};
use wasmtime_wasi::filesystem::Descriptor;

use crate::wasi::CallState;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "warden:tool/host-extras",
        require_store_data_send: true,
        with: {
            "wasi:filesystem/types": wasmtime_wasi::p2::bindings::filesystem::types,
            "wasi:io": wasmtime_wasi::p2::bindings::io,
            "wasi:clocks": wasmtime_wasi::p2::bindings::clocks,
        },
    });
}

use crate::clock::CallClock;
use bindings::warden::tool::call;
use bindings::warden::tool::host_fs::{self, DirEntry, FileHead, Listing};
use wasmtime_wasi::p2::bindings::filesystem::types::{DescriptorType, ErrorCode};

/// Adds `warden:tool/host-fs` and `warden:tool/call` to the linker.
pub(crate) fn add_host_extras(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    host_fs::add_to_linker::<CallState, Tables>(linker, |state| TableRef {
        table: &mut state.table,
        closing: &mut state.closing,
    })?;
    call::add_to_linker::<CallState, Clock>(linker, |state| ClockRef(&state.clock))
}

struct Clock;

impl HasData for Clock {
    type Data<'a> = ClockRef<'a>;
}

pub(crate) struct ClockRef<'a>(&'a CallClock);

impl call::Host for ClockRef<'_> {
    fn time_limit(&mut self) -> u64 {
        u64::try_from(self.0.timeout().as_nanos()).unwrap_or(u64::MAX)
    }
}

struct Tables;

impl HasData for Tables {
    type Data<'a> = TableRef<'a>;
}

/// The resource table, where the guest's descriptors are, and the files
/// read for the guest that wait to be closed.
pub(crate) struct TableRef<'a> {
    table: &'a mut ResourceTable,
    closing: &'a mut Closing,
}

/// Files read for the guest, closed when the call's store is dropped,
/// after the call answered. At most [`Closing::HELD`] wait; past that a
/// file is closed at once, so a guest that reads many files cannot run the
/// process out of descriptors.
#[derive(Default)]
pub(crate) struct Closing(Vec<rustix::fd::OwnedFd>);

impl Closing {
    const HELD: usize = 8;

    /// Closes `fd` later, or now when enough wait already.
    fn later(&mut self, fd: impl Into<rustix::fd::OwnedFd>) {
        if self.0.len() < Self::HELD {
            self.0.push(fd.into());
        }
    }
}

impl host_fs::Host for TableRef<'_> {
    fn list_dir(&mut self, dir: Resource<Descriptor>) -> Result<Listing, ErrorCode> {
        let Ok(descriptor) = self.table.get(&dir) else {
            return Err(ErrorCode::BadDescriptor);
        };
        let Descriptor::Dir(dir) = descriptor else {
            return Err(ErrorCode::NotDirectory);
        };
        list(&dir.dir).map_err(|e| code(&e))
    }

    fn read_head(
        &mut self,
        dir: Resource<Descriptor>,
        path: String,
        max: u64,
    ) -> Result<Option<FileHead>, ErrorCode> {
        let Ok(descriptor) = self.table.get(&dir) else {
            return Err(ErrorCode::BadDescriptor);
        };
        let Descriptor::Dir(dir) = descriptor else {
            return Err(ErrorCode::NotDirectory);
        };
        let max = usize::try_from(max).unwrap_or(usize::MAX).min(MAX_HEAD);
        head(&dir.dir, &path, max, self.closing).map_err(|e| code(&e))
    }
}

/// The most `read-head` reads.
const MAX_HEAD: usize = 64 * 1024;

/// The size and first `max` bytes of the regular file at `path` beneath
/// `dir`; `None` for anything else (a final symlink, a directory, a special
/// file, a path whose last component is `.` or `..`), which is not opened.
/// The directories on the way are resolved by the kernel, beneath `dir`
/// (`openat2` with `RESOLVE_BENEATH`, as `open-at` resolves them); the last
/// component is looked at and opened without following it, relative to its
/// directory, so it cannot lead out either. Opened non-blocking: should a
/// named pipe take the file's place between the look and the open, the
/// read finds it empty instead of waiting for a writer. What it opened is
/// handed to `closing`, to be closed after the call answered.
#[cfg(target_os = "linux")]
fn head(
    dir: &std::fs::File,
    path: &str,
    max: usize,
    closing: &mut Closing,
) -> std::io::Result<Option<FileHead>> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};

    let (parent, name) = match path.rsplit_once('/') {
        Some((parent, name)) => (Some(parent), name),
        None => (None, path),
    };
    if matches!(name, "" | "." | "..") {
        return Ok(None);
    }
    let Some(parent) = parent else {
        return head_in(rustix::fd::AsFd::as_fd(dir), name, max, closing);
    };
    let parent = rustix::fs::openat2(
        dir,
        parent,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )?;
    let head = head_in(rustix::fd::AsFd::as_fd(&parent), name, max, closing);
    closing.later(parent);
    head
}

/// [`head`] of `name`, a single component, in the directory `at`.
#[cfg(target_os = "linux")]
fn head_in(
    at: rustix::fd::BorrowedFd<'_>,
    name: &str,
    max: usize,
    closing: &mut Closing,
) -> std::io::Result<Option<FileHead>> {
    use std::os::unix::fs::FileExt;

    use rustix::fs::{AtFlags, FileType, Mode, OFlags};

    let stat = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    let file = std::fs::File::from(rustix::fs::openat(
        at,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )?);
    let size = u64::try_from(stat.st_size).unwrap_or(0);
    let mut data = vec![
        0;
        max.min(
            usize::try_from(size)
                .unwrap_or(usize::MAX)
                .saturating_add(1)
        )
    ];
    // A short read of a regular file is its end.
    let mut filled = 0;
    while filled < data.len() {
        match file.read_at(&mut data[filled..], filled as u64) {
            Ok(n) if filled + n < data.len() => {
                filled += n;
                break;
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            // Closed at once: a failed read need not answer fast.
            Err(e) => return Err(e),
        }
    }
    closing.later(file);
    let whole = filled < data.len();
    data.truncate(filled);
    Ok(Some(FileHead { size, data, whole }))
}

/// Elsewhere the call answers "unsupported"; the guest asks `stat-at`.
#[cfg(not(target_os = "linux"))]
fn head(
    _dir: &std::fs::File,
    _path: &str,
    _max: usize,
    _closing: &mut Closing,
) -> std::io::Result<Option<FileHead>> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

/// Reads every entry of `dir` (an open directory), sorted by name.
#[cfg(target_os = "linux")]
fn list(dir: &std::fs::File) -> std::io::Result<Listing> {
    use rustix::fs::{AtFlags, FileType};

    let mut entries = Vec::new();
    let mut bad_names = 0u32;
    for entry in rustix::fs::Dir::read_from(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        if matches!(name.to_bytes(), b"." | b"..") {
            continue;
        }
        let file_type = match entry.file_type() {
            // Some file systems do not fill `d_type`: ask for this one
            // name, relative to the directory, without following a link.
            FileType::Unknown => rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
                .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode)),
            t => t,
        };
        match name.to_str() {
            Ok(name) => entries.push(DirEntry {
                name: name.to_string(),
                type_: descriptor_type(file_type),
            }),
            Err(_) => bad_names += 1,
        }
    }
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    Ok(Listing { entries, bad_names })
}

#[cfg(target_os = "linux")]
fn descriptor_type(t: rustix::fs::FileType) -> DescriptorType {
    use rustix::fs::FileType;
    match t {
        FileType::RegularFile => DescriptorType::RegularFile,
        FileType::Directory => DescriptorType::Directory,
        FileType::Symlink => DescriptorType::SymbolicLink,
        FileType::Fifo => DescriptorType::Fifo,
        FileType::Socket => DescriptorType::Socket,
        FileType::CharacterDevice => DescriptorType::CharacterDevice,
        FileType::BlockDevice => DescriptorType::BlockDevice,
        FileType::Unknown => DescriptorType::Unknown,
    }
}

/// Elsewhere the call answers "unsupported"; the guest falls back to
/// `read-directory`.
#[cfg(not(target_os = "linux"))]
fn list(_dir: &std::fs::File) -> std::io::Result<Listing> {
    Err(std::io::Error::from(std::io::ErrorKind::Unsupported))
}

fn code(e: &std::io::Error) -> ErrorCode {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::PermissionDenied => ErrorCode::Access,
        ErrorKind::NotFound => ErrorCode::NoEntry,
        ErrorKind::NotADirectory => ErrorCode::NotDirectory,
        ErrorKind::Interrupted => ErrorCode::Interrupted,
        ErrorKind::OutOfMemory => ErrorCode::InsufficientMemory,
        ErrorKind::Unsupported => ErrorCode::Unsupported,
        _ => ErrorCode::Io,
    }
}

#[cfg(test)]
mod tests {
    use super::Closing;

    #[test]
    fn at_most_a_few_files_wait_to_be_closed() {
        let mut closing = Closing::default();
        for _ in 0..3 * Closing::HELD {
            closing.later(std::fs::File::open("/dev/null").unwrap());
        }
        assert_eq!(closing.0.len(), Closing::HELD);
    }
}
