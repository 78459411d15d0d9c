//! How commands (`shell`, MCP servers started by command) are confined
//! here: what the confinement itself reports, then the kernel's parts.

use warden_confine::Kernel;

use super::Check;

/// The confinement a command gets (`warden-confine` confines `true` and
/// says what was in force, or what is missing), then the Landlock ABI,
/// user namespaces and cgroups as the kernel reports them.
pub fn checks() -> Vec<Check> {
    let mut out = match warden_confine::probe() {
        Ok(mechanism) => {
            let mut out = vec![Check::pass(format!("commands are confined: {mechanism}"))];
            out.extend(mechanism.guarantees.iter().map(|g| {
                if g.holds {
                    Check::pass(format!("{} ({})", g.what, g.how))
                } else {
                    Check::fail(
                        format!("{} \u{2014} {}", g.what, g.how),
                        "user namespaces give it (see the user namespaces line below); \
                         `confinement = \"namespaces\"` refuses commands rather than run them \
                         without it",
                    )
                }
            }));
            out
        }
        Err(e) => vec![Check::fail(
            e.to_string(),
            "tools that run programs (shell, MCP servers by command) are refused here; \
             the rest of warden works",
        )],
    };
    out.extend(kernel_lines(&warden_confine::kernel()));
    out
}

fn kernel_lines(k: &Kernel) -> Vec<Check> {
    let landlock = match &k.landlock {
        Ok(abi) => Check::pass(format!("Landlock ABI {abi}")),
        Err(why) => Check::fail(
            format!("Landlock is {why}"),
            "commands are confined by Landlock: without it they are refused",
        ),
    };
    let namespaces = match &k.user_namespaces {
        Ok(setting) => Check::pass(format!("user namespaces can be made ({setting})")),
        Err(why) => Check::fail(
            format!("user namespaces are {why}"),
            "commands run under Landlock and seccomp alone, with the guarantees above; for \
             namespaces, allow them (`sysctl -w user.max_user_namespaces=15000`, or your \
             system's setting)",
        ),
    };
    let pids = match (&k.pids_cgroup, k.root) {
        (Some(dir), _) => Check::pass(format!(
            "cgroup v1 pids at {}: a run's process count is bounded{}",
            dir.display(),
            if k.root {
                " (needed: warden runs as root)"
            } else {
                ""
            }
        )),
        (None, false) => Check::pass(
            "no cgroup v1 pids controller, none needed: RLIMIT_NPROC bounds a run's processes",
        ),
        (None, true) => Check::fail(
            "no cgroup v1 pids controller, and warden runs as root, for whom the kernel \
             ignores RLIMIT_NPROC: commands are refused",
            "run warden as an ordinary user, or mount the pids controller at \
             /sys/fs/cgroup/pids",
        ),
    };
    let memory = match &k.memory_cgroup {
        Some(dir) => Check::pass(format!(
            "cgroup v1 memory at {}: a run's processes are bounded together",
            dir.display()
        )),
        None => Check::note(
            "no cgroup v1 memory controller: memory is bounded per process only (RLIMIT_DATA)",
        ),
    };
    vec![landlock, namespaces, pids, memory]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_fact_says_what_it_means_for_a_run() {
        let k = Kernel {
            landlock: Err("not supported by this kernel".into()),
            user_namespaces: Err("disabled: user.max_user_namespaces = 0".into()),
            pids_cgroup: None,
            memory_cgroup: None,
            root: true,
        };
        let lines: Vec<String> = kernel_lines(&k).iter().map(|c| c.line(false)).collect();
        assert_eq!(
            lines,
            vec![
                "  ✗ Landlock is not supported by this kernel → commands are confined by \
                 Landlock: without it they are refused",
                "  ✗ user namespaces are disabled: user.max_user_namespaces = 0 → commands run \
                 under Landlock and seccomp alone, with the guarantees above; for namespaces, \
                 allow them (`sysctl -w user.max_user_namespaces=15000`, or your system's \
                 setting)",
                "  ✗ no cgroup v1 pids controller, and warden runs as root, for whom the kernel \
                 ignores RLIMIT_NPROC: commands are refused → run warden as an ordinary user, \
                 or mount the pids controller at /sys/fs/cgroup/pids",
                "  · no cgroup v1 memory controller: memory is bounded per process only \
                 (RLIMIT_DATA)",
            ]
        );
        let ok = Kernel {
            landlock: Ok(6),
            user_namespaces: Ok("user.max_user_namespaces = 10".into()),
            pids_cgroup: None,
            memory_cgroup: Some("/sys/fs/cgroup/memory/u".into()),
            root: false,
        };
        let lines: Vec<String> = kernel_lines(&ok).iter().map(|c| c.line(false)).collect();
        assert_eq!(
            lines,
            vec![
                "  ✓ Landlock ABI 6",
                "  ✓ user namespaces can be made (user.max_user_namespaces = 10)",
                "  ✓ no cgroup v1 pids controller, none needed: RLIMIT_NPROC bounds a run's \
                 processes",
                "  ✓ cgroup v1 memory at /sys/fs/cgroup/memory/u: a run's processes are bounded \
                 together",
            ]
        );
    }
}
