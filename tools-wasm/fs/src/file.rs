//! Reading files and directories by path, for `read_file` and the walks:
//! metadata first, then a reader; directory listings.

/// Largest single read asked of the host: well under its cap on one read
/// (64 KiB), so a short read of a regular file means its end.
pub const MAX_READ: usize = 16 * 1024;

/// What a reader needs to know of a file before opening it.
pub struct Meta {
    /// A directory (after following a symlink).
    pub is_dir: bool,
    /// A regular file (after following a symlink).
    pub regular: bool,
    /// Size in bytes.
    pub len: u64,
}

/// A regular file read in one go: its size and first bytes.
pub struct Head {
    /// Size in bytes, as it was when asked.
    pub len: u64,
    /// The first bytes; the whole file when [`Head::whole`].
    pub data: Vec<u8>,
    /// `data` is the whole file.
    pub whole: bool,
}

/// The type of a directory entry, as its listing tells it (a symlink is
/// not followed). Named like std's `FileType` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryType {
    File,
    Dir,
    Symlink,
    /// A named pipe, socket or device.
    Special,
}

impl EntryType {
    pub fn is_file(self) -> bool {
        self == EntryType::File
    }

    pub fn is_dir(self) -> bool {
        self == EntryType::Dir
    }

    pub fn is_symlink(self) -> bool {
        self == EntryType::Symlink
    }
}

/// Directories (as given to `read_dir`) holding entries whose names are
/// not valid UTF-8, which WASI cannot pass: those entries are left out.
/// Each call runs in a fresh instance, so this is per call.
static BAD_NAMES: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

fn note_bad_name(dir: &str) {
    let mut bad = BAD_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    bad.push(dir.to_string());
}

/// The note for entries left out because their names are not UTF-8, if
/// any were met since the last call (which this resets).
pub fn bad_names_note() -> Option<String> {
    let mut bad = BAD_NAMES.lock().unwrap_or_else(|e| e.into_inner());
    if bad.is_empty() {
        return None;
    }
    let count = bad.len();
    let mut dirs: Vec<String> = Vec::new();
    for dir in bad.drain(..) {
        let dir = dir.strip_prefix("./").unwrap_or(&dir).trim_end_matches('/');
        let shown = if dir.is_empty() || dir == "." {
            "./".to_string()
        } else {
            format!("{dir}/")
        };
        if !dirs.contains(&shown) {
            dirs.push(shown);
        }
    }
    let more = if dirs.len() > 5 { ", ..." } else { "" };
    dirs.truncate(5);
    Some(format!(
        "[skipped {count} entr{} whose name is not valid UTF-8 (tools cannot name it), in: {}{more}; rename it from a shell to include it]",
        if count == 1 { "y" } else { "ies" },
        dirs.join(", ")
    ))
}

/// Inside the component: `wasi:filesystem` directly. wasi-libc's `stat` asks the host twice (the
/// metadata hash for `st_ino`), and reading through its streams costs two
/// stream reads and a drop; its `readdir` asks for a metadata hash per entry
/// (for `d_ino`), which a walk does not need. Paths resolve through the same preopen as with
/// std (see [`crate::paths::find_preopen`]) and errors carry the errno wasi-libc
/// would set, so messages do not change. Off wasm32: std.
#[cfg(target_os = "wasi")]
mod imp {
    use std::io;

    use wasip2::filesystem::types::{
        Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags,
    };

    use super::{EntryType, Head, Meta};
    use crate::bindings::warden::tool::host_fs;
    use crate::paths;

    /// Metadata of `path`, following a final symlink. Asks without
    /// following first: only a symlink needs the second question, and for
    /// anything else the two agree.
    pub fn stat(path: &str) -> io::Result<Meta> {
        let (dir, rel) = preopen(path)?;
        let mut stat = dir.stat_at(PathFlags::empty(), rel).map_err(error)?;
        if stat.type_ == DescriptorType::SymbolicLink {
            stat = dir.stat_at(PathFlags::SYMLINK_FOLLOW, rel).map_err(error)?;
        }
        Ok(Meta {
            is_dir: stat.type_ == DescriptorType::Directory,
            regular: stat.type_ == DescriptorType::RegularFile,
            len: stat.size,
        })
    }

    /// The size and first `max` bytes of `path` when it is a regular file
    /// (not through a final symlink), in one host call: `None` when the
    /// host cannot tell that way (then [`stat`] and [`open`] say what it
    /// is, and word any error as before). A missing file is an error.
    pub fn read_head(path: &str, max: usize) -> io::Result<Option<Head>> {
        let (dir, rel) = preopen(path)?;
        match host_fs::read_head(dir, rel, max as u64) {
            Ok(Some(head)) => Ok(Some(Head {
                len: head.size,
                whole: head.whole,
                data: head.data,
            })),
            Err(ErrorCode::NoEntry) => Err(error(ErrorCode::NoEntry)),
            Ok(None) | Err(_) => Ok(None),
        }
    }

    /// Opens `path` for reading, like `File::open`; `meta` is its [`stat`].
    pub fn open(path: &str, meta: &Meta) -> io::Result<File> {
        let (dir, rel) = preopen(path)?;
        let descriptor = dir
            .open_at(
                PathFlags::SYMLINK_FOLLOW,
                rel,
                OpenFlags::empty(),
                DescriptorFlags::READ,
            )
            .map_err(error)?;
        Ok(File {
            descriptor,
            pos: 0,
            end: false,
            regular: meta.regular,
        })
    }

    /// The entries of directory `path` (following a final symlink, like
    /// `std::fs::read_dir`), sorted by name: one host call for the whole
    /// listing, typed without a `stat` per entry.
    pub fn read_dir(path: &str) -> io::Result<Vec<(String, EntryType)>> {
        let (dir, rel) = preopen(path)?;
        let descriptor = dir
            .open_at(
                PathFlags::SYMLINK_FOLLOW,
                rel,
                OpenFlags::DIRECTORY,
                DescriptorFlags::READ,
            )
            .map_err(error)?;
        let listing = match host_fs::list_dir(&descriptor) {
            Ok(listing) => listing,
            Err(ErrorCode::Unsupported) => return read_dir_by_entry(path, &descriptor),
            Err(code) => return Err(error(code)),
        };
        for _ in 0..listing.bad_names {
            super::note_bad_name(path);
        }
        Ok(listing
            .entries
            .into_iter()
            .map(|e| {
                let t = entry_type(&descriptor, e.type_, &e.name);
                (e.name, t)
            })
            .collect())
    }

    /// `read_dir` through WASI's `read-directory`, one host call per entry,
    /// where the host has no listing call.
    fn read_dir_by_entry(
        path: &str,
        descriptor: &Descriptor,
    ) -> io::Result<Vec<(String, EntryType)>> {
        let stream = descriptor.read_directory().map_err(error)?;
        let mut entries = Vec::new();
        loop {
            let entry = match stream.read_directory_entry() {
                Ok(Some(entry)) => entry,
                Ok(None) => break,
                // The host cannot hand over a name that is not UTF-8: the
                // entry is left out and its directory named in a note.
                Err(ErrorCode::IllegalByteSequence) => {
                    super::note_bad_name(path);
                    continue;
                }
                Err(code) => return Err(error(code)),
            };
            let entry_type = entry_type(descriptor, entry.type_, &entry.name);
            entries.push((entry.name, entry_type));
        }
        Ok(entries)
    }

    /// What an entry is; asks the host only when the listing did not say
    /// (some file systems), without following a symlink.
    fn entry_type(dir: &Descriptor, t: DescriptorType, name: &str) -> EntryType {
        let t = match t {
            DescriptorType::Unknown => match dir.stat_at(PathFlags::empty(), name) {
                Ok(stat) => stat.type_,
                Err(_) => DescriptorType::Unknown,
            },
            t => t,
        };
        match t {
            DescriptorType::RegularFile => EntryType::File,
            DescriptorType::Directory => EntryType::Dir,
            DescriptorType::SymbolicLink => EntryType::Symlink,
            _ => EntryType::Special,
        }
    }

    fn preopen(path: &str) -> io::Result<(&'static Descriptor, &str)> {
        paths::find_preopen(path).ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))
    }

    /// A file read with positioned reads, one host call per buffer fill.
    pub struct File {
        descriptor: Descriptor,
        pos: u64,
        /// A read came back short: the end of a regular file (its pread
        /// is short only there), so the next read need not ask the host.
        end: bool,
        regular: bool,
    }

    impl io::Read for File {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.end || buf.is_empty() {
                return Ok(0);
            }
            let want = buf.len().min(super::MAX_READ);
            let (data, eof) = self.descriptor.read(want as u64, self.pos).map_err(error)?;
            let n = data.len().min(want);
            buf[..n].copy_from_slice(&data[..n]);
            self.pos += n as u64;
            self.end = eof || n == 0 || (self.regular && n < want);
            Ok(n)
        }
    }

    /// The io error std would report: wasi-libc's errno for `code`.
    fn error(code: ErrorCode) -> io::Error {
        io::Error::from_raw_os_error(match code {
            ErrorCode::Access => libc::EACCES,
            ErrorCode::WouldBlock => libc::EAGAIN,
            ErrorCode::Already => libc::EALREADY,
            ErrorCode::BadDescriptor => libc::EBADF,
            ErrorCode::Busy => libc::EBUSY,
            ErrorCode::Deadlock => libc::EDEADLK,
            ErrorCode::Quota => libc::EDQUOT,
            ErrorCode::Exist => libc::EEXIST,
            ErrorCode::FileTooLarge => libc::EFBIG,
            ErrorCode::IllegalByteSequence => libc::EILSEQ,
            ErrorCode::InProgress => libc::EINPROGRESS,
            ErrorCode::Interrupted => libc::EINTR,
            ErrorCode::Invalid => libc::EINVAL,
            ErrorCode::Io => libc::EIO,
            ErrorCode::IsDirectory => libc::EISDIR,
            ErrorCode::Loop => libc::ELOOP,
            ErrorCode::TooManyLinks => libc::EMLINK,
            ErrorCode::MessageSize => libc::EMSGSIZE,
            ErrorCode::NameTooLong => libc::ENAMETOOLONG,
            ErrorCode::NoDevice => libc::ENODEV,
            ErrorCode::NoEntry => libc::ENOENT,
            ErrorCode::NoLock => libc::ENOLCK,
            ErrorCode::InsufficientMemory => libc::ENOMEM,
            ErrorCode::InsufficientSpace => libc::ENOSPC,
            ErrorCode::NotDirectory => libc::ENOTDIR,
            ErrorCode::NotEmpty => libc::ENOTEMPTY,
            ErrorCode::NotRecoverable => libc::ENOTRECOVERABLE,
            ErrorCode::Unsupported => libc::ENOTSUP,
            ErrorCode::NoTty => libc::ENOTTY,
            ErrorCode::NoSuchDevice => libc::ENXIO,
            ErrorCode::Overflow => libc::EOVERFLOW,
            ErrorCode::NotPermitted => libc::EPERM,
            ErrorCode::Pipe => libc::EPIPE,
            ErrorCode::ReadOnly => libc::EROFS,
            ErrorCode::InvalidSeek => libc::ESPIPE,
            ErrorCode::TextFileBusy => libc::ETXTBSY,
            ErrorCode::CrossDevice => libc::EXDEV,
        })
    }
}

#[cfg(not(target_os = "wasi"))]
mod imp {
    use std::fs;
    use std::io;

    pub use fs::File;

    use super::{EntryType, Meta};

    /// Metadata of `path`, following a final symlink (not following first,
    /// like the component).
    pub fn stat(path: &str) -> io::Result<Meta> {
        let mut meta = fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            meta = fs::metadata(path)?;
        }
        Ok(Meta {
            is_dir: meta.is_dir(),
            regular: meta.is_file(),
            len: meta.len(),
        })
    }

    /// Off wasm32 there is no host call to read a file in one go.
    pub fn read_head(_path: &str, _max: usize) -> io::Result<Option<super::Head>> {
        Ok(None)
    }

    pub fn open(path: &str, _meta: &Meta) -> io::Result<File> {
        File::open(path)
    }

    /// The entries of directory `path`, in the system's order.
    pub fn read_dir(path: &str) -> io::Result<Vec<(String, EntryType)>> {
        let mut entries = Vec::new();
        for entry in fs::read_dir(path)? {
            let entry = entry?;
            let t = entry.file_type()?;
            let entry_type = if t.is_file() {
                EntryType::File
            } else if t.is_dir() {
                EntryType::Dir
            } else if t.is_symlink() {
                EntryType::Symlink
            } else {
                EntryType::Special
            };
            match entry.file_name().into_string() {
                Ok(name) => entries.push((name, entry_type)),
                Err(_) => super::note_bad_name(path),
            }
        }
        Ok(entries)
    }
}

pub use imp::{open, read_dir, read_head, stat};
