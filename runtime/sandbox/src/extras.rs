//! The host extras (`warden:tool/host-extras`).
//!
//! `call`: the call's time limit, so a long search can stop in time.
//!
//! `host-fs`: a directory's entries in one call, typed from the
//! listing (`d_type`) instead of a `stat` per entry as WASI's
//! `read-directory` does. It works on a directory handle the guest already
//! holds, as WASI's `read-directory` does, so it grants nothing new: no
//! path is resolved, and a symbolic link is reported as one, never followed.

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
use bindings::warden::tool::host_fs::{self, DirEntry, Listing};
use wasmtime_wasi::p2::bindings::filesystem::types::{DescriptorType, ErrorCode};

/// Adds `warden:tool/host-fs` and `warden:tool/call` to the linker.
pub(crate) fn add_host_extras(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    host_fs::add_to_linker::<CallState, Tables>(linker, |state| TableRef(&mut state.table))?;
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

/// The resource table, where the guest's descriptors are.
pub(crate) struct TableRef<'a>(&'a mut ResourceTable);

impl host_fs::Host for TableRef<'_> {
    fn list_dir(&mut self, dir: Resource<Descriptor>) -> Result<Listing, ErrorCode> {
        let Ok(descriptor) = self.0.get(&dir) else {
            return Err(ErrorCode::BadDescriptor);
        };
        let Descriptor::Dir(dir) = descriptor else {
            return Err(ErrorCode::NotDirectory);
        };
        list(&dir.dir).map_err(|e| code(&e))
    }
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
