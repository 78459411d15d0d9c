//! `warden-confine` as a library (what exec and MCP stdio servers use):
//! `run`, `spawn`, `probe`, with the `warden` binary as the helper.

use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use warden_confine::{Confinement, Limit, Spec, Status};
use warden_tests::{Sandbox, warden_bin};

/// `sh -c LINE` in the workspace, which it may write; 20 s.
pub(super) fn spec(sb: &Sandbox, line: &str) -> Spec {
    warden_confine::set_helper(warden_bin());
    let mut s = Spec::new("/bin/sh", &sb.ws);
    s.args = vec!["-c".into(), line.into()];
    s.write = vec![sb.ws.clone()];
    s.env = vec![("PATH".into(), "/usr/bin:/bin".into())];
    s.timeout = Duration::from_secs(20);
    s
}

fn pids_with(needle: &str) -> usize {
    warden_tests::sleeping(needle).len()
}

#[test]
fn probe_names_the_mechanism() {
    warden_confine::set_helper(warden_bin());
    let m = warden_confine::probe().expect("confinement on the test machine");
    assert!(m.summary.starts_with("Landlock ABI "), "{m}");
    // Where namespaces can be made, they are used; CI's second run makes
    // them unavailable, and the same probe then falls back and says why.
    match warden_confine::kernel().user_namespaces {
        Ok(_) => {
            assert_eq!(m.kind, Confinement::Namespaces, "{m}");
            assert!(m.summary.contains("PID, mount, IPC"), "{m}");
            assert_eq!(m.fallback, None);
        }
        Err(why) => {
            assert_eq!(m.kind, Confinement::Landlock, "{m}");
            assert!(m.to_string().contains(&why), "{m}");
        }
    }
}

#[test]
fn run_gives_exactly_the_environment_and_the_status() {
    let sb = Sandbox::new();
    let mut s = spec(&sb, "env; exit 3");
    s.env.push(("ONLY".into(), "this".into()));
    let done = warden_confine::run(&s).unwrap();
    assert_eq!(done.status, Status::Exited(3));
    let mut lines: Vec<&str> = done
        .stdout
        .lines()
        .filter(|l| !l.starts_with("PWD="))
        .collect();
    lines.sort_unstable();
    assert_eq!(lines, vec!["ONLY=this", "PATH=/usr/bin:/bin"]);
    assert!(!done.timed_out && done.limits.is_empty());
    let done = warden_confine::run(&spec(&sb, "kill -9 $$")).unwrap();
    assert_eq!(done.status, Status::Signaled(9));
}

#[test]
fn long_output_keeps_head_and_tail_and_says_what_was_cut() {
    let sb = Sandbox::new();
    let mut s = spec(
        &sb,
        "echo FIRST; head -c 100000 /dev/zero | tr '\\0' a; echo; echo LAST",
    );
    s.output = 1000;
    let done = warden_confine::run(&s).unwrap();
    assert_eq!(done.limits, vec![Limit::Output]);
    assert!(
        done.stdout.starts_with("FIRST\naaa"),
        "{}",
        &done.stdout[..50]
    );
    assert!(done.stdout.ends_with("aaa\nLAST\n"), "{}", done.stdout);
    // FIRST\n + 100000 a + \n + LAST\n, less the 500 + 500 kept.
    assert!(
        done.stdout.contains("\n[... 99012 bytes elided ...]\n"),
        "{}",
        done.stdout
    );
    assert!(done.stdout.len() < 1100);
}

#[test]
fn spawn_talks_over_pipes_and_drop_kills_everything_it_started() {
    let sb = Sandbox::new();
    let s = spec(
        &sb,
        "sleep 778001 & setsid sleep 778002 & while read l; do echo \"got $l\"; done",
    );
    let mut p = warden_confine::spawn(&s, false).unwrap();
    assert!(
        p.mechanism().summary.contains("Landlock"),
        "{}",
        p.mechanism()
    );
    let mut stdin = p.take_stdin().unwrap();
    let mut stdout = BufReader::new(p.take_stdout().unwrap());
    stdin.write_all(b"ping\n").unwrap();
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line, "got ping\n");
    // Both sleeps exist (they start while the shell reads).
    let started = std::time::Instant::now();
    while pids_with("778001") + pids_with("778002") < 2 {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the sleeps never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(p.try_wait(), None);
    drop(p);
    assert_eq!(pids_with("778001") + pids_with("778002"), 0);
}

#[test]
fn a_missing_grant_or_working_directory_is_a_setup_error_and_nothing_runs() {
    let sb = Sandbox::new();
    let mut s = spec(&sb, "echo ran");
    // Beside the write grant: one inside it would be refused as nested.
    s.read = vec![sb.outside.join("no-such-dir")];
    let e = warden_confine::run(&s).unwrap_err().to_string();
    assert!(
        e.contains("cannot open the granted directory") && e.contains("no-such-dir"),
        "{e}"
    );
    let mut s = spec(&sb, "echo ran");
    s.cwd = sb.ws.join("nowhere");
    let e = warden_confine::run(&s).unwrap_err().to_string();
    assert!(e.contains("cannot enter the working directory"), "{e}");
}

/// The cgroups a run leaves behind when warden is killed during it are
/// removed by the next run beside them; one whose helper still runs stays.
#[test]
fn a_run_removes_the_cgroups_left_by_helpers_that_are_gone() {
    // warden (the helper) runs in the cgroup of this test process; as
    // root, its runs get a `pids` cgroup beside it.
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let root = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .is_some_and(|ids| ids.split_whitespace().nth(1) == Some("0"));
    if !root {
        return eprintln!("skipped: only a root warden puts its runs in a `pids` cgroup");
    }
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap();
    let Some(path) = own.lines().find_map(|l| {
        let (_, rest) = l.split_once(':')?;
        let (controllers, path) = rest.split_once(':')?;
        controllers.split(',').any(|c| c == "pids").then_some(path)
    }) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "no cgroup v1 `pids` controller"
        );
        return eprintln!("skipped: no cgroup v1 `pids` controller");
    };
    let parent = std::path::Path::new("/sys/fs/cgroup/pids").join(path.trim_start_matches('/'));
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    gone.wait().unwrap();
    let stale = parent.join(format!("warden-confine-{}", gone.id()));
    let live = parent.join(format!("warden-confine-{}", std::process::id()));
    for dir in [&stale, &live] {
        std::fs::create_dir(dir).unwrap();
    }
    let sb = Sandbox::new();
    let done = warden_confine::run(&spec(&sb, "true"));
    let (stale_left, live_left) = (stale.exists(), live.exists());
    let _ = std::fs::remove_dir(&stale);
    let _ = std::fs::remove_dir(&live);
    assert_eq!(done.unwrap().status, Status::Exited(0));
    assert!(!stale_left, "the stale cgroup {} is left", stale.display());
    assert!(live_left, "the cgroup of a live process was removed");
}
