//! The run where namespaces cannot be made (a container's seccomp
//! profile, AppArmor's `restrict_unprivileged_userns`, a hardened runner)
//! or `confinement = "landlock"` asks for it: Landlock and seccomp alone,
//! as Codex CLI confines its commands.
//!
//! ```text
//! warden ──spawn──► helper (a child subreaper; kills every descendant at the end)
//!                     └─fork─► the program (rlimits, capabilities dropped for root,
//!                                           Landlock, seccomp, then execve)
//! ```
//!
//! Without a PID namespace, what keeps a process from outliving the call
//! is the helper: it is the run's child subreaper, so every process the
//! program orphans (`setsid`, `nohup`, a double fork) becomes the
//! helper's child, and when the program ends, or warden asks, or warden
//! dies (the helper's parent-death signal is `SIGTERM` here, which it
//! handles), the helper kills its children until none is left.
//!
//! What this gives less than namespaces is said by the mechanism's
//! guarantees (`crate::guarantees`): metadata outside the write grants,
//! a `/proc` of its own (the run has none: Landlock keeps the host's out
//! of reach), and, below Landlock ABI 6, signals to the user's other
//! processes.

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;

use nix::errno::Errno;
use nix::fcntl::OFlag;
use nix::sys::signal::{SigHandler, Signal, kill, signal};
use nix::sys::wait::{WaitPidFlag, wait, waitpid};
use nix::unistd::{ForkResult, Pid, chdir, fork, getpid, getuid, pipe2};

use crate::guarantees::{Facts, mechanism};
use crate::spec::{Confinement, Mechanism, Spec};

use super::cgroup::{memory_cgroup, pids_cgroup};
use super::landlock::landlock;
use super::process::{
    Exec, GO_WHOLE_MEMORY, INIT_PID, TERMINATED, end_as, enter_and_go, open_grants, open_programs,
    report, report_ok, set_limits,
};
use super::seccomp::{Filter, seccomp};

/// Runs `spec` under Landlock and seccomp alone; `why`: why not
/// namespaces (none when asked for). Returns the helper's exit code.
pub(super) fn run(spec: &Spec, why: Option<String>) -> Result<i32, String> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(|e| format!("setup cannot become the run's subreaper: {e}"))?;
    // warden's death reaches the run through the helper, which kills every
    // descendant, instead of killing the helper first.
    nix::sys::prctl::set_pdeathsig(Signal::SIGTERM)
        .map_err(|e| format!("setup parent-death signal: {e}"))?;
    let root = getuid().is_root();
    let cgroup = if root {
        Some(pids_cgroup(spec.processes)?)
    } else {
        None
    };
    let memory = memory_cgroup(spec.memory);
    // RLIMIT_NPROC counts every process of the user on the host, not of
    // the run: the run may add `processes` to what the user has now.
    let processes = if root {
        spec.processes
    } else {
        tasks_of(getuid().as_raw()).saturating_add(spec.processes)
    };
    let (go_r, go_w) = pipe2(OFlag::O_CLOEXEC).map_err(|e| format!("setup pipe: {e}"))?;
    let remove = |dirs: &[&Option<std::path::PathBuf>]| {
        for dir in dirs.iter().copied().flatten() {
            let _ = std::fs::remove_dir(dir);
        }
    };
    // SAFETY: the helper is single-threaded (warden's `main` before
    // anything else runs), so the child may allocate and run anything.
    let child = match unsafe { fork() } {
        Ok(ForkResult::Child) => {
            drop(go_w);
            program(spec, &go_r, why, root, processes)
        }
        Ok(ForkResult::Parent { child }) => child,
        Err(e) => {
            remove(&[&cgroup, &memory]);
            return Err(format!(
                "setup cannot start the confined run now ({e}): too many processes on this host; try again when fewer run"
            ));
        }
    };
    drop(go_r);
    INIT_PID.store(child.as_raw(), Ordering::SeqCst);
    if TERMINATED.load(Ordering::SeqCst) {
        let _ = kill(child, Signal::SIGKILL);
    }
    enter_and_go(child, cgroup.as_deref(), memory, go_w)?;
    // Reap the orphans that come to the helper while the program runs (a
    // zombie would count against the process limit) until it ends.
    let status = loop {
        match wait() {
            Ok(status) if status.pid() == Some(child) => break Some(status),
            Err(Errno::ECHILD) => break None,
            _ => continue,
        }
    };
    // Reaped: its pid may be another process's from now on, which a late
    // SIGTERM must not kill.
    INIT_PID.store(0, Ordering::SeqCst);
    kill_descendants();
    if let Some(dir) = &cgroup {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(status.map_or(125, end_as))
}

/// Kills every child of the helper, and the children that come to it as
/// their parents die, until none is left.
fn kill_descendants() {
    loop {
        let children = children();
        for pid in &children {
            let _ = kill(*pid, Signal::SIGKILL);
        }
        // None listed: one may still have come after the listing (its
        // parent ended on its own); it is listed next time round.
        let flags = children.is_empty().then_some(WaitPidFlag::WNOHANG);
        match waitpid(None, flags) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => continue,
            Err(_) => return,
        }
    }
}

/// The helper's children now: from `/proc/self/task/TID/children`, or,
/// where the kernel lacks it, every process whose parent is the helper.
fn children() -> Vec<Pid> {
    let me = getpid();
    let parse = |s: &str| {
        s.split_whitespace()
            .filter_map(|p| p.parse().ok())
            .map(Pid::from_raw)
            .collect()
    };
    if let Ok(list) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        return parse(&list);
    }
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| parent_in_stat(&stat))
                == Some(me.as_raw())
        })
        .map(Pid::from_raw)
        .collect()
}

/// The parent pid in a `/proc/PID/stat` line: `PID (COMM) STATE PPID ...`,
/// where COMM may hold spaces and parentheses (the last `)` ends it).
fn parent_in_stat(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The tasks (processes and threads) whose real user is `uid`, as
/// `RLIMIT_NPROC` counts them.
fn tasks_of(uid: u32) -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return 0;
    };
    dir.flatten()
        .filter(|e| e.file_name().as_bytes().iter().all(u8::is_ascii_digit))
        .filter_map(|e| std::fs::read_to_string(e.path().join("status")).ok())
        .filter_map(|status| {
            let field = |name: &str| {
                status
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            };
            (field("Uid:")? == u64::from(uid)).then(|| field("Threads:").unwrap_or(1))
        })
        .sum()
}

/// The program's side of the fork: wait for the helper's word, confine,
/// report, start clean and become the program. Never returns.
fn program(spec: &Spec, go: &OwnedFd, why: Option<String>, root: bool, processes: u64) -> ! {
    // Dies with the helper: the helper's own death (only SIGKILL, which no
    // one in the run may send it) must not leave the program running.
    let _ = nix::sys::prctl::set_pdeathsig(Signal::SIGKILL);
    // SAFETY: restoring the default action of a signal is always sound.
    let _ = unsafe { signal(Signal::SIGTERM, SigHandler::SigDfl) };
    let mut b = [0u8; 1];
    if nix::unistd::read(go, &mut b) != Ok(1) {
        std::process::exit(125);
    }
    match confine(spec, b[0] == GO_WHOLE_MEMORY, root, processes, why) {
        Ok(mechanism) => report_ok(&mechanism),
        Err(line) => {
            report(&line);
            std::process::exit(125);
        }
    }
    Exec::of(spec).run(spec)
}

/// Limits, the working directory, root's capabilities, Landlock and
/// seccomp, in the program before `execve`. Returns the mechanism in
/// force, or the report line of what failed.
fn confine(
    spec: &Spec,
    whole_memory: bool,
    root: bool,
    processes: u64,
    why: Option<String>,
) -> Result<Mechanism, String> {
    set_limits(processes, spec.memory)?;
    let grants = open_grants(spec)?;
    let programs = open_programs(spec)?;
    chdir(&spec.cwd).map_err(|e| {
        format!(
            "setup cannot enter the working directory {}: {e}",
            spec.cwd.display()
        )
    })?;
    if root {
        drop_capabilities()?;
    }
    let abi = landlock(&grants, &programs, false, spec.network)?;
    seccomp(Filter::Alone {
        network: spec.network,
    })?;
    let facts = Facts {
        abi,
        network: spec.network,
        proc: Err("none".into()),
        whole_memory,
        root,
    };
    Ok(mechanism(Confinement::Landlock, &facts, why))
}

/// A root warden's program keeps root's uid (its files in the write
/// grants are root's) but none of root's capabilities: no bypassing file
/// modes, no changing the owner of a file, no network or system
/// administration, no loading modules; and no way back to them through
/// `execve` of a root-owned or set-id program (securebits, locked).
fn drop_capabilities() -> Result<(), String> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    const CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let fail = |what: &str| {
        format!(
            "setup cannot drop root's capabilities ({what}: {})",
            std::io::Error::last_os_error()
        )
    };
    let bits = SECBIT_NOROOT
        | SECBIT_NOROOT_LOCKED
        | SECBIT_NO_SETUID_FIXUP
        | SECBIT_NO_SETUID_FIXUP_LOCKED
        | SECBIT_KEEP_CAPS_LOCKED
        | SECBIT_NO_CAP_AMBIENT_RAISE
        | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
    // SAFETY: prctl(2) with integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_SECUREBITS, bits, 0, 0, 0) } != 0 {
        return Err(fail("securebits"));
    }
    // SAFETY: as above.
    if unsafe {
        libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL,
            0,
            0,
            0,
        )
    } != 0
    {
        return Err(fail("ambient set"));
    }
    // Every capability the kernel knows, until it says there is no more.
    for cap in 0..64 {
        // SAFETY: as above.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                break;
            }
            return Err(fail("bounding set"));
        }
    }
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let header = Header {
        version: CAPABILITY_VERSION_3,
        pid: 0,
    };
    let none = [Data {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: capset(2) reads a version-3 header and two data structs,
    // both live for the call.
    if unsafe { libc::syscall(libc::SYS_capset, &raw const header, none.as_ptr()) } != 0 {
        return Err(fail("capset"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::parent_in_stat;

    #[test]
    fn the_parent_is_read_past_a_command_name_with_spaces_and_parentheses() {
        assert_eq!(parent_in_stat("42 (a) b) (c) S 7 42 42 0"), Some(7));
        assert_eq!(parent_in_stat("1 (init) S 0 1 1"), Some(0));
        assert_eq!(parent_in_stat("garbage"), None);
    }
}
