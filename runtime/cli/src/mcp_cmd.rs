//! `warden mcp`: the workspace's trusted, enabled tools as an MCP server on
//! stdio.
//!
//! Every `tools/call` goes through the same [`SandboxRunner`] as `warden
//! run`: one lookup, the schema check, approval by grant, the sandbox. The
//! server offers no tool that changes grants, so a client's model can never
//! widen its own sandbox. Edits to `warden.toml` or to the drop-ins take
//! effect only once `warden trust` accepts them; the server then rebuilds its
//! tools and sends `notifications/tools/list_changed`.
//!
//! A call that needs approval runs with `--yes`, or when the client can ask
//! its user (elicitation) and the user accepts; otherwise it is refused.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use anyhow::Context;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};
use warden_agent::{CallCancel, ToolRunner, spawn_call};
use warden_policy::{TrustState, TrustStore, inert};
use warden_workspace::{
    ApprovalMode, ApprovalRequest, Approve, Folders, SandboxRunner, Verdict, Workspace,
};

/// `warden mcp [--yes] [--approval WHEN]`.
pub fn run(
    dir: Option<PathBuf>,
    folders: Folders,
    yes: bool,
    approval: Option<String>,
) -> anyhow::Result<u8> {
    let ws = Workspace::open(dir.as_deref(), folders.clone())?;
    let server = Server(Arc::new(State {
        store: ws.trust_store()?,
        root: ws.root,
        dir,
        folders,
        approval: approval.as_deref().map(ApprovalMode::parse),
        served: Mutex::new(None),
        asker: Arc::new(McpApprove {
            yes,
            client: OnceLock::new(),
            unreadable: Arc::default(),
        }),
        running: Mutex::default(),
    }));
    // Opened once before serving, so that a broken policy is reported at
    // start, as a configuration error, not as a failing first request.
    server.0.current()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_stack_size(warden_sandbox::CALL_THREAD_STACK)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let state = server.0.clone();
    let (stdin, stdout) = rmcp::transport::stdio();
    let stdin = UntilClosed {
        inner: stdin,
        state: Some(state.clone()),
        unreadable: state.asker.unreadable.clone(),
        line: Vec::new(),
    };
    let served = rt.block_on(async move {
        let running = server
            .serve((stdin, stdout))
            .await
            .context("the MCP client did not complete `initialize`")?;
        running.waiting().await.context("the MCP session failed")?;
        anyhow::Ok(())
    });
    // The client went: calls still running are stopped (a tool may have
    // minutes left), not waited for. Done when stdin closed already; again
    // here for a session that ended another way.
    state.cancel_running();
    rt.shutdown_timeout(Duration::from_secs(5));
    served?;
    Ok(0)
}

/// The server's stdin, which says when the client closed it: the calls
/// still running are cancelled then. rmcp waits up to 5 s for the answers
/// of calls in flight once its input ends, and a tool may have minutes left.
/// While a question is put to the client's user, it also watches for an
/// answer rmcp cannot read (rmcp drops it, and the question would wait out
/// its time): the question is told at once.
struct UntilClosed<R> {
    inner: R,
    /// Whose calls to cancel; taken when they are.
    state: Option<Arc<State>>,
    unreadable: Arc<Unreadable>,
    /// The line read so far, while a question waits.
    line: Vec<u8>,
}

/// Longest line looked at for an unreadable answer.
const ANSWER_MAX: usize = 1 << 20;

/// Answers of the client that rmcp cannot read, for the questions waiting.
#[derive(Default)]
struct Unreadable {
    /// Questions waiting for an answer.
    asking: std::sync::atomic::AtomicUsize,
    /// Why the last unreadable answer was.
    why: Mutex<Option<String>>,
    told: tokio::sync::Notify,
}

impl Unreadable {
    /// Looks at a line from the client while a question waits: one that
    /// is a response but not one rmcp can read is told to the questions.
    fn look(&self, line: &[u8]) {
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let why = match serde_json::from_slice::<Value>(line) {
            Err(e) => format!("it is not JSON ({e})"),
            Ok(v) if v.get("method").is_some() || v.get("id").is_none() => return,
            Ok(_) => match serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(line) {
                Ok(_) => return,
                Err(e) => format!("it is not a well-formed answer ({e})"),
            },
        };
        *self.why.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        self.told.notify_waiters();
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for UntilClosed<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let asking = self
            .unreadable
            .asking
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0;
        if !asking {
            self.line.clear();
        } else if let Poll::Ready(Ok(())) = &polled {
            let this = &mut *self;
            for &b in &buf.filled()[before..] {
                if b == b'\n' {
                    this.unreadable.look(&this.line);
                    this.line.clear();
                } else if this.line.len() < ANSWER_MAX {
                    this.line.push(b);
                }
            }
        }
        let ended = match &polled {
            Poll::Ready(Ok(())) => buf.filled().len() == before && buf.remaining() > 0,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended && let Some(state) = self.state.take() {
            state.cancel_running();
        }
        polled
    }
}

/// The tools being served, and the trusted state they were built from.
struct Served {
    runner: Arc<SandboxRunner>,
    tools: Arc<Vec<Tool>>,
    trusted: Option<TrustState>,
}

/// The handler; its state is shared with the blocking threads that
/// rebuild the tools.
#[derive(Clone)]
struct Server(Arc<State>);

struct State {
    /// Where `warden trust` records what it accepted, read before each
    /// request: one small file, no watcher thread.
    store: TrustStore,
    root: PathBuf,
    dir: Option<PathBuf>,
    folders: Folders,
    approval: Option<ApprovalMode>,
    served: Mutex<Option<Served>>,
    /// Decides on calls that need approval; knows the client once it
    /// called.
    asker: Arc<McpApprove>,
    /// The calls running, by number: cancelled when the client goes.
    running: Mutex<(u64, HashMap<u64, CallCancel>)>,
}

impl State {
    /// Cancels every call still running.
    fn cancel_running(&self) {
        let running = std::mem::take(&mut self.running.lock().unwrap_or_else(|e| e.into_inner()).1);
        for cancel in running.values() {
            cancel.cancel();
        }
    }

    /// The runner and tool list in force, rebuilt when the trusted state
    /// changed since they were built (`warden trust` ran); the flag says
    /// whether it was.
    fn current(&self) -> anyhow::Result<(Arc<SandboxRunner>, Arc<Vec<Tool>>, bool)> {
        let trusted = self.store.load(&self.root)?;
        let mut served = self.served.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = served.as_ref()
            && s.trusted == trusted
        {
            return Ok((s.runner.clone(), s.tools.clone(), false));
        }
        let rebuilt = served.is_some();
        let ws = Workspace::open(self.dir.as_deref(), self.folders.clone())?;
        for n in &ws.notices {
            stderr_line!("note: {}", inert(n));
        }
        let tools = ws.toolset_with_mcp(Some(crate::render::compiling()))?;
        crate::render::warnings(&tools);
        let user = warden_policy::load_user_config(&ws.folders.config_file())?;
        let mode = ApprovalMode::resolve(
            self.approval,
            user.approval.as_deref().map(ApprovalMode::parse),
            ws.policy.approval().map(ApprovalMode::parse),
        );
        let runner = Arc::new(SandboxRunner::new(
            tools,
            mode,
            Box::new(self.asker.clone()),
        ));
        let list: Vec<Tool> = runner
            .tools()
            .into_iter()
            .map(|t| mcp_tool(t.def))
            .collect();
        let s = served.insert(Served {
            runner,
            tools: Arc::new(list),
            trusted,
        });
        Ok((s.runner.clone(), s.tools.clone(), rebuilt))
    }
}

impl Server {
    /// [`State::current`] for a request, off the async threads (a rebuild
    /// loads components and starts MCP servers): a failure is the client's
    /// to see, and a rebuild is announced.
    async fn current_for(
        &self,
        ctx: &RequestContext<RoleServer>,
    ) -> Result<(Arc<SandboxRunner>, Arc<Vec<Tool>>), McpError> {
        let state = self.0.clone();
        let (runner, tools, rebuilt) = tokio::task::spawn_blocking(move || state.current())
            .await
            .map_err(|e| McpError::internal_error(format!("{e}"), None))?
            .map_err(|e| McpError::internal_error(format!("{e:#}"), None))?;
        if rebuilt {
            // Before the answer, so the client knows what it is answered
            // by; a client that went away is not this request's problem.
            let _ = ctx.peer.notify_tool_list_changed().await;
        }
        Ok((runner, tools))
    }
}

fn mcp_tool(def: warden_agent::ToolDef) -> Tool {
    let schema = match def.parameters {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    Tool::new(def.name, def.description, Arc::new(schema))
}

/// Longest wait for the user's answer in the client.
const ASK_TIMEOUT: Duration = Duration::from_secs(300);
/// Most bytes of a call's arguments shown in the question.
const SHOWN_ARGS: usize = 2000;

/// Approval without a terminal: under `approval = "writes"` (or
/// `"always"`) a call is allowed when the server was started with `--yes`,
/// or when the client supports elicitation and its user accepts.
struct McpApprove {
    yes: bool,
    /// The client, and the runtime its session runs on, from its first
    /// call.
    client: OnceLock<(Peer<RoleServer>, tokio::runtime::Handle)>,
    /// Answers rmcp could not read, seen on stdin.
    unreadable: Arc<Unreadable>,
}

impl McpApprove {
    /// Asks the client's user, from a blocking thread; `None` when the
    /// client cannot ask.
    fn ask(&self, request: &ApprovalRequest<'_>, needs: &str) -> Option<Verdict> {
        let (peer, rt) = self.client.get()?;
        if !peer
            .supported_elicitation_modes()
            .contains(&ElicitationMode::Form)
        {
            return None;
        }
        let message = warden_workspace::question(request, needs, SHOWN_ARGS);
        let params = ElicitRequestParams::FormElicitationParams {
            meta: None,
            message,
            requested_schema: ElicitationSchema::new(BTreeMap::new()),
        };
        let unreadable = &self.unreadable;
        unreadable
            .asking
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let answer = rt.block_on(async {
            let told = unreadable.told.notified();
            tokio::pin!(told);
            told.as_mut().enable();
            tokio::select! {
                a = peer.create_elicitation_with_timeout(params, Some(ASK_TIMEOUT)) => Ok(a),
                () = told => Err(unreadable.why.lock().unwrap_or_else(|e| e.into_inner()).take()),
            }
        });
        unreadable
            .asking
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        let tool = request.tool;
        Some(match answer {
            Ok(Ok(a)) if a.action == ElicitationAction::Accept => match &a.content {
                // Nothing was asked for: a well-formed accept carries nothing.
                None => Verdict::Allow,
                Some(Value::Object(m)) if m.is_empty() => Verdict::Allow,
                Some(other) => Verdict::Refuse(format!(
                    "refused: the MCP client's answer accepted `{tool}` with content the \
                     question did not ask for ({}), so it is not taken as the user's yes; \
                     nothing ran",
                    inert(&truncated(&other.to_string(), 200))
                )),
            },
            Ok(Ok(a)) => Verdict::Refuse(format!(
                "refused: the user {} `{tool}` in the MCP client; nothing ran",
                if a.action == ElicitationAction::Decline {
                    "declined"
                } else {
                    "cancelled the question about"
                }
            )),
            Ok(Err(rmcp::service::ServiceError::UnexpectedResponse)) => Verdict::Refuse(format!(
                "refused: the MCP client's answer to the question about `{tool}` could not be \
                 read (it is not an elicitation result); nothing ran"
            )),
            Ok(Err(e)) => Verdict::Refuse(format!(
                "refused: `{tool}` needs approval and the user could not be asked ({e}); the user \
                 can restart the server with `warden mcp --yes` to allow such calls"
            )),
            Err(why) => Verdict::Refuse(format!(
                "refused: the MCP client's answer to the question about `{tool}` could not be \
                 read ({}); nothing ran",
                why.unwrap_or_else(|| "unknown".into())
            )),
        })
    }
}

/// At most `max` bytes of `s`, on a character boundary, with `…` when cut.
fn truncated(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

impl Approve for McpApprove {
    fn approve(&self, request: &ApprovalRequest<'_>) -> Verdict {
        if self.yes {
            return Verdict::Allow;
        }
        let needs = request
            .grants
            .caps
            .iter()
            .filter(|c| c.needs_approval())
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        if let Some(verdict) = self.ask(request, &needs) {
            return verdict;
        }
        Verdict::Refuse(format!(
            "refused: `{}` needs approval ({needs}) and this MCP client cannot ask its user; \
             the user can restart the server with `warden mcp --yes` to allow such calls, \
             or grant less",
            request.tool,
        ))
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        );
        info.server_info = Implementation::new("warden", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(
            "Tools confined by warden: each reaches only the directories, hosts and \
             environment its workspace policy grants."
                .into(),
        );
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let (_, tools) = self.current_for(&ctx).await?;
        Ok(ListToolsResult::with_all_items((*tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (runner, _) = self.current_for(&ctx).await?;
        // One client per server (stdio): the one approval asks through.
        let _ = self
            .0
            .asker
            .client
            .set((ctx.peer.clone(), tokio::runtime::Handle::current()));
        let name = request.name.to_string();
        let args = std::sync::Arc::new(Value::Object(request.arguments.unwrap_or_default()));
        let cancel = CallCancel::default();
        let number = {
            let mut running = self.0.running.lock().unwrap_or_else(|e| e.into_inner());
            running.0 += 1;
            let number = running.0;
            running.1.insert(number, cancel.clone());
            number
        };
        let ct = ctx.ct.clone();
        let on_cancel = cancel.clone();
        let watch = tokio::spawn(async move {
            ct.cancelled().await;
            on_cancel.cancel();
        });
        // The answer goes out as soon as it is known; the tool's next
        // instance is made ahead after it.
        let result = spawn_call(runner, name, args, cancel).await.map_err(|_| {
            McpError::internal_error("the tool host failed while running this call", None)
        });
        watch.abort();
        self.0
            .running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .1
            .remove(&number);
        let result = result?;
        let content = vec![ContentBlock::text(result.output)];
        Ok(if result.ok {
            CallToolResult::success(content)
        } else {
            CallToolResult::error(content)
        }
        .into())
    }
}
