//! The seccomp filter every process of a run inherits.

/// `setxattrat(2)` and `removexattrat(2)` (Linux 6.13; the same number on
/// every architecture, not yet in `libc`).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;

/// Which run the filter is for: what the fallback refuses beyond the
/// namespaced run, which namespaces give it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Filter {
    /// User, PID, mount, IPC (and network) namespaces confine the rest.
    Namespaced,
    /// Landlock and seccomp alone; `network`: the host network is granted.
    Alone { network: bool },
}

/// A seccomp filter for the whole run:
/// - sockets of the Internet and netlink families only: no Unix-domain
///   socket of its own (Landlock does not check `connect` to a socket
///   file, so one could reach the session bus, an ssh agent or docker),
///   and of `socketpair` only the stream and seqpacket kinds (they reach
///   nothing; a datagram pair, which the kernel also makes of `SOCK_RAW`,
///   can `sendto` any socket file by path); no vsock (not namespaced:
///   the hypervisor and other VMs), no Bluetooth;
/// - no set-id bit in any mode a file gets (the `chmod` family, and the
///   mode of `open`, `mknod` and `mkdir`), and no extended attribute set
///   or removed (`security.capability` would be a file capability): a
///   root warden's command must not leave a file that escalates whoever
///   runs it next; `openat2`, whose mode the filter cannot read, is
///   answered `ENOSYS`, so programs use `openat`;
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
/// Alone (no namespaces), also: no socket at all without a network grant;
/// no new namespace (`unshare`, `setns`, `clone` with a `CLONE_NEW*` flag;
/// `clone3`, whose flags it cannot read, is answered `ENOSYS`, and libc
/// falls back to `clone`); no `ptrace`, `process_vm_*`, `pidfd_getfd` or
/// `kcmp` (the host's processes of the same user are there); no System V
/// IPC (the host's).
///
/// A call of another ABI (i386 through `int 0x80`) kills the process: its
/// numbers are not these; one through x32 is refused.
pub(super) fn seccomp(filter: Filter) -> Result<(), String> {
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule,
    };
    type Rules = Vec<(i64, Vec<SeccompRule>)>;
    let cond = |arg, op, value| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value);
    let num = |f: i32| u64::try_from(f).expect("positive");
    let unix = num(libc::AF_UNIX);
    // A rule per set-id bit of the mode argument `arg`.
    let set_id = |arg: u8| -> Result<Vec<SeccompRule>, seccompiler::Error> {
        let mut rules = Vec::new();
        for bit in [libc::S_ISUID, libc::S_ISGID] {
            let bit = u64::from(bit);
            rules.push(SeccompRule::new(vec![cond(
                arg,
                SeccompCmpOp::MaskedEq(bit),
                bit,
            )?])?);
        }
        Ok(rules)
    };
    let alone = matches!(filter, Filter::Alone { .. });
    let refused = || -> Result<Rules, seccompiler::Error> {
        let socket = match filter {
            Filter::Alone { network: false } => vec![],
            _ => vec![SeccompRule::new(vec![
                cond(0, SeccompCmpOp::Ne, num(libc::AF_INET))?,
                cond(0, SeccompCmpOp::Ne, num(libc::AF_INET6))?,
                cond(0, SeccompCmpOp::Ne, num(libc::AF_NETLINK))?,
            ])?],
        };
        // Of socketpair: AF_UNIX only, and of its types (less
        // SOCK_NONBLOCK / SOCK_CLOEXEC) stream and seqpacket only.
        let mut socketpair = vec![SeccompRule::new(vec![cond(0, SeccompCmpOp::Ne, unix)?])?];
        for kind in 0..16u64 {
            if kind != num(libc::SOCK_STREAM) && kind != num(libc::SOCK_SEQPACKET) {
                socketpair.push(SeccompRule::new(vec![cond(
                    1,
                    SeccompCmpOp::MaskedEq(0xf),
                    kind,
                )?])?);
            }
        }
        let mut rules: Rules = vec![
            (libc::SYS_socket, socket),
            (libc::SYS_socketpair, socketpair),
            (libc::SYS_chmod, set_id(1)?),
            (libc::SYS_fchmod, set_id(1)?),
            (libc::SYS_fchmodat, set_id(2)?),
            (libc::SYS_fchmodat2, set_id(2)?),
            (libc::SYS_open, set_id(2)?),
            (libc::SYS_openat, set_id(3)?),
            (libc::SYS_creat, set_id(1)?),
            (libc::SYS_mknod, set_id(1)?),
            (libc::SYS_mknodat, set_id(2)?),
            (libc::SYS_mkdir, set_id(1)?),
            (libc::SYS_mkdirat, set_id(2)?),
            (libc::SYS_setxattr, vec![]),
            (libc::SYS_lsetxattr, vec![]),
            (libc::SYS_fsetxattr, vec![]),
            (SYS_SETXATTRAT, vec![]),
            (libc::SYS_removexattr, vec![]),
            (libc::SYS_lremovexattr, vec![]),
            (libc::SYS_fremovexattr, vec![]),
            (SYS_REMOVEXATTRAT, vec![]),
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
        if alone {
            let new_ns = [
                libc::CLONE_NEWNS,
                libc::CLONE_NEWUTS,
                libc::CLONE_NEWIPC,
                libc::CLONE_NEWUSER,
                libc::CLONE_NEWPID,
                libc::CLONE_NEWNET,
                libc::CLONE_NEWCGROUP,
                libc::CLONE_NEWTIME,
            ]
            .into_iter()
            .map(|flag| {
                let flag = num(flag);
                Ok(SeccompRule::new(vec![cond(
                    0,
                    SeccompCmpOp::MaskedEq(flag),
                    flag,
                )?])?)
            })
            .collect::<Result<Vec<_>, seccompiler::Error>>()?;
            rules.extend([
                (libc::SYS_clone, new_ns),
                (libc::SYS_unshare, vec![]),
                (libc::SYS_setns, vec![]),
                (libc::SYS_ptrace, vec![]),
                (libc::SYS_process_vm_readv, vec![]),
                (libc::SYS_process_vm_writev, vec![]),
                (libc::SYS_pidfd_getfd, vec![]),
                (libc::SYS_kcmp, vec![]),
                (libc::SYS_shmget, vec![]),
                (libc::SYS_shmat, vec![]),
                (libc::SYS_shmctl, vec![]),
                (libc::SYS_semget, vec![]),
                (libc::SYS_semop, vec![]),
                (libc::SYS_semtimedop, vec![]),
                (libc::SYS_semctl, vec![]),
                (libc::SYS_msgget, vec![]),
                (libc::SYS_msgsnd, vec![]),
                (libc::SYS_msgrcv, vec![]),
                (libc::SYS_msgctl, vec![]),
            ]);
        }
        Ok(rules)
    };
    // Calls a program may try and do without: `ENOSYS` says "use the
    // older call" (`openat` for `openat2`, `clone` for `clone3`).
    let unknown = || -> Rules {
        let mut rules: Rules = vec![(libc::SYS_openat2, vec![])];
        if alone {
            rules.push((libc::SYS_clone3, vec![]));
        }
        rules
    };
    let compile = |rules: Rules, errno: i32| -> Result<BpfProgram, seccompiler::Error> {
        let filter = SeccompFilter::new(
            rules.into_iter().collect(),
            SeccompAction::Allow,
            SeccompAction::Errno(u32::try_from(errno).expect("positive")),
            std::env::consts::ARCH.try_into()?,
        )?;
        Ok(filter.try_into()?)
    };
    let programs = refused()
        .and_then(|rules| compile(rules, libc::EACCES))
        .and_then(|first| Ok((first, compile(unknown(), libc::ENOSYS)?)))
        .map_err(|e| format!("setup seccomp filter: {e}"))?;
    // The kernel checks a filter against every call number when it is
    // attached (to learn which always pass): a short filter of its own for
    // the x32 ABI halves the long one, which would otherwise list every
    // number twice.
    let filters = [no_x32(), programs.0, programs.1];
    for program in filters.iter().filter(|p| !p.is_empty()) {
        seccompiler::apply_filter(program).map_err(|e| {
            format!("unavailable seccomp filters are not available in this kernel: {e}")
        })?;
    }
    Ok(())
}

/// On x86_64, every call through the x32 ABI (its bit set in the number,
/// with the same audit arch) refused: a filter of the plain numbers would
/// not see them, and no program here needs them. Elsewhere: none.
fn no_x32() -> seccompiler::BpfProgram {
    use seccompiler::sock_filter;
    if !cfg!(target_arch = "x86_64") {
        return Vec::new();
    }
    // `struct seccomp_data`: the number at 0, the arch at 4.
    const NR: u32 = 0;
    const ARCH: u32 = 4;
    const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
    const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;
    const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
    let op = |code: u32, jt: u8, jf: u8, k: u32| sock_filter {
        code: u16::try_from(code).expect("a BPF opcode"),
        jt,
        jf,
        k,
    };
    let load = libc::BPF_LD | libc::BPF_W | libc::BPF_ABS;
    vec![
        op(load, 0, 0, ARCH),
        // Another arch: not this filter's (the main one kills it).
        op(
            libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K,
            0,
            3,
            AUDIT_ARCH_X86_64,
        ),
        op(load, 0, 0, NR),
        op(
            libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K,
            0,
            1,
            u32::try_from(X32_SYSCALL_BIT).expect("fits"),
        ),
        op(
            libc::BPF_RET | libc::BPF_K,
            0,
            0,
            SECCOMP_RET_ERRNO | u32::try_from(libc::EACCES).expect("positive"),
        ),
        op(libc::BPF_RET | libc::BPF_K, 0, 0, SECCOMP_RET_ALLOW),
    ]
}

/// `__X32_SYSCALL_BIT` of the x86_64 kernel.
const X32_SYSCALL_BIT: i64 = 0x4000_0000;
