//! A private folder of warden's and the files in it, never through a link.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, Mode, OFlags};

/// An exclusive hold on a [`StateDir`], let go when dropped.
#[derive(Debug)]
pub struct DirLock {
    _held: OwnedFd,
}

/// A folder warden created for its own state, held open.
#[derive(Debug)]
pub struct StateDir {
    path: PathBuf,
    fd: OwnedFd,
}

fn dir_flags() -> OFlags {
    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC
}

fn private() -> Mode {
    Mode::from_raw_mode(0o700)
}

impl StateDir {
    /// Opens `base/rel`, creating what is missing. `base` is a per-user
    /// folder such as `$XDG_STATE_HOME` (created if missing, and followed
    /// as the user set it up); every component of `rel` is warden's own:
    /// created mode 0700, and refused if it is a symlink, not a folder,
    /// not the user's, or writable by others.
    pub fn open(base: &Path, rel: &str) -> io::Result<StateDir> {
        std::fs::create_dir_all(base)?;
        let mut dir = StateDir {
            path: base.to_path_buf(),
            fd: rustix::fs::open(
                base,
                OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                Mode::empty(),
            )?,
        };
        for part in Path::new(rel).components() {
            match part {
                Component::Normal(name) => dir = dir.subdir(name)?,
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("state folder `{rel}` must be a relative path of plain names"),
                    ));
                }
            }
        }
        Ok(dir)
    }

    /// The folder's path (for messages and for comparing with grants).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder's handle.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    /// The sub-folder `name`, created (mode 0700) when missing; refused
    /// when it is a symlink or not private to the user.
    pub fn subdir(&self, name: impl AsRef<OsStr>) -> io::Result<StateDir> {
        let name = plain(name.as_ref())?;
        match rustix::fs::mkdirat(&self.fd, name, private()) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => return Err(self.error(name, e.into())),
        }
        let fd = rustix::fs::openat(&self.fd, name, dir_flags(), Mode::empty())
            .map_err(|e| self.refused(name, e))?;
        let stat = rustix::fs::fstat(&fd)?;
        let path = self.path.join(name);
        if stat.st_uid != rustix::process::geteuid().as_raw() {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} belongs to another user; warden keeps its state only in folders of yours",
                    path.display()
                ),
            ));
        }
        if stat.st_mode & 0o022 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is writable by other users; run `chmod 700 {}`",
                    path.display(),
                    path.display()
                ),
            ));
        }
        Ok(StateDir { path, fd })
    }

    /// The contents of `name`, or `None` when there is no such file.
    pub fn read(&self, name: impl AsRef<OsStr>) -> io::Result<Option<Vec<u8>>> {
        match self.open_read(name) {
            Ok(mut file) => {
                let mut bytes = Vec::new();
                io::Read::read_to_end(&mut file, &mut bytes)?;
                Ok(Some(bytes))
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Replaces `name` with `bytes` (mode 0600): a temporary file is
    /// written, synced and renamed over it, so a crash leaves the old or the
    /// new contents, never half.
    pub fn write_atomic(&self, name: impl AsRef<OsStr>, bytes: &[u8]) -> io::Result<()> {
        let name = plain(name.as_ref())?;
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let tmp = format!(
            ".{}.{}.{}.tmp",
            name.to_string_lossy(),
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let tmp = OsStr::new(&tmp);
        let written = (|| {
            let mut file = self.open_file(
                tmp,
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL,
                Mode::from_raw_mode(0o600),
            )?;
            file.write_all(bytes)?;
            file.sync_all()?;
            rustix::fs::renameat(&self.fd, tmp, &self.fd, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.fd, tmp, AtFlags::empty());
        }
        written.map_err(|e: io::Error| self.error(name, e))
    }

    /// Creates `name` (mode 0600) for appending; fails if it exists.
    pub fn create_new(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = plain(name.as_ref())?;
        self.open_file(
            name,
            OFlags::WRONLY | OFlags::APPEND | OFlags::CREATE | OFlags::EXCL,
            Mode::from_raw_mode(0o600),
        )
    }

    /// Opens the existing file `name` for reading only.
    pub fn open_read(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = plain(name.as_ref())?;
        self.open_file(name, OFlags::RDONLY, Mode::empty())
    }

    /// Opens the existing file `name` for reading and appending.
    pub fn open_append(&self, name: impl AsRef<OsStr>) -> io::Result<File> {
        let name = plain(name.as_ref())?;
        self.open_file(name, OFlags::RDWR | OFlags::APPEND, Mode::empty())
    }

    /// Names of the regular files in the folder, sorted.
    pub fn files(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.fd)? {
            let entry = entry?;
            if self.is_file(entry.file_name(), entry.file_type())
                && let Ok(name) = entry.file_name().to_str()
            {
                names.push(name.to_string());
            }
        }
        names.sort();
        Ok(names)
    }

    /// Whether the entry `name`, of type `listed` in a listing, is a regular
    /// file. Where the file system does not say (XFS without `ftype`, some
    /// FUSE and network file systems), the entry itself is asked, without
    /// following a symlink.
    fn is_file(&self, name: &std::ffi::CStr, listed: rustix::fs::FileType) -> bool {
        use rustix::fs::FileType;
        match listed {
            FileType::RegularFile => true,
            FileType::Unknown => rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::RegularFile),
            _ => false,
        }
    }

    /// Holds the folder exclusively (`flock` on a handle of its own, so it
    /// excludes other handles in this process as well as other wardens)
    /// until the guard is dropped: for a read-modify-write of a file in it
    /// that two wardens may make at once. Waits for a holder to let go.
    pub fn lock(&self) -> io::Result<DirLock> {
        let fd = rustix::fs::openat(&self.fd, ".", dir_flags(), Mode::empty())?;
        loop {
            match rustix::fs::flock(&fd, rustix::fs::FlockOperation::LockExclusive) {
                Ok(()) => return Ok(DirLock { _held: fd }),
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    let e = io::Error::from(e);
                    let shown = self.path.display();
                    return Err(io::Error::new(
                        e.kind(),
                        format!("cannot lock {shown}: {e}"),
                    ));
                }
            }
        }
    }

    /// Removes the file `name`; a missing file is not an error.
    pub fn remove(&self, name: impl AsRef<OsStr>) -> io::Result<()> {
        let name = plain(name.as_ref())?;
        match rustix::fs::unlinkat(&self.fd, name, AtFlags::empty()) {
            Ok(()) | Err(rustix::io::Errno::NOENT) => Ok(()),
            Err(e) => Err(self.error(name, e.into())),
        }
    }

    fn open_file(&self, name: &OsStr, flags: OFlags, mode: Mode) -> io::Result<File> {
        let fd = rustix::fs::openat(
            &self.fd,
            name,
            // Non-blocking: a named pipe put there opens at once, and is
            // then refused as not a file, instead of waiting for a writer.
            flags | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
            mode,
        )
        .map_err(|e| self.refused(name, e))?;
        let file = File::from(fd);
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{} is not a regular file", self.path.join(name).display()),
            ));
        }
        Ok(file)
    }

    /// `ELOOP` from `O_NOFOLLOW` means a symlink sits where warden keeps a
    /// file of its own: say so, instead of "too many levels of links".
    fn refused(&self, name: &OsStr, e: rustix::io::Errno) -> io::Error {
        if e == rustix::io::Errno::LOOP || e == rustix::io::Errno::NOTDIR {
            return io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "{} is a symlink or not what warden created; warden never follows links in \
                     its own state: remove it and try again",
                    self.path.join(name).display()
                ),
            );
        }
        self.error(name, e.into())
    }

    fn error(&self, name: &OsStr, e: io::Error) -> io::Error {
        io::Error::new(e.kind(), format!("{}: {e}", self.path.join(name).display()))
    }
}

/// `name` must be one plain path component.
fn plain(name: &OsStr) -> io::Result<&OsStr> {
    let bytes = name.as_bytes();
    if bytes.is_empty()
        || bytes.contains(&b'/')
        || bytes.contains(&0)
        || name == "."
        || name == ".."
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{}` is not a plain file name", name.to_string_lossy()),
        ));
    }
    Ok(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_round_trip_in_a_private_folder() {
        let base = tempfile::tempdir().unwrap();
        let dir = StateDir::open(base.path(), "warden/trust").unwrap();
        assert_eq!(dir.read("a.json").unwrap(), None);
        dir.write_atomic("a.json", b"one").unwrap();
        dir.write_atomic("a.json", b"two").unwrap();
        assert_eq!(dir.read("a.json").unwrap().unwrap(), b"two");
        assert_eq!(dir.files().unwrap(), vec!["a.json"]);
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(base.path().join("warden/trust"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let mode = std::fs::metadata(base.path().join("warden/trust/a.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let mut f = dir.create_new("s.jsonl").unwrap();
        f.write_all(b"x\n").unwrap();
        assert!(dir.create_new("s.jsonl").is_err());
        dir.remove("s.jsonl").unwrap();
        dir.remove("s.jsonl").unwrap();
    }

    #[test]
    fn a_planted_symlink_is_refused_never_followed() {
        let base = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        std::fs::write(victim.path().join("v.txt"), "victim").unwrap();
        // A link in place of warden's folder.
        std::os::unix::fs::symlink(victim.path(), base.path().join("warden")).unwrap();
        let e = StateDir::open(base.path(), "warden/sessions").unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        assert!(!victim.path().join("sessions").exists());
        std::fs::remove_file(base.path().join("warden")).unwrap();
        // A link in place of a file.
        let dir = StateDir::open(base.path(), "warden").unwrap();
        std::os::unix::fs::symlink(
            victim.path().join("v.txt"),
            base.path().join("warden/rec.json"),
        )
        .unwrap();
        assert!(
            dir.read("rec.json")
                .unwrap_err()
                .to_string()
                .contains("symlink")
        );
        assert!(dir.open_append("rec.json").is_err());
        // Replacing a link by rename is fine: the link itself is replaced.
        dir.write_atomic("rec.json", b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(victim.path().join("v.txt")).unwrap(),
            "victim"
        );
        assert!(dir.create_new("../x").is_err());
    }

    /// Where a listing does not give an entry's type, the entry is asked.
    #[test]
    fn an_entry_of_unknown_type_is_a_file_only_if_it_is_one() {
        use rustix::fs::FileType;
        let base = tempfile::tempdir().unwrap();
        let dir = StateDir::open(base.path(), "warden").unwrap();
        dir.write_atomic("a.json", b"{}").unwrap();
        std::fs::create_dir(base.path().join("warden/sub")).unwrap();
        std::os::unix::fs::symlink("a.json", base.path().join("warden/link.json")).unwrap();
        let file = |n: &str| dir.is_file(&std::ffi::CString::new(n).unwrap(), FileType::Unknown);
        assert!(file("a.json"));
        assert!(!file("sub") && !file("link.json") && !file("gone.json"));
        assert!(!dir.is_file(c"a.json", FileType::Directory));
    }

    /// A named pipe in place of a record is refused at once: opening it
    /// for reading would wait for a writer.
    #[test]
    fn a_named_pipe_in_place_of_a_file_is_refused_without_waiting() {
        let base = tempfile::tempdir().unwrap();
        let dir = StateDir::open(base.path(), "warden").unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            base.path().join("warden/rec.json"),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(dir.read("rec.json").map(|_| ()).map_err(|e| e.to_string()));
        });
        let read = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("reading a named pipe waited for a writer");
        assert!(read.unwrap_err().contains("not a regular file"));
    }

    #[test]
    fn a_folder_writable_by_others_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let base = tempfile::tempdir().unwrap();
        std::fs::create_dir(base.path().join("warden")).unwrap();
        std::fs::set_permissions(
            base.path().join("warden"),
            std::fs::Permissions::from_mode(0o777),
        )
        .unwrap();
        let e = StateDir::open(base.path(), "warden").unwrap_err();
        assert!(e.to_string().contains("chmod 700"), "{e}");
    }
}
