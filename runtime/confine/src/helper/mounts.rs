//! The run's mount namespace: every mount read-only but the write grants
//! (metadata is not Landlock's), and its own `/proc`.

use std::os::fd::OwnedFd;

use nix::errno::Errno;

use super::process::Grant;

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
pub(super) struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Makes every mount of the run's namespace read-only but where the write
/// grants are. Landlock checks opening, creating and removing files, not a
/// file's metadata: without this, a command could change the mode, owner,
/// times and extended attributes of any file its user owns, anywhere (a
/// root warden's command: make any program setuid root). Each write grant
/// is a writable copy of its mount, taken before the rest turns read-only
/// and put back on top of its path. Nothing here reaches the host's mounts.
pub(super) fn read_only_but(grants: &[Grant]) -> Result<(), String> {
    use std::os::fd::{AsRawFd, FromRawFd};
    let fail = |what: &str, e: Errno| {
        let kind = if e == Errno::ENOSYS {
            "unavailable"
        } else {
            "setup"
        };
        format!("{kind} cannot {what} ({e}); warden needs Linux 5.12 or later")
    };
    let mut copies = Vec::new();
    for g in grants.iter().filter(|g| g.write) {
        // SAFETY: a descriptor borrowed for the call, an empty path and
        // flags; the descriptor returned is owned below.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_open_tree,
                g.fd.as_raw_fd(),
                c"".as_ptr(),
                libc::OPEN_TREE_CLONE
                    | libc::OPEN_TREE_CLOEXEC
                    | (libc::AT_RECURSIVE | libc::AT_EMPTY_PATH) as u32,
            )
        };
        if fd < 0 {
            let what = format!("copy the mount of the write grant {}", g.path.display());
            return Err(fail(&what, Errno::last()));
        }
        let fd = i32::try_from(fd).expect("a descriptor");
        // SAFETY: `fd` was just returned by open_tree and is owned by no one else.
        copies.push((unsafe { OwnedFd::from_raw_fd(fd) }, g));
    }
    let attr = MountAttr {
        attr_set: libc::MOUNT_ATTR_RDONLY,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a path, flags and a pointer to `attr` with its size.
    let done = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            c"/".as_ptr(),
            libc::AT_RECURSIVE,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if done != 0 {
        return Err(fail("make the run's mounts read-only", Errno::last()));
    }
    for (copy, g) in copies {
        // SAFETY: two descriptors borrowed for the call, empty paths.
        let done = unsafe {
            libc::syscall(
                libc::SYS_move_mount,
                copy.as_raw_fd(),
                c"".as_ptr(),
                g.fd.as_raw_fd(),
                c"".as_ptr(),
                libc::MOVE_MOUNT_F_EMPTY_PATH | libc::MOVE_MOUNT_T_EMPTY_PATH,
            )
        };
        if done != 0 {
            let what = format!("keep {} writable", g.path.display());
            return Err(fail(&what, Errno::last()));
        }
    }
    Ok(())
}

/// Mounts, in the run's own mount namespace, a procfs of its PID
/// namespace on `/proc`: `ps` and `/proc/self` work, and only the run's
/// own processes are in it. Where the kernel refuses (a container whose
/// `/proc` is partly hidden), the run has none: the host's `/proc` stays
/// out of its Landlock rules either way.
pub(super) fn mount_proc() -> Result<(), Errno> {
    use nix::mount::{MsFlags, mount};
    // Nothing mounted here reaches the host's mount namespace.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )?;
    mount(
        Some("proc"),
        "/proc",
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
}
