//! `exec`: programs run by tools as host processes, confined by the kernel
//! to the tool's grants. Every escape is tried through the real `warden`
//! binary and checked on the host afterwards.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use warden_tests::{Run, Sandbox, guests, run};

/// A workspace whose `shell` may run `sh`, read the workspace and write
/// only `out/`; `extra` lines are added to its section.
fn shell_sandbox(extra: &str) -> Sandbox {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws.join("out")).unwrap();
    sb.policy(&format!(
        "[tools.shell]\nexec = [\"sh\"]\nread = [\".\"]\nwrite = [\"out\"]\n{extra}\n"
    ));
    sb.trust();
    sb
}

/// `warden tools call shell {"command": line}`.
fn shell(sb: &Sandbox, line: &str) -> Run {
    let args = serde_json::json!({ "command": line }).to_string();
    run(sb.warden().args(["tools", "call", "shell", &args]))
}

/// Starts `warden tools call shell ARGS` and returns once its command
/// has reached `sleep NEEDLE`.
fn shell_until_sleeping(warden: &mut Command, args: &str, needle: &str) -> Child {
    let child = warden
        .args(["tools", "call", "shell", args])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    warden_tests::wait_until("the command never started", || {
        !warden_tests::sleeping(needle).is_empty()
    });
    child
}

/// A name no other test uses, for files and processes to look for.
fn marker(tag: &str) -> String {
    format!(
        "warden-exec-{tag}-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// `warden tools call shell ARGS` started with `file` open on its
/// descriptor 7, as a shell redirection leaves it.
fn shell_inheriting(sb: &Sandbox, file: &std::path::Path, args: &str) -> Run {
    let warden = sb.warden();
    let mut cmd = Command::new("sh");
    cmd.env_clear()
        .envs(warden.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .current_dir(warden.get_current_dir().unwrap())
        .env("FILE", file)
        .args([
            "-c",
            "exec \"$0\" tools call shell \"$1\" 7<\"$FILE\"",
            warden.get_program().to_str().unwrap(),
            args,
        ]);
    run(&mut cmd)
}

/// The host still runs commands: a plain call works.
fn host_still_works(sb: &Sandbox) {
    let r = shell(sb, "echo alive");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("exit code: 0\n--- stdout ---\nalive\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn a_granted_shell_writes_only_inside_its_write_grants() {
    let sb = shell_sandbox("");
    let name = marker("write");
    let tmp = PathBuf::from("/tmp").join(&name);
    let real_home = PathBuf::from(std::env::var("HOME").unwrap()).join(&name);
    let warden_home = sb.home.join(&name);
    let sibling = sb.outside.join(&name);
    let line = format!(
        "echo x > {tmp}; echo x > {real_home}; echo x > {warden_home}; echo x > {sibling}; \
         echo x > ../outside/{name}; echo changed > hello.txt; mkdir docs/new; \
         echo made > out/made.txt",
        tmp = tmp.display(),
        real_home = real_home.display(),
        warden_home = warden_home.display(),
        sibling = sibling.display(),
    );
    let r = shell(&sb, &line);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for escaped in [&tmp, &real_home, &warden_home, &sibling] {
        assert!(
            !escaped.exists(),
            "{} was written: {}",
            escaped.display(),
            r.stdout
        );
    }
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert!(!sb.ws.join("docs/new").exists());
    // The write grant itself works, so the refusals above are the kernel's
    // (with namespaces, every mount of the run is read-only outside the
    // write grants, Landlock behind that; alone, Landlock refuses).
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("out/made.txt")).unwrap(),
        "made\n"
    );
    let refusal = if warden_tests::namespaced() {
        "Read-only file system"
    } else {
        "Permission denied"
    };
    assert!(r.stdout.contains(refusal), "{}", r.stdout);
}

#[test]
fn a_granted_shell_cannot_read_a_sibling_of_the_workspace() {
    let sb = shell_sandbox("");
    let r = shell(
        &sb,
        &format!(
            "cat ../outside/secret.txt; cat {}/secret.txt; ls ..; cat hello.txt",
            sb.outside.display()
        ),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("top secret"), "{}", r.stdout);
    assert!(r.stdout.contains("Permission denied"), "{}", r.stdout);
    // What is granted is readable.
    assert!(r.stdout.contains("hello\nworld\n"), "{}", r.stdout);
}

/// A loopback listener counts the connections `line` makes under `extra`.
fn connections(extra: &str, line: impl Fn(u16) -> String) -> (usize, String) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sb = shell_sandbox(&extra.replace("PORT", &port.to_string()));
    let r = shell(&sb, &line(port));
    assert_eq!(r.code, 0, "{}", r.stderr);
    listener.set_nonblocking(true).unwrap();
    let mut n = 0;
    while listener.accept().is_ok() {
        n += 1;
    }
    (n, r.stdout)
}

#[test]
fn without_a_network_grant_a_command_reaches_no_listener() {
    let connect =
        |port: u16| format!("bash -c 'echo hi > /dev/tcp/127.0.0.1/{port}' && echo connected");
    let (n, out) = connections("", connect);
    assert_eq!(n, 0, "{out}");
    assert!(!out.contains("--- stdout ---\nconnected"), "{out}");
    // With a network grant the same command connects: the count can fail.
    let (n, out) = connections("network = [\"127.0.0.1:PORT\"]", connect);
    assert_eq!(n, 1, "{out}");
    assert!(out.contains("--- stdout ---\nconnected"), "{out}");
}

#[test]
fn no_process_outlives_its_call() {
    // The probe finds a process that is running, so it can fail.
    let mut control = std::process::Command::new("sleep")
        .arg("777000")
        .spawn()
        .unwrap();
    // Until the child has exec'd, its command line is still the parent's.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !warden_tests::sleeping("777000").contains(&control.id())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(warden_tests::sleeping("777000").contains(&control.id()));
    control.kill().unwrap();
    control.wait().unwrap();

    let sb = shell_sandbox("");
    let r = shell(
        &sb,
        "sleep 777001 & setsid sleep 777002 & nohup sleep 777003 >/dev/null 2>&1 & \
         (sh -c 'sleep 777004 &' &) ; setsid sh -c 'sleep 777005 & sleep 777006' & \
         sleep 0.2; echo started",
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("started"), "{}", r.stdout);
    for n in 777001..=777006 {
        assert_eq!(
            warden_tests::sleeping(&n.to_string()),
            Vec::<u32>::new(),
            "sleep {n} survived"
        );
    }
}

#[test]
fn a_fork_bomb_and_a_memory_bomb_end_and_the_host_still_works() {
    let sb = shell_sandbox("timeout = \"5s\"\nmemory = \"64MiB\"");
    let start = Instant::now();
    let r = shell(&sb, "f() { f | f & }; f; sleep 1; echo bombed");
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // It ends on the process limit, the timeout, or (where a memory cgroup
    // holds the run's processes together) their memory limit, said as such.
    assert!(
        r.stdout.contains("Cannot fork")
            || r.stdout.contains("timed out")
            || r.stdout
                .contains("together passed the memory limit of 64MiB"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    host_still_works(&sb);

    let start = Instant::now();
    let r = shell(
        &sb,
        "awk 'BEGIN { s = \"x\"; while (1) s = s s }'; echo \"awk ended: $?\"",
    );
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    assert!(
        r.stdout.contains("awk ended: ") || r.stdout.contains("timed out"),
        "{}{}",
        r.stdout,
        r.stderr
    );
    host_still_works(&sb);
}

/// Whether this process may make a cgroup (v1) under the `memory`
/// controller beside its own, as warden's helper does.
fn memory_cgroup_here() -> bool {
    let Some(parent) = warden_confine::kernel().memory_cgroup else {
        return false;
    };
    let probe = parent.join(marker("probe"));
    std::fs::create_dir(&probe).is_ok() && std::fs::remove_dir(&probe).is_ok()
}

#[test]
fn the_memory_limit_bounds_all_the_processes_of_a_command_together() {
    // Six processes of ~20 MiB each: every one is within the 64 MiB of
    // its own rlimit, all of them together are not.
    let sb = shell_sandbox("timeout = \"20s\"\nmemory = \"64MiB\"");
    let hold = "awk 'BEGIN { s = \"xxxxxxxxxxxxxxxx\"; for (i = 0; i < 20; i++) s = s s; \
                print \"held\"; fflush(); system(\"sleep 2\") }'";
    let line = format!("for i in 1 2 3 4 5 6; do {hold} & done; wait; echo all ended");
    let r = shell(&sb, &line);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let policy = run(sb.warden().arg("policy"));
    if !memory_cgroup_here() {
        // Only the rlimit of each process applies here, and the policy
        // says so: every process got its 20 MiB.
        eprintln!("no memory cgroup on this host: only per-process limits checked");
        assert!(
            policy.stdout.contains("no memory cgroup"),
            "{}",
            policy.stdout
        );
        assert_eq!(r.stdout.matches("held").count(), 6, "{}", r.stdout);
        return;
    }
    assert!(
        policy
            .stdout
            .contains("a memory cgroup for all processes together"),
        "{}",
        policy.stdout
    );
    assert!(
        r.stdout
            .contains("the kernel killed a process of this command: its processes together passed the memory limit of 64MiB"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("all ended"), "{}", r.stdout);
    host_still_works(&sb);
}

#[test]
fn a_command_past_the_timeout_is_killed_spinning_or_sleeping() {
    let sb = shell_sandbox("timeout = \"2s\"");
    for line in [
        "while :; do :; done",
        "sleep 777100",
        "sh -c 'sleep 777101 &'; while :; do :; done",
    ] {
        let start = Instant::now();
        let r = shell(&sb, line);
        let took = start.elapsed();
        assert!(
            took >= Duration::from_millis(1500) && took < Duration::from_secs(10),
            "{line}: {took:?}"
        );
        assert!(
            r.stdout.contains("timed out") || r.stderr.contains("time limit"),
            "{line}: {}{}",
            r.stdout,
            r.stderr
        );
    }
    assert_eq!(warden_tests::sleeping("777100"), Vec::<u32>::new());
    assert_eq!(warden_tests::sleeping("777101"), Vec::<u32>::new());
    host_still_works(&sb);
}

#[test]
fn a_command_sees_only_granted_variables_never_the_api_key() {
    let sb = shell_sandbox("env = [\"GRANTED_VAR\"]");
    let args = serde_json::json!({ "command": "env" }).to_string();
    let r = run(sb
        .warden()
        .env("OPENAI_API_KEY", "sk-exec-must-not-see")
        .env("GRANTED_VAR", "visible")
        .env("OTHER_VAR", "hidden")
        .args(["tools", "call", "shell", &args]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("sk-exec-must-not-see"), "{}", r.stdout);
    assert!(!r.stdout.contains("OPENAI_API_KEY"), "{}", r.stdout);
    assert!(!r.stdout.contains("hidden"), "{}", r.stdout);
    assert!(r.stdout.contains("GRANTED_VAR=visible"), "{}", r.stdout);
    // HOME and TMPDIR point inside the write grant.
    let out = sb.ws.join("out");
    assert!(
        r.stdout.contains(&format!("HOME={}", out.display())),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("TMPDIR={}", out.display())),
        "{}",
        r.stdout
    );
}

/// A granted variable's value (a token) reaches the command, but never a
/// command line: any user of the host can read every process's.
#[test]
fn a_granted_variable_is_on_no_command_line_of_the_host() {
    let sb = shell_sandbox("env = [\"GRANTED_TOKEN\"]\ntimeout = \"60s\"");
    let token = marker("token");
    let args = serde_json::json!({ "command": "echo \"$GRANTED_TOKEN\" > out/seen; sleep 777310" })
        .to_string();
    let mut child = shell_until_sleeping(sb.warden().env("GRANTED_TOKEN", &token), &args, "777310");
    let showing =
        warden_tests::processes_where(|c| c.windows(token.len()).any(|w| w == token.as_bytes()));
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(showing, Vec::<u32>::new(), "command lines show the token");
    let seen = std::fs::read_to_string(sb.ws.join("out/seen")).unwrap();
    assert_eq!(seen.trim(), token, "the command did not get the variable");
}

/// A command has a `/proc` of its own: `ps` and `/proc/self` work, and it
/// shows the run's processes only, never warden's (whose environment holds
/// the API key).
#[test]
fn a_command_has_its_own_proc_showing_only_the_runs_processes() {
    let sb = shell_sandbox("");
    let line = "ps -e -o pid=,comm=; echo ---; readlink /proc/self/exe; \
                echo to-stdout > /dev/stdout; echo ---; \
                cat /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' '\\n'";
    let args = serde_json::json!({ "command": line }).to_string();
    let r = run(sb
        .warden()
        .env("OPENAI_API_KEY", "sk-proc-must-not-see")
        .args(["tools", "call", "shell", &args]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = r.stdout.split("--- stdout ---\n").nth(1).unwrap_or("");
    let mut parts = out.split("---\n");
    let ps: Vec<&str> = parts.next().unwrap().lines().collect();
    let own = parts.next().unwrap();
    assert!(own.contains("to-stdout\n"), "{own}");
    if warden_tests::namespaced() {
        assert!(r.stdout.contains("exit code: 0\n"), "{}", r.stdout);
        assert!(
            ps.iter().any(|l| l.trim_start().starts_with("1 ")),
            "no PID 1 in the run's ps: {ps:?}"
        );
        assert!(ps.iter().any(|l| l.ends_with(" ps")), "{ps:?}");
        assert!(ps.len() <= 8, "ps shows more than the run: {ps:?}");
        assert!(own.contains("/readlink\n"), "{own}");
    } else {
        // Landlock and seccomp alone: no /proc at all, as `warden policy`
        // says (the host's would show every process).
        assert_eq!(ps, Vec::<&str>::new());
        // Not one file of the host's /proc was read.
        let proc_text = out.splitn(3, "---\n").nth(2).unwrap_or("");
        assert_eq!(
            proc_text.split("--- stderr ---").next(),
            Some(""),
            "{}",
            r.stdout
        );
        assert_eq!(warden_tests::confinement().holds("/proc"), Some(false));
    }
    let proc_text = parts.next().unwrap_or("");
    assert!(!proc_text.contains("sk-proc-must-not-see"), "{proc_text}");
    assert!(!proc_text.contains("OPENAI_API_KEY"), "{proc_text}");
}

/// A command cannot change what it sees of the file system: mounting,
/// unmounting its `/proc`, or binding the root elsewhere all fail, also
/// from a new user namespace of its own.
#[test]
fn a_command_cannot_mount_or_unmount_anything() {
    let sb = shell_sandbox("");
    let line = "mkdir -p out/m; \
                mount -t tmpfs none out/m && echo MOUNTED-TMPFS; \
                mount --bind / out/m && echo MOUNTED-ROOT; \
                umount /proc && echo UNMOUNTED-PROC; \
                unshare -rm sh -c 'mount --bind / out/m && ls out/m/etc/shadow && echo MOUNTED-IN-NS'; \
                ls /proc/1 >/dev/null && echo PROC-STILL-THERE";
    let r = shell(&sb, line);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The command's own output (the result starts with the command line).
    let out = r
        .stdout
        .split("--- stdout ---\n")
        .nth(1)
        .and_then(|o| o.split("--- stderr ---").next())
        .unwrap_or("");
    assert!(!out.contains("MOUNTED"), "{}", r.stdout);
    // With namespaces the run keeps its own /proc; alone it has none.
    assert_eq!(
        out.contains("PROC-STILL-THERE"),
        warden_tests::namespaced(),
        "{}",
        r.stdout
    );
    assert_eq!(
        std::fs::read_dir(sb.ws.join("out/m")).unwrap().count(),
        0,
        "something was mounted on out/m"
    );
}

/// A socket file of the host (an ssh agent, the session bus, docker) is
/// out of reach even inside a granted folder: Landlock does not check a
/// `connect`, so the run gets no Unix-domain socket at all.
#[test]
fn a_command_reaches_no_unix_socket_of_the_host() {
    use std::os::unix::net::UnixListener;
    let sb = shell_sandbox("");
    let path = sb.ws.join("agent.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    // The probe connects when nothing stops it.
    std::os::unix::net::UnixStream::connect(&path).unwrap();
    assert!(listener.accept().is_ok(), "the control connection");
    let line = "/usr/bin/python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); \
                s.connect(\"agent.sock\"); print(\"made\", \"it\")'; \
                /usr/bin/python3 -c 'import socket; a, b = socket.socketpair(); \
                a.send(b\"x\"); print(\"pair\", b.recv(1))'";
    let r = shell(&sb, line);
    assert!(!r.stdout.contains("made it"), "{}", r.stdout);
    assert!(r.stdout.contains("Permission denied"), "{}", r.stdout);
    assert!(
        listener.accept().is_err(),
        "the command's connection arrived"
    );
    // A stream pair reaches nothing outside and still works.
    assert!(r.stdout.contains("pair b'x'"), "{}", r.stdout);
}

/// The calls the filter refuses are refused through the x32 ABI too (the
/// same calls, numbered with bit 30 set, under the same audit arch). On a
/// kernel without x32 they would fail with ENOSYS whether filtered or not;
/// the filter's EACCES shows they never reach the kernel's table.
#[cfg(target_arch = "x86_64")]
#[test]
fn the_filtered_calls_are_refused_through_the_x32_abi_too() {
    let sb = shell_sandbox("");
    let line = "/usr/bin/python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
for name, nr, args in [(\"socket\", 41, (1, 1, 0)), (\"socketpair\", 53, (1, 2, 0, 0)),
                       (\"io_uring_setup\", 425, (1, 0))]:
    r = libc.syscall(0x40000000 | nr, *args)
    print(name, r, os.strerror(ctypes.get_errno()) if r < 0 else \"made\")
'";
    let r = shell(&sb, line);
    for name in ["socket", "socketpair", "io_uring_setup"] {
        assert!(
            r.stdout.contains(&format!("{name} -1 Permission denied")),
            "{name}: {}",
            r.stdout
        );
    }
}

/// The host's session keyring, vsock (not namespaced: the hypervisor and
/// other VMs) and kernel surface no command needs are refused; Internet
/// sockets still open (in the run's empty network namespace).
#[test]
fn a_command_reaches_no_keyring_no_vsock_and_no_bpf() {
    let sb = shell_sandbox("");
    let line = "/usr/bin/python3 -c '
import ctypes, os, socket
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
def show(name, r):
    print(name, r, os.strerror(ctypes.get_errno()) if r < 0 else \"made\")
show(\"keyctl\", libc.syscall(L(250), L(0), L(-3), L(0)))
show(\"add_key\", libc.syscall(L(248), b\"user\", b\"k\", b\"v\", L(1), L(-3)))
show(\"bpf\", libc.syscall(L(321), L(0), ctypes.create_string_buffer(128), L(128)))
show(\"perf_event_open\", libc.syscall(L(298), ctypes.create_string_buffer(128), L(0), L(-1), L(-1), L(0)))
show(\"userfaultfd\", libc.syscall(L(323), L(0)))
for name, family in [(\"vsock\", 40), (\"bluetooth\", 31), (\"packet\", 17), (\"inet\", 2)]:
    try:
        socket.socket(family, socket.SOCK_STREAM if family != 17 else socket.SOCK_RAW).close()
        print(name, \"made\")
    except OSError as e:
        print(name, e.strerror)
'";
    let r = shell(&sb, line);
    for name in ["keyctl", "add_key", "bpf", "perf_event_open", "userfaultfd"] {
        assert!(
            r.stdout.contains(&format!("{name} -1 Permission denied")),
            "{name}: {}",
            r.stdout
        );
    }
    for name in ["vsock", "bluetooth", "packet"] {
        assert!(
            r.stdout.contains(&format!("{name} Permission denied")),
            "{name}: {}",
            r.stdout
        );
    }
    // The filter is not blanket: with namespaces an Internet socket is
    // made (in an empty network namespace); alone, no socket is made
    // without a network grant.
    let inet = if warden_tests::namespaced() {
        "inet made"
    } else {
        "inet Permission denied"
    };
    assert!(r.stdout.contains(inet), "{}", r.stdout);
}

/// Landlock does not check inotify or fanotify: a command could watch a
/// folder outside its grants and learn the names of files made there.
/// Neither is available to it; `tail -f` still follows a granted file
/// (by polling).
#[test]
fn a_command_cannot_watch_a_folder_outside_its_grants() {
    let sb = shell_sandbox("");
    let outside = sb.outside.display().to_string();
    let line = format!(
        "/usr/bin/python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def show(name, r):
    print(name, r, os.strerror(ctypes.get_errno()) if r < 0 else \"made\")
fd = libc.inotify_init1(0)
show(\"inotify_init1\", fd)
show(\"inotify_add_watch\", libc.inotify_add_watch(fd, b\"{outside}\", 0x100))
show(\"fanotify_init\", libc.fanotify_init(0xc00, 0))
'; echo line > out/log; (timeout 2 tail -f out/log > out/seen &); sleep 0.5; echo more >> out/log; sleep 2; cat out/seen"
    );
    let r = shell(&sb, &line);
    for name in ["inotify_init1", "inotify_add_watch", "fanotify_init"] {
        assert!(
            r.stdout.contains(&format!("{name} -1 Permission denied")),
            "{name}: {}",
            r.stdout
        );
    }
    // `tail -f` saw the line added while it ran.
    assert!(
        r.stdout
            .contains("fanotify_init -1 Permission denied\nline\nmore\n"),
        "{}",
        r.stdout
    );
}

/// The run's init holds its status pipe (and held what warden
/// inherited): the program can neither take a descriptor from it
/// (`pidfd_getfd`) nor trace it.
#[test]
fn the_runs_init_gives_the_program_no_descriptor() {
    let sb = shell_sandbox("");
    let secret = sb.outside.join("secret.txt");
    std::fs::write(&secret, "inherited-secret").unwrap();
    // The shell's parent: the run's init (PID 1) with namespaces, the
    // helper alone.
    let probe = "T=$PPID /usr/bin/python3 -c '
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
L = ctypes.c_long
p = libc.syscall(L(434), L(int(os.environ[\"T\"])), L(0))
print(\"pidfd\", p)
for fd in range(3, 12):
    n = libc.syscall(L(438), L(p), L(fd), L(0))
    if n >= 0:
        os.lseek(n, 0, 0)
        print(\"took\", fd, os.read(n, 100))
    else:
        print(\"fd\", fd, os.strerror(ctypes.get_errno()))
print(\"trace\", libc.ptrace(L(16), L(int(os.environ[\"T\"])), None, None), os.strerror(ctypes.get_errno()))
'";
    let args = serde_json::json!({ "command": probe }).to_string();
    let r = shell_inheriting(&sb, &secret, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("inherited-secret"), "{}", r.stdout);
    assert!(
        !r.stdout.lines().any(|l| l.starts_with("took")),
        "{}",
        r.stdout
    );
    // The parent: the run's init with namespaces (the kernel refuses: it is
    // not dumpable), the helper alone (seccomp refuses both calls).
    let refused = if warden_tests::namespaced() {
        "Operation not permitted"
    } else {
        "Permission denied"
    };
    assert!(
        r.stdout.contains(&format!("fd 7 {refused}")),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains(&format!("trace -1 {refused}")),
        "{}",
        r.stdout
    );
}

/// Landlock does not check metadata: the run's mounts are read-only but
/// the write grants, so a file's mode, times and extended attributes
/// change only inside them (a root warden's command could otherwise make
/// any program setuid root).
#[test]
fn a_command_changes_no_metadata_outside_its_write_grants() {
    use std::os::unix::fs::PermissionsExt;
    let sb = shell_sandbox("");
    let victim = sb.outside.join("victim.txt");
    std::fs::write(&victim, "v").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    let before = std::fs::metadata(&victim).unwrap().modified().unwrap();
    let v = victim.display();
    let line = format!(
        "chmod 4755 {v} && echo CHMOD-OUT; touch -d 2001-01-01 {v} && echo UTIME-OUT; \
         chmod 777 hello.txt && echo CHMOD-RO; \
         /usr/bin/python3 -c 'import os; os.setxattr(\"{v}\", \"user.x\", b\"p\"); print(\"XATTR-OUT\")'; \
         touch out/mine && chmod 700 out/mine && touch -d 2001-01-01 out/mine && echo WRITE-GRANT-OK"
    );
    let r = shell(&sb, &line);
    if !warden_tests::namespaced() {
        // Landlock and seccomp alone: the set-id bit and extended
        // attributes are refused everywhere, but the mode and times of
        // files the user owns outside the grants are not protected, and
        // `warden policy` says so.
        for done in ["CHMOD-OUT", "XATTR-OUT"] {
            assert!(
                !r.stdout.contains(&format!("\n{done}")),
                "{done}: {}",
                r.stdout
            );
        }
        assert!(r.stdout.contains("WRITE-GRANT-OK"), "{}", r.stdout);
        let after = std::fs::metadata(&victim).unwrap();
        assert_eq!(after.permissions().mode() & 0o7777, 0o600);
        let policy = run(sb.warden().arg("policy"));
        assert!(
            policy.stdout.contains("\u{2717} metadata: no mode, owner, time or extended attribute changes outside its write grants \u{2014} Landlock does not check metadata"),
            "{}",
            policy.stdout
        );
        return;
    }
    for done in ["CHMOD-OUT", "UTIME-OUT", "CHMOD-RO", "XATTR-OUT"] {
        assert!(
            !r.stdout.contains(&format!("\n{done}")),
            "{done}: {}",
            r.stdout
        );
    }
    assert!(r.stdout.contains("Read-only file system"), "{}", r.stdout);
    assert!(r.stdout.contains("WRITE-GRANT-OK"), "{}", r.stdout);
    let after = std::fs::metadata(&victim).unwrap();
    assert_eq!(after.permissions().mode() & 0o7777, 0o600);
    assert_eq!(after.modified().unwrap(), before);
    let hello = std::fs::metadata(sb.ws.join("hello.txt")).unwrap();
    assert_ne!(hello.permissions().mode() & 0o777, 0o777);
    let mine = std::fs::metadata(sb.ws.join("out/mine")).unwrap();
    assert_eq!(mine.permissions().mode() & 0o777, 0o700);
}

/// The read-only mounts stay read-only: the command (root of its own
/// user namespace) cannot clear the flag with `mount_setattr`, which no
/// LSM checks, and then change metadata outside its write grants.
#[test]
fn a_command_cannot_make_its_read_only_mounts_writable() {
    use std::os::unix::fs::PermissionsExt;
    let sb = shell_sandbox("");
    let victim = sb.outside.join("victim.txt");
    std::fs::write(&victim, "v").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).unwrap();
    // mount_setattr(AT_FDCWD, path, 0, {attr_clr: MOUNT_ATTR_RDONLY}, 32)
    // on each folder up from the victim (one of them is its mount point).
    let script = format!(
        "import ctypes, os\n\
         libc = ctypes.CDLL(None, use_errno=True)\n\
         L = ctypes.c_long\n\
         p = {victim:?}\n\
         while True:\n\
         \x20   attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)\n\
         \x20   r = libc.syscall(L(442), L(-100), p.encode(), L(0), attr, L(32))\n\
         \x20   print('CLEARED ' + p if r == 0 else 'refused %s: %d' % (p, ctypes.get_errno()))\n\
         \x20   if p == '/': break\n\
         \x20   p = os.path.dirname(p)\n"
    );
    std::fs::write(sb.ws.join("out/clear.py"), script).unwrap();
    let line = format!(
        "/usr/bin/python3 out/clear.py; chmod 4755 {} && echo CHMOD-OUT",
        victim.display()
    );
    let r = shell(&sb, &line);
    assert!(r.stdout.contains("refused /:"), "{}", r.stdout);
    assert!(!r.stdout.contains("CLEARED"), "{}", r.stdout);
    assert!(!r.stdout.contains("\nCHMOD-OUT"), "{}", r.stdout);
    let mode = std::fs::metadata(&victim).unwrap().permissions().mode();
    assert_eq!(mode & 0o7777, 0o600);
}

/// A granted directory is the one opened when the tools were bound: the
/// model cannot turn the shell's write grant into a link to the
/// workspace (which the shell may only read) with the file tools, between
/// two of its commands.
#[test]
fn a_write_grant_swapped_for_a_link_during_a_run_is_refused() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let sb = shell_sandbox("");
    let cmd = |c: &str| serde_json::json!({ "command": c }).to_string();
    let link = cmd("ln -s . out/dot && echo linked");
    let write = cmd("echo PWNED > out/escaped.txt; echo wrote: $?");
    let mock = MockLlm::start(vec![
        calls(&[("c1", "shell", &link)]),
        calls(&[("c2", "move", r#"{"from":"out","to":"old"}"#)]),
        calls(&[("c3", "move", r#"{"from":"old/dot","to":"out"}"#)]),
        calls(&[("c4", "shell", &write)]),
        answer("done"),
    ]);
    let r = run(sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("WARDEN_RETRY_BASE_MS", "5")
        .args(["run", "--yes", "swap the grant"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let requests = mock.requests();
    assert_eq!(requests.len(), 5, "{}", r.stderr);
    // The swap itself happened through the file tools.
    assert!(
        std::fs::symlink_metadata(sb.ws.join("out"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        !sb.ws.join("escaped.txt").exists(),
        "the shell wrote into the workspace"
    );
    let last = warden_tests::tool_contents(&requests[4].body)
        .pop()
        .unwrap();
    assert!(
        last.contains("is no longer the one warden opened"),
        "{last}"
    );
}

/// warden may lie inside a write grant of the shell (`make run` in its
/// own repository): a command that removes or replaces warden's
/// executable does not get its own program started as the confinement
/// helper, unconfined, at the next call.
#[test]
fn a_command_that_replaces_wardens_executable_does_not_run_unconfined() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let sb = shell_sandbox("");
    let bin = sb.ws.join("out/warden");
    std::fs::copy(warden_tests::warden_bin(), &bin).unwrap();
    let escaped = sb.outside.join("escaped.txt");
    let payload = format!("#!/bin/sh\necho PWNED > {}\n", escaped.display());
    // At the path, and where the path of a removed executable points.
    let swap = format!(
        "rm out/warden && printf '%s' '{payload}' > out/warden && \
         cp out/warden 'out/warden (deleted)' && chmod +x out/warden 'out/warden (deleted)' && \
         echo swapped"
    );
    let cmd = |c: &str| serde_json::json!({ "command": c }).to_string();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "shell", &cmd(&swap))]),
        calls(&[("c2", "shell", &cmd("echo still-confined"))]),
        answer("done"),
    ]);
    let r = run(sb
        .warden_at(&bin)
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("WARDEN_RETRY_BASE_MS", "5")
        .args(["run", "--yes", "swap warden"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "{}", r.stderr);
    let result = |n: usize| {
        warden_tests::tool_contents(&requests[n].body)
            .pop()
            .unwrap()
    };
    assert!(result(1).contains("\nswapped"), "{}", result(1));
    assert!(!escaped.exists(), "the replaced executable ran unconfined");
    // The helper is still warden's own: the next command runs confined.
    assert!(result(2).contains("\nstill-confined"), "{}", result(2));
}

/// A granted program inside a write grant is allowed as that one file:
/// swapped for a link to a folder (or to another file) during a run, it
/// opens nothing; the next run says what happened.
#[test]
fn a_granted_program_swapped_for_a_link_opens_nothing() {
    use std::os::unix::fs::PermissionsExt;
    use warden_mock_llm::{MockLlm, answer, calls};
    let sb = Sandbox::new();
    std::fs::create_dir(sb.ws.join("bin")).unwrap();
    let tool = sb.ws.join("bin/tool");
    std::fs::write(&tool, "#!/bin/sh\necho tool-ran\n").unwrap();
    std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    sb.policy(&format!(
        "[tools.shell]\nexec = [\"sh\", \"{}\"]\nwrite = [\".\"]\n",
        tool.display()
    ));
    sb.trust();
    let outside = sb.outside.display().to_string();
    let cmd = |c: &str| serde_json::json!({ "command": c }).to_string();
    let mock = MockLlm::start(vec![
        calls(&[("c1", "shell", &cmd("bin/tool"))]),
        calls(&[(
            "c2",
            "shell",
            &cmd(&format!(
                "rm bin/tool && ln -s {outside} bin/tool && echo swapped"
            )),
        )]),
        calls(&[("c3", "shell", &cmd(&format!("cat {outside}/secret.txt")))]),
        answer("done"),
    ]);
    let r = run(sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("WARDEN_RETRY_BASE_MS", "5")
        .args(["run", "--yes", "swap the program"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{}", r.stderr);
    let result = |n: usize| {
        warden_tests::tool_contents(&requests[n].body)
            .pop()
            .unwrap()
    };
    assert!(result(1).contains("\ntool-ran"), "{}", result(1));
    assert!(result(2).contains("\nswapped"), "{}", result(2));
    assert!(!result(3).contains("top secret"), "{}", result(3));
    assert!(
        result(3).contains("is no longer the file warden found at start"),
        "{}",
        result(3)
    );
}

/// A granted program in the workspace that a symlink leads outside (a
/// tool that may write the workspace could have made that link before
/// this session) is not allowed: the file it leads to stays unreadable.
#[test]
fn a_granted_program_led_out_of_the_workspace_by_a_link_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let target = sb.outside.join("deploy.sh");
    std::fs::write(&target, "#!/bin/sh\necho secret-token-4711\n").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir(sb.ws.join("bin")).unwrap();
    std::os::unix::fs::symlink(&target, sb.ws.join("bin/tool")).unwrap();
    sb.policy(&format!(
        "[tools.shell]\nexec = [\"sh\", \"{}\"]\nread = [\".\"]\n",
        sb.ws.join("bin/tool").display()
    ));
    sb.trust();
    let r = shell(&sb, "cat bin/tool; bin/tool; echo done");
    assert!(r.stdout.contains("\ndone"), "{}", r.stdout);
    assert!(!r.stdout.contains("secret-token-4711"), "{}", r.stdout);
}

/// SysV shared memory of the host is not the run's: it has its own IPC
/// namespace.
#[test]
fn a_command_sees_no_shared_memory_of_the_host() {
    let made = std::process::Command::new("ipcmk")
        .args(["-M", "4096"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&made.stdout).to_string();
    let id = out.split_whitespace().last().unwrap().to_string();
    let listed = std::process::Command::new("ipcs")
        .arg("-m")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&id));
    let sb = shell_sandbox("");
    let r = shell(&sb, &format!("ipcs -m; ipcrm -m {id}; echo removed: $?"));
    let still = std::process::Command::new("ipcs")
        .arg("-m")
        .output()
        .unwrap();
    let _ = std::process::Command::new("ipcrm")
        .args(["-m", &id])
        .status();
    assert!(!r.stdout.contains(&format!("\n{id} ")), "{}", r.stdout);
    assert!(r.stdout.contains("removed: 1"), "{}", r.stdout);
    assert!(
        String::from_utf8_lossy(&still.stdout).contains(&id),
        "removed from the host"
    );
}

/// A descriptor warden inherited (from a shell redirection, a build tool,
/// an editor) is closed for the command: Landlock checks opens, not
/// descriptors already open.
#[test]
fn a_descriptor_warden_inherits_never_reaches_a_command() {
    let sb = shell_sandbox("");
    let secret = sb.outside.join("secret.txt");
    std::fs::write(&secret, "inherited-secret").unwrap();
    let r = shell_inheriting(
        &sb,
        &secret,
        r#"{"command": "cat <&7; echo; yes | head -n 1"}"#,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stdout.contains("inherited-secret"), "{}", r.stdout);
    assert!(r.stdout.contains("Bad file descriptor"), "{}", r.stdout);
    // Signals start at their default: `yes` ends quietly on a closed pipe
    // (warden itself ignores SIGPIPE).
    assert!(!r.stdout.contains("Broken pipe"), "{}", r.stdout);
}

#[test]
fn a_program_not_granted_is_refused_with_the_granted_list() {
    let sb = Sandbox::new();
    sb.drop_in(guests::EXEC_ANY, "exec_any.wasm");
    sb.policy(
        "[tools.run_program]\nexec = [\"sh\", \"true\"]\nread = [\".\"]\n\n[tools.shell]\nexec = [\"true\"]\nread = [\".\"]\n",
    );
    sb.trust();
    let call = |args: &str| run(sb.warden().args(["tools", "call", "run_program", args]));
    let r = call(r#"{"program":"cat","args":["hello.txt"]}"#);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr
            .contains("`cat` is not granted to this tool; it may run only: sh, true"),
        "{}",
        r.stderr
    );
    // By absolute path, too; and a granted one runs.
    let r = call(r#"{"program":"/usr/bin/cat","args":["hello.txt"]}"#);
    assert!(r.stderr.contains("not granted"), "{}", r.stderr);
    let r = call(r#"{"program":"sh","args":["-c","cat hello.txt"]}"#);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("exit=Some(0)") && r.stdout.contains("hello\nworld"),
        "{}",
        r.stdout
    );
    // The shell tool without a shell says what it may run.
    let r = run(sb
        .warden()
        .args(["tools", "call", "shell", r#"{"command":"ls"}"#]));
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("it may run only true"), "{}", r.stderr);
}

#[test]
fn a_tool_without_exec_is_denied_every_program() {
    let sb = Sandbox::new();
    sb.drop_in(guests::EXEC_ANY, "exec_any.wasm");
    sb.policy("[tools.run_program]\nread = [\".\"]\n");
    sb.trust();
    let r = run(sb
        .warden()
        .args(["tools", "call", "run_program", r#"{"program":"sh"}"#]));
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("this tool may not run programs"),
        "{}",
        r.stderr
    );
}

#[test]
fn shell_is_off_unless_warden_toml_enables_it() {
    let sb = Sandbox::new();
    let r = run(sb
        .warden()
        .args(["tools", "call", "shell", r#"{"command":"ls"}"#]));
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("not enabled") || r.stderr.contains("disabled"),
        "{}",
        r.stderr
    );
}

#[test]
fn a_read_only_grant_inside_a_write_grant_is_refused_for_processes() {
    let sb = Sandbox::new();
    sb.policy("[tools.shell]\nexec = [\"sh\"]\nwrite = [\".\"]\nread = [\"docs\"]\n");
    sb.trust();
    let r = shell(&sb, "echo x > docs/readme.md");
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("cannot make it read-only"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("docs/readme.md")).unwrap(),
        "# docs\n"
    );
}

#[test]
fn policy_shows_exec_grants_and_the_confinement() {
    let sb = Sandbox::new();
    sb.policy("[tools.shell]\nexec = [\"sh\"]\nwrite = [\".\"]\n");
    // The trust diff that grants a program says what exec means and the
    // confinement it runs under, as `warden policy` does below.
    let trusted = sb.trust();
    let m = warden_tests::confinement();
    assert!(
        trusted.contains("\nprograms: each runs confined to the tool's files and network; the confinement is on files and network, not on programs"),
        "{trusted}"
    );
    assert!(
        trusted.contains(&format!("\ncommands run here under {m}\n")),
        "{trusted}"
    );
    for line in m.lines() {
        assert!(
            trusted.contains(&format!("\n  {line}\n")),
            "{line}: {trusted}"
        );
    }
    let sb = shell_sandbox("");
    let r = run(sb.warden().arg("policy"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    // What exec means, said where it is granted.
    assert!(
        r.stdout.contains(
            "  exec:     sh (each runs confined to the tool's files and network; the confinement \
             is on files and network, not on programs: a granted program may start any other \
             program in the system folders or the write grants (git's hooks and aliases, \
             python's os.system))\n"
        ),
        "{}",
        r.stdout
    );
    // The confinement in force, guarantee by guarantee: what holds is what
    // this suite and `suite::confine_both` prove for that mechanism.
    assert!(
        r.stdout.contains(&format!("commands:  {m}\n")),
        "{}",
        r.stdout
    );
    let listed: Vec<(bool, &str)> = r
        .stdout
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            l.strip_prefix("\u{2713} ")
                .map(|g| (true, g))
                .or_else(|| l.strip_prefix("\u{2717} ").map(|g| (false, g)))
        })
        .map(|(holds, g)| (holds, g.split(':').next().unwrap()))
        .collect();
    let abi = warden_confine::kernel().landlock.unwrap();
    let expected: Vec<(bool, &str)> = if warden_tests::namespaced() {
        vec![
            (true, "files"),
            (true, "metadata"),
            (true, "set-id"),
            (true, "network"),
            (true, "unix sockets"),
            (true, "processes"),
            (true, "signals and ptrace"),
            (true, "/proc"),
            (true, "IPC"),
            (true, "limits"),
        ]
    } else {
        vec![
            (true, "files"),
            (false, "metadata"),
            (true, "set-id"),
            (true, "network"),
            (true, "unix sockets"),
            (true, "processes"),
            (abi >= 6, "signals and ptrace"),
            (false, "/proc"),
            (true, "IPC"),
            (true, "limits"),
        ]
    };
    assert_eq!(listed, expected, "{}", r.stdout);
    let r = run(sb.warden().args(["tools", "inspect", "shell"]));
    assert!(r.stdout.contains("exec:sh"), "{}", r.stdout);
}

/// The rustup home and cargo binary the tests' own toolchain uses.
fn toolchain() -> (PathBuf, PathBuf) {
    let home = PathBuf::from(std::env::var("HOME").unwrap());
    let rustup =
        std::env::var_os("RUSTUP_HOME").map_or_else(|| home.join(".rustup"), PathBuf::from);
    let cargo = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("cargo"))
        .find(|p| p.is_file())
        .expect("cargo on PATH");
    (rustup, cargo)
}

#[test]
fn the_model_edits_rust_runs_cargo_test_through_shell_sees_the_failure_and_fixes_it() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let sb = Sandbox::new();
    let (rustup, cargo) = toolchain();
    std::fs::write(
        sb.ws.join("Cargo.toml"),
        "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
    )
    .unwrap();
    std::fs::create_dir(sb.ws.join("src")).unwrap();
    let test = "\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4);\n    }\n}\n";
    std::fs::write(
        sb.ws.join("src/lib.rs"),
        format!("pub fn add(a: u32, b: u32) -> u32 {{\n    a + b\n}}\n{test}"),
    )
    .unwrap();
    sb.policy(&format!(
        "[tools.shell]\nexec = [\"sh\", {cargo:?}]\nwrite = [\".\"]\nread = [{rustup:?}]\n\
         env = [\"RUSTUP_HOME\", \"RUSTUP_TOOLCHAIN\", \"CARGO_HOME\"]\ntimeout = \"300s\"\n",
        cargo = cargo.display().to_string(),
        rustup = rustup.display().to_string(),
    ));
    sb.trust();
    let cargo_test = serde_json::json!({"command": "cargo test --offline 2>&1"}).to_string();
    let mock = MockLlm::start(vec![
        calls(&[(
            "call_1",
            "edit_file",
            r#"{"path":"src/lib.rs","old_text":"a + b","new_text":"a * b + 1"}"#,
        )]),
        calls(&[("call_2", "shell", &cargo_test)]),
        calls(&[(
            "call_3",
            "edit_file",
            r#"{"path":"src/lib.rs","old_text":"a * b + 1","new_text":"a + b"}"#,
        )]),
        calls(&[("call_4", "shell", &cargo_test)]),
        answer("Fixed add; the tests pass."),
    ]);
    let r = run(sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-agent-task")
        .env("WARDEN_RETRY_BASE_MS", "5")
        .env("RUSTUP_HOME", &rustup)
        .env(
            "RUSTUP_TOOLCHAIN",
            std::env::var("RUSTUP_TOOLCHAIN").unwrap_or_else(|_| "stable".into()),
        )
        .env("CARGO_HOME", sb.ws.join(".cargo-home"))
        .args(["run", "--yes", "make add correct and its tests green"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, "Fixed add; the tests pass.\n");
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    // The system prompt says what the shell may run.
    let system = requests[0].body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("`shell` may run sh, "), "{system}");
    assert!(!system.contains("there is no shell"), "{system}");
    let failed = warden_tests::tool_contents(&requests[2].body)
        .pop()
        .unwrap();
    assert!(failed.contains("exit code: 101"), "{failed}");
    assert!(failed.contains("test result: FAILED"), "{failed}");
    assert!(failed.contains("left: 5"), "{failed}");
    let passed = warden_tests::tool_contents(&requests[4].body)
        .pop()
        .unwrap();
    assert!(passed.contains("exit code: 0"), "{passed}");
    assert!(passed.contains("test result: ok. 1 passed"), "{passed}");
    assert!(
        std::fs::read_to_string(sb.ws.join("src/lib.rs"))
            .unwrap()
            .contains("a + b")
    );
    // The build stayed inside the workspace grant.
    assert!(sb.ws.join("target").is_dir());
}

#[test]
fn under_approval_writes_the_user_sees_the_command_line_and_can_refuse_it() {
    use warden_mock_llm::{MockLlm, answer, calls};
    let sb = shell_sandbox("");
    let mock = MockLlm::start(vec![
        calls(&[("s", "shell", r#"{"command":"echo hi > out/made.txt"}"#)]),
        answer("Not run."),
    ]);
    let r = sb.run_in_terminal(&mock.base_url(), "make a file", "n\n");
    assert!(r.stdout.contains("shell wants to run"), "{}", r.stdout);
    assert!(
        r.stdout.contains("  command: echo hi > out/made.txt"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("effects unknown: `shell`"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("Not run."), "{}", r.stdout);
    assert!(!sb.ws.join("out/made.txt").exists());
    let tools = warden_tests::tool_contents(&mock.requests()[1].body);
    assert!(tools[0].contains("the user refused"), "{}", tools[0]);
}

/// While a command runs, warden waits on it and on the call's deadline:
/// nothing polls (its threads stay asleep).
#[test]
fn warden_sleeps_while_a_command_runs() {
    let sb = shell_sandbox("timeout = \"60s\"");
    let args = serde_json::json!({ "command": "sleep 777330" }).to_string();
    let mut child = shell_until_sleeping(&mut sb.warden(), &args, "777330");
    std::thread::sleep(Duration::from_millis(300));
    let before = warden_tests::context_switches(child.id());
    std::thread::sleep(Duration::from_secs(3));
    let after = warden_tests::context_switches(child.id());
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        after - before <= 5,
        "{} context switches in 3 s of a command running",
        after - before
    );
}

#[test]
fn ctrl_c_kills_a_running_command_at_once() {
    let sb = shell_sandbox("timeout = \"60s\"");
    let args = serde_json::json!({ "command": "sleep 777300" }).to_string();
    let mock = warden_mock_llm::MockLlm::start(vec![
        warden_mock_llm::calls(&[("c", "shell", &args)]),
        warden_mock_llm::answer("never asked for"),
    ]);
    let child = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", "sk-test")
        .args(["run", "--yes", "wait"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    warden_tests::wait_until("the command never started", || {
        !warden_tests::sleeping("777300").is_empty()
    });
    let (took, out, stderr) = warden_tests::interrupt(child);
    assert!(took < Duration::from_secs(5), "took {took:?}: {stderr}");
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(warden_tests::sleeping("777300"), Vec::<u32>::new());
    assert_eq!(mock.requests().len(), 1, "the turn went on: {stderr}");
}

/// The `warden-confine-PID` cgroups (both controllers) beside this test
/// process's own whose helper is gone.
fn stale_cgroups() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let k = warden_confine::kernel();
    for parent in [k.pids_cgroup, k.memory_cgroup].into_iter().flatten() {
        for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name.strip_prefix("warden-confine-") else {
                continue;
            };
            if !PathBuf::from("/proc").join(pid).exists() {
                out.push(entry.path());
            }
        }
    }
    out
}

/// warden killed by SIGKILL during a command: its helper sees it go and
/// ends the whole run (`setsid`, `nohup` and double forks included), and
/// the cgroups the run was in are gone once warden starts again.
#[test]
fn a_warden_killed_during_a_command_leaves_no_process_and_no_cgroup() {
    let sb = shell_sandbox("timeout = \"60s\"");
    let args = serde_json::json!({
        "command": "sleep 777401 & setsid sleep 777402 & nohup sleep 777403 >/dev/null 2>&1 & \
                    (sh -c 'sleep 777404 &' &); sleep 777405"
    })
    .to_string();
    let mut child = shell_until_sleeping(&mut sb.warden(), &args, "777405");
    child.kill().unwrap();
    child.wait().unwrap();
    warden_tests::wait_until("a process of the command outlived warden", || {
        (777401..=777405).all(|n| warden_tests::sleeping(&n.to_string()).is_empty())
    });
    // Any warden start removes the cgroups a killed one left.
    let r = run(sb.warden().arg("policy"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(stale_cgroups(), Vec::<PathBuf>::new());
}

/// `confinement`: the user may ask for Landlock and seccomp alone; the
/// user or a workspace may require namespaces, and then a command is
/// refused where they cannot be made, with the setting that says why; a
/// workspace may not ask for less.
#[test]
fn the_confinement_setting_chooses_or_requires_the_mechanism() {
    let sb = shell_sandbox("");
    let config = sb.home.join("config/warden");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "confinement = \"landlock\"\n").unwrap();
    let policy = run(sb.warden().arg("policy"));
    assert!(
        policy.stdout.contains("+ seccomp alone, no namespaces"),
        "{}",
        policy.stdout
    );
    host_still_works(&sb);

    std::fs::remove_file(config.join("config.toml")).unwrap();
    sb.policy(
        "confinement = \"namespaces\"\n[tools.shell]\nexec = [\"sh\"]\nread = [\".\"]\nwrite = [\"out\"]\n",
    );
    let trust = sb.trust();
    assert!(trust.contains("confinement"), "{trust}");
    let r = shell(&sb, "echo hi");
    if warden_tests::namespaced() {
        assert!(r.stdout.contains("--- stdout ---\nhi\n"), "{}", r.stdout);
    } else {
        let out = format!("{}{}", r.stdout, r.stderr);
        assert!(
            out.contains(
                "user namespaces are disabled: user.max_user_namespaces = 0; `confinement = \
                 \"namespaces\"` asks for them, so commands are refused"
            ),
            "{out}"
        );
        assert!(!out.contains("hi\n"), "{out}");
    }

    sb.policy("confinement = \"landlock\"\n[tools.shell]\nexec = [\"sh\"]\n");
    let r = run(sb.warden().arg("trust"));
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("line 1, column 15")
            && r.stderr.contains("is the user's choice, not a workspace's"),
        "{}",
        r.stderr
    );
}

/// warden runs the helper embedded in it (`warden-confine-helper`) from a
/// sealed memory file, not from any path a command could write.
#[test]
fn commands_are_confined_by_the_embedded_helper_run_from_memory() {
    let sb = shell_sandbox("timeout = \"60s\"");
    let args = serde_json::json!({ "command": "sleep 777601" }).to_string();
    let mut child = shell_until_sleeping(&mut sb.warden(), &args, "777601");
    let sleep = warden_tests::sleeping("777601")[0];
    // Up from the sleep to the helper (`warden __confine PARENT`).
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat[stat.rfind(')')? + 1..]
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()
    };
    let mut pid = sleep;
    let helper = loop {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline.starts_with(b"warden\0__confine\0") {
            break pid;
        }
        pid = parent(pid)
            .filter(|p| *p > 1)
            .expect("no helper above the command");
    };
    let exe = std::fs::read_link(format!("/proc/{helper}/exe")).unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        exe.to_string_lossy().starts_with("/memfd:warden-confine"),
        "the helper runs from {}",
        exe.display()
    );
}
