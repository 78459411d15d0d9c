//! The helper's process side: the helper itself (namespaces, id maps,
//! the status relayed), the run's init and the program it starts clean.

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sched::CloneFlags;
use nix::sys::resource::{Resource, setrlimit};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, raise, sigaction, signal};
use nix::sys::wait::{WaitStatus, wait, waitpid};
use nix::unistd::{ForkResult, Pid, chdir, execve, fork, getgid, getppid, getuid, pipe2};

use crate::guarantees::{Facts, mechanism};
use crate::spec::{Confinement, Mechanism, Spec};

use super::alone;
use super::cgroup::{memory_cgroup, pids_cgroup};
use super::landlock::landlock;
use super::mounts::{mount_proc, read_only_but};
use super::seccomp::{Filter, seccomp};

/// The argument that makes warden run as the helper.
pub const HELPER_ARG: &str = "__confine";

/// The variable that carries the spec, as JSON, to the helper.
pub(crate) const SPEC_VAR: &str = "WARDEN_CONFINE_SPEC";

/// Prefix of the helper's report on stdout, before the program runs; the
/// report's length follows as [`REPORT_LEN`] hex digits, then the report,
/// so that warden reads it whole in two reads and takes nothing of the
/// program's own output with it.
pub(crate) const REPORT: &str = "\0warden-confine ";
/// Hex digits of the report's length.
pub(crate) const REPORT_LEN: usize = 8;

/// The init's pid, once cloned, for [`on_term`].
pub(super) static INIT_PID: AtomicI32 = AtomicI32::new(0);
/// Whether warden asked the run to stop before the init existed.
pub(super) static TERMINATED: AtomicBool = AtomicBool::new(false);

/// `SIGTERM` from warden: kill the init, whose death ends the PID
/// namespace; the helper then reaps it and exits only once every process
/// of the run is gone, so warden's wait for the helper is a wait for all.
pub(super) extern "C" fn on_term(_: std::ffi::c_int) {
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

/// The report that confinement is in force: the mechanism as JSON (one
/// line: JSON escapes every newline).
pub(super) fn report_ok(mechanism: &Mechanism) {
    let json = serde_json::to_string(mechanism).expect("a mechanism always serializes");
    report(&format!("ok {json}"));
}

pub(super) fn report(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(format!("{REPORT}{:0w$x}{line}", line.len(), w = REPORT_LEN).as_bytes());
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

    // Where the kernel says up front that user namespaces cannot be made
    // (or AppArmor would make one powerless), no clone is tried.
    let unavailable =
        crate::kernel::user_namespaces().map_err(|why| format!("user namespaces are {why}"));
    match (spec.confinement, unavailable) {
        (Confinement::Landlock, _) => return alone::run(&spec, None),
        (Confinement::Auto, Err(why)) => return alone::run(&spec, Some(why)),
        (Confinement::Namespaces, Err(why)) => return Err(required(&why)),
        (_, Ok(_)) => {}
    }
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
    let memory = memory_cgroup(spec.memory);
    let mut stack = vec![0u8; 1 << 20];
    let init = Box::new(|| init(&spec, &go_r, &st_w));
    // SAFETY: the helper is single-threaded (it is warden's `main` before
    // anything else runs), so the child, a copy of it, holds no lock
    // another thread was holding; the stack outlives the call in the
    // parent and is the child's own copy in the child.
    let child = match unsafe {
        nix::sched::clone(init, &mut stack, flags, Some(Signal::SIGCHLD as i32))
    } {
        Ok(child) => child,
        Err(e) => {
            let Some(why) = no_namespaces(e) else {
                return Err(format!(
                    "setup cannot start the confined run now ({e}): too many processes or namespaces on this host; try again when fewer run"
                ));
            };
            if let Some(dir) = &cgroup {
                let _ = std::fs::remove_dir(dir);
            }
            if let Some(dir) = &memory {
                let _ = std::fs::remove_dir(dir);
            }
            if spec.confinement == Confinement::Namespaces {
                return Err(required(&why));
            }
            return alone::run(&spec, Some(why));
        }
    };
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
    enter_and_go(child, cgroup.as_deref(), memory, go_w)?;

    let mut status = String::new();
    let _ = std::fs::File::from(st_r).read_to_string(&mut status);
    let init_status = loop {
        match waitpid(child, None) {
            Err(Errno::EINTR) => continue,
            other => break other,
        }
    };
    // Reaped: its pid may be another process's from now on, which a late
    // SIGTERM must not kill.
    INIT_PID.store(0, Ordering::SeqCst);
    if let Some(cgroup) = &cgroup {
        // Empty now: the PID namespace died with its init.
        let _ = std::fs::remove_dir(cgroup);
    }
    if let Some(sig) = status
        .strip_prefix("s ")
        .and_then(|s| s.parse::<i32>().ok())
    {
        if let Ok(sig) = Signal::try_from(sig) {
            return Ok(end_as(WaitStatus::Signaled(child, sig, false)));
        }
        return Ok(128 + sig);
    }
    if let Some(code) = status
        .strip_prefix("e ")
        .and_then(|s| s.parse::<i32>().ok())
    {
        return Ok(code);
    }
    // The init itself was killed (by the kernel, out of memory): the
    // whole run ended with it.
    Ok(init_status.map_or(125, end_as))
}

/// The helper's exit code for how the program ended; one killed by a
/// signal is relayed as that signal (the helper raises it on itself).
pub(super) fn end_as(status: WaitStatus) -> i32 {
    match status {
        WaitStatus::Exited(_, code) => code,
        WaitStatus::Signaled(_, sig, _) => {
            // SAFETY: restoring the default action of a signal is always sound.
            let _ = unsafe { signal(sig, SigHandler::SigDfl) };
            let _ = raise(sig);
            128 + sig as i32
        }
        _ => 125,
    }
}

/// Why namespaces cannot be made, if `clone` failed for that reason (and
/// not for a passing shortage).
fn no_namespaces(e: Errno) -> Option<String> {
    match e {
        Errno::EPERM | Errno::EINVAL | Errno::ENOSYS => Some(format!(
            "the kernel refused to make a user namespace ({e}): a seccomp filter around warden (a container's) or AppArmor forbids it"
        )),
        // ENOSPC is also a full count of namespaces: only a limit of 0 is
        // the setting.
        Errno::ENOSPC => crate::kernel::user_namespaces()
            .err()
            .map(|why| format!("user namespaces are {why}")),
        _ => None,
    }
}

/// The refusal when `confinement = "namespaces"` and they cannot be made.
fn required(why: &str) -> String {
    format!(
        "unavailable {why}; `confinement = \"namespaces\"` asks for them, so commands are refused (remove that setting to run them under Landlock + seccomp alone)"
    )
}

/// Puts `child` in the run's cgroups, then tells it to start (on `go`):
/// the process-count cgroup must take it, else it is killed and the run
/// refused; the memory cgroup may not (each process is still bounded by
/// its rlimit, and the mechanism says which holds).
pub(super) fn enter_and_go(
    child: Pid,
    pids: Option<&Path>,
    mut memory: Option<std::path::PathBuf>,
    go: OwnedFd,
) -> Result<(), String> {
    if let Some(dir) = pids
        && let Err(e) = std::fs::write(dir.join("cgroup.procs"), child.to_string())
    {
        let _ = nix::sys::signal::kill(child, Signal::SIGKILL);
        let _ = waitpid(child, None);
        let _ = std::fs::remove_dir(dir);
        if let Some(dir) = &memory {
            let _ = std::fs::remove_dir(dir);
        }
        return Err(format!(
            "unavailable cannot enter the process-count cgroup {}: {e}",
            dir.display()
        ));
    }
    if let Some(dir) = &memory
        && std::fs::write(dir.join("cgroup.procs"), child.to_string()).is_err()
    {
        let _ = std::fs::remove_dir(dir);
        memory = None;
    }
    let byte = if memory.is_some() {
        GO_WHOLE_MEMORY
    } else {
        GO
    };
    let _ = nix::unistd::write(&go, &[byte]);
    Ok(())
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
pub(super) const GO_WHOLE_MEMORY: u8 = b'm';

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
        Ok(mechanism) => report_ok(&mechanism),
        Err(line) => {
            report(&line);
            return 125;
        }
    }
    let line = Exec::of(spec);
    // SAFETY: the init is single-threaded (a clone of the single-threaded
    // helper), so the child may allocate and run anything.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => line.run(spec),
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

/// The program's `execve` arguments, made before the fork.
pub(super) struct Exec {
    program: CString,
    argv: Vec<CString>,
    envp: Vec<CString>,
}

impl Exec {
    pub(super) fn of(spec: &Spec) -> Exec {
        let program = cstring(spec.program.as_os_str().as_bytes());
        let mut argv = vec![program.clone()];
        argv.extend(spec.args.iter().map(|a| cstring(a.as_bytes())));
        let envp = spec
            .env
            .iter()
            .map(|(k, v)| cstring(format!("{k}={v}").as_bytes()))
            .collect();
        Exec {
            program,
            argv,
            envp,
        }
    }

    /// Starts clean and becomes the program; says why not, if it cannot.
    pub(super) fn run(&self, spec: &Spec) -> ! {
        start_clean();
        let e = execve(&self.program, &self.argv, &self.envp).unwrap_err();
        let _ = writeln!(
            std::io::stderr(),
            "cannot run {}: {e}",
            spec.program.display()
        );
        std::process::exit(127)
    }
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

fn cstring(bytes: &[u8]) -> CString {
    // Spec strings come from Rust strings and paths: a NUL inside is cut there.
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL left")
}

/// The run's rlimits: `processes` tasks (at least 2) and `memory` bytes
/// of data per process.
pub(super) fn set_limits(processes: u64, memory: u64) -> Result<(), String> {
    let processes = processes.max(2);
    setrlimit(Resource::RLIMIT_NPROC, processes, processes)
        .map_err(|e| format!("setup cannot limit processes: {e}"))?;
    setrlimit(Resource::RLIMIT_DATA, memory, memory)
        .map_err(|e| format!("setup cannot limit memory: {e}"))
}

/// Limits, ids, the working directory, `/proc` and Landlock, in the init
/// (and so in everything it starts). Returns the mechanism in force, or
/// the report line of what failed.
fn confine(spec: &Spec, whole_memory: bool) -> Result<Mechanism, String> {
    set_limits(spec.processes, spec.memory)?;
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
    let abi = landlock(&grants, &programs, proc.is_ok(), spec.network)?;
    seccomp(Filter::Namespaced)?;
    let facts = Facts {
        abi,
        network: spec.network,
        proc: proc.map_err(|e| e.to_string()),
        whole_memory,
        root: false,
    };
    Ok(mechanism(Confinement::Namespaces, &facts, None))
}

/// A granted directory, opened once for the remount and Landlock.
pub(super) struct Grant<'a> {
    pub(super) path: &'a Path,
    pub(super) fd: OwnedFd,
    pub(super) write: bool,
}

/// Opens each granted directory (`O_PATH`), and refuses one whose path no
/// longer leads to the directory the caller pinned (moved, or replaced by
/// a link since warden opened it: a run must not follow it elsewhere).
pub(super) fn open_grants(spec: &Spec) -> Result<Vec<Grant<'_>>, String> {
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
pub(super) fn open_programs(spec: &Spec) -> Result<Vec<OwnedFd>, String> {
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
