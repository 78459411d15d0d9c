//! What this kernel offers the confinement, as the kernel itself reports
//! it: the Landlock ABI, whether user namespaces may be made, and the
//! cgroups a run would be put in. Nothing is confined to learn it: which
//! confinement a run gets is [`probe`](crate::probe)'s answer.

#![allow(unsafe_code)]

use std::path::PathBuf;

/// The facts, each with what they mean for a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// The Landlock ABI version, or why there is none.
    pub landlock: Result<i32, String>,
    /// Whether new user namespaces may be made (the setting that says so),
    /// or why not.
    pub user_namespaces: Result<String, String>,
    /// The `pids` cgroup (v1) a run would be made under, if any.
    pub pids_cgroup: Option<PathBuf>,
    /// The `memory` cgroup (v1) a run would be made under, if any.
    pub memory_cgroup: Option<PathBuf>,
    /// Whether warden runs as root (for whom the kernel ignores the
    /// process-count rlimit, so a run needs the `pids` cgroup).
    pub root: bool,
}

/// Reads the facts of this kernel.
pub fn kernel() -> Kernel {
    Kernel {
        landlock: landlock_abi(),
        user_namespaces: user_namespaces(),
        pids_cgroup: crate::helper::cgroup_parent("pids"),
        memory_cgroup: crate::helper::cgroup_parent("memory"),
        root: nix::unistd::geteuid().is_root(),
    }
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`:
/// the highest ABI the kernel knows, without making a ruleset.
fn landlock_abi() -> Result<i32, String> {
    const VERSION: u32 = 1;
    // SAFETY: with a null attribute and size 0 this flag only asks for the
    // version; no memory is read or written.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            VERSION,
        )
    };
    if v >= 0 {
        return Ok(i32::try_from(v).unwrap_or(i32::MAX));
    }
    Err(match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EOPNOTSUPP) => {
            "built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter)"
                .into()
        }
        _ => "not supported by this kernel (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
            .into(),
    })
}

/// The settings that forbid new user namespaces, read where the kernel
/// shows them. A seccomp filter around warden (a container's) may forbid
/// them too without saying so here: the probe tells.
pub(crate) fn user_namespaces() -> Result<String, String> {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    let max = read("/proc/sys/user/max_user_namespaces");
    if max.as_deref() == Some("0") {
        return Err("disabled: user.max_user_namespaces = 0".into());
    }
    let unprivileged = !nix::unistd::geteuid().is_root();
    if unprivileged && read("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
        return Err(
            "disabled for users other than root: kernel.unprivileged_userns_clone = 0".into(),
        );
    }
    if unprivileged
        && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref() == Some("1")
    {
        return Err("restricted by AppArmor for users other than root: \
             kernel.apparmor_restrict_unprivileged_userns = 1"
            .into());
    }
    match max {
        Some(n) => Ok(format!("user.max_user_namespaces = {n}")),
        None => Err("not built into this kernel (no /proc/sys/user/max_user_namespaces)".into()),
    }
}
