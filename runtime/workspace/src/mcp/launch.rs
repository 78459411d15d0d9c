//! Starting a server's process: the confinement spec from its grants, the
//! program and the scripts it runs (pinned at trust, checked before each
//! start), what its stderr said when it failed, and its restarts.

use super::*;

impl McpTools {
    /// Starts the server's program confined and lists its tools on stdio,
    /// within `limit`; cancelling `cancel` stops the wait for it (and kills
    /// it). Why it failed ends with the last lines it wrote to stderr.
    pub(super) fn start_process(
        &self,
        server: &McpServer,
        argv: &[String],
        root: &Path,
        cancel: Option<&CallCancel>,
        limit: Duration,
    ) -> Result<(Listed, (warden_confine::Confined, ProcessOutput)), String> {
        // Started from the servers' runtime thread, which lives as long as
        // they do: the confinement helper dies with the thread that
        // started it.
        let spec = spec(server, argv, root)?;
        let mut process = self
            .wait(async move { warden_confine::spawn(&spec, true) })
            .ok_or("warden is stopping")?
            .map_err(|e| e.to_string())?;
        let pipes = process.take_stdout().zip(process.take_stdin());
        let (stdout, stdin) = pipes.ok_or("its standard input and output are not pipes")?;
        // Registered with the servers' runtime, which drives them.
        let _in_rt = self.rt().enter();
        let output = match process.take_stderr() {
            Some(stderr) => ProcessOutput::follow(stderr).map_err(|e| e.to_string())?,
            None => ProcessOutput::default(),
        };
        let stdout = MessageCap {
            stdout: Receiver::from_owned_fd(stdout.into()).map_err(|e| e.to_string())?,
            line: 0,
            output: output.clone(),
        };
        let stdin = Sender::from_owned_fd(stdin.into()).map_err(|e| e.to_string())?;
        match self.list(().serve((stdout, stdin)), "its command", cancel, limit) {
            Ok(listed) => Ok((listed, (process, output))),
            Err(why) => {
                process.kill();
                if cancel.is_some_and(CallCancel::is_cancelled) {
                    return Err(why);
                }
                if let Some(why) = output.oversized() {
                    return Err(why);
                }
                Err(format!("{why}{}", self.stderr_note(&output, STDERR_WAIT)))
            }
        }
    }

    /// What the server wrote last to `stderr`, as the end of a message,
    /// once it ended or `wait` passed; empty when it wrote nothing.
    pub(super) fn stderr_note(&self, stderr: &ProcessOutput, wait: Duration) -> String {
        let ended = stderr.clone();
        self.wait(async move { tokio::time::timeout(wait, ended.ended()).await });
        match stderr.last_lines() {
            Some(lines) => format!("; its stderr ended with: {lines}"),
            None => String::new(),
        }
    }

    /// What happens next to `running` when its process has exited.
    pub(super) fn restart_note(&self, running: &Running) -> String {
        let live = running.live.lock().unwrap_or_else(|e| e.into_inner());
        let restartable = matches!(running.server.launch, McpLaunch::Command(_))
            && live.client.peer().is_transport_closed()
            && live.restarts < MAX_RESTARTS;
        if restartable {
            "; warden starts it again at the next call of one of its tools".to_string()
        } else {
            String::new()
        }
    }
}

/// Where programs are looked up inside the confinement.
pub(super) const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What the server's process may reach, for the confinement: its granted
/// directories, network only when it has a `network` grant (a process
/// cannot be held to a host list), the granted variables plus `PATH` and a
/// `HOME` inside its grants, its memory limit.
pub(super) fn spec(
    server: &McpServer,
    argv: &[String],
    root: &Path,
) -> Result<warden_confine::Spec, String> {
    let program = resolve(&argv[0], root)?;
    let (mut read, mut write) = (Vec::new(), Vec::new());
    for (path, w) in server.grants.dirs() {
        if w { &mut write } else { &mut read }.push(path.to_path_buf());
    }
    // The workspace when granted, else the root of what it sees.
    let cwd = if read.iter().chain(&write).any(|d| root.starts_with(d)) {
        root.to_path_buf()
    } else {
        PathBuf::from("/")
    };
    // A file the command names relative to the workspace is the
    // workspace's, as warden pins it, wherever the server starts: one not
    // granted the workspace itself starts in `/`, so it gets the file by
    // its absolute path.
    let mut args = argv[1..].to_vec();
    if cwd == Path::new("/") {
        for arg in &mut args {
            let Some(path) = named_file(arg, root) else {
                continue;
            };
            if !read.iter().chain(&write).any(|d| path.starts_with(d)) {
                let folder = Path::new(arg.as_str())
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .map_or(".".into(), |p| p.display().to_string());
                return Err(format!(
                    "its command names {arg}, which is outside the directories it is granted; \
                     add \"{folder}\" to its `read` grants in warden.toml"
                ));
            }
            *arg = path.display().to_string();
        }
    }
    let mut spec = warden_confine::Spec::new(program, cwd);
    spec.args = args;
    spec.network = server
        .grants
        .caps
        .iter()
        .any(|c| matches!(c, Capability::Net { .. }));
    spec.memory = server.grants.limits.memory;
    let mut env = vec![("PATH".to_string(), SYSTEM_PATH.to_string())];
    if let Some(home) = write.first().or(read.first()) {
        env.push(("HOME".to_string(), home.display().to_string()));
    }
    for (name, value) in server.grants.env_values(|name| std::env::var(name).ok()) {
        env.retain(|(k, _)| *k != name);
        env.push((name, value));
    }
    spec.env = env;
    spec.read = read;
    spec.write = write;
    spec.pinned = server.pinned.clone();
    Ok(spec)
}

/// The workspace file (its real path) that command argument `arg` names
/// relative to the workspace: a path with a folder in it, or the name of a
/// script (`server.py`), that is a file there.
pub(super) fn named_file(arg: &str, root: &Path) -> Option<PathBuf> {
    if arg.starts_with('-')
        || Path::new(arg).is_absolute()
        || !(arg.contains('/') || is_script(arg))
    {
        return None;
    }
    root.join(arg).canonicalize().ok().filter(|p| p.is_file())
}

/// SHA-256 of each workspace file the command line of `launch` runs,
/// keyed as it names it: its program (found on PATH when it names no
/// folder), and the scripts it names (files
/// that are executable, or end in the suffix of a script or module), by a
/// path relative to the workspace or an absolute one inside it. Data it
/// names (`--db data.db`) is not among them: the server may change that
/// itself. Nor are modules its scripts import.
pub(crate) fn launch_files(launch: &McpLaunch, root: &Path) -> BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let McpLaunch::Command(argv) = launch else {
        return BTreeMap::new();
    };
    argv.iter()
        .enumerate()
        .filter_map(|(i, arg)| {
            if arg.is_empty() || arg.starts_with('-') {
                return None;
            }
            // A bare program name is looked up on PATH, as it is started:
            // a PATH folder inside the workspace (an activated `.venv/bin`)
            // makes it a workspace file like any other.
            let path = if i == 0 && !arg.contains('/') {
                resolve(arg, root).ok()?
            } else {
                root.join(arg)
            };
            // In a folder of the workspace (the file itself may be a link:
            // its bytes are those of what it leads to).
            let inside = path
                .parent()
                .and_then(|p| p.canonicalize().ok())
                .is_some_and(|p| p.starts_with(root));
            let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file());
            let code = meta
                .is_some_and(|m| i == 0 || is_script(arg) || m.permissions().mode() & 0o111 != 0);
            if !inside || !code {
                return None;
            }
            let file = std::fs::File::open(&path).ok()?;
            Some((arg.clone(), warden_policy::sha256_hex_of(file).ok()?))
        })
        .collect()
}

/// Whether `arg` names a file an interpreter runs, by its suffix.
pub(super) fn is_script(arg: &str) -> bool {
    Path::new(arg)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SCRIPT_SUFFIXES.contains(&e))
}

/// Suffixes of the files an interpreter runs.
pub(super) const SCRIPT_SUFFIXES: &[&str] = &[
    "py", "pyc", "js", "mjs", "cjs", "ts", "mts", "cts", "sh", "bash", "rb", "pl", "php", "lua",
    "jar", "wasm", "exe",
];

/// Why the files a server runs are not those of its trust record
/// (`trusted`: `None` in a record written before they were recorded), if
/// they are not.
pub(crate) fn files_changed(
    trusted: Option<&BTreeMap<String, String>>,
    now: &BTreeMap<String, String>,
) -> Option<String> {
    let Some(trusted) = trusted else {
        return (!now.is_empty()).then(|| {
            format!(
                "it was trusted by an older warden, which did not record the files it runs ({})",
                inert(&now.keys().cloned().collect::<Vec<_>>().join(", "))
            )
        });
    };
    let changed = changed_files(trusted, now);
    (!changed.is_empty()).then(|| format!("{changed} is not as you trusted it"))
}

/// The names of the files that differ between `before` and `now`, inert.
pub(super) fn changed_files(
    before: &BTreeMap<String, String>,
    now: &BTreeMap<String, String>,
) -> String {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(now.keys()).collect();
    let changed: Vec<&str> = names
        .into_iter()
        .filter(|f| before.get(*f) != now.get(*f))
        .map(String::as_str)
        .collect();
    inert(&changed.join(", ")).into_owned()
}

/// The program of a command: a path (relative ones from the workspace),
/// or a name on warden's `PATH` (looked up as an `exec` grant is).
pub(super) fn resolve(program: &str, root: &Path) -> Result<PathBuf, String> {
    if program.contains('/') {
        let path = root.join(program);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("its program {} does not exist", path.display()))
        };
    }
    warden_sandbox::resolve_program(program)
        .map_err(|_| format!("its program `{program}` is not an executable file on PATH"))
}
