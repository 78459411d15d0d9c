//! The apps this warden started (its session), by pidfd and process
//! group: each runs in a group of its own, outside warden's, so that
//! Ctrl-C in warden's terminal does not reach it and it keeps running when
//! warden exits, as an app the user opened would. Only what is recorded
//! here can be ended, and only through its record.
//!
//! An app's first process is never reaped while its group may still have
//! members: as long as it is not, its PID, and so the group's ID, cannot
//! be given to another process, and signalling the group reaches only what
//! the app started (or left in its group).

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, poll};

use crate::launch::{Ended, Launch, Started};
use rustix::process::{
    Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, kill_process_group, pidfd_open,
    pidfd_send_signal, waitid,
};

/// How long a start waits for the app to fail at once (a missing display
/// library, a bad argument), so that the model hears of it.
const START_WATCH: Duration = Duration::from_millis(500);
/// How long an app has to end after SIGTERM before it is killed.
const GRACE: Duration = Duration::from_secs(3);
/// How long a killed app has to be gone.
const KILL_WAIT: Duration = Duration::from_secs(2);

struct Record {
    started: Started,
    pidfd: OwnedFd,
}

struct Session {
    next: u32,
    apps: Vec<Record>,
}

static SESSION: Mutex<Session> = Mutex::new(Session {
    next: 1,
    apps: Vec::new(),
});

fn session() -> std::sync::MutexGuard<'static, Session> {
    SESSION.lock().unwrap_or_else(|e| e.into_inner())
}

/// Starts `launch` in the desktop session with `env` in `cwd`: its own
/// process group, no stdin, output discarded. Waits a moment for it to
/// fail at once; the error says how it ended then. `None`: it ended at
/// once with exit code 0, as an opener or a single-instance app does when
/// it hands its files to a copy already running.
pub fn start(
    launch: &Launch,
    env: &[(String, String)],
    cwd: &std::path::Path,
) -> Result<Option<Started>, String> {
    let (program, args) = launch
        .argv
        .split_first()
        .ok_or_else(|| "an empty program line".to_string())?;
    let child = Command::new(program)
        .args(args)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{} could not start: {e}", launch.name))?;
    let pid = child.id();
    // The child is not reaped until this session drops its record: its
    // PID stays its own, and a pidfd of it names it for sure.
    let raw = Pid::from_raw(pid as i32).ok_or("the app has no PID")?;
    let pidfd = pidfd_open(raw, PidfdFlags::empty()).map_err(|e| {
        let _ = kill_process_group(raw, Signal::KILL);
        format!("cannot watch the app (pidfd_open: {e}; Linux 5.3 or later is needed)")
    })?;
    drop(child);
    if ready(&pidfd, START_WATCH) && !group_alive(pid) {
        let status = reap(&pidfd);
        if status == "exit code 0" {
            return Ok(None);
        }
        return Err(format!(
            "{} exited at once ({status}); it may need other arguments, or it failed to open \
             its window",
            launch.name
        ));
    }
    let mut s = session();
    let started = Started {
        id: s.next,
        launch: launch.clone(),
        pid,
        since: Instant::now(),
    };
    s.next += 1;
    s.apps.push(Record {
        started: started.clone(),
        pidfd,
    });
    Ok(Some(started))
}

/// The apps this session started that still run (a process of their
/// group is alive), oldest first. Those that ended are forgotten.
pub fn running() -> Vec<Started> {
    let mut s = session();
    s.apps.retain(alive_or_reap);
    s.apps.iter().map(|r| r.started.clone()).collect()
}

/// Ends app `id` of this session with its process group: SIGTERM, then
/// SIGKILL after [`GRACE`]. The error says when `id` is not one this
/// session started.
pub fn close(id: u32) -> Result<(Started, Ended), String> {
    let mut s = session();
    let Some(i) = s.apps.iter().position(|r| r.started.id == id) else {
        return Err(format!(
            "no app with id {id} was started in this session: only those can be closed \
             (list_apps shows them)"
        ));
    };
    let record = s.apps.remove(i);
    let started = record.started.clone();
    if !alive_or_reap(&record) {
        return Ok((started, Ended::Already));
    }
    let how = end(&record);
    reap(&record.pidfd);
    Ok((started, how))
}

/// Signals the group, waits, kills what is left.
fn end(record: &Record) -> Ended {
    let pid = record.started.pid;
    let group = Pid::from_raw(pid as i32).expect("a started app has a PID");
    let signal = |sig| {
        let _ = pidfd_send_signal(&record.pidfd, sig);
        let _ = kill_process_group(group, sig);
    };
    signal(Signal::TERM);
    if gone(record, GRACE) {
        return Ended::Terminated;
    }
    signal(Signal::KILL);
    if gone(record, KILL_WAIT) {
        Ended::Killed
    } else {
        Ended::Remains
    }
}

/// Whether the app's group is empty within `limit`: the first process is
/// waited for on its pidfd; the others, not warden's children, are looked
/// for in `/proc` every 20 ms meanwhile.
fn gone(record: &Record, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let leader_done = ready(&record.pidfd, Duration::from_millis(20));
        if leader_done && !group_alive(record.started.pid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        if leader_done {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Whether the record's app still runs; one whose processes have all
/// ended is reaped.
fn alive_or_reap(r: &Record) -> bool {
    if !ready(&r.pidfd, Duration::ZERO) || group_alive(r.started.pid) {
        return true;
    }
    reap(&r.pidfd);
    false
}

/// Whether the process of `pidfd` has ended, waiting up to `limit`.
fn ready(pidfd: &OwnedFd, limit: Duration) -> bool {
    let mut fds = [PollFd::new(pidfd, PollFlags::IN)];
    let timeout = rustix::event::Timespec {
        tv_sec: limit.as_secs() as i64,
        tv_nsec: i64::from(limit.subsec_nanos()),
    };
    loop {
        match poll(&mut fds, Some(&timeout)) {
            Ok(n) => return n > 0,
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => return true,
        }
    }
}

/// Collects the ended first process of an app; how it ended, in words.
fn reap(pidfd: &OwnedFd) -> String {
    match waitid(
        WaitId::PidFd(pidfd.as_fd()),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
    ) {
        Ok(Some(status)) => match (status.exit_status(), status.terminating_signal()) {
            (Some(code), _) if status.exited() => format!("exit code {code}"),
            (_, Some(sig)) => format!("killed by signal {sig}"),
            _ => "ended".to_string(),
        },
        _ => "ended".to_string(),
    }
}

/// Whether a process of group `pgid` is alive (not a zombie).
fn group_alive(pgid: u32) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .any(|pid| {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // `pid (comm) state ppid pgrp ...`: comm may hold anything.
            let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
                return false;
            };
            let mut fields = after.split_whitespace();
            let state = fields.next().unwrap_or("Z");
            let pgrp = fields.nth(1).and_then(|g| g.parse::<u32>().ok());
            pgrp == Some(pgid) && state != "Z" && state != "X"
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(script: &str) -> Launch {
        Launch {
            app: "sh".into(),
            name: "sh".into(),
            argv: vec![
                warden_confine::find_program("sh")
                    .unwrap()
                    .display()
                    .to_string(),
                "-c".into(),
                script.into(),
            ],
        }
    }

    #[test]
    fn an_app_that_ends_at_once_is_not_recorded_and_a_failure_is_reported() {
        let e = start(&launch("exit 3"), &[], std::path::Path::new("/")).unwrap_err();
        assert!(e.contains("sh exited at once (exit code 3)"), "{e}");
        // Ended at once, successfully: it handed over (an opener).
        assert_eq!(
            start(&launch("exit 0"), &[], std::path::Path::new("/")),
            Ok(None)
        );
    }

    #[test]
    fn a_started_app_runs_in_its_own_group_until_closed_with_all_it_started() {
        // A first process that starts a second in its group, then waits.
        let started = start(
            &launch("sleep 300 & exec sleep 301"),
            &[],
            std::path::Path::new("/"),
        )
        .unwrap()
        .unwrap();
        assert!(running().iter().any(|s| s.id == started.id));
        let pgid = rustix::process::getpgid(Pid::from_raw(started.pid as i32)).unwrap();
        assert_eq!(pgid.as_raw_nonzero().get() as u32, started.pid);
        assert_ne!(
            rustix::process::getpgrp().as_raw_nonzero().get() as u32,
            started.pid
        );
        assert!(group_alive(started.pid));
        let (closed, how) = close(started.id).unwrap();
        assert_eq!((closed.id, how), (started.id, Ended::Terminated));
        assert!(!group_alive(started.pid));
        assert!(running().iter().all(|s| s.id != started.id));
        // Nothing is left to close, and nothing else can be named.
        let e = close(started.id).unwrap_err();
        assert!(
            e.contains(&format!(
                "no app with id {} was started in this session",
                started.id
            )),
            "{e}"
        );
    }

    #[test]
    fn an_app_that_ignores_sigterm_is_killed() {
        let started = start(
            &launch("trap '' TERM; while :; do sleep 1; done"),
            &[],
            std::path::Path::new("/"),
        )
        .unwrap()
        .unwrap();
        let (_, how) = close(started.id).unwrap();
        assert_eq!(how, Ended::Killed);
        assert!(!group_alive(started.pid));
    }

    #[test]
    fn an_app_whose_first_process_left_is_running_while_its_group_is() {
        // The first process ends at once; what it started lives on.
        let started = start(
            &launch("sleep 302 & sleep 0.6"),
            &[],
            std::path::Path::new("/"),
        )
        .unwrap()
        .unwrap();
        // Once the first process has ended, the group still counts.
        let pidfd = {
            let s = session();
            let r = s.apps.iter().find(|r| r.started.id == started.id).unwrap();
            r.pidfd.try_clone().unwrap()
        };
        assert!(ready(&pidfd, Duration::from_secs(10)));
        assert!(running().iter().any(|s| s.id == started.id));
        let (_, how) = close(started.id).unwrap();
        assert_eq!(how, Ended::Terminated);
        assert!(!group_alive(started.pid));
    }
}
