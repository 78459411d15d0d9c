//! The tool host: the engine, the linker and the loaded components; binds
//! tools to their grants.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde::Serialize;
use warden_policy::{Grants, Limits, Origin};
use warden_state::StateDir;
use wasmtime::Engine;
use wasmtime::component::{Component, Linker};

use crate::bind::{Prepared, prepare};
use crate::bindings::{GuestSpec, Pre, never_waits};
use crate::bound::BoundTool;
use crate::cache::{CacheConfig, CacheStats, CompileCache};
use crate::call::{Ahead, Op, Out, Permits};
use crate::clock::add_bounded_timers;
use crate::engine::{PoolConfig, new_engine};
use crate::spec::{CheckedSpec, ToolSpec, check_specs, check_specs_later};
use crate::wasi::CallState;
use crate::watchdog::{CallControl, Watchdog};
use crate::{ComponentSource, Error, Result};

/// Told before a component is compiled: its location and size in bytes.
pub type OnCompile = Box<dyn Fn(&str, usize) + Send + Sync>;

/// Settings of a tool host.
pub struct HostConfig {
    /// The workspace root: relative paths from the model resolve here.
    pub workspace: PathBuf,
    /// The compile cache; `None` compiles every start.
    pub cache: Option<CacheConfig>,
    /// Sizes of the instance pool.
    pub pool: PoolConfig,
    /// How long `describe` may take when a component loads (its first
    /// instance: big interpreters need a few seconds).
    pub describe_timeout: Duration,
    /// Told before a component is compiled (not found in the cache), with
    /// its location and size in bytes: compiling a large one takes seconds.
    pub on_compile: Option<OnCompile>,
    /// warden's per-user config folder, holding the secrets file; `None`:
    /// secrets from the file are unavailable.
    pub config: Option<StateDir>,
}

impl HostConfig {
    /// Defaults for `workspace`: no cache, the default pool, 10 s describe.
    pub fn new(workspace: PathBuf) -> HostConfig {
        HostConfig {
            workspace,
            cache: None,
            pool: PoolConfig::default(),
            describe_timeout: Duration::from_secs(10),
            on_compile: None,
            config: None,
        }
    }
}

impl std::fmt::Debug for HostConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostConfig")
            .field("workspace", &self.workspace)
            .field("cache", &self.cache)
            .field("pool", &self.pool)
            .field("describe_timeout", &self.describe_timeout)
            .finish_non_exhaustive()
    }
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

pub(crate) struct Tool {
    pub(crate) info: ToolInfo,
    pub(crate) checked: CheckedSpec,
    pub(crate) component: usize,
}

/// A component: ready to instantiate, or, when its tools were listed from
/// its cached description, loaded at the first call.
pub(crate) struct Loaded {
    pre: OnceLock<std::result::Result<Pre, String>>,
    /// What it is loaded from while it is not.
    deferred: Option<(ComponentSource, String)>,
}

/// Loads tool components; binds their tools to grants.
pub struct ToolHost {
    pub(crate) engine: Engine,
    workspace: PathBuf,
    linker: Linker<CallState>,
    /// The linker of components called directly ([`never_waits`]).
    direct: Linker<CallState>,
    cache: CompileCache,
    describe_timeout: Duration,
    on_compile: Option<OnCompile>,
    config: Option<StateDir>,
    components: Vec<Loaded>,
    pub(crate) tools: Vec<Tool>,
    names: HashMap<String, usize>,
    problems: Vec<LoadProblem>,
    pub(crate) watchdog: Watchdog,
    pub(crate) permits: Permits,
    pub(crate) ahead: Ahead,
    /// Calls with equal grants share what was prepared for them.
    prepared: Mutex<HashMap<Grants, Arc<Prepared>>>,
    /// The apps granted to the tools bound here (what `list_apps` lists).
    granted_apps: Arc<crate::desktop::GrantedApps>,
}

impl std::fmt::Debug for ToolHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolHost")
            .field("workspace", &self.workspace)
            .field("tools", &self.tools.len())
            .finish_non_exhaustive()
    }
}

impl ToolHost {
    /// Creates the engine, the WASI linker and the watchdog (whose thread
    /// starts with the first call).
    pub fn new(config: HostConfig) -> Result<ToolHost> {
        let engine = new_engine(&config.pool)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .and_then(|()| wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker))
            .and_then(|()| add_bounded_timers(&mut linker))
            .and_then(|()| crate::extras::add_host_extras(&mut linker))
            .and_then(|()| crate::process::add_process(&mut linker))
            .and_then(|()| crate::desktop::add_desktop(&mut linker))
            .map_err(|e| Error::Link(format!("{e:#}")))?;
        let mut direct = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_sync(&mut direct)
            .and_then(|()| add_bounded_timers(&mut direct))
            .and_then(|()| crate::extras::add_host_extras(&mut direct))
            .map_err(|e| Error::Link(format!("{e:#}")))?;
        let cache = CompileCache::new(&engine, config.cache);
        let workspace = config.workspace.canonicalize().unwrap_or(config.workspace);
        Ok(ToolHost {
            watchdog: Watchdog::new(&engine),
            permits: Permits::new(config.pool.instances as usize),
            ahead: Ahead::new(),
            engine,
            workspace,
            linker,
            direct,
            cache,
            describe_timeout: config.describe_timeout,
            on_compile: config.on_compile,
            config: config.config,
            components: Vec::new(),
            tools: Vec::new(),
            names: HashMap::new(),
            problems: Vec::new(),
            prepared: Mutex::default(),
            granted_apps: Arc::default(),
        })
    }

    /// Loads components in order. A name already taken (by a built-in or an
    /// earlier component) is not overridden: the later tool is reported.
    ///
    /// A component that loaded before has its tools listed from the
    /// description it gave then (kept in the compile cache under the
    /// user's key) and is itself loaded at its first call: listing or
    /// binding tools loads nothing. The others are compiled (or taken from
    /// the compile cache) in parallel and described now.
    pub fn load(&mut self, sources: impl IntoIterator<Item = ComponentSource>) {
        let sources: Vec<ComponentSource> = sources.into_iter().collect();
        let hashes: Vec<String> = sources.iter().map(ComponentSource::sha256).collect();
        let described: Vec<Option<Vec<GuestSpec>>> =
            hashes.iter().map(|h| self.cache.description(h)).collect();
        let compiled: Vec<Option<wasmtime::Result<Component>>> = std::thread::scope(|scope| {
            let jobs: Vec<_> = sources
                .iter()
                .zip(&hashes)
                .zip(&described)
                .map(|((source, hash), described)| {
                    if described.is_some() {
                        return None;
                    }
                    if !self.cache.has(hash)
                        && let Some(tell) = &self.on_compile
                    {
                        tell(&source.location, source.bytes.len());
                    }
                    let (cache, engine) = (&self.cache, &self.engine);
                    Some(scope.spawn(move || cache.load(engine, hash, &source.bytes)))
                })
                .collect();
            jobs.into_iter()
                .map(|j| {
                    j.map(|j| {
                        j.join()
                            .unwrap_or_else(|_| Err(wasmtime::format_err!("the compiler panicked")))
                    })
                })
                .collect()
        });
        for (((source, hash), described), component) in
            sources.into_iter().zip(hashes).zip(described).zip(compiled)
        {
            let location = source.location.clone();
            let loaded = match (described, component) {
                (Some(specs), _) => self.add_described(source, hash, specs),
                (None, Some(component)) => component
                    .map_err(|e| not_a_component(&e))
                    .and_then(|c| self.add(&source, hash, &c)),
                (None, None) => unreachable!("a component is either described or compiled"),
            };
            if let Err(reason) = loaded {
                self.problems.push(LoadProblem { location, reason });
            }
        }
    }

    /// Records problems found before loading (an unreadable file).
    pub fn add_problems(&mut self, problems: impl IntoIterator<Item = LoadProblem>) {
        self.problems.extend(problems);
    }

    /// Links a compiled component: what every instance of it is made from.
    /// One that imports nothing that waits is called directly, any other on
    /// a fiber.
    fn instance_pre(&self, component: &Component) -> std::result::Result<Pre, String> {
        let direct = never_waits(component, &self.engine);
        let linker = if direct { &self.direct } else { &self.linker };
        let instance_pre = linker.instantiate_pre(component).map_err(|e| {
            format!(
                "it imports something warden does not provide ({e:#}); tools may use WASI 0.2 only"
            )
        })?;
        Pre::new(instance_pre, direct)
    }

    fn add(
        &mut self,
        source: &ComponentSource,
        hash: String,
        component: &Component,
    ) -> std::result::Result<(), String> {
        let pre = self.instance_pre(component)?;
        let specs = self.describe(&pre)?;
        let checked = check_specs(specs.clone())?;
        let loaded = Loaded {
            pre: OnceLock::from(Ok(pre)),
            deferred: None,
        };
        self.add_tools(source.origin, &source.location, &hash, checked, loaded)?;
        self.cache.remember_description(&hash, &specs);
        Ok(())
    }

    /// Adds the tools of a component described in the cache; the
    /// component loads at the first call of one of them.
    fn add_described(
        &mut self,
        source: ComponentSource,
        hash: String,
        specs: Vec<GuestSpec>,
    ) -> std::result::Result<(), String> {
        let checked = check_specs_later(specs)?;
        let (origin, location) = (source.origin, source.location.clone());
        let loaded = Loaded {
            pre: OnceLock::new(),
            deferred: Some((source, hash.clone())),
        };
        self.add_tools(origin, &location, &hash, checked, loaded)
    }

    fn add_tools(
        &mut self,
        origin: Origin,
        location: &str,
        hash: &str,
        checked: Vec<CheckedSpec>,
        loaded: Loaded,
    ) -> std::result::Result<(), String> {
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
        self.components.push(loaded);
        for c in checked {
            let t = self.tools.len();
            for name in std::iter::once(&c.spec.name).chain(&c.spec.aliases) {
                self.names.insert(name.clone(), t);
            }
            self.tools.push(Tool {
                info: ToolInfo {
                    spec: c.spec.clone(),
                    origin,
                    location: location.to_string(),
                    hash: hash.to_string(),
                },
                checked: c,
                component: index,
            });
        }
        Ok(())
    }

    /// The component `index`, loaded now if it was listed from its cached
    /// description (see [`ToolHost::load`]); the error says why it does
    /// not load.
    pub(crate) fn component(&self, index: usize) -> std::result::Result<&Pre, String> {
        let loaded = &self.components[index];
        let pre = loaded.pre.get_or_init(|| {
            let Some((source, hash)) = &loaded.deferred else {
                unreachable!("a component not loaded at once is deferred");
            };
            if !self.cache.has(hash)
                && let Some(tell) = &self.on_compile
            {
                tell(&source.location, source.bytes.len());
            }
            let component = self
                .cache
                .load(&self.engine, hash, &source.bytes)
                .map_err(|e| not_a_component(&e))?;
            self.instance_pre(&component)
        });
        pre.as_ref().map_err(Clone::clone)
    }

    /// Loads now, in parallel, every component whose tools were listed
    /// from its cached description (`warden tools compile`: nothing is
    /// left to compile at the first call). Returns those that do not load.
    pub fn load_all(&self) -> Vec<LoadProblem> {
        std::thread::scope(|scope| {
            let jobs: Vec<_> = self
                .components
                .iter()
                .enumerate()
                .filter_map(|(i, c)| Some((i, &c.deferred.as_ref()?.0.location)))
                .map(|(i, location)| (location, scope.spawn(move || self.component(i).err())))
                .collect();
            jobs.into_iter()
                .filter_map(|(location, job)| {
                    let reason = job
                        .join()
                        .unwrap_or_else(|_| Some("the compiler panicked".into()))?;
                    Some(LoadProblem {
                        location: location.clone(),
                        reason,
                    })
                })
                .collect()
        })
    }

    /// Runs `describe()` in the sandbox like any call: no grants, the
    /// describe time limit, the default memory limit.
    fn describe(&self, pre: &Pre) -> std::result::Result<Vec<GuestSpec>, String> {
        let limits = Limits {
            timeout: self.describe_timeout,
            ..Limits::default()
        };
        let nothing = prepare(&Grants::default(), &self.workspace, None, &Arc::default())?;
        let ran = self.run(
            pre,
            &nothing,
            &limits,
            &CallControl::new(),
            Op::Describe,
            None,
        );
        match ran.result {
            Ok(Out::Specs(specs)) => Ok(specs),
            Ok(Out::Called(_)) => unreachable!("describe answers specs"),
            Err(why) => Err(format!("describe() failed: {}", why.message)),
        }
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
        &self.workspace
    }

    /// Binds tool `name` to `grants`: its granted directories are opened
    /// now, once, and every call of the returned tool uses those handles.
    /// The error names a directory that cannot be opened.
    pub fn bind(
        self: &Arc<Self>,
        name: &str,
        grants: &Grants,
    ) -> std::result::Result<BoundTool, String> {
        let &tool = self
            .names
            .get(name)
            .ok_or_else(|| format!("no tool named `{name}`"))?;
        let mut cache = self.prepared.lock().unwrap_or_else(|e| e.into_inner());
        let prepared = match cache.get(grants) {
            Some(p) => p.clone(),
            None => {
                let p = Arc::new(prepare(
                    grants,
                    &self.workspace,
                    self.config.as_ref(),
                    &self.granted_apps,
                )?);
                cache.insert(grants.clone(), p.clone());
                p
            }
        };
        Ok(BoundTool::new(
            self.clone(),
            tool,
            Arc::new(grants.clone()),
            prepared,
        ))
    }
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
