//! Files warden reads for itself from a workspace (`warden.toml`,
//! `.warden/tools/*`, `AGENTS.md`): a cloned repository, or a tool granted
//! write access, decides what is there. Each file is opened beneath a held
//! folder with `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`, must be a regular
//! file (checked on the descriptor opened, and the same inode as the entry
//! looked at), and is read to at most a cap: a link cannot point warden at
//! another file or a device, a named pipe cannot stall it, and `/dev/zero`
//! or a sparse file of many GB cannot fill its memory.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt as _};
use std::path::{Component, Path, PathBuf};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// A file warden reads for itself that it cannot use: the path, and why.
#[derive(Debug, thiserror::Error)]
#[error("{} {why}", path.display())]
pub struct InputError {
    /// The file or folder.
    pub path: PathBuf,
    /// What is wrong with it, and what to do.
    pub why: Why,
}

/// Why a file (or a folder on the way to it) is refused. Each message
/// continues the file's name and ends with what to do.
#[derive(Debug, thiserror::Error)]
pub enum Why {
    /// A symbolic link, never followed (the noun: `file` or `folder`).
    #[error(
        "is a symbolic link; warden does not follow links for its own files: replace the link \
         with the {0} it points to"
    )]
    Link(&'static str),
    /// Not a regular file (what it is instead).
    #[error(
        "is {0}, not a regular file; warden reads its own files only from regular files: \
         replace it with a regular file"
    )]
    NotFile(&'static str),
    /// On the way to a file, not a folder (what it is instead).
    #[error("is {0}, not a folder: move it away")]
    NotFolder(&'static str),
    /// Larger than the cap for this file (its size, when known, and the cap).
    #[error("is {}, more than the {} warden reads of this file: make it smaller", shown(*.size), shown(*.cap))]
    TooLarge {
        /// Its size, or past the cap when it grew while read.
        size: u64,
        /// The most read of this file.
        cap: u64,
    },
    /// The system refused.
    #[error("cannot be read ({0})")]
    Io(#[source] io::Error),
}

/// A size in the unit a person reads it in: `1 MiB`, `2.5 MiB`, `300 KiB`.
fn shown(n: u64) -> String {
    for (unit, shift) in [("GiB", 30), ("MiB", 20), ("KiB", 10)] {
        if n >= 1 << shift {
            let whole = n >> shift;
            let tenth = ((n % (1 << shift)) * 10) >> shift;
            return match tenth {
                0 => format!("{whole} {unit}"),
                t => format!("{whole}.{t} {unit}"),
            };
        }
    }
    format!("{n} bytes")
}

/// A folder warden reads files of its own from, held open: the workspace
/// root or a folder beneath it, or a folder of the user's.
#[derive(Debug)]
pub struct InputDir {
    path: PathBuf,
    fd: OwnedFd,
    /// Links beneath it are followed (a folder of the user's own, set up
    /// as they chose), or refused (the workspace).
    follow: bool,
}

impl InputDir {
    /// The workspace root at `root` (as given: it is the folder the user
    /// chose). Nothing beneath it is reached through a link.
    pub fn workspace(root: &Path) -> Result<InputDir, InputError> {
        InputDir::open(root, false)
    }

    /// A folder of the user's own (`~/.config/warden/tools`): links in
    /// it are followed as the user set them up; what they lead to must
    /// still be a regular file within the cap. `Ok(None)` when missing.
    pub fn users(path: &Path) -> Result<Option<InputDir>, InputError> {
        match InputDir::open(path, true) {
            Ok(dir) => Ok(Some(dir)),
            Err(InputError {
                why: Why::Io(e), ..
            }) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn open(path: &Path, follow: bool) -> Result<InputDir, InputError> {
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| InputError {
            path: path.to_path_buf(),
            why: Why::Io(e.into()),
        })?;
        Ok(InputDir {
            path: path.to_path_buf(),
            fd,
            follow,
        })
    }

    /// The folder's path (for messages).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder `rel` (plain names, such as `.warden/tools`) beneath this
    /// one, each step opened without following a link. `Ok(None)` when
    /// it is missing.
    pub fn dir(&self, rel: &str) -> Result<Option<InputDir>, InputError> {
        let mut path = self.path.clone();
        let mut fd: Option<OwnedFd> = None;
        for part in Path::new(rel).components() {
            let Component::Normal(name) = part else {
                return Err(InputError {
                    path: self.path.join(rel),
                    why: Why::Io(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not a relative path of plain names",
                    )),
                });
            };
            let at = fd.as_ref().unwrap_or(&self.fd);
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let flags = if self.follow {
                flags
            } else {
                flags | OFlags::NOFOLLOW
            };
            path.push(name);
            match rustix::fs::openat(at, name, flags, Mode::empty()) {
                Ok(next) => fd = Some(next),
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => {
                    let why = match what_is(at, name) {
                        Some(FileType::Symlink) => Why::Link("folder"),
                        Some(FileType::Directory) | None => Why::Io(e.into()),
                        Some(other) => Why::NotFolder(kind(other)),
                    };
                    return Err(InputError { path, why });
                }
            }
        }
        let fd = match fd {
            Some(fd) => fd,
            None => self.fd.try_clone().map_err(|e| InputError {
                path: path.clone(),
                why: Why::Io(e),
            })?,
        };
        Ok(Some(InputDir {
            path,
            fd,
            follow: self.follow,
        }))
    }

    /// The contents of the file `name` in the folder, at most `cap` bytes:
    /// a regular file only, opened without waiting and (beneath a
    /// workspace) without following a link. `Ok(None)` when it is missing.
    pub fn read(&self, name: impl AsRef<OsStr>, cap: u64) -> Result<Option<Vec<u8>>, InputError> {
        let name = name.as_ref();
        let refuse = |why| Err(self.error(name, why));
        if !plain(name) {
            return refuse(Why::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a plain file name",
            )));
        }
        // What the entry is, before anything is opened: opening a device
        // can have effects of its own.
        let stat_flags = if self.follow {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let looked = match rustix::fs::statat(&self.fd, name, stat_flags) {
            Ok(s) => s,
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return refuse(Why::Io(e.into())),
        };
        match FileType::from_raw_mode(looked.st_mode) {
            FileType::RegularFile => {}
            FileType::Symlink => return refuse(Why::Link("file")),
            other => return refuse(Why::NotFile(kind(other))),
        }
        let mut flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        if !self.follow {
            flags |= OFlags::NOFOLLOW;
        }
        let fd = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) if !self.follow => return refuse(Why::Link("file")),
            Err(e) => return refuse(Why::Io(e.into())),
        };
        let opened = rustix::fs::fstat(&fd).map_err(|e| self.error(name, Why::Io(e.into())))?;
        // Swapped between the look and the open: say what it is now.
        if FileType::from_raw_mode(opened.st_mode) != FileType::RegularFile {
            return refuse(Why::NotFile(kind(FileType::from_raw_mode(opened.st_mode))));
        }
        if (opened.st_dev, opened.st_ino) != (looked.st_dev, looked.st_ino) {
            return refuse(Why::Io(io::Error::other(
                "it was replaced while opened; try again",
            )));
        }
        let size = opened.st_size.max(0) as u64;
        if size > cap {
            return refuse(Why::TooLarge { size, cap });
        }
        let mut bytes = Vec::with_capacity(size as usize);
        File::from(fd)
            .take(cap + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| self.error(name, Why::Io(e)))?;
        if bytes.len() as u64 > cap {
            return refuse(Why::TooLarge {
                size: bytes.len() as u64,
                cap,
            });
        }
        Ok(Some(bytes))
    }

    /// Names of the entries in the folder (of any kind), sorted.
    pub fn names(&self) -> Result<Vec<std::ffi::OsString>, InputError> {
        let io = |e: Errno| InputError {
            path: self.path.clone(),
            why: Why::Io(e.into()),
        };
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd).map_err(io)? {
            let name = entry.map_err(io)?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                names.push(std::ffi::OsString::from_vec(name));
            }
        }
        names.sort();
        Ok(names)
    }

    fn error(&self, name: &OsStr, why: Why) -> InputError {
        InputError {
            path: self.path.join(name),
            why,
        }
    }
}

/// The type of the entry `name` in `dir`, the entry itself (a link is a
/// link).
fn what_is(dir: &OwnedFd, name: &OsStr) -> Option<FileType> {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|s| FileType::from_raw_mode(s.st_mode))
}

/// What a file of this type is called in a message.
fn kind(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "a regular file",
        FileType::Directory => "a folder",
        FileType::Symlink => "a symbolic link",
        FileType::Fifo => "a named pipe (FIFO)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        _ => "of an unknown type",
    }
}

/// `name` is one plain path component.
fn plain(name: &OsStr) -> bool {
    let b = name.as_bytes();
    !b.is_empty() && !b.contains(&b'/') && !b.contains(&0) && b != b"." && b != b".."
}

#[cfg(test)]
mod tests;
