//! What a folder of warden's holds, for `warden doctor`: its mode and the
//! bytes and files in it, counted beneath its handle without following a
//! link.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use crate::StateDir;

/// Deepest folder counted; warden's own folders are a few levels deep.
const MAX_DEPTH: usize = 32;

/// A folder's mode and contents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Its permission bits (`0o700` for a folder warden made).
    pub mode: u32,
    /// The size of the regular files in it, at any depth.
    pub bytes: u64,
    /// How many regular files it holds.
    pub files: u64,
}

impl StateDir {
    /// Opens `base/rel` as [`StateDir::open`] does, with the same checks,
    /// but only if it exists: nothing is created.
    pub fn open_existing(base: &Path, rel: &str) -> io::Result<Option<StateDir>> {
        match std::fs::symlink_metadata(base.join(rel)) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            _ => StateDir::open(base, rel).map(Some),
        }
    }

    /// The folder's mode, and what its files add up to. Links are not
    /// followed (a link counts for nothing), nor are folders past 32 levels.
    pub fn usage(&self) -> io::Result<Usage> {
        let st = rustix::fs::fstat(self.fd())?;
        let mut usage = Usage {
            mode: st.st_mode & 0o7777,
            bytes: 0,
            files: 0,
        };
        add(self.fd(), 0, &mut usage)?;
        Ok(usage)
    }
}

fn add(dir: &OwnedFd, depth: usize, usage: &mut Usage) -> io::Result<()> {
    for entry in Dir::read_from(dir.as_fd())? {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            // Gone since listed.
            continue;
        };
        match FileType::from_raw_mode(st.st_mode) {
            FileType::RegularFile => {
                usage.bytes += st.st_size.max(0) as u64;
                usage.files += 1;
            }
            FileType::Directory if depth < MAX_DEPTH => {
                let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                if let Ok(sub) = rustix::fs::openat(dir, name, flags, Mode::empty()) {
                    add(&sub, depth + 1, usage)?;
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_files_at_every_depth_and_never_through_a_link() {
        let base = tempfile::tempdir().unwrap();
        assert!(
            StateDir::open_existing(base.path(), "warden")
                .unwrap()
                .is_none()
        );
        assert!(!base.path().join("warden").exists(), "nothing is created");
        let dir = StateDir::open(base.path(), "warden").unwrap();
        dir.write_atomic("a", &[0; 1000]).unwrap();
        dir.subdir("sub")
            .unwrap()
            .write_atomic("b", &[0; 24])
            .unwrap();
        // A link to a big file outside counts for nothing.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("big"), vec![0; 1 << 20]).unwrap();
        std::os::unix::fs::symlink(outside.path().join("big"), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("dirlink")).unwrap();
        let again = StateDir::open_existing(base.path(), "warden")
            .unwrap()
            .unwrap();
        assert_eq!(
            again.usage().unwrap(),
            Usage {
                mode: 0o700,
                bytes: 1024,
                files: 2
            }
        );
    }
}
