//! The confinement helper: warden re-executed as `warden __confine PARENT`,
//! the spec as JSON in its environment (never on a command line, which any
//! user of the host can read).
//!
//! ```text
//! warden ──spawn──► helper (host namespaces; writes the id maps, relays the status)
//!                     └─clone(NEWUSER|NEWPID|NEWNS|NEWIPC[|NEWNET])─► init (PID 1 of the run)
//!                                                                      └─fork─► the program
//! ```
//!
//! The init sets the rlimits, mounts the run's own `/proc` (its PID
//! namespace's), restricts itself with Landlock and a seccomp filter
//! (inherited by everything it starts), reports on stdout that confinement is in force,
//! then starts the program and reaps every orphan until the program ends.
//! When the init ends, the kernel kills everything else in its PID
//! namespace, so nothing the program started outlives it, whatever it did
//! (`setsid`, double fork, `nohup`). The init dies with the helper
//! (`PR_SET_PDEATHSIG`), and the helper with warden, so killing the helper
//! (timeout, drop) ends the whole run.
//!
//! Process count: `RLIMIT_NPROC` counts per user and user namespace, so a
//! run starts from zero; but the kernel never enforces it for the host's
//! root. When warden runs as root, the run is therefore also put in a
//! cgroup of its own under the `pids` controller, with `pids.max`; without
//! one, nothing runs.
//!
//! Memory: `RLIMIT_DATA` bounds each process. Where a `memory` cgroup
//! controller (v1) lets warden make a cgroup beside its own, the run is
//! also put in one with `memory.limit_in_bytes`, which bounds all its
//! processes together: the kernel kills one when the run passes it, and
//! warden reads that from `memory.oom_control` after the run. The
//! mechanism line says which of the two is in force.
//!
//! This is the one module of the crate with `unsafe`: `clone` and `fork`.
//! Both are called from the helper, a fresh single-threaded process.

#![allow(unsafe_code)]

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};
use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::CloneFlags;
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, raise, sigaction, signal};
use nix::sys::wait::{WaitStatus, wait, waitpid};
use nix::unistd::{ForkResult, Pid, chdir, execve, fork, getgid, getppid, getuid, pipe2};

use crate::spec::Spec;

/// The argument that makes warden run as the helper.
pub const HELPER_ARG: &str = "__confine";

/// The Landlock ABI whose rights are asked for; older kernels enforce
/// what they know (at least ABI 1: files), newer ones are not needed.
const LANDLOCK_ABI: ABI = ABI::V6;

/// The variable that carries the spec, as JSON, to the helper.
pub(crate) const SPEC_VAR: &str = "WARDEN_CONFINE_SPEC";

/// Prefix of the helper's report line on stdout, before the program runs.
pub(crate) const REPORT: &str = "\0warden-confine ";

/// System directories every run may read and execute from.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// What programs need from `/etc` (the loader cache, user and host names,
/// certificates, time zone, alternatives), and nothing else of it.
const ETC: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/alternatives",
    "/etc/mime.types",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/gitconfig",
    "/etc/inputrc",
];

/// Devices every run may read and write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
];

/// The init's pid, once cloned, for [`on_term`].
static INIT_PID: AtomicI32 = AtomicI32::new(0);
/// Whether warden asked the run to stop before the init existed.
static TERMINATED: AtomicBool = AtomicBool::new(false);

/// `SIGTERM` from warden: kill the init, whose death ends the PID
/// namespace; the helper then reaps it and exits only once every process
/// of the run is gone, so warden's wait for the helper is a wait for all.
extern "C" fn on_term(_: std::ffi::c_int) {
    TERMINATED.store(true, Ordering::SeqCst);
    let pid = INIT_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // kill(2) is async-signal-safe.
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Runs the helper: `args` are what follows [`HELPER_ARG`] (the parent's
/// pid); the spec comes as JSON in the environment. Never returns.
pub fn helper_main(args: &[String]) -> ! {
    let code = match helper(args) {
        Ok(code) => code,
        Err(report_line) => {
            report(&report_line);
            125
        }
    };
    std::process::exit(code)
}

fn report(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(format!("{REPORT}{line}\n").as_bytes());
    let _ = out.flush();
}

fn helper(args: &[String]) -> Result<i32, String> {
    let [parent] = args else {
        return Err("setup helper arguments: expected PARENT".to_string());
    };
    // Die with warden; and if warden is already gone, do not start.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    if parent.parse::<i32>().ok() != Some(getppid().as_raw()) {
        return Ok(125);
    }
    let spec = std::env::var(SPEC_VAR)
        .map_err(|e| format!("setup no spec from warden in {SPEC_VAR}: {e}"))?;
    let spec: Spec =
        serde_json::from_str(&spec).map_err(|e| format!("setup bad spec from warden: {e}"))?;
    let _ = setrlimit(Resource::RLIMIT_CORE, 0, 0);
    // Nothing warden inherited reaches the init, where the program could
    // take it (`pidfd_getfd`) even though its own copies are closed.
    close_from_3(0);
    let term = SigAction::new(
        SigHandler::Handler(on_term),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler only loads and stores atomics and calls kill(2),
    // all async-signal-safe.
    unsafe { sigaction(Signal::SIGTERM, &term) }
        .map_err(|e| format!("setup signal handler: {e}"))?;

    let (go_r, go_w) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("setup pipe: {e}"))?;
    let (st_r, st_w) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("setup pipe: {e}"))?;
    let root = getuid().is_root();
    // Its own IPC namespace too: no SysV shared memory, semaphores or
    // message queues of the host.
    let mut flags = CloneFlags::CLONE_NEWUSER
        | CloneFlags::CLONE_NEWPID
        | CloneFlags::CLONE_NEWNS
        | CloneFlags::CLONE_NEWIPC;
    if !spec.network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    let cgroup = if root {
        Some(pids_cgroup(spec.processes)?)
    } else {
        None
    };
    let mut memory = memory_cgroup(spec.memory);
    let mut stack = vec![0u8; 1 << 20];
    let init = Box::new(|| init(&spec, &go_r, &st_w));
    // SAFETY: the helper is single-threaded (it is warden's `main` before
    // anything else runs), so the child, a copy of it, holds no lock
    // another thread was holding; the stack outlives the call in the
    // parent and is the child's own copy in the child.
    let child = unsafe { nix::sched::clone(init, &mut stack, flags, Some(Signal::SIGCHLD as i32)) }
        .map_err(|e| match e {
            Errno::EPERM | Errno::EINVAL | Errno::ENOSYS => format!("unavailable cannot create user, PID, mount, IPC and network namespaces ({e}): unprivileged user namespaces are disabled or not built into this kernel"),
            _ => format!("setup cannot start the confined run now ({e}): too many processes or namespaces on this host; try again when fewer run"),
        })?;
    INIT_PID.store(child.as_raw(), Ordering::SeqCst);
    if TERMINATED.load(Ordering::SeqCst) {
        let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
    }
    drop(go_r);
    drop(st_w);
    if let Err(e) = map_ids(child) {
        let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
        let _ = waitpid(child, None);
        return Err(format!(
            "unavailable cannot map user ids into the new user namespace: {e}"
        ));
    }
    if let Some(cgroup) = &cgroup
        && let Err(e) = std::fs::write(cgroup.join("cgroup.procs"), child.to_string())
    {
        let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
        let _ = waitpid(child, None);
        let _ = std::fs::remove_dir(cgroup);
        return Err(format!(
            "unavailable cannot enter the process-count cgroup {}: {e}",
            cgroup.display()
        ));
    }
    if let Some(dir) = &memory
        && std::fs::write(dir.join("cgroup.procs"), child.to_string()).is_err()
    {
        // Each process is still bounded by its rlimit; the mechanism line
        // says so.
        let _ = std::fs::remove_dir(dir);
        memory = None;
    }
    let go = if memory.is_some() {
        GO_WHOLE_MEMORY
    } else {
        GO
    };
    let _ = nix::unistd::write(&go_w, &[go]);
    drop(go_w);

    let mut status = String::new();
    let _ = std::fs::File::from(st_r).read_to_string(&mut status);
    let init_status = loop {
        match waitpid(child, None) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    if let Some(cgroup) = &cgroup {
        // Empty now: the PID namespace died with its init.
        let _ = std::fs::remove_dir(cgroup);
    }
    if let Some(sig) = status
        .strip_prefix("s ")
        .and_then(|s| s.parse::<i32>().ok())
    {
        if let Ok(sig) = Signal::try_from(sig) {
            // SAFETY: restoring the default action of a signal is always sound.
            let _ = unsafe { signal(sig, SigHandler::SigDfl) };
            let _ = raise(sig);
        }
        return Ok(128 + sig);
    }
    if let Some(code) = status
        .strip_prefix("e ")
        .and_then(|s| s.parse::<i32>().ok())
    {
        return Ok(code);
    }
    Ok(match init_status {
        Ok(WaitStatus::Exited(_, code)) => code,
        // The init itself was killed (by the kernel, out of memory): the
        // whole run ended with it.
        Ok(WaitStatus::Signaled(_, sig, _)) => {
            // SAFETY: restoring the default action of a signal is always sound.
            let _ = unsafe { signal(sig, SigHandler::SigDfl) };
            let _ = raise(sig);
            128 + sig as i32
        }
        _ => 125,
    })
}

/// Maps the user's own ids to root inside the namespace: files are
/// created as the user, who has no more rights than outside.
fn map_ids(child: Pid) -> std::io::Result<()> {
    let proc = format!("/proc/{child}");
    std::fs::write(format!("{proc}/setgroups"), "deny")?;
    let (uid, gid) = (getuid().as_raw(), getgid().as_raw());
    std::fs::write(format!("{proc}/uid_map"), format!("0 {uid} 1\n"))?;
    std::fs::write(format!("{proc}/gid_map"), format!("0 {gid} 1\n"))
}

/// What the helper sends the init once the run may start: plain, or with
/// the whole run in a memory cgroup.
const GO: u8 = b'1';
const GO_WHOLE_MEMORY: u8 = b'm';

/// The cgroup (v1) of `controller` a helper with pid `helper` puts its
/// run in, beside warden's own:
/// `/sys/fs/cgroup/<controller>/<warden's>/warden-confine-<pid>`.
fn cgroup_dir(controller: &str, helper: u32) -> Option<std::path::PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })?;
    let dir = Path::new("/sys/fs/cgroup")
        .join(controller)
        .join(path.trim_start_matches('/'));
    dir.join("cgroup.procs")
        .exists()
        .then(|| dir.join(format!("warden-confine-{helper}")))
}

/// Removes the cgroups of the run of helper `helper` (empty once it has
/// ended; left behind when it was killed) and says whether the kernel
/// killed a process of the run for passing its memory limit.
pub(crate) fn remove_cgroups(helper: u32) -> bool {
    let mut out_of_memory = false;
    if let Some(dir) = cgroup_dir("memory", helper) {
        out_of_memory = std::fs::read_to_string(dir.join("memory.oom_control"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("oom_kill ")?.trim().parse::<u64>().ok())
            })
            .is_some_and(|kills| kills > 0);
        let _ = std::fs::remove_dir(dir);
    }
    if let Some(dir) = cgroup_dir("pids", helper) {
        let _ = std::fs::remove_dir(dir);
    }
    out_of_memory
}

/// Creates the cgroup `dir`. One left behind by an earlier helper with
/// the same pid (warden was killed during its run) is empty: it is
/// removed first, and so are those left beside it by helpers that are gone.
fn make_cgroup(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent() {
        remove_stale_cgroups(parent);
    }
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_dir(dir)?;
            std::fs::create_dir(dir)
        }
        other => other,
    }
}

/// Removes the `warden-confine-<pid>` cgroups in `parent` whose helper
/// no longer runs (warden was killed during their run). The kernel removes
/// only an empty cgroup, so one whose processes still run stays.
fn remove_stale_cgroups(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let own = std::process::id();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("warden-confine-"))
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if pid != own && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

/// Creates this helper's `memory` cgroup bounding the whole run to
/// `bytes` (swap included where the kernel counts it), if it can.
fn memory_cgroup(bytes: u64) -> Option<std::path::PathBuf> {
    let dir = cgroup_dir("memory", std::process::id())?;
    let setup = || -> std::io::Result<()> {
        make_cgroup(&dir)?;
        std::fs::write(dir.join("memory.limit_in_bytes"), bytes.to_string())?;
        let swap = dir.join("memory.memsw.limit_in_bytes");
        if swap.exists() {
            std::fs::write(swap, bytes.to_string())?;
        }
        Ok(())
    };
    match setup() {
        Ok(()) => Some(dir),
        Err(_) => {
            let _ = std::fs::remove_dir(&dir);
            None
        }
    }
}

/// Creates this helper's `pids` cgroup with `pids.max` = `processes`.
fn pids_cgroup(processes: u64) -> Result<std::path::PathBuf, String> {
    let dir = cgroup_dir("pids", std::process::id()).ok_or_else(|| {
        "unavailable a process-count limit: warden runs as root, for whom the kernel ignores RLIMIT_NPROC, and no cgroup v1 `pids` controller is mounted at /sys/fs/cgroup/pids (run warden as an ordinary user)".to_string()
    })?;
    let setup = || -> std::io::Result<()> {
        make_cgroup(&dir)?;
        std::fs::write(dir.join("pids.max"), processes.to_string())
    };
    setup().map_err(|e| {
        let _ = std::fs::remove_dir(&dir);
        format!(
            "unavailable a process-count limit: cannot create the cgroup {}: {e}",
            dir.display()
        )
    })?;
    Ok(dir)
}

/// PID 1 of the run. Returns its exit code (the helper reads the program's
/// status from `status`).
fn init(spec: &Spec, go: &OwnedFd, status: &OwnedFd) -> isize {
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // SAFETY: restoring the default action of a signal is always sound.
    let _ = unsafe { signal(Signal::SIGTERM, SigHandler::SigDfl) };
    let mut b = [0u8; 1];
    if nix::unistd::read(go, &mut b) != Ok(1) {
        return 125; // the helper died or could not map the ids
    }
    // Not dumpable: the program (root of the user namespace, but not of
    // the one the init's memory belongs to) can neither ptrace the init nor
    // take its descriptors (the status pipe) nor open its /proc files. Only
    // now: the helper had to write the init's id maps, which a process not
    // dumpable hands to root. The program is dumpable again from `execve`.
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        report(&format!("setup cannot protect the run's init: {e}"));
        return 125;
    }
    match confine(spec, b[0] == GO_WHOLE_MEMORY) {
        Ok(mechanism) => report(&format!("ok {mechanism}")),
        Err(line) => {
            report(&line);
            return 125;
        }
    }
    let program = cstring(spec.program.as_os_str().as_bytes());
    let mut argv = vec![program.clone()];
    argv.extend(spec.args.iter().map(|a| cstring(a.as_bytes())));
    let envp: Vec<CString> = spec
        .env
        .iter()
        .map(|(k, v)| cstring(format!("{k}={v}").as_bytes()))
        .collect();
    // SAFETY: the init is single-threaded (a clone of the single-threaded
    // helper), so the child may allocate and run anything.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            start_clean();
            let e = execve(&program, &argv, &envp).unwrap_err();
            let _ = writeln!(
                std::io::stderr(),
                "cannot run {}: {e}",
                spec.program.display()
            );
            std::process::exit(127);
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cannot start the program: {e}");
            let _ = nix::unistd::write(status, b"e 126");
            return 126;
        }
    };
    // Reap every orphan until the program itself ends.
    let line = loop {
        match wait() {
            Ok(WaitStatus::Exited(pid, code)) if pid == child => break format!("e {code}"),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid == child => {
                break format!("s {}", sig as i32);
            }
            Err(Errno::ECHILD) => break "e 126".to_string(),
            _ => continue,
        }
    };
    let _ = nix::unistd::write(status, line.as_bytes());
    0
}

/// What the program starts with beyond the spec, reset in the init's
/// child just before `execve`: every signal at its default action and
/// none blocked (warden ignores SIGPIPE, which `execve` would keep), a
/// session of its own (a `kill(0)` reaches only the run), and no
/// descriptor but stdin, stdout and stderr (one warden inherited would be
/// readable whatever the grants: Landlock checks opens, not descriptors).
fn start_clean() {
    for sig in Signal::iterator() {
        if !matches!(sig, Signal::SIGKILL | Signal::SIGSTOP) {
            // SAFETY: restoring the default action of a signal is always sound.
            let _ = unsafe { signal(sig, SigHandler::SigDfl) };
        }
    }
    let _ = nix::sys::signal::sigprocmask(
        nix::sys::signal::SigmaskHow::SIG_SETMASK,
        Some(&SigSet::empty()),
        None,
    );
    let _ = nix::unistd::setsid();
    // Closed at `execve`: the init's own pipes.
    close_from_3(libc::CLOSE_RANGE_CLOEXEC);
}

/// Closes (`flags` 0) or marks close-on-exec (`CLOSE_RANGE_CLOEXEC`)
/// every descriptor above stderr.
fn close_from_3(flags: u32) {
    // SAFETY: close_range(2) only closes or changes flags of this
    // process's own descriptors; the arguments are plain integers. The
    // callers own no descriptor above stderr they still use.
    let done = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, flags) };
    if done != 0 {
        // Kernels before 5.11: one by one.
        for fd in 3..1024 {
            if flags == 0 {
                // SAFETY: as above; `fd` is not used again.
                let _ = unsafe { libc::close(fd) };
            } else {
                let _ = nix::fcntl::fcntl(
                    // SAFETY: only the flag of `fd`, if open, is changed.
                    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
                    nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
                );
            }
        }
    }
}

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
fn seccomp() -> Result<(), String> {
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

fn cstring(bytes: &[u8]) -> CString {
    // Spec strings come from Rust strings and paths: a NUL inside is cut there.
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL left")
}

/// Limits, ids, the working directory, `/proc` and Landlock, in the init
/// (and so in everything it starts). Returns the mechanism's description,
/// or the report line of what failed.
fn confine(spec: &Spec, whole_memory: bool) -> Result<String, String> {
    let processes = spec.processes.max(2);
    setrlimit(Resource::RLIMIT_NPROC, processes, processes)
        .map_err(|e| format!("setup cannot limit processes: {e}"))?;
    setrlimit(Resource::RLIMIT_DATA, spec.memory, spec.memory)
        .map_err(|e| format!("setup cannot limit memory: {e}"))?;
    let grants = open_grants(spec)?;
    let programs = open_programs(spec)?;
    let proc = mount_proc();
    read_only_but(&grants)?;
    // After the remount: the working directory is on the writable copy.
    chdir(&spec.cwd).map_err(|e| {
        format!(
            "setup cannot enter the working directory {}: {e}",
            spec.cwd.display()
        )
    })?;
    let abi = landlock(&grants, &programs, proc.is_ok())?;
    seccomp()?;
    let net = if spec.network {
        "the host network (granted)"
    } else {
        "an empty network namespace"
    };
    let proc = match proc {
        Ok(()) => "its own /proc (only the run's processes)".to_string(),
        Err(e) => format!("no /proc (the kernel refused one: {e})"),
    };
    let memory = if whole_memory {
        "rlimits (processes, memory per process) + a memory cgroup (all processes together)"
    } else {
        "rlimits (processes, memory per process; no memory cgroup to bound them together)"
    };
    Ok(format!(
        "Landlock {abi} (files) + read-only mounts but the write grants + user, PID and IPC namespaces (no process outlives the call) + {net} + {proc} + seccomp (Internet and netlink sockets only, no io_uring, no keyrings) + {memory}"
    ))
}

/// `struct mount_attr` of `mount_setattr(2)`.
#[repr(C)]
struct MountAttr {
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
fn read_only_but(grants: &[Grant]) -> Result<(), String> {
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

/// A granted directory, opened once for the remount and Landlock.
struct Grant<'a> {
    path: &'a Path,
    fd: OwnedFd,
    write: bool,
}

/// Opens each granted directory (`O_PATH`), and refuses one whose path no
/// longer leads to the directory the caller pinned (moved, or replaced by
/// a link since warden opened it: a run must not follow it elsewhere).
fn open_grants(spec: &Spec) -> Result<Vec<Grant<'_>>, String> {
    let read = spec.read.iter().map(|p| (p, false));
    let write = spec.write.iter().map(|p| (p, true));
    read.chain(write)
        .map(|(path, write)| {
            let cannot =
                |e: Errno| format!("setup cannot open the granted directory {}: {e}", path.display());
            let fd = nix::fcntl::open(
                path.as_path(),
                OFlag::O_PATH | OFlag::O_CLOEXEC,
                nix::sys::stat::Mode::empty(),
            )
            .map_err(cannot)?;
            let st = nix::sys::stat::fstat(&fd).map_err(cannot)?;
            let moved = spec.pinned.iter().any(|(p, dev, ino)| {
                p == path && (*dev, *ino) != (st.st_dev, st.st_ino)
            });
            if moved {
                return Err(format!(
                    "setup the granted directory {} is no longer the one warden opened at start (it was moved or replaced since); restart warden to grant what is there now",
                    path.display()
                ));
            }
            Ok(Grant { path, fd, write })
        })
        .collect()
}

/// Opens each granted program (`O_PATH`) by its path, refusing a symlink
/// anywhere on it and anything but a regular file: what the path leads to
/// now is what the rule will allow.
fn open_programs(spec: &Spec) -> Result<Vec<OwnedFd>, String> {
    use nix::fcntl::{OpenHow, ResolveFlag};
    spec.programs
        .iter()
        // One that is gone (`cargo clean`) gets no rule: it cannot run, and
        // the other commands still can.
        .filter(|path| path.exists())
        .map(|path| {
            let how = OpenHow::new()
                .flags(OFlag::O_PATH | OFlag::O_CLOEXEC)
                .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
            let replaced = || {
                format!(
                    "setup the granted program {} is no longer the file warden found at start (a symlink is on its path now, or it is not a regular file); put the program back in its place",
                    path.display()
                )
            };
            let cannot =
                |e: Errno| format!("setup cannot open the granted program {}: {e}", path.display());
            let fd = nix::fcntl::openat2(nix::fcntl::AT_FDCWD, path.as_path(), how).map_err(|e| match e {
                Errno::ELOOP | Errno::EXDEV => replaced(),
                e => cannot(e),
            })?;
            let st = nix::sys::stat::fstat(&fd).map_err(cannot)?;
            if st.st_mode & libc::S_IFMT != libc::S_IFREG {
                return Err(replaced());
            }
            Ok(fd)
        })
        .collect()
}

/// Mounts, in the run's own mount namespace, a procfs of its PID
/// namespace on `/proc`: `ps` and `/proc/self` work, and only the run's
/// own processes are in it. Where the kernel refuses (a container whose
/// `/proc` is partly hidden), the run has none: the host's `/proc` stays
/// out of its Landlock rules either way.
fn mount_proc() -> Result<(), Errno> {
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

/// Restricts the init (and everything it starts) with Landlock; `proc`:
/// the run's own procfs is mounted on `/proc`, readable.
fn landlock(grants: &[Grant], programs: &[OwnedFd], proc: bool) -> Result<String, String> {
    let abi = LANDLOCK_ABI;
    let unavailable = |e: &dyn std::fmt::Display| format!("unavailable Landlock: {e}");
    let mut rules = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(abi))
        .map_err(|e| unavailable(&e))?
        .scope(Scope::from_all(abi))
        .map_err(|e| unavailable(&e))?
        .create()
        .map_err(|e| unavailable(&e))?;
    let read = AccessFs::from_read(abi);
    let file_read = read & AccessFs::from_file(abi);
    let device =
        (AccessFs::ReadFile | AccessFs::WriteFile | AccessFs::Truncate) & AccessFs::from_file(abi);
    let mut system: Vec<(&Path, bool)> = SYSTEM_DIRS
        .iter()
        .chain(ETC)
        .map(|p| (Path::new(*p), false))
        .collect();
    let python_etc = python_etc();
    system.extend(python_etc.iter().map(|p| (p.as_path(), false)));
    system.extend(DEVICES.iter().map(|p| (Path::new(*p), true)));
    if proc {
        system.push((Path::new("/proc"), false));
    }
    for (path, device_rw) in system {
        // What this system lacks is simply not there.
        let Ok(fd) = PathFd::new(path) else { continue };
        let access = match (device_rw, path.is_dir()) {
            (true, _) => device,
            (false, true) => read,
            (false, false) => file_read,
        };
        rules = rules
            .add_rule(PathBeneath::new(fd, access))
            .map_err(|e| unavailable(&e))?;
    }
    for fd in programs {
        rules = rules
            .add_rule(PathBeneath::new(fd, file_read))
            .map_err(|e| unavailable(&e))?;
    }
    for g in grants {
        let access = if g.write {
            AccessFs::from_all(abi)
        } else {
            read
        };
        rules = rules
            .add_rule(PathBeneath::new(&g.fd, access))
            .map_err(|e| unavailable(&e))?;
    }
    let status = rules.restrict_self().map_err(|e| unavailable(&e))?;
    match (status.ruleset, status.landlock) {
        (RulesetStatus::NotEnforced, LandlockStatus::NotEnabled) => {
            Err("unavailable Landlock is built into this kernel but not enabled (add `landlock` to the `lsm=` boot parameter)".to_string())
        }
        (RulesetStatus::NotEnforced, _) => Err(
            "unavailable Landlock is not supported by this kernel (Linux 5.13 or later with CONFIG_SECURITY_LANDLOCK)"
                .to_string(),
        ),
        (_, LandlockStatus::Available { effective_abi, kernel_abi }) => {
            let kernel = kernel_abi.unwrap_or(effective_abi as i32);
            Ok(format!("ABI {kernel}"))
        }
        (_, _) => Ok("(ABI unknown)".to_string()),
    }
}

/// `/etc/python3*`, where Debian keeps `sitecustomize.py`.
fn python_etc() -> Vec<std::path::PathBuf> {
    let Ok(dir) = std::fs::read_dir("/etc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter(|e| e.file_name().as_bytes().starts_with(b"python"))
        .map(|e| e.path())
        .collect()
}
