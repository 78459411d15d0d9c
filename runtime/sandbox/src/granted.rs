//! A tool's granted directories, opened once, and a look at a file through
//! them for the user (an approval preview).
//!
//! The handles are the ones every call of the tool preopens, so a preview
//! sees what the tool would see and nothing else: a path is resolved by the
//! kernel beneath its granted directory (no `..` out, no symlink out, no
//! magic links), special files are never opened, and at most a capped
//! number of bytes is read.

use std::path::Path;

use crate::wasi::Mount;

/// What a path holds, as the tool would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Peek {
    /// A regular file's text.
    Text(String),
    /// Nothing there yet (inside a grant).
    Missing,
    /// A directory.
    Dir,
    /// No grant covers the path, or it leads out of its grant (`..`, a
    /// symlink): the tool cannot reach it.
    Outside,
    /// A pipe, socket or device: never opened.
    Special,
    /// A regular file larger than the cap (its size in bytes).
    TooLarge(u64),
    /// A regular file that is not text (not UTF-8, or a NUL byte near its
    /// start), with its size in bytes.
    Binary(u64),
    /// A file is in the way: a component of the path is not a directory.
    Blocked,
    /// It cannot be examined (permissions, a broken path).
    Unreadable,
}

/// The opened directories of one tool, with where each appears inside the
/// guest.
#[derive(Clone)]
pub struct GrantedDirs {
    dirs: Vec<(Mount, std::sync::Arc<dir::Handle>)>,
}

impl std::fmt::Debug for GrantedDirs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.dirs.iter().map(|(m, _)| m))
            .finish()
    }
}

impl GrantedDirs {
    /// Opens each mount's directory once (mounts of the same directory share
    /// the handle). A directory that cannot be opened, or whose path no
    /// longer leads to itself, is an error naming it.
    pub fn open(mounts: &[Mount]) -> Result<GrantedDirs, String> {
        let mut dirs: Vec<(Mount, std::sync::Arc<dir::Handle>)> = Vec::new();
        for m in mounts {
            let handle = match dirs.iter().find(|(o, _)| o.host == m.host) {
                Some((_, h)) => h.clone(),
                None => std::sync::Arc::new(dir::open(&m.host).map_err(|e| {
                    format!(
                        "cannot open granted directory {}: {e}",
                        warden_policy::inert(&m.host.display().to_string())
                    )
                })?),
            };
            dirs.push((m.clone(), handle));
        }
        Ok(GrantedDirs { dirs })
    }

    /// Each mount with a path that leads to its opened directory (for
    /// wasmtime-wasi's preopens).
    pub(crate) fn preopens(&self) -> impl Iterator<Item = (&Mount, &Path)> {
        self.dirs.iter().map(|(m, h)| (m, h.path()))
    }

    /// The handle of the granted directory at `host` (a mount's host path):
    /// the host reaches the tool's files through it, never by path. `None`
    /// off Linux.
    pub fn fd(&self, host: &Path) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.dirs
            .iter()
            .find(|(m, _)| m.host == host)
            .and_then(|(_, h)| h.fd())
    }

    /// Where the granted directories appear inside the guest, in the
    /// order the guest sees them.
    pub fn mounts(&self) -> impl Iterator<Item = &Mount> {
        self.dirs.iter().map(|(m, _)| m)
    }

    /// Mount `i` of [`GrantedDirs::mounts`].
    pub(crate) fn mount(&self, i: usize) -> &Mount {
        &self.dirs[i].0
    }

    /// What `path` (as the model gave it to the tool) holds, reading at most
    /// `max` bytes of a regular file: resolved as the tool resolves it
    /// (`warden-paths`), then looked at beneath that directory's handle.
    /// Returns at once whatever the path is.
    pub fn peek(&self, path: &str, max: u64) -> Peek {
        let names: Vec<&str> = self.mounts().map(|m| m.guest.as_str()).collect();
        match warden_paths::resolve(path, &names) {
            Ok(r) => self.peek_at(r.mount, &r.rel, max),
            Err(_) => Peek::Outside,
        }
    }

    /// What `rel` beneath mount `mount` holds (a path an [`crate::At`]
    /// gives), reading at most `max` bytes of a regular file.
    pub fn peek_at(&self, mount: usize, rel: &str, max: u64) -> Peek {
        match self.dirs.get(mount) {
            Some((_, handle)) => dir::peek(handle, rel, max),
            None => Peek::Outside,
        }
    }
}

/// Opening a granted directory so that the handle is exactly the directory
/// the policy named, and looking beneath it.
#[cfg(target_os = "linux")]
mod dir {
    use std::io::Read;
    use std::os::fd::{AsFd, AsRawFd, OwnedFd};
    use std::path::{Path, PathBuf};

    use rustix::fs::{FileType, Mode, OFlags, ResolveFlags};
    use rustix::io::Errno;

    use super::Peek;

    /// An open directory, reachable by wasmtime-wasi through its
    /// `/proc/self/fd` link (which leads to the open directory itself, not
    /// to whatever its path names now).
    pub(super) struct Handle {
        fd: OwnedFd,
        link: PathBuf,
    }

    impl Handle {
        pub(super) fn path(&self) -> &Path {
            &self.link
        }

        /// The `O_PATH` descriptor of the directory.
        pub(super) fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
            Some(std::os::fd::AsFd::as_fd(&self.fd))
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
        Ok(Handle { fd, link })
    }

    /// Resolves `rel` beneath the handle without opening what it names
    /// (`O_PATH`), then reads it only if it is a regular file, through the
    /// descriptor already resolved (never by path again).
    pub(super) fn peek(handle: &Handle, rel: &str, max: u64) -> Peek {
        let fd = match rustix::fs::openat2(
            handle.fd.as_fd(),
            rel,
            OFlags::PATH | OFlags::CLOEXEC,
            Mode::empty(),
            ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
        ) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Peek::Missing,
            Err(Errno::XDEV) => return Peek::Outside,
            Err(Errno::NOTDIR) => return Peek::Blocked,
            Err(_) => return Peek::Unreadable,
        };
        let Ok(stat) = rustix::fs::fstat(&fd) else {
            return Peek::Unreadable;
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Peek::Dir,
            _ => return Peek::Special,
        }
        let size = stat.st_size.max(0) as u64;
        if size > max {
            return Peek::TooLarge(size);
        }
        // The `O_PATH` descriptor's own link: the same inode, checked above
        // to be a regular file.
        let Ok(file) = rustix::fs::open(
            format!("/proc/self/fd/{}", fd.as_raw_fd()),
            OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOCTTY | OFlags::NONBLOCK,
            Mode::empty(),
        ) else {
            return Peek::Unreadable;
        };
        let mut bytes = Vec::new();
        if std::fs::File::from(file)
            .take(max + 1)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return Peek::Unreadable;
        }
        if bytes.len() as u64 > max {
            return Peek::TooLarge(bytes.len() as u64);
        }
        // Text as the file tools tell it (UTF-8, no NUL near the start).
        if warden_edit::as_text(&bytes).is_none() {
            return Peek::Binary(bytes.len() as u64);
        }
        Peek::Text(String::from_utf8(bytes).expect("as_text checked it is UTF-8"))
    }
}

#[cfg(not(target_os = "linux"))]
mod dir {
    use std::path::{Path, PathBuf};

    use super::Peek;

    pub(super) struct Handle(PathBuf);

    impl Handle {
        pub(super) fn path(&self) -> &Path {
            &self.0
        }

        pub(super) fn fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
            None
        }
    }

    pub(super) fn open(path: &Path) -> std::io::Result<Handle> {
        Ok(Handle(path.to_path_buf()))
    }

    /// Without `openat2` nothing is read for the user.
    pub(super) fn peek(_: &Handle, _: &str, _: u64) -> Peek {
        Peek::Unreadable
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn dirs(ws: &Path) -> GrantedDirs {
        GrantedDirs::open(&[
            Mount {
                host: ws.to_path_buf(),
                guest: ws.display().to_string(),
                write: true,
            },
            Mount {
                host: ws.to_path_buf(),
                guest: ".".into(),
                write: true,
            },
        ])
        .unwrap()
    }

    #[test]
    fn a_peek_sees_what_the_tool_sees_and_nothing_else() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        let ws = base.join("ws");
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::write(ws.join("a.txt"), "one\n").unwrap();
        std::fs::write(ws.join("bin"), [0xff, 0xfe]).unwrap();
        std::fs::write(ws.join("big"), vec![b'x'; 100]).unwrap();
        std::fs::write(base.join("outside.txt"), "SECRET").unwrap();
        std::os::unix::fs::symlink("../outside.txt", ws.join("rel-link")).unwrap();
        std::os::unix::fs::symlink(base.join("outside.txt"), ws.join("abs-link")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", ws.join("zero")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            ws.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let d = dirs(&ws);
        let abs = ws.join("a.txt").display().to_string();
        let outside = base.join("outside.txt").display().to_string();
        let cases: &[(&str, Peek)] = &[
            ("a.txt", Peek::Text("one\n".into())),
            (&abs, Peek::Text("one\n".into())),
            ("sub", Peek::Dir),
            ("sub/new.txt", Peek::Missing),
            ("bin", Peek::Binary(2)),
            ("big", Peek::TooLarge(100)),
            ("fifo", Peek::Special),
            ("../outside.txt", Peek::Outside),
            ("sub/../../outside.txt", Peek::Outside),
            (&outside, Peek::Outside),
            ("/etc/passwd", Peek::Outside),
            ("/dev/zero", Peek::Outside),
            ("rel-link", Peek::Outside),
            ("abs-link", Peek::Outside),
            ("zero", Peek::Outside),
        ];
        for (path, want) in cases {
            assert_eq!(&d.peek(path, 50), want, "{path}");
        }
    }

    /// A grant of `/` is mounted at `/`: every absolute path is under it.
    #[test]
    fn a_peek_under_a_mount_at_the_root_sees_what_the_tool_sees() {
        let base = tempfile::tempdir().unwrap();
        let base = base.path().canonicalize().unwrap();
        std::fs::create_dir(base.join("etc")).unwrap();
        std::fs::write(base.join("etc/x.conf"), "k = v\n").unwrap();
        let d = GrantedDirs::open(&[Mount {
            host: base.clone(),
            guest: "/".into(),
            write: false,
        }])
        .unwrap();
        assert_eq!(d.peek("/etc/x.conf", 50), Peek::Text("k = v\n".into()));
        assert_eq!(d.peek("/etc", 50), Peek::Dir);
        assert_eq!(d.peek("/", 50), Peek::Dir);
        assert_eq!(d.peek("/etc/new", 50), Peek::Missing);
        // `/..` is `/`, as the tools resolve it (and as POSIX has it).
        assert_eq!(d.peek("/../etc/x.conf", 50), Peek::Text("k = v\n".into()));
    }
}
