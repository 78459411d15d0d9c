//! The files of a workspace that warden reads for itself (`warden.toml`,
//! `AGENTS.md`, the components in `.warden/tools`): a cloned repository or
//! a tool granted the workspace may have put anything there. Each is
//! opened without following a link, without waiting (a named pipe would
//! block every command), as a regular file only, and read up to a cap (a
//! link to `/dev/zero` or a sparse file of gigabytes would fill memory).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// Reads `dir/name` as described above, at most `cap` bytes; `Ok(None)`
/// when there is no such file. Each refusal says what the file is and
/// what to do, without the path (the caller names it).
pub fn read_workspace_file(dir: &Path, name: &str, cap: u64) -> io::Result<Option<Vec<u8>>> {
    let opened = rustix::fs::open(
        dir.join(name),
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    );
    let fd = match opened {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(None),
        Err(rustix::io::Errno::LOOP) => {
            return Err(io::Error::other(
                "it is a symbolic link, and warden reads its own files in the workspace only as \
                 regular files, never through a link: replace the link with the file itself",
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let file = File::from(fd);
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(
            "it is not a regular file (a named pipe, socket or device): replace it with a \
             regular file",
        ));
    }
    let too_big = || {
        io::Error::other(format!(
            "it is larger than {}, the most warden reads of it: make it smaller",
            size(cap)
        ))
    };
    if meta.len() > cap {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(cap + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > cap {
        return Err(too_big());
    }
    Ok(Some(bytes))
}

/// `cap` as people write it: `1 MiB`, `256 KiB`.
fn size(cap: u64) -> String {
    match cap {
        c if c >= 1 << 20 && c % (1 << 20) == 0 => format!("{} MiB", c >> 20),
        c if c >= 1 << 10 && c % (1 << 10) == 0 => format!("{} KiB", c >> 10),
        c => format!("{c} bytes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_links_fifos_devices_and_big_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path();
        assert_eq!(read_workspace_file(dir, "none", 10).unwrap(), None);
        std::fs::write(dir.join("ok"), "0123456789").unwrap();
        assert_eq!(
            read_workspace_file(dir, "ok", 10).unwrap().as_deref(),
            Some(&b"0123456789"[..])
        );
        let e = read_workspace_file(dir, "ok", 9).unwrap_err().to_string();
        assert_eq!(
            e,
            "it is larger than 9 bytes, the most warden reads of it: make it smaller"
        );
        std::os::unix::fs::symlink(dir.join("ok"), dir.join("link")).unwrap();
        let e = read_workspace_file(dir, "link", 10)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("it is a symbolic link"), "{e}");
        std::os::unix::fs::symlink("/dev/zero", dir.join("zero")).unwrap();
        assert!(read_workspace_file(dir, "zero", 10).is_err());
        let fifo = dir.join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        // Returns at once: nothing writes to the pipe.
        let e = read_workspace_file(dir, "fifo", 10)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("it is not a regular file"), "{e}");
        assert_eq!(size(1 << 20), "1 MiB");
    }
}
