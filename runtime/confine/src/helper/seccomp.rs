//! The seccomp filter every process of a run inherits.

/// `setxattrat(2)` and `removexattrat(2)` (Linux 6.13; the same number on
/// every architecture, not yet in `libc`).
const SYS_SETXATTRAT: i64 = 463;
const SYS_REMOVEXATTRAT: i64 = 466;
/// `fchmodat2(2)` (Linux 6.6; likewise, and not in `libc` for every
/// target).
const SYS_FCHMODAT2: i64 = 452;

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
    let program = compile(&rules(filter))?;
    // No new privileges: what the filter refuses no set-id program run
    // later gets back (and an unprivileged process may attach a filter).
    // SAFETY: prctl(2) with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } != 0 {
        return Err(format!(
            "setup cannot set no_new_privs: {}",
            std::io::Error::last_os_error()
        ));
    }
    let fprog = libc::sock_fprog {
        len: u16::try_from(program.len()).expect("checked in compile"),
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: seccomp(2) reads `fprog` and the instructions it points to,
    // both live for the call.
    let attached = unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0,
            &raw const fprog,
        )
    };
    if attached != 0 {
        return Err(format!(
            "unavailable seccomp filters are not available in this kernel: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// When a filtered call is refused.
#[derive(Debug)]
enum When {
    /// Always.
    Always,
    /// When any of these holds of its arguments.
    Any(Vec<Cond>),
}

/// A test of one argument (its low 32 bits: every argument tested here is
/// an `int`, a mode or flags that fit in them).
#[derive(Debug)]
enum Cond {
    /// `arg & mask` is none of `values`.
    NotIn {
        arg: u8,
        mask: u32,
        values: Vec<u32>,
    },
    /// `arg` has one of `bits` set.
    AnyBit { arg: u8, bits: u32 },
}

#[cfg(test)]
impl Cond {
    fn holds(&self, args: &[u64; 6]) -> bool {
        let low = |arg: u8| args[usize::from(arg)] as u32;
        match self {
            Cond::NotIn { arg, mask, values } => !values.contains(&(low(*arg) & mask)),
            Cond::AnyBit { arg, bits } => low(*arg) & bits != 0,
        }
    }
}

/// A filtered call: its number, when it is refused, and with what error.
type Rule = (i64, When, i32);

/// The calls the filter refuses, and when (see [`seccomp`]).
fn rules(filter: Filter) -> Vec<Rule> {
    let num = |f: i32| u32::try_from(f).expect("positive");
    let alone = matches!(filter, Filter::Alone { .. });
    let socket = match filter {
        Filter::Alone { network: false } => When::Always,
        _ => When::Any(vec![Cond::NotIn {
            arg: 0,
            mask: u32::MAX,
            values: vec![
                num(libc::AF_INET),
                num(libc::AF_INET6),
                num(libc::AF_NETLINK),
            ],
        }]),
    };
    // Of socketpair: AF_UNIX only, and of its types (less SOCK_NONBLOCK /
    // SOCK_CLOEXEC) stream and seqpacket only.
    let socketpair = When::Any(vec![
        Cond::NotIn {
            arg: 0,
            mask: u32::MAX,
            values: vec![num(libc::AF_UNIX)],
        },
        Cond::NotIn {
            arg: 1,
            mask: 0xf,
            values: vec![num(libc::SOCK_STREAM), num(libc::SOCK_SEQPACKET)],
        },
    ]);
    // A set-id bit in the mode argument `arg`.
    let set_id = |arg: u8| {
        When::Any(vec![Cond::AnyBit {
            arg,
            bits: libc::S_ISUID | libc::S_ISGID,
        }])
    };
    let refused = |nr| (nr, When::Always, libc::EACCES);
    let mut rules = vec![
        (libc::SYS_socket, socket, libc::EACCES),
        (libc::SYS_socketpair, socketpair, libc::EACCES),
        (libc::SYS_fchmod, set_id(1), libc::EACCES),
        (libc::SYS_fchmodat, set_id(2), libc::EACCES),
        (SYS_FCHMODAT2, set_id(2), libc::EACCES),
        (libc::SYS_openat, set_id(3), libc::EACCES),
        (libc::SYS_mknodat, set_id(2), libc::EACCES),
        (libc::SYS_mkdirat, set_id(2), libc::EACCES),
    ];
    // The older calls, where the architecture still has them (aarch64
    // and riscv64 have only the `*at` ones).
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        (libc::SYS_chmod, set_id(1), libc::EACCES),
        (libc::SYS_open, set_id(2), libc::EACCES),
        (libc::SYS_creat, set_id(1), libc::EACCES),
        (libc::SYS_mknod, set_id(1), libc::EACCES),
        (libc::SYS_mkdir, set_id(1), libc::EACCES),
    ]);
    rules.extend(
        [
            libc::SYS_setxattr,
            libc::SYS_lsetxattr,
            libc::SYS_fsetxattr,
            SYS_SETXATTRAT,
            libc::SYS_removexattr,
            libc::SYS_lremovexattr,
            libc::SYS_fremovexattr,
            SYS_REMOVEXATTRAT,
            libc::SYS_io_uring_setup,
            libc::SYS_keyctl,
            libc::SYS_add_key,
            libc::SYS_request_key,
            libc::SYS_bpf,
            libc::SYS_perf_event_open,
            libc::SYS_userfaultfd,
            libc::SYS_inotify_init1,
            #[cfg(target_arch = "x86_64")]
            libc::SYS_inotify_init,
            libc::SYS_inotify_add_watch,
            libc::SYS_fanotify_init,
            // The run's mounts as the helper left them: `mount_setattr`
            // (which no LSM checks) would clear the read-only flag on
            // them, and metadata outside the write grants (mode, times,
            // extended attributes, which Landlock does not check) would
            // change. Landlock refuses the others already; here they fail
            // alike.
            libc::SYS_mount_setattr,
            libc::SYS_mount,
            libc::SYS_umount2,
            libc::SYS_pivot_root,
            libc::SYS_open_tree,
            libc::SYS_move_mount,
            libc::SYS_fsopen,
            libc::SYS_fsconfig,
            libc::SYS_fsmount,
            libc::SYS_fspick,
        ]
        .map(refused),
    );
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
        .fold(0, |bits, flag| bits | num(flag));
        rules.push((
            libc::SYS_clone,
            When::Any(vec![Cond::AnyBit {
                arg: 0,
                bits: new_ns,
            }]),
            libc::EACCES,
        ));
        rules.extend(
            [
                libc::SYS_unshare,
                libc::SYS_setns,
                libc::SYS_ptrace,
                libc::SYS_process_vm_readv,
                libc::SYS_process_vm_writev,
                libc::SYS_pidfd_getfd,
                libc::SYS_kcmp,
                libc::SYS_shmget,
                libc::SYS_shmat,
                libc::SYS_shmctl,
                libc::SYS_semget,
                libc::SYS_semop,
                libc::SYS_semtimedop,
                libc::SYS_semctl,
                libc::SYS_msgget,
                libc::SYS_msgsnd,
                libc::SYS_msgrcv,
                libc::SYS_msgctl,
            ]
            .map(refused),
        );
    }
    // Calls a program may try and do without: `ENOSYS` says "use the
    // older call" (`openat` for `openat2`, `clone` for `clone3`).
    rules.push((libc::SYS_openat2, When::Always, libc::ENOSYS));
    if alone {
        rules.push((libc::SYS_clone3, When::Always, libc::ENOSYS));
    }
    rules
}

/// The audit arch of this build's system calls (another ABI's calls, such
/// as i386's through `int 0x80`, carry another and are killed).
const AUDIT_ARCH: Option<u32> = if cfg!(target_arch = "x86_64") {
    Some(0xc000_003e)
} else if cfg!(target_arch = "aarch64") {
    Some(0xc000_00b7)
} else if cfg!(target_arch = "riscv64") {
    Some(0xc000_00f3)
} else {
    None
};

/// `__X32_SYSCALL_BIT` of the x86_64 kernel: a call with it set is of the
/// x32 ABI, under the same audit arch, and is refused whatever it is (no
/// program here needs one; a filter of the plain numbers would miss them).
const X32_SYSCALL_BIT: u32 = 0x4000_0000;

const RET_ALLOW: u32 = 0x7fff_0000;
const RET_ERRNO: u32 = 0x0005_0000;
const RET_KILL_PROCESS: u32 = 0x8000_0000;
/// Offsets into `struct seccomp_data`: the call's number, its arch, and
/// the low 32 bits of argument `i`.
const NR: u32 = 0;
const ARCH: u32 = 4;
const fn arg_low(i: u8) -> u32 {
    16 + 8 * i as u32 + if cfg!(target_endian = "big") { 4 } else { 0 }
}

/// The classic BPF program of `rules`: the arch checked, then a binary
/// search on the call's number down to the one rule it may meet, so that
/// a call costs a dozen instructions, not one per rule. (The kernel runs
/// a filter once for every call number when it is attached, to learn
/// which always pass: a linear filter of these ~80 calls took ~0.23 ms of
/// every run to attach here; the tree takes a tenth of that.)
fn compile(rules: &[Rule]) -> Result<Vec<libc::sock_filter>, String> {
    let Some(audit_arch) = AUDIT_ARCH else {
        return Err("unavailable no seccomp filter is built for this architecture".into());
    };
    let mut rules: Vec<(u32, &When, i32)> = rules
        .iter()
        .map(|(nr, when, errno)| {
            (
                u32::try_from(*nr).expect("call numbers are positive"),
                when,
                *errno,
            )
        })
        .collect();
    rules.sort_by_key(|r| r.0);
    let mut code = vec![
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, ARCH),
        jump(libc::BPF_JEQ, audit_arch, 1, 0),
        stmt(libc::BPF_RET | libc::BPF_K, RET_KILL_PROCESS),
        stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, NR),
    ];
    if cfg!(target_arch = "x86_64") {
        code.push(jump(libc::BPF_JGE, X32_SYSCALL_BIT, 0, 1));
        code.push(ret_errno(libc::EACCES));
    }
    code.extend(tree(&rules));
    // BPF_MAXINSNS: the kernel takes no longer filter.
    if code.len() > 4096 {
        return Err(format!(
            "setup seccomp filter too long: {} instructions",
            code.len()
        ));
    }
    Ok(code)
}

/// The search over `rules` (sorted by number, at least one), the number
/// loaded: each half's code after one test, a leaf per rule.
fn tree(rules: &[(u32, &When, i32)]) -> Vec<libc::sock_filter> {
    let [(nr, when, errno)] = rules else {
        let (low, high) = rules.split_at(rules.len() / 2);
        let high_start = high[0].0;
        let low = tree(low);
        let high = tree(high);
        // `jge` jumps at most 255 ahead: on "at least", fall on a `ja`
        // (which jumps anywhere) over the lower half.
        let mut code = vec![
            jump(libc::BPF_JGE, high_start, 0, 1),
            stmt(libc::BPF_JMP | libc::BPF_JA, offset(low.len())),
        ];
        code.extend(low);
        code.extend(high);
        return code;
    };
    leaf(*nr, when, *errno)
}

/// One rule's code: not this call, allowed; this call, its conditions
/// tested (each argument loaded, every value compared), refused when one
/// holds.
fn leaf(nr: u32, when: &When, errno: i32) -> Vec<libc::sock_filter> {
    let conds: &[Cond] = match when {
        When::Always => &[],
        When::Any(conds) => conds,
    };
    let size = |c: &Cond| match c {
        Cond::NotIn { mask, values, .. } => 1 + usize::from(*mask != u32::MAX) + values.len(),
        Cond::AnyBit { .. } => 2,
    };
    let tests: usize = conds.iter().map(size).sum();
    // [jeq nr] [tests] [ret allow, when there are tests] [ret errno] [ret allow]
    let refuse = 1 + tests + usize::from(!conds.is_empty());
    let allow = refuse + 1;
    let mut code = vec![jump(libc::BPF_JEQ, nr, 0, short(allow - 1))];
    for cond in conds {
        let next = code.len() + size(cond);
        match cond {
            Cond::NotIn { arg, mask, values } => {
                code.push(stmt(
                    libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
                    arg_low(*arg),
                ));
                if *mask != u32::MAX {
                    code.push(stmt(libc::BPF_ALU | libc::BPF_AND | libc::BPF_K, *mask));
                }
                for (i, value) in values.iter().enumerate() {
                    let at = code.len();
                    // One of the values: this condition does not hold.
                    let miss = if i + 1 == values.len() {
                        short(refuse - at - 1)
                    } else {
                        0
                    };
                    code.push(jump(libc::BPF_JEQ, *value, short(next - at - 1), miss));
                }
            }
            Cond::AnyBit { arg, bits } => {
                code.push(stmt(
                    libc::BPF_LD | libc::BPF_W | libc::BPF_ABS,
                    arg_low(*arg),
                ));
                let at = code.len();
                code.push(jump(libc::BPF_JSET, *bits, short(refuse - at - 1), 0));
            }
        }
    }
    if !conds.is_empty() {
        code.push(stmt(libc::BPF_RET | libc::BPF_K, RET_ALLOW));
    }
    code.push(ret_errno(errno));
    code.push(stmt(libc::BPF_RET | libc::BPF_K, RET_ALLOW));
    code
}

fn stmt(code: u32, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: u16::try_from(code).expect("a BPF opcode"),
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(op: u32, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter {
        code: u16::try_from(libc::BPF_JMP | op | libc::BPF_K).expect("a BPF opcode"),
        jt,
        jf,
        k,
    }
}

fn ret_errno(errno: i32) -> libc::sock_filter {
    stmt(
        libc::BPF_RET | libc::BPF_K,
        RET_ERRNO | u32::try_from(errno).expect("positive"),
    )
}

/// A jump within a leaf (a few dozen instructions at most).
fn short(n: usize) -> u8 {
    u8::try_from(n).expect("a leaf is short")
}

fn offset(n: usize) -> u32 {
    u32::try_from(n).expect("a filter is short")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel answers a call: the classic BPF of `program` run on
    /// `struct seccomp_data` (only the instructions `compile` emits).
    fn run(program: &[libc::sock_filter], arch: u32, nr: u32, args: &[u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_ne_bytes());
        data[4..8].copy_from_slice(&arch.to_ne_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_ne_bytes());
        }
        let (mut pc, mut acc) = (0usize, 0u32);
        loop {
            let op = program[pc];
            let code = u32::from(op.code);
            pc += 1;
            match code {
                c if c == libc::BPF_LD | libc::BPF_W | libc::BPF_ABS => {
                    let at = op.k as usize;
                    acc = u32::from_ne_bytes(data[at..at + 4].try_into().unwrap());
                }
                c if c == libc::BPF_ALU | libc::BPF_AND | libc::BPF_K => acc &= op.k,
                c if c == libc::BPF_RET | libc::BPF_K => return op.k,
                c if c == libc::BPF_JMP | libc::BPF_JA => pc += op.k as usize,
                c => {
                    let taken = match c & !(libc::BPF_JMP | libc::BPF_K) {
                        x if x == libc::BPF_JEQ => acc == op.k,
                        x if x == libc::BPF_JGE => acc >= op.k,
                        x if x == libc::BPF_JSET => acc & op.k != 0,
                        _ => panic!("instruction {code:#x} is not one compile emits"),
                    };
                    pc += usize::from(if taken { op.jt } else { op.jf });
                }
            }
        }
    }

    /// What the rules say of a call, read directly.
    fn meant(rules: &[Rule], nr: u32, args: &[u64; 6]) -> u32 {
        if cfg!(target_arch = "x86_64") && nr >= X32_SYSCALL_BIT {
            return RET_ERRNO | libc::EACCES as u32;
        }
        match rules.iter().find(|r| r.0 == i64::from(nr)) {
            Some((_, When::Always, errno)) => RET_ERRNO | *errno as u32,
            Some((_, When::Any(conds), errno)) if conds.iter().any(|c| c.holds(args)) => {
                RET_ERRNO | *errno as u32
            }
            _ => RET_ALLOW,
        }
    }

    /// For each filter, every call number (and its x32 twin) with argument
    /// values around every tested bit and value: the search tree answers
    /// what the rules say, and another ABI's calls are killed.
    #[test]
    fn the_compiled_tree_answers_every_call_as_its_rules_say() {
        let values: [u64; 13] = [
            0,
            1,
            2,
            5,
            10,
            16,
            0o4000,
            0o2000,
            0o755,
            0x20000,
            0x7fff_ffff,
            0x1_0000_0001,
            u64::MAX,
        ];
        for filter in [
            Filter::Namespaced,
            Filter::Alone { network: false },
            Filter::Alone { network: true },
        ] {
            let rules = rules(filter);
            let program = compile(&rules).unwrap();
            assert!(program.len() < 1024, "{} instructions", program.len());
            let arch = AUDIT_ARCH.unwrap();
            let ruled: Vec<u32> = rules.iter().map(|r| r.0 as u32).collect();
            let distinct: std::collections::BTreeSet<_> = ruled.iter().collect();
            assert_eq!(
                distinct.len(),
                ruled.len(),
                "{filter:?}: a call has two rules"
            );
            for nr in (0..1024u32).chain((0..1024).map(|n| n | X32_SYSCALL_BIT)) {
                let some = [0; 6];
                assert_eq!(
                    run(&program, arch, nr, &some),
                    meant(&rules, nr, &some),
                    "{filter:?} {nr}"
                );
                assert_eq!(run(&program, 0x4000_0003, nr, &some), RET_KILL_PROCESS);
                if !ruled.contains(&(nr & !X32_SYSCALL_BIT)) {
                    continue;
                }
                for a in values {
                    for b in values {
                        for c in values {
                            for d in values {
                                let args = [a, b, c, d, 0, 0];
                                assert_eq!(
                                    run(&program, arch, nr, &args),
                                    meant(&rules, nr, &args),
                                    "{filter:?} {nr} {args:?}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    /// The rules themselves, as the module says: a datagram pair, a set-id
    /// mode, a new namespace alone, any socket alone without a network
    /// grant; a stream pair and a plain mode pass.
    #[test]
    fn the_rules_refuse_what_the_filter_promises() {
        let unix = libc::AF_UNIX as u64;
        let alone = rules(Filter::Alone { network: false });
        let ns = rules(Filter::Namespaced);
        let nr = |n: i64| n as u32;
        let refused = |r: &[Rule], n: i64, args: [u64; 6]| meant(r, nr(n), &args) != RET_ALLOW;
        assert!(refused(
            &ns,
            libc::SYS_socketpair,
            [unix, libc::SOCK_RAW as u64, 0, 0, 0, 0]
        ));
        assert!(refused(
            &ns,
            libc::SYS_socketpair,
            [unix, libc::SOCK_DGRAM as u64 | 0x80000, 0, 0, 0, 0]
        ));
        assert!(!refused(
            &ns,
            libc::SYS_socketpair,
            [unix, libc::SOCK_STREAM as u64 | 0x80000, 0, 0, 0, 0]
        ));
        assert!(refused(&ns, libc::SYS_socket, [unix, 1, 0, 0, 0, 0]));
        assert!(!refused(
            &ns,
            libc::SYS_socket,
            [libc::AF_INET as u64, 1, 0, 0, 0, 0]
        ));
        assert!(refused(
            &alone,
            libc::SYS_socket,
            [libc::AF_INET as u64, 1, 0, 0, 0, 0]
        ));
        assert!(refused(&ns, libc::SYS_fchmodat, [0, 0, 0o4755, 0, 0, 0]));
        assert!(!refused(&ns, libc::SYS_fchmodat, [0, 0, 0o755, 0, 0, 0]));
        assert!(refused(
            &alone,
            libc::SYS_clone,
            [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0]
        ));
        assert!(!refused(
            &ns,
            libc::SYS_clone,
            [libc::CLONE_NEWUSER as u64, 0, 0, 0, 0, 0]
        ));
        assert_eq!(
            meant(&alone, nr(libc::SYS_clone3), &[0; 6]),
            RET_ERRNO | libc::ENOSYS as u32
        );
    }
}
