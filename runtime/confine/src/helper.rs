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
//! Where namespaces cannot be made, or the spec asks for Landlock and
//! seccomp alone, the helper forks the program itself instead (`alone`).
//!
//! The process side is here; the mechanisms each have a module: `cgroup`,
//! `seccomp`, `mounts`, `landlock`, `alone`.
//!
//! This is the one module of the crate with `unsafe`: `clone` and `fork`,
//! `mount_setattr` in `mounts`, the capability calls in `alone` and the
//! filter's `seccomp(2)` in `seccomp`, besides the Landlock version query
//! in `kernel`. All are called from the helper, a fresh single-threaded
//! process.

#![allow(unsafe_code)]

mod alone;
mod cgroup;
mod landlock;
mod mounts;
mod process;
mod seccomp;

pub use cgroup::remove_stale as remove_stale_cgroups;
pub(crate) use cgroup::{cgroup_parent, remove_cgroups};
pub use landlock::SYSTEM_DIRS;
pub use process::{HELPER_ARG, helper_main};
pub(crate) use process::{REPORT, REPORT_LEN, SPEC_VAR};
