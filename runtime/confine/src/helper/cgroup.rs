//! The run's cgroups (v1): `pids` when warden is root (the kernel never
//! enforces `RLIMIT_NPROC` for the host's root), `memory` where warden can
//! make one (the whole run's memory), made beside warden's own and removed
//! after; ones left behind by a killed warden are removed when found.

use std::path::Path;

/// The cgroup (v1) of `controller` a helper with pid `helper` puts its
/// run in, beside warden's own:
/// `/sys/fs/cgroup/<controller>/<warden's>/warden-confine-<pid>`.
pub(super) fn cgroup_dir(controller: &str, helper: u32) -> Option<std::path::PathBuf> {
    cgroup_parent(controller).map(|dir| dir.join(format!("warden-confine-{helper}")))
}

/// This process's own cgroup (v1) of `controller`, where runs are made,
/// if that controller is mounted.
pub(crate) fn cgroup_parent(controller: &str) -> Option<std::path::PathBuf> {
    let own = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = own.lines().find_map(|l| {
        let mut parts = l.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then(|| path.to_string())
    })?;
    let mut dir = Path::new("/sys/fs/cgroup").join(controller);
    // The root cgroup is `/`: no empty last component.
    dir.extend(Path::new(&path).components().skip(1));
    dir.join("cgroup.procs").exists().then_some(dir)
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
pub(super) fn make_cgroup(dir: &Path) -> std::io::Result<()> {
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
pub(super) fn remove_stale_cgroups(parent: &Path) {
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

/// Removes the cgroups of runs whose helper is gone, under both
/// controllers (warden was killed during their run).
pub fn remove_stale() {
    for controller in ["pids", "memory"] {
        if let Some(parent) = cgroup_parent(controller) {
            remove_stale_cgroups(&parent);
        }
    }
}

/// Creates this helper's `memory` cgroup bounding the whole run to
/// `bytes` (swap included where the kernel counts it), if it can.
pub(super) fn memory_cgroup(bytes: u64) -> Option<std::path::PathBuf> {
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
pub(super) fn pids_cgroup(processes: u64) -> Result<std::path::PathBuf, String> {
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
