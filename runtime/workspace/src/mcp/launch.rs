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
    ) -> Result<(Listed, (ServerProcess, ProcessOutput)), String> {
        let home = private_home()?;
        let spec = spec(server, argv, root, home.path())?;
        // Started from the servers' runtime thread, which lives as long as
        // they do: the confinement helper dies with the thread that
        // started it.
        let process = self
            .wait(async move { warden_confine::spawn(&spec, true) })
            .ok_or("warden is stopping")?
            .map_err(|e| e.to_string())?;
        let mut process = ServerProcess {
            confined: process,
            _home: home,
        };
        let pipes = process
            .confined
            .take_stdout()
            .zip(process.confined.take_stdin());
        let (stdout, stdin) = pipes.ok_or("its standard input and output are not pipes")?;
        // Registered with the servers' runtime, which drives them.
        let _in_rt = self.rt().enter();
        let output = match process.confined.take_stderr() {
            Some(stderr) => ProcessOutput::follow(stderr).map_err(|e| e.to_string())?,
            None => ProcessOutput::default(),
        };
        let stdout = MessageCap::new(
            Receiver::from_owned_fd(stdout.into()).map_err(|e| e.to_string())?,
            output.clone(),
        );
        let stdin = Sender::from_owned_fd(stdin.into()).map_err(|e| e.to_string())?;
        match self.list(().serve((stdout, stdin)), "its command", cancel, limit) {
            Ok(listed) => Ok((listed, (process, output))),
            Err(why) => {
                process.confined.kill();
                if cancel.is_some_and(CallCancel::is_cancelled) {
                    return Err(why);
                }
                if let Some(why) = output.closed() {
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
    home: &Path,
) -> Result<warden_confine::Spec, String> {
    if let Some((name, _)) = server.files.iter().find(|(_, sum)| *sum == TOO_LARGE) {
        return Err(format!(
            "its command runs {name}, a folder too large to pin (over {TREE_FILES} files or \
             {} MiB); run a script instead, or install the package outside the workspace",
            TREE_BYTES >> 20
        ));
    }
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
    // A private HOME and TMPDIR, never inside the grants; no user site
    // (`usercustomize`), no byte code written next to pinned modules.
    let tmp = home.join("tmp");
    std::fs::create_dir(&tmp).map_err(|e| format!("cannot make its TMPDIR: {e}"))?;
    let mut env = vec![
        ("PATH".to_string(), SYSTEM_PATH.to_string()),
        ("HOME".to_string(), home.display().to_string()),
        ("TMPDIR".to_string(), tmp.display().to_string()),
        ("PYTHONNOUSERSITE".to_string(), "1".to_string()),
        ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
    ];
    for (name, value) in server.grants.env_values(|name| std::env::var(name).ok()) {
        if STARTUP_VARS.contains(&name.as_str()) || env.iter().any(|(k, _)| *k == name) {
            return Err(format!(
                "it is granted `{name}`, which warden sets itself or which names code run at \
                 start; remove it from `env` in its section"
            ));
        }
        env.push((name, value));
    }
    spec.env = env;
    write.push(home.to_path_buf());
    spec.read = read;
    spec.write = write;
    spec.pinned = server.pinned.clone();
    Ok(spec)
}

/// A server's process, and the private `HOME` (and `TMPDIR` in it) made
/// for this start: removed once the process is ended (fields drop in
/// order).
pub(super) struct ServerProcess {
    pub(super) confined: warden_confine::Confined,
    _home: tempfile::TempDir,
}

/// A fresh private folder (0700) for a server's `HOME` and `TMPDIR`,
/// outside the workspace and every grant: a file a model writes in the
/// workspace is never startup code of the next start (`usercustomize.py`
/// under `~/.local`, `.bashrc`).
fn private_home() -> Result<tempfile::TempDir, String> {
    tempfile::Builder::new()
        .prefix("warden-mcp-home-")
        .tempdir()
        .map_err(|e| format!("cannot make its private HOME folder: {e}"))
}

/// Variables that name code an interpreter or the loader runs at start:
/// never passed to a server, even when granted.
const STARTUP_VARS: &[&str] = &[
    "PYTHONSTARTUP",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONEXECUTABLE",
    "PYTHONINSPECT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
    "RUBYOPT",
    "RUBYLIB",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
];

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
/// path relative to the workspace or an absolute one inside it; a module
/// run with `-m` (key `-m NAME`) and a folder run as a program (one with
/// `__main__.py`) by a hash of their whole tree. Data it names (`--db
/// data.db`) is not among them: the server may change that itself. Nor
/// are modules its scripts import.
pub(crate) fn launch_files(launch: &McpLaunch, root: &Path) -> BTreeMap<String, String> {
    use std::os::unix::fs::PermissionsExt;
    let McpLaunch::Command(argv) = launch else {
        return BTreeMap::new();
    };
    let mut trees = BTreeMap::new();
    for (i, arg) in argv.iter().enumerate() {
        let module = match arg.strip_prefix("-m") {
            Some("") => argv.get(i + 1).map(String::as_str),
            Some(m) if !m.starts_with('-') => Some(m),
            _ => None,
        };
        if let Some(m) = module {
            let path = root.join(m.replace('.', "/"));
            let file = path.with_extension("py");
            let found = if path.is_dir() {
                Some(tree_sum(&path, root))
            } else if file.is_file() {
                file_sum(&file, root)
            } else {
                None // not the workspace's: a module of the system
            };
            trees.extend(found.map(|sum| (format!("-m {m}"), sum)));
        } else if !arg.starts_with('-') && root.join(arg).join("__main__.py").is_file() {
            trees.insert(arg.clone(), tree_sum(&root.join(arg), root));
        }
    }
    let mut files: BTreeMap<String, String> = argv
        .iter()
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
        .collect();
    files.extend(trees);
    files
}

/// Files in a module folder pinned at most; a larger tree is not run.
const TREE_FILES: usize = 4096;
/// Bytes in a module folder pinned at most.
const TREE_BYTES: u64 = 64 << 20;
/// The sum recorded for a folder too large to pin.
const TOO_LARGE: &str = "too large to pin";

/// The SHA-256 of a file inside the workspace (its real path), if it is.
fn file_sum(path: &Path, root: &Path) -> Option<String> {
    let real = path.canonicalize().ok().filter(|p| p.starts_with(root))?;
    warden_policy::sha256_hex_of(std::fs::File::open(real).ok()?).ok()
}

/// A SHA-256 over a folder's tree: each entry's path beneath it, and a
/// file's bytes or a link's target (links are not followed); byte-code
/// caches left out. [`TOO_LARGE`] past [`TREE_FILES`] or [`TREE_BYTES`].
fn tree_sum(dir: &Path, root: &Path) -> String {
    use sha2::{Digest, Sha256};
    let Some(dir) = dir.canonicalize().ok().filter(|d| d.starts_with(root)) else {
        return TOO_LARGE.into();
    };
    let mut hash = Sha256::new();
    let (mut files, mut bytes) = (0usize, 0u64);
    let mut stack = vec![dir.clone()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        // Its files are read beneath the folder's handle, never through a
        // link, and never past what is left of the budget: a sparse file
        // of many GB is not read into memory to find it too large.
        let Ok(held) = warden_state::InputDir::workspace(&d) else {
            continue;
        };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Ok(kind) = e.file_type() else { continue };
            let path = e.path();
            let rel = path
                .strip_prefix(&dir)
                .unwrap_or(&path)
                .to_string_lossy()
                .into_owned();
            files += 1;
            if files > TREE_FILES || bytes > TREE_BYTES {
                return TOO_LARGE.into();
            }
            hash.update(rel.as_bytes());
            hash.update([0]);
            if kind.is_dir() {
                if e.file_name() != "__pycache__" {
                    stack.push(path);
                }
            } else if kind.is_symlink() {
                let target = std::fs::read_link(&path).unwrap_or_default();
                hash.update(b"link:");
                hash.update(target.as_os_str().as_encoded_bytes());
            } else if kind.is_file() {
                let data = match held.read(e.file_name(), TREE_BYTES - bytes) {
                    Err(warden_state::InputError {
                        why: warden_state::Why::TooLarge { .. },
                        ..
                    }) => return TOO_LARGE.into(),
                    read => read.ok().flatten().unwrap_or_default(),
                };
                bytes += data.len() as u64;
                hash.update(&data);
            }
            hash.update([0]);
        }
    }
    format!("{:x}", hash.finalize())
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
