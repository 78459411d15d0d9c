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

mod calls;
mod catalog;
mod launch;
mod stdio;

use launch::*;
pub(crate) use launch::{files_changed, launch_files};
use stdio::*;

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
    /// Its schema, compiled: a call is checked against it before it is
    /// sent, as a component's is.
    check: Arc<warden_sandbox::ArgsCheck>,
}

impl McpTool {
    /// Checks a call's arguments against the server's schema for it.
    pub fn check(&self, args: &Value) -> Result<(), warden_sandbox::ToolError> {
        self.check.check(args)
    }
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
    _process: Option<ServerProcess>,
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
    process: Option<(ServerProcess, ProcessOutput)>,
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

    /// The server behind `tool`.
    pub fn server(&self, tool: &McpTool) -> &McpServer {
        &self.servers[tool.server].server
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

#[cfg(test)]
mod tests {
    use super::calls::text_of;
    use super::catalog::{exposed_name, without_type_names};
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

    /// A module folder is hashed within its budget: a sparse file of a GiB
    /// makes it too large to pin without being read into memory whole.
    #[test]
    fn a_module_folder_past_the_budget_is_too_large_to_pin() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("pkg")).unwrap();
        std::fs::write(root.join("pkg/__main__.py"), "print(1)").unwrap();
        let launch = McpLaunch::Command(["python3", "-m", "pkg"].map(String::from).to_vec());
        let files = launch_files(&launch, &root);
        assert_eq!(files["-m pkg"].len(), 64, "{files:?}");
        // Listed last, so that nothing after it notices the sum past the cap.
        std::fs::File::create(root.join("pkg/zz.bin"))
            .unwrap()
            .set_len(1 << 30)
            .unwrap();
        let files = launch_files(&launch, &root);
        assert_eq!(files["-m pkg"], "too large to pin");
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
