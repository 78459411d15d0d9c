//! warden's side: start the helper, read its report, collect the output,
//! enforce the wall-clock limit, and kill the whole run when it is over.

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;

use crate::capture::Capture;
use crate::helper::{HELPER_ARG, REPORT, REPORT_LEN, SPEC_VAR};
use crate::spec::{Error, Finished, Limit, Mechanism, Result, Spec, Status, Unavailable};

static HELPER: OnceLock<PathBuf> = OnceLock::new();
static IMAGE: OnceLock<&'static [u8]> = OnceLock::new();
static LOADED: OnceLock<Option<(OwnedFd, PathBuf)>> = OnceLock::new();

/// Sets the executable that runs the helper (it must call
/// [`helper_main`](crate::helper_main) when its first argument is
/// [`HELPER_ARG`]). Default: the image given to [`set_helper_image`], else
/// the running executable. Only the first call counts.
pub fn set_helper(path: PathBuf) {
    let _ = HELPER.set(path);
}

/// Sets the helper to run from memory: `image` is an executable that
/// calls [`helper_main`](crate::helper_main) (the `warden-confine-helper`
/// binary, which starts faster than warden). It is copied once into a
/// sealed memory file, which no command can change, whatever its grants.
/// Where the kernel refuses to run it, the running executable is the
/// helper. Only the first call counts.
pub fn set_helper_image(image: &'static [u8]) {
    let _ = IMAGE.set(image);
}

/// The running executable, by the kernel's link to the file this process
/// runs, not by its path: a command may replace or remove the file at
/// that path (warden may lie inside its write grant), and the helper it
/// starts must still be warden itself.
const RUNNING_EXE: &str = "/proc/self/exe";

fn helper_path() -> PathBuf {
    if let Some(path) = HELPER.get() {
        return path.clone();
    }
    let loaded = LOADED.get_or_init(|| IMAGE.get().and_then(|image| load(image).ok()));
    match loaded {
        Some((_, path)) => path.clone(),
        None => PathBuf::from(RUNNING_EXE),
    }
}

/// `image` in a sealed memory file (`memfd_create`, close-on-exec: the
/// kernel opens it by its `/proc/self/fd` path during `execve`, before
/// closing it), and that path; an error where memory files may not run.
fn load(image: &[u8]) -> std::io::Result<(OwnedFd, PathBuf)> {
    use nix::fcntl::{FcntlArg, SealFlag, fcntl};
    use nix::sys::memfd::{MFdFlags, memfd_create};
    // Executable, said outright (Linux 6.3 and later refuse to run a
    // memory file made without it where `vm.memfd_noexec` is 1; where it is
    // 2, none may run, and warden itself is the helper); older kernels do
    // not know the flag and run any.
    const MFD_EXEC: MFdFlags = MFdFlags::from_bits_retain(0x0010);
    let flags = MFdFlags::MFD_CLOEXEC | MFdFlags::MFD_ALLOW_SEALING;
    let fd = match memfd_create(c"warden-confine", flags | MFD_EXEC) {
        Err(nix::errno::Errno::EINVAL) => memfd_create(c"warden-confine", flags)?,
        other => other?,
    };
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, image)?;
    let fd = OwnedFd::from(file);
    fcntl(
        &fd,
        FcntlArg::F_ADD_SEALS(
            SealFlag::F_SEAL_WRITE
                | SealFlag::F_SEAL_SHRINK
                | SealFlag::F_SEAL_GROW
                | SealFlag::F_SEAL_SEAL,
        ),
    )?;
    let path = PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd()));
    Ok((fd, path))
}

fn start(spec: &Spec, stdin: Stdio, stderr: Stdio) -> Result<Child> {
    if let Some(why) = spec.unenforceable() {
        return Err(Error::Setup(why));
    }
    let json = serde_json::to_string(spec).expect("a spec always serializes");
    spawn_helper(&helper_path(), &json, stdin, stderr)
}

fn spawn_helper(helper: &Path, json: &str, stdin: Stdio, stderr: Stdio) -> Result<Child> {
    // In the environment, not on the command line: the spec holds the
    // granted variables' values (tokens), and any user of the host can
    // read any process's command line, but only its owner its environment.
    Command::new(helper)
        // As `ps` shows it: warden, not the `exe` of its path.
        .arg0("warden")
        .arg(HELPER_ARG)
        .arg(std::process::id().to_string())
        .env_clear()
        .env(SPEC_VAR, json)
        .current_dir("/")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .map_err(|source| Error::Io {
            context: format!("cannot start the confinement helper ({})", helper.display()),
            source,
        })
}

/// Reads the helper's report: its prefix and length, then exactly that
/// many bytes, so that nothing of the program's own output is taken with
/// it. None when the helper ended (or wrote something else) first.
fn read_report(stdout: &mut ChildStdout) -> Option<String> {
    let mut head = [0u8; REPORT.len() + REPORT_LEN];
    stdout.read_exact(&mut head).ok()?;
    let len = head.strip_prefix(REPORT.as_bytes())?;
    let len = usize::from_str_radix(std::str::from_utf8(len).ok()?, 16).ok()?;
    if len > 64 << 10 {
        return None;
    }
    let mut line = vec![0u8; len];
    stdout.read_exact(&mut line).ok()?;
    Some(String::from_utf8_lossy(&line).into_owned())
}

/// The report as the mechanism, or the error it names.
fn check_report(report: Option<String>, ended: impl FnOnce() -> String) -> Result<Mechanism> {
    let Some(report) = report else {
        return Err(Error::Setup(format!(
            "the confinement helper ended before confining anything ({}); is the helper warden itself?",
            ended()
        )));
    };
    let (kind, text) = report.split_once(' ').unwrap_or((report.as_str(), ""));
    match kind {
        "ok" => serde_json::from_str(text).map_err(|e| {
            Error::Setup(format!(
                "the confinement helper's report is not understood ({e}); is the helper this warden's own binary?"
            ))
        }),
        "unavailable" => Err(Unavailable {
            missing: text.to_string(),
        }
        .into()),
        _ => Err(Error::Setup(text.to_string())),
    }
}

fn status_of(s: ExitStatus) -> Status {
    use std::os::unix::process::ExitStatusExt;
    match (s.code(), s.signal()) {
        (Some(c), _) => Status::Exited(c),
        (None, Some(sig)) => Status::Signaled(sig),
        (None, None) => Status::Exited(-1),
    }
}

/// Runs `spec` to its end or its timeout, confined, stdin `/dev/null`.
/// When it returns, no process of the run exists any more.
pub fn run(spec: &Spec) -> Result<Finished> {
    run_until(spec, &mut |_| {})
}

/// What a run waits for.
enum Event {
    /// The helper exited (the whole run is gone).
    Exited,
    /// Its caller stopped it.
    Stop,
}

/// Ends a run early, from any thread: everything in it is killed and it is
/// reported like a timeout. Stopping a run that has ended does nothing.
#[derive(Clone, Debug)]
pub struct Stop(mpsc::Sender<Event>);

impl Stop {
    /// Stops the run.
    pub fn stop(&self) {
        let _ = self.0.send(Event::Stop);
    }
}

/// [`run`], also ended early by the [`Stop`] handed to `stopper` once the
/// run has started (for a caller that is itself cancelled). The run waits
/// on its end, its deadline and that handle, and on nothing else: no
/// thread wakes up while it goes on.
pub fn run_until(spec: &Spec, stopper: &mut dyn FnMut(Stop)) -> Result<Finished> {
    run_reporting(spec, stopper).map(|(f, _)| f)
}

pub(crate) fn run_reporting(
    spec: &Spec,
    stopper: &mut dyn FnMut(Stop),
) -> Result<(Finished, Mechanism)> {
    let mut child = start(spec, Stdio::null(), Stdio::piped())?;
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let stderr = child.stderr.take().expect("stderr is piped");
    let cap = spec.output;
    let (report_tx, report_rx) = mpsc::channel();
    let out = thread::spawn(move || {
        let report = read_report(&mut stdout);
        let _ = report_tx.send(report);
        Capture::read_all(stdout, cap)
    });
    let err = thread::spawn(move || Capture::read_all(stderr, cap));
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pids fit in i32"));
    let (events_tx, events) = mpsc::channel();
    let waiter = watch(pid, events_tx.clone());
    stopper(Stop(events_tx));
    let timed_out = match events.recv_timeout(spec.timeout) {
        Ok(Event::Exited) | Err(RecvTimeoutError::Disconnected) => false,
        Ok(Event::Stop) | Err(RecvTimeoutError::Timeout) => {
            stop(pid, &events);
            true
        }
    };
    // The helper has exited but is not reaped yet, so its pid (which names
    // its cgroups) is not anyone else's while they are read and removed.
    let _ = waiter.join();
    let out_of_memory = crate::helper::remove_cgroups(child.id());
    let exit = child.wait().map_err(|source| Error::Io {
        context: "cannot wait for the confinement helper".into(),
        source,
    })?;
    let (stdout, out_cut) = out.join().expect("reader thread").finish();
    let (stderr, err_cut) = err.join().expect("reader thread").finish();
    let report = report_rx.try_recv().ok().flatten();
    let mechanism = check_report(report, || format!("{}: {}", status_of(exit), stderr.trim()))?;
    let mut limits = Vec::new();
    if timed_out {
        limits.push(Limit::Timeout);
    }
    if out_cut || err_cut {
        limits.push(Limit::Output);
    }
    if out_of_memory {
        limits.push(Limit::Memory);
    }
    Ok((
        Finished {
            status: status_of(exit),
            stdout,
            stderr,
            timed_out,
            limits,
        },
        mechanism,
    ))
}

/// How long the helper gets to take the run down before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// Ends a run: the helper kills its init and exits once the whole PID
/// namespace is gone (`done` says it exited). Should it not, it is killed;
/// its death still kills the init (parent-death signal), only without the
/// wait.
fn stop(helper: Pid, events: &mpsc::Receiver<Event>) {
    let _ = kill(helper, Signal::SIGTERM);
    let until = Instant::now() + STOP_GRACE;
    loop {
        match events.recv_timeout(until.saturating_duration_since(Instant::now())) {
            Ok(Event::Exited) => return,
            Ok(Event::Stop) => {}
            Err(_) => {
                let _ = kill(helper, Signal::SIGKILL);
                return;
            }
        }
    }
}

/// Waits in a thread for `pid` to end, without reaping it (so that only
/// its owner reaps, and the pid cannot be reused before a kill), then
/// sends [`Event::Exited`].
fn watch(pid: Pid, events: mpsc::Sender<Event>) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        while let Err(nix::errno::Errno::EINTR) =
            waitid(Id::Pid(pid), WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT)
        {}
        let _ = events.send(Event::Exited);
    })
}

/// A long-lived confined process (an MCP server over stdio). Dropping it
/// kills it and everything it started.
#[derive(Debug)]
pub struct Confined {
    child: Child,
    mechanism: Mechanism,
}

/// Starts `spec` confined as [`run`] does, with piped stdin and stdout
/// (and stderr when `keep_stderr`, else discarded), and no timeout: it
/// runs until [`Confined::kill`], drop, or warden's exit.
///
/// The helper dies with the thread that spawned it (`PR_SET_PDEATHSIG`
/// follows threads): call this from a thread that lives as long as the
/// process should.
pub fn spawn(spec: &Spec, keep_stderr: bool) -> Result<Confined> {
    let stderr = if keep_stderr {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut child = start(spec, Stdio::piped(), stderr)?;
    let report = read_report(child.stdout.as_mut().expect("stdout is piped"));
    let mechanism = match check_report(report, || "see its stderr".to_string()) {
        Ok(m) => m,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            crate::helper::remove_cgroups(child.id());
            return Err(e);
        }
    };
    Ok(Confined { child, mechanism })
}

impl Confined {
    /// The confinement in force.
    pub fn mechanism(&self) -> &Mechanism {
        &self.mechanism
    }
    /// Its stdin, once.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.child.stdin.take()
    }
    /// Its stdout, once.
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.child.stdout.take()
    }
    /// Its stderr, once (when kept).
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.child.stderr.take()
    }
    /// Whether it has ended, without waiting.
    pub fn try_wait(&mut self) -> Option<Status> {
        self.child.try_wait().ok().flatten().map(status_of)
    }
    /// Kills it and every process it started, and waits for that.
    pub fn kill(&mut self) -> Status {
        if self.child.try_wait().ok().flatten().is_none() {
            let pid = Pid::from_raw(i32::try_from(self.child.id()).expect("pids fit in i32"));
            let (events_tx, events) = mpsc::channel();
            let waiter = watch(pid, events_tx);
            stop(pid, &events);
            let _ = waiter.join();
            crate::helper::remove_cgroups(self.child.id());
            let status = self.child.wait();
            return status.map_or(Status::Signaled(Signal::SIGKILL as i32), status_of);
        }
        let status = self
            .child
            .wait()
            .map_or(Status::Signaled(Signal::SIGKILL as i32), status_of);
        crate::helper::remove_cgroups(self.child.id());
        status
    }
}

impl Drop for Confined {
    fn drop(&mut self) {
        self.kill();
    }
}

/// What confinement a run gets here: it confines `true` and reports what
/// was in force, or exactly what is missing.
pub fn probe() -> Result<Mechanism, Unavailable> {
    let program = ["/usr/bin/true", "/bin/true"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .ok_or_else(|| Unavailable {
            missing: "no `true` program in /usr/bin or /bin to test confinement with".into(),
        })?;
    let mut spec = Spec::new(program, "/");
    spec.timeout = std::time::Duration::from_secs(10);
    match run_reporting(&spec, &mut |_| {}) {
        Ok((_, m)) => Ok(m),
        Err(Error::Unavailable(u)) => Err(u),
        Err(e) => Err(Unavailable {
            missing: e.to_string(),
        }),
    }
}
