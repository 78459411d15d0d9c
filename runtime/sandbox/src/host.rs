//! The tool host: loads components, describes them, runs each call in a
//! fresh, capability-scoped instance.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;
use warden_policy::{Grants, Limits, Origin};
use wasmtime::component::Linker;
use wasmtime::{Engine, Store, Trap, UpdateDeadline};

use crate::bindings::{ComponentPre, GuestError};
use crate::cache::{CacheStats, CompileCache};
use crate::clock::add_bounded_timers;
use crate::dirs::DirCache;
use crate::engine::{MAX_MEMORY, Ticker, new_engine};
use crate::net::Denials;
use crate::outcome::{CallOutcome, ErrorKind, ToolError, cap_output};
use crate::spec::{CheckedSpec, ToolSpec, check_specs};
use crate::warm::{Ready, Warm};
use crate::wasi::{CallState, CappedPipe, call_state};
use crate::{ComponentSource, Error, Result};

/// How long `describe` may take while loading.
const DESCRIBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Settings of a tool host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// The workspace root: relative paths from the model resolve here.
    pub workspace: PathBuf,
    /// Folder of the compile cache; `None` compiles every start.
    pub cache_dir: Option<PathBuf>,
    /// Make each call's instance ahead of the call, on a helper thread, and
    /// tear it down after the result is back (see `warm.rs`). Off, every
    /// call makes and drops its own instance in line.
    pub make_ahead: bool,
}

/// A component that could not be loaded, and why.
#[derive(Debug, Clone, Serialize)]
pub struct LoadProblem {
    /// File path or `builtin:NAME`.
    pub location: String,
    /// What is wrong, and what to do.
    pub reason: String,
}

/// A loaded tool.
#[derive(Debug, Clone, Serialize)]
pub struct ToolInfo {
    /// Name, description, schema, aliases, mutates.
    pub spec: ToolSpec,
    /// Where its component came from.
    pub origin: Origin,
    /// File path or `builtin:NAME` of its component.
    pub location: String,
    /// SHA-256 of its component.
    pub hash: String,
}

struct Loaded {
    pre: ComponentPre<CallState>,
}

struct Tool {
    info: ToolInfo,
    checked: CheckedSpec,
    component: usize,
}

/// Loads tool components and runs calls in fresh sandboxed instances.
pub struct ToolHost {
    maker: Arc<Maker>,
    linker: Linker<CallState>,
    cache: CompileCache,
    components: Vec<Loaded>,
    tools: Vec<Tool>,
    names: HashMap<String, usize>,
    problems: Vec<LoadProblem>,
    warm: Warm,
    _ticker: Ticker,
}

/// What making an instance needs; shared with the helper that makes them
/// ahead of calls.
struct Maker {
    engine: Engine,
    workspace: PathBuf,
    dirs: Arc<DirCache>,
}

impl Maker {
    /// A fresh instance of `pre` for one call with `grants`, in a store of
    /// its own.
    fn ready(
        &self,
        pre: &ComponentPre<CallState>,
        grants: &Grants,
    ) -> std::result::Result<Ready, ToolError> {
        let stderr = CappedPipe::default();
        let denied = Denials::default();
        let state = call_state(grants, &self.workspace, &stderr, &denied, &self.dirs)
            .map_err(|m| ToolError::new(ErrorKind::Failed, m))?;
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        // Checked at every epoch tick against the call's own clock: a
        // ticker that lags under load cannot let a guest run (or wake from
        // a capped sleep) past its deadline.
        store.epoch_deadline_callback(|cx| {
            Ok(if Instant::now() >= cx.data().clock.deadline() {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::Continue(1)
            })
        });
        arm(&mut store, &grants.limits);
        match pre.instantiate(&mut store) {
            Ok(instance) => Ok(Ready {
                store,
                instance,
                stderr,
                denied,
            }),
            Err(e) => Err(classify_trap(&e, &store, &grants.limits, &stderr)),
        }
    }
}

/// Starts the call's time limit now: its clock (sleeps and HTTP waits end
/// by the deadline) and the epoch checks that stop wasm at it.
fn arm(store: &mut Store<CallState>, limits: &Limits) {
    store.data().clock.restart(limits.timeout);
    store.set_epoch_deadline(1);
}

impl std::fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolHost")
            .field("workspace", &self.maker.workspace)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ToolHost {
    /// Creates the engine, the WASI linker and the epoch ticker.
    pub fn new(config: HostConfig) -> Result<ToolHost> {
        let engine = new_engine()?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut linker)
            .and_then(|()| wasmtime_wasi_http::p2::add_only_http_to_linker_sync(&mut linker))
            .and_then(|()| add_bounded_timers(&mut linker))
            .map_err(|e| Error::Link(format!("{e:#}")))?;
        let cache = CompileCache::new(&engine, config.cache_dir);
        let workspace = config.workspace.canonicalize().unwrap_or(config.workspace);
        Ok(ToolHost {
            _ticker: Ticker::start(&engine),
            maker: Arc::new(Maker {
                engine,
                workspace,
                dirs: Arc::default(),
            }),
            linker,
            cache,
            components: Vec::new(),
            tools: Vec::new(),
            names: HashMap::new(),
            problems: Vec::new(),
            warm: Warm::new(config.make_ahead),
        })
    }

    /// Loads components in order. A name already taken (by a built-in or an
    /// earlier component) is not overridden: the later tool is reported.
    pub fn load(&mut self, sources: impl IntoIterator<Item = ComponentSource>) {
        for source in sources {
            if let Err(reason) = self.load_one(&source) {
                self.problems.push(LoadProblem {
                    location: source.location.clone(),
                    reason,
                });
            }
        }
    }

    /// Records problems found before loading (an unreadable file).
    pub fn add_problems(&mut self, problems: impl IntoIterator<Item = LoadProblem>) {
        self.problems.extend(problems);
    }

    fn load_one(&mut self, source: &ComponentSource) -> std::result::Result<(), String> {
        let hash = warden_policy::sha256_hex(&source.bytes);
        let component = self
            .cache
            .load(&self.maker.engine, &hash, &source.bytes)
            .map_err(|e| not_a_component(&e))?;
        let instance_pre = self.linker.instantiate_pre(&component).map_err(|e| {
            format!(
                "it imports something warden does not provide ({e:#}); tools may use WASI 0.2 only"
            )
        })?;
        let pre = ComponentPre::new(instance_pre).map_err(|e| {
            format!(
                "not a warden tool component: it does not export `warden:tool/tool@0.1.0` ({e:#}); \
                 build it against wit/tool.wit"
            )
        })?;
        let specs = self.describe(&pre)?;
        let checked = check_specs(specs)?;
        for c in &checked {
            for name in std::iter::once(&c.spec.name).chain(&c.spec.aliases) {
                if let Some(&i) = self.names.get(name) {
                    let other = &self.tools[i].info;
                    return Err(format!(
                        "its tool name `{name}` is already taken by `{}` from {}; rename the tool",
                        other.spec.name, other.location
                    ));
                }
            }
        }
        let index = self.components.len();
        self.components.push(Loaded { pre });
        for c in checked {
            let t = self.tools.len();
            for name in std::iter::once(&c.spec.name).chain(&c.spec.aliases) {
                self.names.insert(name.clone(), t);
            }
            self.tools.push(Tool {
                info: ToolInfo {
                    spec: c.spec.clone(),
                    origin: source.origin,
                    location: source.location.clone(),
                    hash: hash.clone(),
                },
                checked: c,
                component: index,
            });
        }
        Ok(())
    }

    fn describe(
        &self,
        pre: &ComponentPre<CallState>,
    ) -> std::result::Result<Vec<crate::bindings::GuestSpec>, String> {
        let grants = Grants {
            dirs: Vec::new(),
            env: Vec::new(),
            network: Vec::new(),
            limits: Limits {
                timeout: DESCRIBE_TIMEOUT,
                ..Limits::default()
            },
            from_policy: false,
        };
        let failed = |why: ToolError| format!("describe() failed: {}", why.message);
        let Ready {
            mut store,
            instance,
            stderr,
            ..
        } = self.maker.ready(pre, &grants).map_err(failed)?;
        instance
            .warden_tool_tool()
            .call_describe(&mut store)
            .map_err(|e| failed(classify_trap(&e, &store, &grants.limits, &stderr)))
    }

    /// All loaded tools, in load order.
    pub fn tools(&self) -> impl Iterator<Item = &ToolInfo> {
        self.tools.iter().map(|t| &t.info)
    }

    /// Components that could not be loaded.
    pub fn problems(&self) -> &[LoadProblem] {
        &self.problems
    }

    /// The tool called `name` (or with that alias).
    pub fn resolve(&self, name: &str) -> Option<&ToolInfo> {
        self.names.get(name).map(|&i| &self.tools[i].info)
    }

    /// What the compile cache did in this process.
    pub fn cache_stats(&self) -> &CacheStats {
        &self.cache.stats
    }

    /// The canonical workspace root.
    pub fn workspace(&self) -> &Path {
        &self.maker.workspace
    }

    /// Runs one call of tool `name` (or an alias) with `grants`, in a fresh
    /// instance. Every failure comes back in the outcome, never as a panic.
    pub fn call(&self, name: &str, args: &str, grants: &Grants) -> CallOutcome {
        let start = Instant::now();
        let Some(&index) = self.names.get(name) else {
            return CallOutcome {
                tool: name.to_string(),
                result: Err(ToolError::new(
                    ErrorKind::UnknownTool,
                    format!("no tool named `{name}`"),
                )),
                truncated: false,
                duration: start.elapsed(),
                stderr: String::new(),
            };
        };
        let tool = &self.tools[index];
        let mut stderr = String::new();
        let result = tool
            .checked
            .check_args(args)
            .and_then(|args| self.run(tool, &args, grants, &mut stderr));
        let (result, truncated) = match result {
            Ok(out) => {
                let (out, cut) = cap_output(out, grants.limits.output);
                (Ok(out), cut)
            }
            Err(mut e) => {
                let (msg, cut) = cap_output(std::mem::take(&mut e.message), grants.limits.output);
                e.message = msg;
                (Err(e), cut)
            }
        };
        CallOutcome {
            tool: tool.info.spec.name.clone(),
            result,
            truncated,
            duration: start.elapsed(),
            stderr,
        }
    }

    /// Runs the call in an instance made ahead for these grants, or in one
    /// made now; `stderr` receives what the guest printed there.
    fn run(
        &self,
        tool: &Tool,
        args: &str,
        grants: &Grants,
        stderr: &mut String,
    ) -> std::result::Result<String, ToolError> {
        if grants.limits.memory > MAX_MEMORY {
            return Err(ToolError::new(ErrorKind::Failed, "memory limit above 4GiB"));
        }
        let key = self.warm.key(tool.component, grants);
        let pre = &self.components[tool.component].pre;
        let (mut ready, made_ahead) = match key.as_ref().and_then(|k| self.warm.take(k)) {
            Some(ready) => (ready, true),
            None => (self.maker.ready(pre, grants)?, false),
        };
        arm(&mut ready.store, &grants.limits);
        let returned = ready.instance.warden_tool_tool().call_call(
            &mut ready.store,
            &tool.info.spec.name,
            args,
        );
        let result = match returned {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(guest_error(e)),
            Err(e) => Err(classify_trap(
                &e,
                &ready.store,
                &grants.limits,
                &ready.stderr,
            )),
        };
        *stderr = ready.stderr.text();
        let denied = std::mem::take(&mut *ready.denied.lock().expect("denials poisoned"));
        if let Some(key) = &key {
            self.warm.after_call(key, ready, made_ahead, || {
                let (maker, pre, key) = (self.maker.clone(), pre.clone(), key.clone());
                Box::new(move || maker.ready(&pre, key.grants()).ok())
            });
        }
        result.map_err(|mut e| {
            if !denied.is_empty() {
                e.message
                    .push_str(&denial_note(&tool.info.spec.name, &denied));
            }
            e
        })
    }
}

/// Tells the model (and the user reading along) which requests the host
/// refused, and how a user would grant them.
fn denial_note(tool: &str, denied: &[String]) -> String {
    format!(
        "\n[warden: network access to {} was denied: `{tool}` is not granted that host. \
         Only the user can grant it, with `network = [\"HOST\"]` under [tools.{tool}] in \
         warden.toml, then `warden trust`.]",
        denied.join(", ")
    )
}

fn guest_error(e: GuestError) -> ToolError {
    match e {
        GuestError::InvalidArgs(m) => ToolError::new(ErrorKind::InvalidArgs, m),
        GuestError::NotFound(m) => ToolError::new(ErrorKind::NotFound, m),
        GuestError::Denied(m) => ToolError::new(ErrorKind::Denied, m),
        GuestError::Failed(m) => ToolError::new(ErrorKind::Failed, m),
    }
}

/// Turns a wasmtime error into what the model and the user should read.
fn classify_trap(
    e: &wasmtime::Error,
    store: &Store<CallState>,
    limits: &Limits,
    stderr: &CappedPipe,
) -> ToolError {
    let trap = e.downcast_ref::<Trap>().copied();
    if trap == Some(Trap::Interrupt) {
        return ToolError::new(
            ErrorKind::Timeout,
            format!(
                "the call ran past its time limit of {} ms and was stopped; \
                 ask for less work per call, or raise `timeout` for this tool in warden.toml",
                limits.timeout.as_millis()
            ),
        );
    }
    if store.data().limiter.hit {
        return ToolError::new(
            ErrorKind::MemoryLimit,
            format!(
                "the call needed more than its memory limit of {} MiB and was stopped; \
                 ask for less data per call, or raise `memory` for this tool in warden.toml",
                limits.memory >> 20
            ),
        );
    }
    let detail = stderr_tail(&stderr.text());
    let what = match trap {
        Some(Trap::StackOverflow) => {
            "the tool overflowed its stack (runaway recursion?)".to_string()
        }
        // Rust guests keep their stack in linear memory: runaway recursion
        // runs off its bottom before wasmtime's own stack limit.
        Some(Trap::MemoryOutOfBounds) => {
            "the tool accessed memory out of bounds (a stack overflow from runaway recursion, \
             or a memory bug in the tool)"
                .to_string()
        }
        Some(Trap::UnreachableCodeReached) => {
            "the tool aborted (a panic or failed allocation inside it)".to_string()
        }
        Some(t) => format!("the tool trapped: {t}"),
        None => format!("the sandbox could not run the tool: {e:#}"),
    };
    let message = if detail.is_empty() {
        format!("{what}. This is a bug in the tool, not in your arguments; try another approach")
    } else {
        format!("{what}. Its last output: {detail}")
    };
    ToolError::new(ErrorKind::Crashed, message)
}

fn stderr_tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    tail.join(" | ")
}

fn not_a_component(e: &wasmtime::Error) -> String {
    let text = format!("{e:#}");
    if text.contains("attempted to parse a wasm module with a component parser") {
        "it is a core WebAssembly module, not a component: build it for wasm32-wasip2 \
         (or wrap it with `wasm-tools component new`)"
            .into()
    } else {
        format!("not a valid WebAssembly component: {text}")
    }
}
