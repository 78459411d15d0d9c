//! Host processes confined by the kernel, with the same grants as a tool.
//!
//! A run sees only the directories it is given (read-only or read-write)
//! plus the system's program and library directories and what programs
//! need of `/etc`, read-only: Linux Landlock enforces it on every open,
//! whatever the path. It has no network unless granted, a process-count
//! and a memory limit (per process, and for the whole run where a memory
//! cgroup is available), a wall-clock timeout, no stdin, and exactly the
//! environment given. Nothing it starts survives it, `setsid` and double
//! forks included. A seccomp filter refuses Unix-domain sockets (a socket
//! file is reachable by path whatever Landlock allows) but stream and
//! seqpacket pairs, set-id modes and extended attributes, io_uring and the
//! rest of the kernel surface no command needs; no descriptor warden
//! inherited reaches it.
//!
//! Two mechanisms give this ([`Confinement`]): user, PID, mount, IPC and
//! network namespaces with Landlock and seccomp, where namespaces can be
//! made; Landlock and seccomp alone elsewhere (containers, AppArmor's
//! `restrict_unprivileged_userns`), with a child-subreaper helper that
//! kills every descendant. Each run reports the [`Mechanism`] in force
//! with the [`Guarantee`]s that hold, built from the run's own facts.
//! Where the kernel can give neither, nothing runs: the error says what is
//! missing.
//!
//! The confinement is set up by warden itself, re-executed as a small
//! helper (`warden __confine`): the binary must call [`helper_main`] first
//! thing in `main` when its first argument is [`HELPER_ARG`].
//!
//! ```no_run
//! use warden_confine::{Spec, run};
//!
//! let mut spec = Spec::new("/usr/bin/sh", "/home/u/project");
//! spec.args = vec!["-c".into(), "cargo test --offline".into()];
//! spec.write = vec!["/home/u/project".into()];
//! let done = run(&spec).unwrap();
//! println!("{}: {}", done.status, done.stdout);
//! ```

mod capture;
mod guarantees;
#[cfg(target_os = "linux")]
mod helper;
#[cfg(target_os = "linux")]
mod kernel;
mod program;
#[cfg(target_os = "linux")]
mod run;
mod spec;
#[cfg(not(target_os = "linux"))]
mod unsupported;

pub use guarantees::{Facts, mechanism};
#[cfg(target_os = "linux")]
pub use helper::{HELPER_ARG, SYSTEM_DIRS, helper_main, remove_stale_cgroups};
#[cfg(target_os = "linux")]
pub use kernel::{Kernel, kernel};
pub use program::{find_program, is_executable};
#[cfg(target_os = "linux")]
pub use run::{Confined, Stop, probe, run, run_until, set_helper, set_helper_image, spawn};
pub use spec::{
    Confinement, Error, Finished, Guarantee, Limit, Mechanism, Result, Spec, Status, Unavailable,
    default_confinement, set_default_confinement, unenforceable,
};
#[cfg(not(target_os = "linux"))]
pub use unsupported::{
    HELPER_ARG, Kernel, SYSTEM_DIRS, Stop, helper_main, kernel, probe, remove_stale_cgroups, run,
    run_until, set_helper, set_helper_image,
};
