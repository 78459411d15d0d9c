//! MCP servers as tools: each `[mcp.NAME]` of the trusted policy is either
//! started as a confined process (the directories, network and environment
//! its section grants, nothing else) or reached at its URL (only when its
//! host is granted), and its tools are offered to the model as
//! `NAME__TOOL`.
//!
//! The servers speak MCP on stdio or streamable HTTP through the official
//! SDK (`rmcp`), on a runtime of their own: a call from the agent's
//! blocking thread is sent to it and waited for, and nothing runs while no
//! call does.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ContentBlock, PaginatedRequestParams, Tool};
use rmcp::service::{RoleClient, RunningService, ServiceError, ServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::Value;
use tokio::net::unix::pipe::{Receiver, Sender};
use warden_agent::{CallCancel, ToolDef, ToolResult};
use warden_policy::{Capability, Grants, McpLaunch, inert, is_tool_name};
use warden_sandbox::{GrantedDirs, Outbound};
use warden_state::StateDir;

use crate::mcp_http::CheckedHttp;

/// Longest wait for a server to start and list its tools.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Bytes kept of what a server's process wrote to stderr: the end of it.
const STDERR_KEPT: usize = 4096;
/// Longest message (one line) read from a server's stdout, as rmcp reads
/// at most; a longer one closes the connection.
const MAX_MESSAGE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;
/// Bytes of tool definitions (names, descriptions, schemas) one server
/// may add to every request to the model; its tools past that are left
/// out, so that no server can fill the model's context with them.
const SERVER_BYTES: usize = 256 << 10;
/// Lines of it shown when the server fails.
const STDERR_LINES: usize = 6;
/// How long a failure waits for the server's stderr to end (it ends with
/// the process) before saying what it has.
const STDERR_WAIT: Duration = Duration::from_millis(500);
/// Bytes of a tool's description offered to the model; the rest is cut.
const DESCRIPTION_MAX: usize = 4 << 10;
/// Bytes of a tool's input schema (as JSON); a tool with a larger one is
/// left out.
const SCHEMA_MAX: usize = 32 << 10;
/// Times a server started by command is started again after it exited,
/// in one session: a server that keeps dying stays down.
const MAX_RESTARTS: u32 = 3;

/// One `[mcp.NAME]` section in force: what to start, and what it may reach.
#[derive(Debug, Clone)]
pub struct McpServer {
    /// The server name (the prefix of its tools).
    pub name: String,
    /// A command line, or a URL.
    pub launch: McpLaunch,
    /// What the process may reach, pinned to what was trusted.
    pub grants: Grants,
    /// Device and inode of each granted directory when the session began:
    /// a process started later (again, after it exited) is refused a path
    /// that leads elsewhere by then.
    pub pinned: Vec<(PathBuf, u64, u64)>,
    /// The workspace files its command line names, with their SHA-256
    /// when the session began ([`launch_files`]): it is not started again
    /// if one changed since.
    pub files: BTreeMap<String, String>,
}

impl McpServer {
    /// The server `name` with `grants`, its directories pinned as they
    /// are now, and `files` as [`launch_files`] found them.
    pub fn new(
        name: &str,
        launch: McpLaunch,
        grants: Grants,
        files: BTreeMap<String, String>,
    ) -> McpServer {
        use std::os::unix::fs::MetadataExt;
        // Followed as the confinement follows them when it opens them. One
        // that is not there now is pinned to inode 0, which no directory
        // has: a later start is refused it, whatever is put there.
        let pinned = grants
            .dirs()
            .map(|(dir, _)| {
                let (dev, ino) = std::fs::metadata(dir).map_or((0, 0), |m| (m.dev(), m.ino()));
                (dir.to_path_buf(), dev, ino)
            })
            .collect();
        McpServer {
            name: name.to_string(),
            launch,
            grants,
            pinned,
            files,
        }
    }
}

/// One tool of a started server, as offered to the model.
#[derive(Debug, Clone)]
pub struct McpTool {
    /// `SERVER__TOOL`.
    pub def: ToolDef,
    /// Index of its server.
    server: usize,
    /// Its name on the server.
    remote: String,
}

struct Running {
    server: McpServer,
    live: Mutex<Live>,
}

/// A server's connection, replaced when its process is started again.
struct Live {
    client: RunningService<RoleClient, ()>,
    /// The end of what its process wrote to stderr (none for a URL server).
    stderr: Option<ProcessOutput>,
    /// Ends the process and everything it started when dropped (none for
    /// a URL server).
    _process: Option<warden_confine::Confined>,
    /// Times its process was started again after it exited.
    restarts: u32,
    /// The checked HTTP client of a server at a URL, which knows why a
    /// request could not be sent (none for a command).
    http: Option<CheckedHttp>,
}

/// What a call goes through to its server.
struct Connection {
    peer: rmcp::Peer<RoleClient>,
    stderr: Option<ProcessOutput>,
    http: Option<CheckedHttp>,
    /// The server's process had exited and was started again for it.
    restarted: bool,
}

/// A started client and the tools it listed.
type Listed = (RunningService<RoleClient, ()>, Vec<Tool>);

/// A server started or connected to, not yet offered.
struct Opened {
    listed: Listed,
    /// Its confined process and stderr (a server started by command).
    process: Option<(warden_confine::Confined, ProcessOutput)>,
    /// Its checked HTTP client (a server at a URL).
    http: Option<CheckedHttp>,
}

/// The started servers and their tools.
pub struct McpTools {
    /// Taken only when dropped.
    rt: Option<tokio::runtime::Runtime>,
    /// Where server processes start (their working directory).
    root: PathBuf,
    servers: Vec<Running>,
    tools: Vec<McpTool>,
    index: HashMap<String, usize>,
    problems: Vec<String>,
    /// What an approval preview may look through: nothing (the server's
    /// files are its own business; the arguments are shown).
    no_dirs: GrantedDirs,
}

impl std::fmt::Debug for McpTools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpTools")
            .field("tools", &self.tools.len())
            .field("problems", &self.problems)
            .finish_non_exhaustive()
    }
}

impl McpTools {
    /// Starts `servers` confined, in `root` (the working directory, which
    /// the process can use only as far as it is granted), and connects to
    /// those at a URL, with the secrets read from `config`. A server that
    /// cannot start, or whose kernel confinement is not available, is
    /// left out with a problem that says why; nothing runs unconfined.
    pub fn start(servers: Vec<McpServer>, root: &Path, config: Option<&StateDir>) -> McpTools {
        let mut tools = McpTools {
            rt: Some(
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("warden-mcp")
                    .enable_all()
                    .build()
                    .expect("a tokio runtime starts"),
            ),
            root: root.to_path_buf(),
            servers: Vec::new(),
            tools: Vec::new(),
            index: HashMap::new(),
            problems: Vec::new(),
            no_dirs: GrantedDirs::open(&[]).expect("no directory opens"),
        };
        // Every server starts and lists its tools at the same time as the
        // others: a session waits for the slowest server, not for the sum
        // of them. Their tools are offered in the policy's order.
        let opened: Vec<Result<Opened, String>> = {
            let tools = &tools;
            std::thread::scope(|scope| {
                let starting: Vec<_> = servers
                    .iter()
                    .map(|server| scope.spawn(move || tools.open(server, root, config)))
                    .collect();
                starting
                    .into_iter()
                    .map(|start| {
                        start.join().unwrap_or_else(|_| {
                            Err("warden failed while starting it (a bug in warden: the \
                                     panic message above says where)"
                                .into())
                        })
                    })
                    .collect()
            })
        };
        for (server, opened) in servers.into_iter().zip(opened) {
            match opened {
                Ok(Opened {
                    listed: (client, listed),
                    process,
                    http,
                }) => tools.add(server, client, listed, process.unzip(), http),
                Err(why) => tools.problems.push(format!(
                    "MCP server `{}` is not available: {}",
                    server.name,
                    inert(&why)
                )),
            }
        }
        tools
    }

    /// Starts or connects to `server` and lists its tools.
    fn open(
        &self,
        server: &McpServer,
        root: &Path,
        config: Option<&StateDir>,
    ) -> Result<Opened, String> {
        Ok(match &server.launch {
            McpLaunch::Command(argv) => {
                let (listed, process) =
                    self.start_process(server, argv, root, None, START_TIMEOUT)?;
                Opened {
                    listed,
                    process: Some(process),
                    http: None,
                }
            }
            McpLaunch::Url(url) => {
                let (listed, http) = self.connect(server, url, config)?;
                Opened {
                    listed,
                    process: None,
                    http: Some(http),
                }
            }
        })
    }

    /// Starts the server's program confined and lists its tools on stdio,
    /// within `limit`; cancelling `cancel` stops the wait for it (and kills
    /// it). Why it failed ends with the last lines it wrote to stderr.
    fn start_process(
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
    fn stderr_note(&self, stderr: &ProcessOutput, wait: Duration) -> String {
        let ended = stderr.clone();
        self.wait(async move { tokio::time::timeout(wait, ended.ended()).await });
        match stderr.last_lines() {
            Some(lines) => format!("; its stderr ended with: {lines}"),
            None => String::new(),
        }
    }

    /// Connects to the server's URL through the checked sending (granted
    /// hosts only) and lists its tools.
    fn connect(
        &self,
        server: &McpServer,
        url: &str,
        config: Option<&StateDir>,
    ) -> Result<(Listed, CheckedHttp), String> {
        // Every request is checked against the grants as it is sent; a
        // refusal is reported below, with the reason.
        let out = Outbound::new(&server.grants, config)?;
        let http = CheckedHttp::new(out.clone(), server.grants.limits.timeout);
        let mut config = StreamableHttpClientTransportConfig::with_uri(url);
        config.retry_config = Arc::new(QuickEndsGiveUp::default());
        // Made on the servers' runtime, which runs its worker.
        let serving = {
            let http = http.clone();
            async move { ().serve(StreamableHttpClientTransport::with_client(http, config)).await }
        };
        let listed = self
            .list(serving, "its URL", None, START_TIMEOUT)
            .map_err(|why| {
                // Why the request did not go out, and why a secret was not
                // sent, say more than the client's error does.
                let why = match http.failure() {
                    Some(failure) => format!("it could not be reached: {failure}"),
                    None => why,
                };
                match out.notes() {
                    notes if notes.is_empty() => why,
                    notes => format!("{why}; {}", notes.join("; ")),
                }
            })?;
        Ok((listed, http))
    }

    /// Waits for the client `serving` to initialize, then lists the
    /// server's tools, within `limit`, or until `cancel`.
    fn list<E: std::fmt::Display>(
        &self,
        serving: impl Future<Output = Result<RunningService<RoleClient, ()>, E>> + Send + 'static,
        check: &'static str,
        cancel: Option<&CallCancel>,
        limit: Duration,
    ) -> Result<Listed, String> {
        let listing = async move {
            tokio::time::timeout(limit, async {
                let client = serving.await.map_err(|e| {
                    let e = without_type_names(&e.to_string());
                    format!("it did not answer `initialize` ({e}); check {check}")
                })?;
                let tools = list_tools(client.peer()).await?;
                Ok::<_, String>((client, tools))
            })
            .await
            .map_err(|_| {
                // Shorter than the start limit only for a start within a
                // call, bounded by the server's timeout.
                let whose = if limit < START_TIMEOUT {
                    " (the server's timeout, which bounds the whole call)"
                } else {
                    ""
                };
                format!("it did not start within {}s{whose}", limit.as_secs_f64())
            })?
        };
        match cancel {
            Some(cancel) => self
                .wait_unless(listing, cancel)
                .ok_or("cancelled by the user")?,
            None => self.wait(listing).ok_or("warden is stopping")?,
        }
    }

    /// Offers the tools `listed` of `server`.
    fn add(
        &mut self,
        server: McpServer,
        client: RunningService<RoleClient, ()>,
        mut listed: Vec<Tool>,
        (process, stderr): (Option<warden_confine::Confined>, Option<ProcessOutput>),
        http: Option<CheckedHttp>,
    ) {
        let at = self.servers.len();
        if listed.len() > MAX_TOOLS {
            self.problems.push(format!(
                "MCP server `{}` offers more than {MAX_TOOLS} tools: only the first {MAX_TOOLS} \
                 are offered (each is sent to the model with every request)",
                server.name
            ));
            listed.truncate(MAX_TOOLS);
        }
        // What this server's tools add to every request, and the tools
        // left out once that passed [`SERVER_BYTES`].
        let mut sent = 0;
        let mut over_budget = Vec::new();
        for tool in listed {
            let exposed = exposed_name(&server.name, &tool.name);
            if !is_tool_name(&exposed) || self.index.contains_key(&exposed) {
                self.problems.push(format!(
                    "MCP server `{}`: tool `{}` is left out: its name cannot be offered as \
                     `{}`",
                    server.name,
                    inert(&tool.name),
                    inert(&exposed)
                ));
                continue;
            }
            // Sent with every request: a server cannot fill the model's
            // context with them.
            let parameters = Value::Object((*tool.input_schema).clone());
            let schema_len = parameters.to_string().len();
            if schema_len > SCHEMA_MAX {
                self.problems.push(format!(
                    "MCP server `{}`: tool `{}` is left out: its input schema is {} KiB, more \
                     than the {} KiB a tool may send to the model with every request",
                    server.name,
                    inert(&tool.name),
                    schema_len >> 10,
                    SCHEMA_MAX >> 10
                ));
                continue;
            }
            // Checked as a component's schema is: one that does not compile
            // would fail every request it is sent with.
            if let Err(why) = warden_sandbox::check_parameters(&parameters, schema_len) {
                self.problems.push(format!(
                    "MCP server `{}`: tool `{}` is left out: {}",
                    server.name,
                    inert(&tool.name),
                    inert(&why)
                ));
                continue;
            }
            let mut description = tool.description.as_deref().unwrap_or("").to_string();
            if description.len() > DESCRIPTION_MAX {
                self.problems.push(format!(
                    "MCP server `{}`: the description of tool `{}` is cut to {} KiB (it had {} \
                     KiB)",
                    server.name,
                    inert(&tool.name),
                    DESCRIPTION_MAX >> 10,
                    description.len() >> 10
                ));
                let mut end = DESCRIPTION_MAX;
                while !description.is_char_boundary(end) {
                    end -= 1;
                }
                description.truncate(end);
                description.push('…');
            }
            let bytes = exposed.len() + description.len() + schema_len;
            if sent + bytes > SERVER_BYTES {
                over_budget.push(inert(&tool.name).into_owned());
                continue;
            }
            sent += bytes;
            self.index.insert(exposed.clone(), self.tools.len());
            self.tools.push(McpTool {
                def: ToolDef {
                    name: exposed,
                    description,
                    parameters,
                },
                server: at,
                remote: tool.name.to_string(),
            });
        }
        if !over_budget.is_empty() {
            let named = match over_budget.len() {
                n if n > 10 => format!("{}, and {} more", over_budget[..10].join(", "), n - 10),
                _ => over_budget.join(", "),
            };
            self.problems.push(format!(
                "MCP server `{}`: {} tool{} left out ({}): with them, its tools would pass the \
                 {} KiB a server may send to the model with every request",
                server.name,
                over_budget.len(),
                if over_budget.len() == 1 {
                    " is"
                } else {
                    "s are"
                },
                named,
                SERVER_BYTES >> 10
            ));
        }
        self.servers.push(Running {
            server,
            live: Mutex::new(Live {
                client,
                stderr,
                _process: process,
                restarts: 0,
                http,
            }),
        });
    }

    fn rt(&self) -> &tokio::runtime::Runtime {
        self.rt.as_ref().expect("the runtime lives until drop")
    }

    /// Runs `task` on the servers' runtime and waits for it on this
    /// thread, which may belong to another runtime (never a worker of it);
    /// `None` when the task was aborted.
    fn wait<T: Send + 'static>(&self, task: impl Future<Output = T> + Send + 'static) -> Option<T> {
        let (done, wait) = std::sync::mpsc::channel();
        self.rt().spawn(async move {
            let _ = done.send(task.await);
        });
        wait.recv().ok()
    }

    /// [`McpTools::wait`], also ended by `cancel` (the task is dropped
    /// at its next await); `None` then.
    fn wait_unless<T: Send + 'static>(
        &self,
        task: impl Future<Output = T> + Send + 'static,
        cancel: &CallCancel,
    ) -> Option<T> {
        let (done, wait) = std::sync::mpsc::channel();
        let task = self.rt().spawn(async move {
            let _ = done.send(task.await);
        });
        let abort = task.abort_handle();
        cancel.on_cancel(move || abort.abort());
        wait.recv().ok()
    }

    /// The tools offered, in server order.
    pub fn tools(&self) -> &[McpTool] {
        &self.tools
    }

    /// Servers that did not start, and tools left out, for the user.
    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    /// Adds warnings about the servers (for [`McpTools::problems`]).
    pub fn warn(&mut self, warnings: Vec<String>) {
        self.problems.extend(warnings);
    }

    /// No directories, for approval requests.
    pub fn no_dirs(&self) -> &GrantedDirs {
        &self.no_dirs
    }

    /// Leaves out each tool whose offered name `taken` says a loaded tool
    /// has already (as its name or an alias), and says so: the model must never read one
    /// tool's description and have its arguments reach another.
    pub fn leave_out_taken(&mut self, taken: impl Fn(&str) -> bool) {
        let servers = &self.servers;
        let problems = &mut self.problems;
        self.tools.retain(|t| {
            if !taken(&t.def.name) {
                return true;
            }
            problems.push(format!(
                "MCP server `{}`: tool `{}` is left out: a loaded tool is called `{}` already",
                servers[t.server].server.name,
                inert(&t.remote),
                inert(&t.def.name)
            ));
            false
        });
        self.index = (self.tools.iter().enumerate())
            .map(|(i, t)| (t.def.name.clone(), i))
            .collect();
    }

    /// The tool offered as `name`, if any.
    pub fn find(&self, name: &str) -> Option<&McpTool> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// The server behind `tool`.
    pub fn server(&self, tool: &McpTool) -> &McpServer {
        &self.servers[tool.server].server
    }

    /// Calls `tool` with `arguments` (a JSON object), within the server's
    /// timeout; cancelling `cancel` sends `notifications/cancelled`.
    pub fn call(&self, tool: &McpTool, arguments: Value, cancel: &CallCancel) -> ToolResult {
        let running = &self.servers[tool.server];
        let limits = running.server.grants.limits;
        let fail = |kind: &str, output: String| ToolResult {
            ok: false,
            output,
            error_kind: Some(kind.to_string()),
            ..ToolResult::default()
        };
        let Value::Object(map) = arguments.clone() else {
            return fail(
                "invalid_arguments",
                "the arguments must be a JSON object".into(),
            );
        };
        let started = Instant::now();
        let Connection {
            peer,
            stderr: stderr_tail,
            http,
            restarted,
        } = match self.connection(running, &tool.remote, cancel) {
            Ok(live) => live,
            Err(why) => {
                let mut result = if cancel.is_cancelled() {
                    fail("cancelled", "cancelled by the user".into())
                } else {
                    fail("failed", why)
                };
                result.duration = started.elapsed();
                return result;
            }
        };
        let params = CallToolRequestParams::new(tool.remote.clone()).with_arguments(map);
        // What a start of the server within the call left of its time.
        let left = limits.timeout.saturating_sub(started.elapsed());
        let (done, wait) = std::sync::mpsc::channel();
        let task = self.rt().spawn(async move {
            let answer = tokio::time::timeout(left, peer.call_tool(params)).await;
            let _ = done.send(answer);
        });
        let abort = Arc::new(task.abort_handle());
        cancel.on_cancel({
            let abort = abort.clone();
            move || abort.abort()
        });
        let answer = wait.recv();
        let duration = started.elapsed();
        let server = &running.server.name;
        // What the process wrote last to stderr, when the call failed for
        // want of an answer: often why.
        let stderr = |wait| match &stderr_tail {
            Some(tail) => inert(&self.stderr_note(tail, wait)).into_owned(),
            None => String::new(),
        };
        let mut result = match answer {
            Err(_) => fail("cancelled", "cancelled by the user".into()),
            Ok(Err(_)) => fail(
                "timeout",
                format!(
                    "MCP server `{server}` did not answer within {}s (the server's timeout){}",
                    limits.timeout.as_secs_f64(),
                    stderr(Duration::ZERO)
                ),
            ),
            Ok(Ok(Err(_)))
                if let Some(why) = stderr_tail.as_ref().and_then(ProcessOutput::oversized) =>
            {
                fail(
                    "failed",
                    format!(
                        "MCP server `{server}` failed the call: {why}{}; ask the tool for less \
                     data per call",
                        self.restart_note(running)
                    ),
                )
            }
            Ok(Ok(Err(e))) => {
                // An error the server answered is its own; any other means
                // it is gone or broken.
                let note = match e {
                    ServiceError::McpError(_) => String::new(),
                    _ => stderr(STDERR_WAIT) + &self.restart_note(running),
                };
                // A server at a URL that could not be reached: why, in
                // words, rather than the client's transport error.
                let unreachable = match e {
                    ServiceError::McpError(_) => None,
                    _ => http.as_ref().and_then(CheckedHttp::take_failure),
                };
                match unreachable {
                    Some(why) => fail(
                        "failed",
                        format!(
                            "MCP server `{server}` could not be reached: {}; check that it \
                             is running (the next call tries it again)",
                            inert(&why)
                        ),
                    ),
                    None => fail(
                        "failed",
                        format!(
                            "MCP server `{server}` failed the call: {}{note}",
                            inert(&e.to_string())
                        ),
                    ),
                }
            }
            Ok(Ok(Ok(answer))) => {
                let (text, truncated) = text_of(&answer.content, limits.output as usize);
                ToolResult {
                    ok: answer.is_error != Some(true),
                    error_kind: (answer.is_error == Some(true)).then(|| "failed".to_string()),
                    output: text,
                    truncated,
                    ..ToolResult::default()
                }
            }
        };
        if restarted {
            result.output.push_str(&format!(
                "\n[warden: MCP server `{server}` had exited; it was started again for this \
                 call, so whatever state it held is gone]"
            ));
        }
        result.duration = duration;
        result
    }

    /// What happens next to `running` when its process has exited.
    fn restart_note(&self, running: &Running) -> String {
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

    /// The connection to `running` for a call of its tool `remote`: a
    /// server started by command whose process exited is started again
    /// (at most [`MAX_RESTARTS`] times, until `cancel`), and says so. The
    /// error says why there is none.
    fn connection(
        &self,
        running: &Running,
        remote: &str,
        cancel: &CallCancel,
    ) -> Result<Connection, String> {
        let mut live = running.live.lock().unwrap_or_else(|e| e.into_inner());
        let server = &running.server;
        let current = |live: &Live, restarted| Connection {
            peer: live.client.peer().clone(),
            stderr: live.stderr.clone(),
            http: live.http.clone(),
            restarted,
        };
        let McpLaunch::Command(argv) = &server.launch else {
            if let Some(http) = &live.http {
                // What failed before this call is not its failure.
                http.take_failure();
            }
            return Ok(current(&live, false));
        };
        if !live.client.peer().is_transport_closed() {
            return Ok(current(&live, false));
        }
        let name = &server.name;
        if live.restarts >= MAX_RESTARTS {
            let gone = match &live.stderr {
                Some(tail) => self.stderr_note(tail, Duration::ZERO),
                None => String::new(),
            };
            return Err(format!(
                "MCP server `{name}` exited and was started again {MAX_RESTARTS} times already, \
                 so it stays down{}; fix the server, then start warden again",
                inert(&gone)
            ));
        }
        let changed = changed_files(&server.files, &launch_files(&server.launch, &self.root));
        if !changed.is_empty() {
            return Err(format!(
                "MCP server `{name}` had exited, and a file its command runs changed since the \
                 session began ({changed}), so it is not started again; review with \
                 `warden trust`, then start warden again"
            ));
        }
        // Each try counts, whether or not the server comes up: one that
        // keeps failing to start is not started again at every call.
        live.restarts += 1;
        // The start is part of the call, and bounded by its time limit.
        let limit = server.grants.limits.timeout.min(START_TIMEOUT);
        let ((client, tools), (process, stderr)) = self
            .start_process(server, argv, &self.root, Some(cancel), limit)
            .map_err(|why| {
                format!(
                    "MCP server `{name}` had exited, and starting it again failed: {}",
                    inert(&why)
                )
            })?;
        if !tools.iter().any(|t| t.name == remote) {
            return Err(format!(
                "MCP server `{name}` had exited; started again, it no longer offers `{}`",
                inert(remote)
            ));
        }
        let restarts = live.restarts;
        *live = Live {
            client,
            stderr: Some(stderr),
            _process: Some(process),
            restarts,
            http: None,
        };
        Ok(current(&live, true))
    }
}

impl Drop for McpTools {
    fn drop(&mut self) {
        // The processes end with `Running` (killed with all they started);
        // the runtime is let go without blocking, since a toolset may be
        // dropped on an async thread.
        self.servers.clear();
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

/// When a server's event stream ends (the one that carries its
/// notifications), it is opened again after 1 s, 2 s, 4 s; a stream that
/// keeps ending within [`QUICK_END`] is given up after [`QUICK_ENDS`]
/// tries, so an idle warden does not ask the server for it every second
/// (rmcp's own policy starts over after each reopening). Calls go by POST
/// and still work.
#[derive(Debug, Default)]
struct QuickEndsGiveUp {
    /// When the last retry was asked for, and how many came in a row
    /// each within [`QUICK_END`] of the one before.
    last: Mutex<Option<(Instant, u32)>>,
}

/// A stream that ends this soon after it was opened again ended quickly.
const QUICK_END: Duration = Duration::from_secs(30);
/// Quick ends in a row before the stream is given up.
const QUICK_ENDS: u32 = 3;

impl rmcp::transport::common::client_side_sse::SseRetryPolicy for QuickEndsGiveUp {
    fn retry(&self, _: usize) -> Option<Duration> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        let streak = match *last {
            Some((at, n)) if now.duration_since(at) < QUICK_END => n + 1,
            _ => 0,
        };
        *last = Some((now, streak));
        (streak < QUICK_ENDS).then(|| Duration::from_secs(1 << streak))
    }
}

/// What a server's process wrote that says why it failed: the end of its
/// stderr, read as it comes (so that the server never blocks on a full
/// pipe), and whether it sent a message too long to read on stdout.
#[derive(Clone, Default)]
struct ProcessOutput(Arc<Tail>);

#[derive(Default)]
struct Tail {
    /// At most [`STDERR_KEPT`] bytes, the last written.
    kept: Mutex<VecDeque<u8>>,
    /// Whether bytes were dropped from the front.
    cut: AtomicBool,
    ended: AtomicBool,
    /// A message on stdout passed [`MAX_MESSAGE`]: its connection was
    /// closed on it.
    oversized: AtomicBool,
    ending: tokio::sync::Notify,
}

impl ProcessOutput {
    /// Reads `stderr` on the current runtime until it ends.
    fn follow(stderr: std::process::ChildStderr) -> std::io::Result<ProcessOutput> {
        let pipe = Receiver::from_owned_fd(stderr.into())?;
        let tail = ProcessOutput::default();
        let t = tail.0.clone();
        tokio::spawn(async move {
            let mut buf = [0u8; 1024];
            loop {
                if pipe.readable().await.is_err() {
                    break;
                }
                match pipe.try_read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut kept = t.kept.lock().unwrap_or_else(|e| e.into_inner());
                        kept.extend(&buf[..n]);
                        if kept.len() > STDERR_KEPT {
                            let extra = kept.len() - STDERR_KEPT;
                            kept.drain(..extra);
                            t.cut.store(true, Ordering::Relaxed);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(_) => break,
                }
            }
            t.ended.store(true, Ordering::Release);
            t.ending.notify_waiters();
        });
        Ok(tail)
    }

    /// Returns once the stream ended (the process and all it started are
    /// gone, or closed it).
    async fn ended(&self) {
        loop {
            let ending = self.0.ending.notified();
            if self.0.ended.load(Ordering::Acquire) {
                return;
            }
            ending.await;
        }
    }

    /// Says why the connection closed, when it closed on a message of
    /// more than [`MAX_MESSAGE`] bytes.
    fn oversized(&self) -> Option<String> {
        self.0.oversized.load(Ordering::Relaxed).then(|| {
            format!(
                "it sent a message of more than {} MiB, more than warden reads, so its \
                 connection was closed",
                MAX_MESSAGE >> 20
            )
        })
    }

    /// The last [`STDERR_LINES`] lines that are not blank, joined by ` | `.
    fn last_lines(&self) -> Option<String> {
        let bytes: Vec<u8> = {
            let kept = self.0.kept.lock().unwrap_or_else(|e| e.into_inner());
            kept.iter().copied().collect()
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<&str> = text.lines().map(str::trim).collect();
        // The first line may have lost its start.
        if self.0.cut.load(Ordering::Relaxed) && !lines.is_empty() {
            lines.remove(0);
        }
        lines.retain(|l| !l.is_empty());
        let shown = &lines[lines.len().saturating_sub(STDERR_LINES)..];
        (!shown.is_empty()).then(|| shown.join(" | "))
    }
}

/// A server's stdout, as the client reads it: one message is one line,
/// and a line longer than [`MAX_MESSAGE`] ends the stream with an error
/// (rmcp would drop it and leave the call waiting for an answer that never
/// comes, until its timeout). [`ProcessOutput::oversized`] says so.
struct MessageCap {
    stdout: Receiver,
    /// Bytes of the current line so far.
    line: usize,
    output: ProcessOutput,
}

impl tokio::io::AsyncRead for MessageCap {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        std::task::ready!(std::pin::Pin::new(&mut self.stdout).poll_read(cx, buf))?;
        let mut line = self.line;
        for (i, part) in buf.filled()[before..].split(|&b| b == b'\n').enumerate() {
            if i > 0 {
                line = 0;
            }
            line += part.len();
            if line > MAX_MESSAGE {
                self.output.0.oversized.store(true, Ordering::Relaxed);
                return std::task::Poll::Ready(Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "a message longer than warden reads",
                )));
            }
        }
        self.line = line;
        std::task::Poll::Ready(Ok(()))
    }
}

/// `SERVER__TOOL`, lower case, with what a tool name cannot hold as `_`.
fn exposed_name(server: &str, tool: &str) -> String {
    let tool: String = tool
        .chars()
        .map(|c| match c {
            'a'..='z' | '0'..='9' | '_' => c,
            'A'..='Z' => c.to_ascii_lowercase(),
            _ => '_',
        })
        .collect();
    format!("{server}__{tool}")
}

/// The text of a result: text blocks as they are, other content named.
fn text_of(content: &[ContentBlock], cap: usize) -> (String, bool) {
    let mut out = String::new();
    for block in content {
        if !out.is_empty() {
            out.push('\n');
        }
        match block {
            ContentBlock::Text(t) => out.push_str(&t.text),
            ContentBlock::Image(i) => out.push_str(&format!("[image, {}]", i.mime_type)),
            ContentBlock::Audio(a) => out.push_str(&format!("[audio, {}]", a.mime_type)),
            ContentBlock::Resource(_) => out.push_str("[embedded resource]"),
            ContentBlock::ResourceLink(r) => out.push_str(&format!("[resource {}]", r.uri)),
            _ => out.push_str("[content of a kind warden does not show]"),
        }
    }
    // Cut as a tool's output is, saying so: the model must not take a
    // part for the whole.
    warden_sandbox::cap_output(out, cap as u64)
}

/// Where programs are looked up inside the confinement.
const SYSTEM_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// What the server's process may reach, for the confinement: its granted
/// directories, network only when it has a `network` grant (a process
/// cannot be held to a host list), the granted variables plus `PATH` and a
/// `HOME` inside its grants, its memory limit.
fn spec(server: &McpServer, argv: &[String], root: &Path) -> Result<warden_confine::Spec, String> {
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
    for cap in &server.grants.caps {
        if let Capability::Env { name } = cap
            && let Ok(value) = std::env::var(name)
        {
            env.retain(|(k, _)| k != name);
            env.push((name.clone(), value));
        }
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
fn named_file(arg: &str, root: &Path) -> Option<PathBuf> {
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

/// Pages of `tools/list` read from one server at most.
const MAX_LIST_PAGES: usize = 64;
/// Tools offered from one server at most: every one is sent to the model
/// with every request.
const MAX_TOOLS: usize = 512;

/// The tools `peer` lists, page after page, within bounds: a server whose
/// list never ends (a cursor that comes back, or page after page) is not
/// read on until warden runs out of memory. Reading stops at the page that
/// passes [`MAX_TOOLS`]; [`McpTools::add`] offers that many and says so.
async fn list_tools(peer: &rmcp::Peer<RoleClient>) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    let mut cursors = HashSet::new();
    for _ in 0..MAX_LIST_PAGES {
        let page = peer
            .list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor)))
            .await
            .map_err(|e| format!("`tools/list` failed: {e}"))?;
        tools.extend(page.tools);
        if tools.len() > MAX_TOOLS {
            return Ok(tools);
        }
        match page.next_cursor {
            None => return Ok(tools),
            Some(next) if !cursors.insert(next.clone()) => {
                return Err(
                    "its tool list never ends (`tools/list` gave a page cursor it had given \
                     before)"
                        .into(),
                );
            }
            Some(next) => cursor = Some(next),
        }
    }
    Err(format!(
        "its tool list did not end after {MAX_LIST_PAGES} pages of `tools/list`"
    ))
}

/// `text` without the Rust type names rmcp puts in its transport errors
/// (`Transport [rmcp::transport::worker::WorkerTransport<…>] error`), which
/// tell the user nothing.
fn without_type_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" [rmcp::") {
        let Some(end) = rest[at..].find(']') else {
            break;
        };
        out.push_str(&rest[..at]);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    out
}

/// Whether `arg` names a file an interpreter runs, by its suffix.
fn is_script(arg: &str) -> bool {
    Path::new(arg)
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| SCRIPT_SUFFIXES.contains(&e))
}

/// Suffixes of the files an interpreter runs.
const SCRIPT_SUFFIXES: &[&str] = &[
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
fn changed_files(before: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> String {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(now.keys()).collect();
    let changed: Vec<&str> = names
        .into_iter()
        .filter(|f| before.get(*f) != now.get(*f))
        .map(String::as_str)
        .collect();
    inert(&changed.join(", ")).into_owned()
}

/// The program of a command: a path (relative ones from the workspace),
/// or a name on warden's `PATH`.
fn resolve(program: &str, root: &Path) -> Result<PathBuf, String> {
    if program.contains('/') {
        let path = root.join(program);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("its program {} does not exist", path.display()))
        };
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
        .ok_or_else(|| format!("its program `{program}` is not on PATH"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_prefixed_and_made_tool_names() {
        assert_eq!(exposed_name("demo", "echo"), "demo__echo");
        assert_eq!(exposed_name("gh", "Create-Issue"), "gh__create_issue");
        assert!(is_tool_name(&exposed_name("gh", "list.files")));
        // No server tool can take a built-in's name.
        assert!(exposed_name("read", "file").contains("__"));
    }

    #[test]
    fn what_a_server_runs_is_pinned_and_the_data_it_names_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::write(root.join("server.py"), "print(1)").unwrap();
        std::fs::write(root.join("data.db"), "rows").unwrap();
        let argv = [
            "python3",
            "server.py",
            "--db",
            "data.db",
            "--flag=x.py",
            "/bin/sh",
        ];
        let launch = McpLaunch::Command(argv.iter().map(|a| a.to_string()).collect());
        let files = launch_files(&launch, &root);
        assert_eq!(files.keys().collect::<Vec<_>>(), ["server.py"]);
        assert_eq!(files_changed(Some(&files), &files), None);
        let mut rewritten = files.clone();
        rewritten.insert("server.py".into(), "0".repeat(64));
        assert_eq!(
            files_changed(Some(&files), &rewritten).as_deref(),
            Some("server.py is not as you trusted it")
        );
        // A record written before files were recorded: refused when the
        // server runs any, and says why.
        assert!(
            files_changed(None, &files)
                .is_some_and(|why| why.contains("trusted by an older warden"))
        );
        assert_eq!(files_changed(None, &BTreeMap::new()), None);
    }

    #[test]
    fn rmcp_type_names_are_left_out_of_messages() {
        assert_eq!(
            without_type_names(
                "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::\
                 X<Y>>] error: unexpected server response: HTTP 503"
            ),
            "Send message error Transport error: unexpected server response: HTTP 503"
        );
        assert_eq!(without_type_names("plain [text]"), "plain [text]");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_and_says_so() {
        let blocks = vec![ContentBlock::text("héllo wörld")];
        let (text, cut) = text_of(&blocks, 2);
        assert!(cut);
        assert!(
            text.starts_with("h\n[output truncated: showing the first 1 of 13 bytes"),
            "{text}"
        );
        let (text, cut) = text_of(&blocks, 100);
        assert_eq!((text.as_str(), cut), ("héllo wörld", false));
    }
}
