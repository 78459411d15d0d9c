//! Elsewhere than Linux nothing can be confined as warden requires, so
//! nothing runs.

use crate::spec::{Error, Finished, Mechanism, Result, Spec, Unavailable};

/// The argument that makes warden run as the helper (unused here).
pub const HELPER_ARG: &str = "__confine";

fn missing() -> Unavailable {
    Unavailable {
        missing: "confinement needs Linux (Landlock and user namespaces)".into(),
    }
}

/// System directories every run may read (none: nothing runs here).
pub const SYSTEM_DIRS: &[&str] = &[];

/// What the kernel offers the confinement: nothing here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    /// The Landlock ABI version, or why there is none.
    pub landlock: Result<i32, String>,
    /// Whether new user namespaces may be made, or why not.
    pub user_namespaces: Result<String, String>,
    /// The `pids` cgroup a run would be made under.
    pub pids_cgroup: Option<std::path::PathBuf>,
    /// The `memory` cgroup a run would be made under.
    pub memory_cgroup: Option<std::path::PathBuf>,
    /// Whether warden runs as root.
    pub root: bool,
}

/// Reads the facts of this kernel: none of Linux's.
pub fn kernel() -> Kernel {
    let none = || Err("Linux only".to_string());
    Kernel {
        landlock: none(),
        user_namespaces: none(),
        pids_cgroup: None,
        memory_cgroup: None,
        root: false,
    }
}

/// Never called elsewhere than Linux.
pub fn helper_main(_args: &[String]) -> ! {
    std::process::exit(125)
}

/// Refused: see [`probe`].
pub fn run(_spec: &Spec) -> Result<Finished> {
    Err(Error::Unavailable(missing()))
}

/// Ends a run early (there is none here).
#[derive(Clone, Debug)]
pub struct Stop;

impl Stop {
    /// Does nothing: nothing runs.
    pub fn stop(&self) {}
}

/// Refused: see [`probe`].
pub fn run_until(_spec: &Spec, _stopper: &mut dyn FnMut(Stop)) -> Result<Finished> {
    Err(Error::Unavailable(missing()))
}

/// Says what is missing.
pub fn probe() -> Result<Mechanism, Unavailable> {
    Err(missing())
}

/// Nothing to set.
pub fn set_helper(_path: std::path::PathBuf) {}

/// Nothing to remove: no run makes a cgroup here.
pub fn remove_stale_cgroups() {}

/// Nothing to set.
pub fn set_helper_image(_image: &'static [u8]) {}
