//! The two confinement mechanisms side by side, each asked for by name
//! (`Spec::confinement`): namespaces with Landlock and seccomp, and
//! Landlock with seccomp alone (what runs where namespaces cannot be made).
//! Each guarantee a mechanism lists as holding is tried here as an attacker
//! would, and each hole found in exec is closed under both.
//!
//! This machine makes namespaces, so both run here; CI's second run (no
//! user namespaces) runs the exec and MCP suites under the fallback.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use warden_confine::{Confinement, Finished, Mechanism, Spec, Status};
use warden_tests::Sandbox;

const BOTH: [Confinement; 2] = [Confinement::Namespaces, Confinement::Landlock];

fn spec(sb: &Sandbox, c: Confinement, line: &str) -> Spec {
    let mut s = super::confine::spec(sb, line);
    s.confinement = c;
    s
}

fn run(sb: &Sandbox, c: Confinement, line: &str) -> Finished {
    warden_confine::run(&spec(sb, c, line)).unwrap_or_else(|e| panic!("{c:?}: {e}"))
}

/// The mechanism a run of `c` reports.
fn mechanism(c: Confinement) -> Mechanism {
    let sb = Sandbox::new();
    let mut p = warden_confine::spawn(&spec(&sb, c, "cat"), false).unwrap();
    let m = p.mechanism().clone();
    p.kill();
    m
}

fn root() -> bool {
    nix_uid() == 0
}

fn nix_uid() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1)?.parse().ok())
        .unwrap()
}

#[test]
fn each_mechanism_lists_what_holds_and_what_does_not() {
    let ns = mechanism(Confinement::Namespaces);
    assert_eq!(ns.kind, Confinement::Namespaces);
    assert!(
        ns.guarantees.iter().all(|g| g.holds),
        "{:#?}",
        ns.guarantees
    );
    let alone = mechanism(Confinement::Landlock);
    assert_eq!(alone.kind, Confinement::Landlock, "{alone}");
    assert!(alone.summary.contains("seccomp alone"), "{alone}");
    // What namespaces give and Landlock and seccomp cannot.
    assert_eq!(alone.holds("metadata"), Some(false));
    assert_eq!(alone.holds("/proc"), Some(false));
    // What both keep, proved below.
    for what in [
        "files",
        "set-id",
        "network",
        "unix sockets",
        "processes",
        "IPC",
        "limits",
    ] {
        assert_eq!(alone.holds(what), Some(true), "{what}: {alone:#?}");
        assert_eq!(ns.holds(what), Some(true), "{what}");
    }
    let abi = warden_confine::kernel().landlock.unwrap();
    assert_eq!(alone.holds("signals"), Some(abi >= 6));
    let lines = alone.lines();
    assert!(
        lines.iter().any(|l| l.starts_with("\u{2717} metadata")),
        "{lines:?}"
    );
    if root() {
        assert!(
            alone.summary.contains("root's capabilities dropped"),
            "{alone}"
        );
    }
}

#[test]
fn both_refuse_every_unix_socket_but_a_stream_or_seqpacket_pair() {
    let sb = Sandbox::new();
    let script = "import socket\n\
        for name in ('SOCK_DGRAM', 'SOCK_RAW', 'SOCK_RDM', 'SOCK_STREAM', 'SOCK_SEQPACKET'):\n\
        \x20   kind = getattr(socket, name)\n\
        \x20   try:\n\
        \x20       a, b = socket.socketpair(socket.AF_UNIX, kind | socket.SOCK_CLOEXEC)\n\
        \x20       a.send(b'x'); print(name, 'made', b.recv(1))\n\
        \x20   except OSError as e:\n\
        \x20       print(name, 'refused', e.errno)\n\
        try:\n\
        \x20   socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM).sendto(b'x', '/dev/log')\n\
        \x20   print('dev/log reached')\n\
        except OSError as e:\n\
        \x20   print('socket refused', e.errno)\n";
    std::fs::write(sb.ws.join("pair.py"), script).unwrap();
    for c in BOTH {
        let done = run(&sb, c, "python3 pair.py");
        assert_eq!(done.status, Status::Exited(0), "{c:?}: {}", done.stderr);
        let eacces = EACCES;
        assert_eq!(
            done.stdout,
            format!(
                "SOCK_DGRAM refused {eacces}\nSOCK_RAW refused {eacces}\nSOCK_RDM refused \
                 {eacces}\nSOCK_STREAM made b'x'\nSOCK_SEQPACKET made b'x'\nsocket refused \
                 {eacces}\n"
            ),
            "{c:?}"
        );
    }
}

/// The errno the filters answer with.
const EACCES: i32 = 13;

#[test]
fn both_read_certificates_and_no_private_key() {
    let sb = Sandbox::new();
    let private = std::path::Path::new("/etc/ssl/private");
    assert!(
        private.is_dir() || std::env::var_os("CI").is_none(),
        "CI has /etc/ssl/private (openssl's package makes it)"
    );
    if !private.is_dir() {
        return eprintln!("skipped: no /etc/ssl/private here");
    }
    for c in BOTH {
        let done = run(
            &sb,
            c,
            "head -c 27 /etc/ssl/certs/ca-certificates.crt; echo; \
             ls /etc/ssl/private && echo LISTED; ls /usr/lib/ssl/private/ && echo LISTED; \
             cat /etc/ssl/private/* /usr/lib/ssl/private/* && echo READ; true",
        );
        assert_eq!(
            done.stdout, "-----BEGIN CERTIFICATE-----\n",
            "{c:?}: {}",
            done.stderr
        );
        assert!(done.stderr.contains("Permission denied"), "{}", done.stderr);
    }
}

#[test]
fn both_leave_no_set_id_file_and_no_file_capability() {
    for c in BOTH {
        let sb = Sandbox::new();
        let done = run(
            &sb,
            c,
            "touch f; chmod u+s f; chmod g+s f; chmod 6755 f; \
             mkdir -m 2755 d; \
             python3 -c \"import os; os.open('g', os.O_CREAT | os.O_WRONLY, 0o4755)\"; \
             python3 -c \"import os; os.setxattr('f', 'security.capability', b'\\x01\\x00\\x00\\x02' + bytes(16))\"; \
             python3 -c \"import os; os.setxattr('f', 'user.note', b'x')\"; \
             python3 -c \"import os, stat; os.chmod('f', 0o755); os.fchmod(os.open('f', os.O_RDONLY), 0o4755)\"; \
             echo END",
        );
        assert!(done.stdout.contains("END"), "{c:?}: {}", done.stderr);
        let mode = |p: &str| {
            std::fs::metadata(sb.ws.join(p))
                .map(|m| m.permissions().mode() & 0o7777)
                .ok()
        };
        let f = mode("f").unwrap();
        assert_eq!(f & 0o6000, 0, "{c:?}: f is {f:o}");
        assert_eq!(f, 0o755, "{c:?}: a plain chmod still works");
        // coreutils makes the folder, then sets the bit apart (refused).
        let d = mode("d").unwrap_or(0);
        assert_eq!(d & 0o6000, 0, "{c:?}: d is {d:o}");
        assert_eq!(mode("g"), None, "{c:?}: the set-id create was refused");
        assert_eq!(
            done.stderr.matches("Permission denied").count(),
            // chmod u+s, g+s, 6755, mkdir -m 2755, os.open, two setxattr, fchmod
            8,
            "{c:?}: {}",
            done.stderr
        );
    }
}

#[test]
fn alone_reads_and_writes_only_its_grants() {
    let sb = Sandbox::new();
    let secret = sb.outside.join("secret.txt");
    let line = format!(
        "cat {0}; echo x > {1}/made.txt; echo ok > inside.txt; ls /root /home >/dev/null && echo LISTED; echo END",
        secret.display(),
        sb.outside.display()
    );
    let done = run(&sb, Confinement::Landlock, &line);
    assert!(done.stdout.ends_with("END\n"), "{}", done.stderr);
    assert!(!done.stdout.contains("LISTED"));
    assert!(!sb.outside.join("made.txt").exists());
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("inside.txt")).unwrap(),
        "ok\n"
    );
    assert_eq!(
        done.stderr.matches("Permission denied").count(),
        4,
        "{}",
        done.stderr
    );
}

#[test]
fn alone_has_no_network_without_a_grant_and_the_host_network_with_one() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sb = Sandbox::new();
    let script = format!(
        "import socket\n\
         for family in (socket.AF_INET, socket.AF_INET6, socket.AF_NETLINK, socket.AF_PACKET):\n\
         \x20   try:\n\
         \x20       socket.socket(family, socket.SOCK_DGRAM if family == socket.AF_NETLINK else socket.SOCK_STREAM).close(); print(int(family), 'made')\n\
         \x20   except OSError as e:\n\
         \x20       print(int(family), 'refused', e.errno)\n\
         try:\n\
         \x20   socket.create_connection(('127.0.0.1', {port}), timeout=5); print('connected')\n\
         except OSError as e:\n\
         \x20   print('connect refused', e.errno)\n"
    );
    std::fs::write(sb.ws.join("net.py"), script).unwrap();
    let done = run(&sb, Confinement::Landlock, "python3 net.py");
    assert_eq!(
        done.stdout,
        "2 refused 13\n10 refused 13\n16 refused 13\n17 refused 13\nconnect refused 13\n",
        "{}",
        done.stderr
    );
    let mut s = spec(&sb, Confinement::Landlock, "python3 net.py");
    s.network = true;
    let done = warden_confine::run(&s).unwrap();
    assert!(
        done.stdout.ends_with("connected\n"),
        "{}{}",
        done.stdout,
        done.stderr
    );
    drop(listener);
}

#[test]
fn alone_no_process_outlives_the_run_ended_or_stopped() {
    let sb = Sandbox::new();
    let line = |base: u32| {
        format!(
            "sleep {0}1 & setsid sleep {0}2 & nohup sleep {0}3 >/dev/null 2>&1 & \
             (sh -c 'sleep {0}4 &' &) ; setsid sh -c 'sleep {0}5 & sleep {0}6' & \
             sleep 0.3; echo started",
            base
        )
    };
    let gone = |base: u32| {
        for n in 1..=6 {
            let needle = format!("{base}{n}");
            assert_eq!(
                warden_tests::sleeping(&needle),
                Vec::<u32>::new(),
                "sleep {needle} survived"
            );
        }
    };
    // It ends on its own, its descendants still running.
    let done = run(&sb, Confinement::Landlock, &line(77910));
    assert!(done.stdout.contains("started"), "{}", done.stderr);
    gone(77910);
    // Its timeout ends it.
    let mut s = spec(
        &sb,
        Confinement::Landlock,
        &format!("{}; sleep 1000", line(77920)),
    );
    s.timeout = Duration::from_secs(2);
    let done = warden_confine::run(&s).unwrap();
    assert!(done.timed_out);
    gone(77920);
    // A long-lived one (an MCP server) is dropped.
    let s = spec(
        &sb,
        Confinement::Landlock,
        &format!("{}; while read l; do echo \"got $l\"; done", line(77930)),
    );
    let p = warden_confine::spawn(&s, false).unwrap();
    warden_tests::wait_until("the sleeps never started", || {
        !warden_tests::sleeping("779306").is_empty()
    });
    drop(p);
    gone(77930);
}

#[test]
fn alone_sees_no_proc_and_signals_nothing_outside_the_run() {
    let sb = Sandbox::new();
    let done = run(
        &sb,
        Confinement::Landlock,
        "ls /proc >/dev/null && echo PROC; cat /proc/1/environ && echo ENVIRON; \
         kill -0 $PPID && echo HELPER; kill -0 1 && echo INIT; \
         sleep 100 & kill $! && echo OWN",
    );
    let abi = warden_confine::kernel().landlock.unwrap();
    let expected = if abi >= 6 { "OWN\n" } else { "HELPER\nOWN\n" };
    assert_eq!(done.stdout, expected, "{}", done.stderr);
}

#[test]
fn alone_no_new_namespace_no_ptrace_and_no_system_v_ipc() {
    let sb = Sandbox::new();
    let script = "import ctypes, os\n\
        libc = ctypes.CDLL(None, use_errno=True)\n\
        def show(name, r):\n\
        \x20   print(name, r, ctypes.get_errno() if r < 0 else 0)\n\
        show('unshare', libc.unshare(0x10000000))\n\
        show('ptrace', libc.ptrace(0, 0, 0, 0))\n\
        show('shmget', libc.shmget(0, 4096, 0o1000 | 0o600))\n\
        show('semget', libc.semget(0, 1, 0o1000 | 0o600))\n\
        show('msgget', libc.msgget(0, 0o1000 | 0o600))\n\
        pid = os.fork()\n\
        if pid == 0:\n\
        \x20   os._exit(7)\n\
        print('fork', os.waitpid(pid, 0)[1] >> 8)\n";
    std::fs::write(sb.ws.join("ns.py"), script).unwrap();
    let done = run(&sb, Confinement::Landlock, "python3 ns.py");
    assert_eq!(
        done.stdout,
        "unshare -1 13\nptrace -1 13\nshmget -1 13\nsemget -1 13\nmsgget -1 13\nfork 7\n",
        "{}",
        done.stderr
    );
}

#[test]
fn alone_a_root_warden_runs_commands_without_roots_capabilities() {
    if !root() {
        return eprintln!("skipped: warden does not run as root here");
    }
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws.join("theirs")).unwrap();
    std::os::unix::fs::chown(sb.ws.join("theirs"), Some(4321), Some(4321)).unwrap();
    std::fs::set_permissions(sb.ws.join("theirs"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let done = run(
        &sb,
        Confinement::Landlock,
        "touch mine && chown 1234 mine && echo CHOWN; touch theirs/x && echo DAC; \
         grep Cap /proc/self/status; echo END",
    );
    assert_eq!(done.stdout, "END\n", "{}", done.stderr);
    // Under namespaces the same root maps to root of its own namespace
    // only: a file of another user is no more writable.
    let done = run(
        &sb,
        Confinement::Namespaces,
        "touch theirs/x && echo DAC; echo END",
    );
    assert_eq!(done.stdout, "END\n", "{}", done.stderr);
}
