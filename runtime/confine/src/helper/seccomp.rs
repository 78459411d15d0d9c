//! The seccomp filter every process of a run inherits.

/// A seccomp filter for the whole run:
/// - sockets of the Internet and netlink families only: no Unix-domain
///   socket of its own (Landlock does not check `connect` to a socket
///   file, so one could reach the session bus, an ssh agent or docker; a
///   stream `socketpair` stays allowed, it reaches nothing), no vsock
///   (not namespaced: the hypervisor and other VMs), no Bluetooth;
/// - no io_uring (which would go around the filter);
/// - no kernel keyrings (the session keyring is the host's), and none of
///   `bpf`, `perf_event_open`, `userfaultfd`: kernel surface no command
///   needs;
/// - no inotify and no fanotify: Landlock does not check their watches,
///   and one on a folder outside the grants would report the names of
///   files made there (`tail -f` and the like see inotify missing up front
///   and poll);
/// - no mounting, and no change to a mount's flags (`mount_setattr` is
///   checked by no LSM: it could make the read-only mounts writable).
///
/// A call of another ABI (i386 through `int 0x80`) kills the process: its
/// numbers are not these.
pub(super) fn seccomp() -> Result<(), String> {
    /// `__X32_SYSCALL_BIT` of the x86_64 kernel.
    const X32_SYSCALL_BIT: i64 = 0x4000_0000;
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    let cond = |arg, op, value| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value);
    let family = |f: i32| u64::try_from(f).expect("positive");
    let unix = family(libc::AF_UNIX);
    let build = || -> Result<BpfProgram, seccompiler::Error> {
        let rules = [
            (
                libc::SYS_socket,
                vec![SeccompRule::new(vec![
                    cond(0, SeccompCmpOp::Ne, family(libc::AF_INET))?,
                    cond(0, SeccompCmpOp::Ne, family(libc::AF_INET6))?,
                    cond(0, SeccompCmpOp::Ne, family(libc::AF_NETLINK))?,
                ])?],
            ),
            (
                libc::SYS_socketpair,
                vec![SeccompRule::new(vec![
                    cond(0, SeccompCmpOp::Eq, unix)?,
                    // The type without SOCK_NONBLOCK / SOCK_CLOEXEC.
                    cond(
                        1,
                        SeccompCmpOp::MaskedEq(0xf),
                        u64::try_from(libc::SOCK_DGRAM).expect("positive"),
                    )?,
                ])?],
            ),
            (libc::SYS_io_uring_setup, vec![]),
            (libc::SYS_keyctl, vec![]),
            (libc::SYS_add_key, vec![]),
            (libc::SYS_request_key, vec![]),
            (libc::SYS_bpf, vec![]),
            (libc::SYS_perf_event_open, vec![]),
            (libc::SYS_userfaultfd, vec![]),
            (libc::SYS_inotify_init1, vec![]),
            #[cfg(target_arch = "x86_64")]
            (libc::SYS_inotify_init, vec![]),
            (libc::SYS_inotify_add_watch, vec![]),
            (libc::SYS_fanotify_init, vec![]),
            // The run's mounts as the helper left them: `mount_setattr`
            // (which no LSM checks) would clear the read-only flag on
            // them, and metadata outside the write grants (mode, times,
            // extended attributes, which Landlock does not check) would
            // change. Landlock refuses the others already; here they fail
            // alike.
            (libc::SYS_mount_setattr, vec![]),
            (libc::SYS_mount, vec![]),
            (libc::SYS_umount2, vec![]),
            (libc::SYS_pivot_root, vec![]),
            (libc::SYS_open_tree, vec![]),
            (libc::SYS_move_mount, vec![]),
            (libc::SYS_fsopen, vec![]),
            (libc::SYS_fsconfig, vec![]),
            (libc::SYS_fsmount, vec![]),
            (libc::SYS_fspick, vec![]),
        ];
        // On x86_64 the same calls can be made through the x32 ABI, with
        // its bit set in the number and the same audit arch: where the
        // kernel has x32, they would pass a filter of the plain numbers.
        let x32 = rules
            .iter()
            .filter(|_| cfg!(target_arch = "x86_64"))
            .map(|(nr, rule)| (nr | X32_SYSCALL_BIT, rule.clone()))
            .collect::<Vec<_>>();
        let filter = SeccompFilter::new(
            rules.into_iter().chain(x32).collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(u32::try_from(libc::EACCES).expect("positive")),
            std::env::consts::ARCH.try_into()?,
        )?;
        Ok(filter.try_into()?)
    };
    let program = build().map_err(|e| format!("setup seccomp filter: {e}"))?;
    seccompiler::apply_filter(&program)
        .map_err(|e| format!("unavailable seccomp filters are not available in this kernel: {e}"))
}
