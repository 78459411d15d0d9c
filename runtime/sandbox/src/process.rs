//! `warden:tool/process`: a tool starts a program of its `exec` grant as a
//! host process, confined by `warden-confine` to the same grants.
//!
//! What the process may reach is decided here from the tool's grants, once
//! when it is bound ([`ExecPlan`]): its directories with their access, the
//! network only with a `network` grant (all of it: a process cannot be held
//! to a host list), the granted environment variables plus a `PATH` and a
//! `HOME`/`TMPDIR` inside the grants (never warden's own environment),
//! the call's memory and output limits. The program must be one the tool
//! was granted; nothing is filtered by looking at its arguments.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use warden_policy::Grants;
use wasmtime::component::{HasData, Linker};

use crate::clock::CallClock;
use crate::granted::GrantedDirs;
use crate::wasi::CallState;
use crate::watchdog::Slot;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "warden:tool/host-process",
    });
}

use bindings::warden::tool::process::{self, Command, ExecError, Finished};

/// Processes (and threads) one run may hold at once.
const PROCESSES: u64 = 512;

/// Where a program is looked up when nothing else grants a `PATH`.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What every `run` of a bound tool starts from.
#[derive(Debug, Default)]
pub(crate) struct ExecPlan {
    /// Each granted program as granted, with its absolute path or why it
    /// was not found when the tool was bound.
    programs: Vec<(String, Result<PathBuf, String>)>,
    read: Vec<PathBuf>,
    write: Vec<PathBuf>,
    /// Device and inode of each granted directory at bind time.
    pinned: Vec<(PathBuf, u64, u64)>,
    /// Each program found, by its path with the symlinks resolved at bind
    /// time: the files a run may read and run outside its directories.
    files: Vec<PathBuf>,
    network: bool,
    env: Vec<(String, String)>,
    workspace: PathBuf,
    default_cwd: Option<PathBuf>,
    memory: u64,
    output: usize,
    /// Why these grants cannot be enforced on a process, if they cannot.
    unenforceable: Option<String>,
}

impl ExecPlan {
    /// The plan of a tool with `grants`, whose directories are `opened`;
    /// `env` are the granted variables with their values.
    pub(crate) fn new(
        grants: &Grants,
        opened: &GrantedDirs,
        workspace: &Path,
        env: &[(String, String)],
    ) -> ExecPlan {
        let programs: Vec<(String, Result<PathBuf, String>)> = grants
            .programs()
            .map(|p| {
                (
                    p.to_string(),
                    resolve_program(p).and_then(|r| not_led_out(r, workspace)),
                )
            })
            .collect();
        let mut read = Vec::new();
        let mut write = Vec::new();
        // Pinned to the directories the tool's handles hold: a run is
        // refused if a path leads elsewhere later.
        let pinned = grants
            .dirs()
            .filter_map(|(dir, _)| {
                let st = rustix::fs::fstat(opened.fd(dir)?).ok()?;
                Some((dir.to_path_buf(), st.st_dev, st.st_ino))
            })
            .collect();
        for (dir, w) in grants.dirs() {
            if w {
                write.push(dir.to_path_buf());
            } else {
                read.push(dir.to_path_buf());
            }
        }
        let unenforceable = warden_confine::unenforceable(&read, &write);
        // Each program itself is readable and executable, wherever it is:
        // that file alone, by its path with the symlinks resolved now.
        let files = programs
            .iter()
            .filter_map(|(_, r)| std::fs::canonicalize(r.as_ref().ok()?).ok())
            .collect();
        let default_cwd = grants
            .dirs()
            .find(|(p, _)| *p == workspace)
            .or_else(|| grants.dirs().next())
            .map(|(p, _)| p.to_path_buf());
        let mut path: Vec<String> = Vec::new();
        for (_, r) in &programs {
            if let Ok(p) = r
                && let Some(dir) = p.parent().and_then(Path::to_str)
                && !path.iter().any(|d| d == dir)
            {
                path.push(dir.to_string());
            }
        }
        path.push(SYSTEM_PATH.to_string());
        let mut all_env = vec![("PATH".to_string(), path.join(":"))];
        if let Some(home) = write
            .first()
            .or(default_cwd.as_ref())
            .and_then(|p| p.to_str())
        {
            all_env.push(("HOME".to_string(), home.to_string()));
        }
        if let Some(tmp) = write.first().and_then(|p| p.to_str()) {
            all_env.push(("TMPDIR".to_string(), tmp.to_string()));
        }
        // A granted variable wins over these defaults.
        all_env.retain(|(k, _)| !env.iter().any(|(g, _)| g == k));
        all_env.extend(env.iter().cloned());
        ExecPlan {
            programs,
            read,
            write,
            pinned,
            files,
            network: grants.hosts().next().is_some(),
            env: all_env,
            workspace: workspace.to_path_buf(),
            default_cwd,
            memory: grants.limits.memory,
            output: usize::try_from(grants.limits.output).unwrap_or(usize::MAX),
            unenforceable,
        }
    }

    fn granted_list(&self) -> String {
        let names: Vec<&str> = self.programs.iter().map(|(p, _)| p.as_str()).collect();
        names.join(", ")
    }

    /// Runs `cmd` confined, until it ends, its time is up, or the call's
    /// `slot` expires (cancelled or past its deadline): then everything it
    /// started is killed.
    fn run(&self, cmd: Command, clock: &CallClock, slot: &Slot) -> Result<Finished, ExecError> {
        if self.programs.is_empty() {
            return Err(ExecError::Denied(format!(
                "this tool may not run programs: `{}` is not granted (a tool runs a program only when `exec = [...]` in its [tools.NAME] section of warden.toml names it)",
                cmd.program
            )));
        }
        let Some((_, found)) = self.programs.iter().find(|(name, r)| {
            *name == cmd.program
                || r.as_ref()
                    .is_ok_and(|p| p.as_os_str() == cmd.program.as_str())
        }) else {
            return Err(ExecError::Denied(format!(
                "`{}` is not granted to this tool; it may run only: {}",
                cmd.program,
                self.granted_list()
            )));
        };
        let program = found.clone().map_err(ExecError::Failed)?;
        if let Some(why) = &self.unenforceable {
            return Err(ExecError::Unavailable(why.clone()));
        }
        let cwd = match cmd.cwd.as_deref() {
            // The grants' doing, not the arguments': denied, with the fix.
            None | Some("") | Some(".") => self.default_cwd.clone().ok_or_else(|| {
                ExecError::Denied(
                    "this tool has no directory grant to run a program in: add `write = [\".\"]` \
                     (the workspace, read-write) or `read = [\".\"]` to its [tools.NAME] section \
                     in warden.toml, then run `warden trust`"
                        .into(),
                )
            })?,
            Some(c) => self.workspace.join(c),
        };
        let cwd = cwd
            .canonicalize()
            .map_err(|e| ExecError::Failed(format!("working directory {}: {e}", cwd.display())))?;
        if !self
            .read
            .iter()
            .chain(&self.write)
            .any(|d| cwd.starts_with(d))
        {
            return Err(ExecError::Failed(format!(
                "working directory {} is outside this tool's directory grants",
                cwd.display()
            )));
        }
        // Leave the guest a moment to report a timeout before its own
        // deadline stops the call.
        let left = clock.deadline().saturating_duration_since(Instant::now());
        let margin = (left / 10).min(Duration::from_secs(1));
        let mut spec = warden_confine::Spec::new(program, cwd);
        spec.args = cmd.args;
        spec.env = self.env.clone();
        spec.read = self.read.clone();
        spec.write = self.write.clone();
        spec.pinned = self.pinned.clone();
        spec.programs = self.files.clone();
        spec.network = self.network;
        spec.timeout = left.saturating_sub(margin);
        spec.memory = self.memory;
        spec.processes = PROCESSES;
        spec.output = self.output;
        let ran = warden_confine::run_until(&spec, &mut |stop| slot.stop_on_expiry(stop));
        slot.stop_on_expiry_done();
        match ran {
            Ok(done) => {
                let (exit_code, signal) = match done.status {
                    warden_confine::Status::Exited(c) => (Some(c), None),
                    warden_confine::Status::Signaled(s) => (None, Some(s)),
                };
                let mut stderr = done.stderr;
                if done.limits.contains(&warden_confine::Limit::Memory) {
                    // The program's own stderr says at most "Killed".
                    if !stderr.is_empty() && !stderr.ends_with('\n') {
                        stderr.push('\n');
                    }
                    stderr.push_str(&format!(
                        "[warden: the kernel killed a process of this command: its processes together passed the memory limit of {}; raise `memory` in warden.toml to allow more]\n",
                        warden_policy::format_size(self.memory)
                    ));
                }
                Ok(Finished {
                    exit_code,
                    signal,
                    stdout: done.stdout,
                    stderr,
                    timed_out: done.timed_out,
                    truncated: done.limits.contains(&warden_confine::Limit::Output),
                })
            }
            Err(warden_confine::Error::Unavailable(u)) => {
                Err(ExecError::Unavailable(u.to_string()))
            }
            Err(e) => Err(ExecError::Failed(e.to_string())),
        }
    }
}

/// `program`, unless it lies in the workspace and a symlink there leads it
/// outside: a tool that may write the workspace could point it at any
/// file, which every later run would be allowed to read.
fn not_led_out(program: PathBuf, workspace: &Path) -> Result<PathBuf, String> {
    let target = std::fs::canonicalize(&program).map_err(|e| e.to_string())?;
    if program.starts_with(workspace) && !target.starts_with(workspace) {
        return Err(format!(
            "{} leads out of the workspace through a symlink (to {}); grant that program \
             itself if you mean it",
            program.display(),
            target.display()
        ));
    }
    Ok(program)
}

/// A bare name on warden's `PATH`, or an absolute path; either must be an
/// executable file. The one lookup of an `exec` grant's program.
pub fn resolve_program(program: &str) -> Result<PathBuf, String> {
    warden_confine::find_program(program).ok_or_else(|| {
        if program.starts_with('/') {
            format!("`{program}` is granted but is not an executable file")
        } else {
            format!("`{program}` is granted but was not found on PATH when warden started")
        }
    })
}

/// Adds `warden:tool/process` to the linker, in contract 0.2.0 and, for
/// components built before it, 0.1.0 (the same interface under its old
/// version: the functions are the same ones).
pub(crate) fn add_process(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    process::add_to_linker::<CallState, Exec>(linker, exec)?;
    let mut legacy = linker.instance("warden:tool/process@0.1.0")?;
    legacy.func_wrap("granted", |mut store, (): ()| {
        Ok((process::Host::granted(&mut exec(store.data_mut())),))
    })?;
    legacy.func_wrap("run", |mut store, (cmd,): (Command,)| {
        Ok((process::Host::run(&mut exec(store.data_mut()), cmd),))
    })?;
    Ok(())
}

/// The process host of a call's state.
fn exec(state: &mut CallState) -> ExecRef<'_> {
    ExecRef {
        plan: &state.exec,
        clock: &state.clock,
        slot: &state.slot,
    }
}

struct Exec;

impl HasData for Exec {
    type Data<'a> = ExecRef<'a>;
}

pub(crate) struct ExecRef<'a> {
    plan: &'a Arc<ExecPlan>,
    clock: &'a CallClock,
    slot: &'a Arc<Slot>,
}

impl process::Host for ExecRef<'_> {
    fn granted(&mut self) -> Vec<String> {
        self.plan.programs.iter().map(|(p, _)| p.clone()).collect()
    }

    fn run(&mut self, cmd: Command) -> Result<Finished, ExecError> {
        self.plan.run(cmd, self.clock, self.slot)
    }
}
