//! What a run is promised, built from the facts of the run that the helper
//! set up (never restated elsewhere): `warden policy`, the trust command
//! and `warden doctor` list these, and the tests prove each one that holds.

use crate::spec::{Confinement, Guarantee, Mechanism};

/// The facts of one run's confinement, as the helper found them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    /// The Landlock ABI the kernel enforces.
    pub abi: i32,
    /// Whether the host network is granted.
    pub network: bool,
    /// Whether the run has its own `/proc` (namespaces), or why not.
    pub proc: Result<(), String>,
    /// Whether a memory cgroup bounds the run's processes together.
    pub whole_memory: bool,
    /// Whether warden runs as root (the fallback then drops capabilities).
    pub root: bool,
}

/// The ABI from which Landlock scopes signals and abstract Unix sockets.
const SCOPE_ABI: i32 = 6;
/// The ABI from which Landlock checks TCP connect and bind.
const NET_ABI: i32 = 4;

/// The mechanism `kind` with `facts`; `fallback`: why not namespaces.
pub fn mechanism(kind: Confinement, facts: &Facts, fallback: Option<String>) -> Mechanism {
    let ns = kind == Confinement::Namespaces;
    let abi = facts.abi;
    let g = |what: &str, holds: bool, how: String| Guarantee {
        what: what.to_string(),
        holds,
        how,
    };
    let mut guarantees = vec![g(
        "files: only its grants are read or written, the system folders and what programs need of /etc read-only",
        true,
        format!("Landlock ABI {abi}"),
    )];
    guarantees.push(if ns {
        g(
            "metadata: no mode, owner, time or extended attribute changes outside its write grants",
            true,
            "every mount read-only but the write grants".into(),
        )
    } else {
        g(
            "metadata: no mode, owner, time or extended attribute changes outside its write grants",
            false,
            format!(
                "Landlock does not check metadata: the mode and times of files {} owns outside the grants can change (namespaces would make them read-only)",
                if facts.root { "root" } else { "your user" }
            ),
        )
    });
    guarantees.push(g(
        "set-id: no setuid or setgid file and no file capability left behind",
        true,
        "seccomp refuses set-id modes and extended attributes".into(),
    ));
    guarantees.push(match (facts.network, ns) {
        (true, _) => g(
            "network: none without a grant",
            true,
            "granted: the host network".into(),
        ),
        (false, true) => g(
            "network: none without a grant",
            true,
            "an empty network namespace".into(),
        ),
        (false, false) => g(
            "network: none without a grant",
            true,
            if abi >= NET_ABI {
                format!("seccomp refuses every socket family; Landlock ABI {abi} refuses TCP")
            } else {
                "seccomp refuses every socket family".into()
            },
        ),
    });
    guarantees.push(g(
        "unix sockets: none of the host's, by path or abstract name",
        true,
        "seccomp refuses every Unix socket but a stream or seqpacket socketpair".into(),
    ));
    guarantees.push(g(
        "processes: none outlives the call (setsid, nohup and double forks included)",
        true,
        if ns {
            "its own PID namespace".into()
        } else {
            "warden's helper, a child subreaper, kills every descendant".into()
        },
    ));
    guarantees.push(g(
        "signals and ptrace: only the run's own processes",
        ns || abi >= SCOPE_ABI,
        if ns {
            "its own PID namespace".into()
        } else if abi >= SCOPE_ABI {
            format!("Landlock ABI {abi} scopes signals; seccomp refuses ptrace")
        } else {
            format!(
                "Landlock ABI {abi} does not scope signals (ABI {SCOPE_ABI} does): it may signal your other processes"
            )
        },
    ));
    guarantees.push(match (&facts.proc, ns) {
        (Ok(()), true) => g(
            "/proc: its own, showing only the run's processes",
            true,
            "a procfs of its PID namespace".into(),
        ),
        (Err(e), true) => g(
            "/proc: its own, showing only the run's processes",
            false,
            format!("none at all: the kernel refused one ({e})"),
        ),
        (_, false) => g(
            "/proc: its own, showing only the run's processes",
            false,
            "none of its own: Landlock refuses opening any file of the host's /proc, its own /proc/self included (a path lookup such as stat still works)".into(),
        ),
    });
    guarantees.push(g(
        "IPC: no System V shared memory, semaphores or queues of the host",
        true,
        if ns {
            "its own IPC namespace".into()
        } else {
            "seccomp refuses System V IPC".into()
        },
    ));
    guarantees.push(g(
        "limits: processes and memory bounded",
        true,
        if facts.whole_memory {
            "rlimits and a memory cgroup for all processes together".into()
        } else {
            "rlimits (memory per process: no memory cgroup here)".into()
        },
    ));
    let summary = if ns {
        format!(
            "Landlock ABI {abi} + user, PID, mount, IPC{} namespaces + seccomp",
            if facts.network { "" } else { " and network" }
        )
    } else {
        format!(
            "Landlock ABI {abi} + seccomp alone, no namespaces{}",
            if facts.root {
                ", root's capabilities dropped"
            } else {
                ""
            }
        )
    };
    Mechanism {
        kind,
        summary,
        fallback,
        guarantees,
    }
}
