//! A workspace: its root, the policy in force, its drop-ins, its trust.
//!
//! `warden.toml` and `.warden/tools/` live inside the workspace, where a
//! cloned repository or the model can change them. They apply only as last
//! accepted with `warden trust` (a per-user record outside the workspace);
//! what is new or changed is reported and ignored, and no component runs
//! before it is trusted.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use warden_agent::session::SessionStore;
use warden_policy::{
    ComponentEntry, McpLaunch, Origin, POLICY_FILE, Policy, ToolRecord, TrustState, TrustStore,
    decide, mcp_key, sha256_hex,
};
use warden_sandbox::{ComponentSource, HostConfig, LoadProblem, ToolHost};
use warden_state::InputDir;

use crate::Error;
use crate::folders::Folders;
use crate::instructions::{self, INSTRUCTIONS_FILE, Instructions};
use crate::manifest::builtin_sources;
use crate::mcp::{McpServer, McpTools};
use crate::toolset::{Pins, Toolset, pin};

/// Folder of drop-in tools inside a workspace.
pub const WORKSPACE_TOOLS: &str = ".warden/tools";

/// Which configuration a [`Workspace`] was opened with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// What runs: the trusted configuration, pinned to the trusted grants.
    InForce,
    /// The files as they are now: what `warden trust` would accept.
    Current,
    /// A never-trusted workspace: built-ins with their defaults only.
    SafeDefaults,
}

/// A workspace and what runs in it.
#[derive(Debug)]
pub struct Workspace {
    /// The canonical root.
    pub root: PathBuf,
    /// warden's per-user folders.
    pub folders: Folders,
    /// The policy in force (trusted, current, or the defaults).
    pub policy: Policy,
    /// The current `warden.toml` text, if any.
    pub policy_text: Option<String>,
    /// What differs from the trusted state, for the user (one line each).
    pub notices: Vec<String>,
    /// Instructions for the system prompt: the user's own file, then the
    /// workspace's `AGENTS.md` as far as it is trusted.
    pub instructions: Vec<Instructions>,
    /// The workspace's `AGENTS.md` as it is now, trusted or not.
    agents_md: Option<Instructions>,
    mode: Mode,
    drop_ins: Vec<ComponentSource>,
    drop_in_problems: Vec<LoadProblem>,
    /// Drop-in files that may load.
    allowed: BTreeSet<String>,
    trusted: Option<TrustState>,
}

fn file_name(location: &str) -> String {
    Path::new(location)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| location.to_string())
}

fn root_of(dir: Option<&Path>) -> Result<PathBuf, Error> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => std::env::current_dir()
            .map_err(|e| Error::Root(format!("cannot read the current directory: {e}")))?,
    };
    let root = dir.canonicalize().map_err(|_| {
        Error::Root(format!(
            "workspace {} does not exist: pass an existing directory to --workspace",
            dir.display()
        ))
    })?;
    if !root.is_dir() {
        return Err(Error::Root(format!(
            "workspace {} is not a directory",
            root.display()
        )));
    }
    Ok(root)
}

impl Workspace {
    fn base(dir: Option<&Path>, folders: Folders, mode: Mode) -> Result<Workspace, Error> {
        let root = root_of(dir)?;
        folders.check_workspace(&root)?;
        // Every file warden reads for itself from the workspace is read
        // beneath this handle, never through a link (warden-state).
        let input = InputDir::workspace(&root)?;
        let policy_text = Policy::read(&input).map_err(Error::File)?;
        let (drop_ins, drop_in_problems) = match input.dir(WORKSPACE_TOOLS)? {
            Some(tools) => ComponentSource::from_dir(&tools, Origin::Workspace)?,
            None => Default::default(),
        };
        let mut notices = Vec::new();
        let mut instructions = Vec::new();
        let user_file = folders.config.join("warden").join(INSTRUCTIONS_FILE);
        match instructions::read_user(&user_file) {
            Ok(Some(bytes)) => instructions.push(Instructions {
                source: user_file.display().to_string(),
                bytes,
            }),
            Ok(None) => {}
            Err(e) => notices.push(format!("{} is not used: {e}", user_file.display())),
        }
        let agents_md = match instructions::read_workspace(&input) {
            Ok(bytes) => bytes.map(|bytes| Instructions {
                source: INSTRUCTIONS_FILE.to_string(),
                bytes,
            }),
            Err(e) => {
                notices.push(format!("{INSTRUCTIONS_FILE} is not used: {e}"));
                None
            }
        };
        Ok(Workspace {
            policy: Policy::defaults(&root),
            root,
            folders,
            policy_text,
            notices,
            instructions,
            agents_md,
            mode,
            drop_ins,
            drop_in_problems,
            allowed: BTreeSet::new(),
            trusted: None,
        })
    }

    /// Opens `dir` (default: the current directory) with what runs there:
    /// the trusted policy and drop-ins, or the safe defaults. What differs
    /// from the trusted state is in [`Workspace::notices`].
    pub fn open(dir: Option<&Path>, folders: Folders) -> Result<Workspace, Error> {
        let mut ws = Self::base(dir, folders, Mode::InForce)?;
        let trusted = ws.trust_store()?.load(&ws.root)?;
        let decision = decide(
            trusted.as_ref(),
            ws.policy_text.as_deref(),
            &ws.drop_in_hashes(),
        );
        let path = ws.root.join(POLICY_FILE);
        ws.notices.splice(0..0, decision.notices);
        if let Some(file) = ws.agents_md.clone() {
            let trust = "review and accept with `warden trust`";
            match &trusted {
                Some(t) if t.instructions_hash == Some(file.hash()) => ws.instructions.push(file),
                Some(_) => ws.notices.push(format!(
                    "{INSTRUCTIONS_FILE} is new or changed since you trusted this workspace: not \
                     giving it to the model; {trust}"
                )),
                None => ws.notices.push(format!(
                    "this workspace is not trusted: not giving {INSTRUCTIONS_FILE} to the model; \
                     {trust}"
                )),
            }
        }
        if let Some(text) = &decision.use_policy_text {
            ws.policy = Policy::parse(text, &path, &ws.root).map_err(Error::Policy)?;
        }
        // An untrusted file is not applied, but its mistakes are worth knowing now.
        if let Some(text) = ws
            .policy_text
            .as_deref()
            .filter(|t| decision.use_policy_text.as_deref() != Some(*t))
            && let Err(e) = Policy::parse(text, &path, &ws.root)
        {
            ws.notices
                .push(format!("the untrusted {POLICY_FILE} is also invalid: {e}"));
        }
        ws.allowed = decision.allowed_components;
        if trusted.is_none() {
            ws.mode = Mode::SafeDefaults;
        }
        ws.trusted = trusted;
        warden_confine::set_default_confinement(ws.confinement());
        Ok(ws)
    }

    /// How commands are confined here, from the user's and the
    /// workspace's `confinement`: namespaces when either requires them,
    /// else Landlock and seccomp alone when the user asks for that, else
    /// whichever this machine gives. A config file that does not parse
    /// counts for nothing here (the commands that read it say why).
    pub fn confinement(&self) -> warden_confine::Confinement {
        use warden_confine::Confinement;
        let user = warden_policy::load_user_config(&self.folders.config_file())
            .ok()
            .and_then(|c| c.confinement);
        let asked = [user.as_deref(), self.policy.confinement()];
        if asked.contains(&Some("namespaces")) {
            Confinement::Namespaces
        } else if user.as_deref() == Some("landlock") {
            Confinement::Landlock
        } else {
            Confinement::Auto
        }
    }

    /// Opens `dir` with its current policy and every drop-in, trusted or
    /// not: what `warden trust` would accept.
    pub fn open_current(dir: Option<&Path>, folders: Folders) -> Result<Workspace, Error> {
        let mut ws = Self::base(dir, folders, Mode::Current)?;
        if let Some(text) = &ws.policy_text {
            ws.policy =
                Policy::parse(text, &ws.root.join(POLICY_FILE), &ws.root).map_err(Error::Policy)?;
        }
        ws.allowed = ws.drop_in_hashes().into_keys().collect();
        ws.instructions.extend(ws.agents_md.clone());
        Ok(ws)
    }

    /// The same root as a never-trusted workspace runs it.
    pub fn safe_defaults(&self) -> Workspace {
        Workspace {
            root: self.root.clone(),
            folders: self.folders.clone(),
            policy: Policy::defaults(&self.root),
            policy_text: None,
            notices: Vec::new(),
            instructions: Vec::new(),
            agents_md: None,
            mode: Mode::SafeDefaults,
            drop_ins: Vec::new(),
            drop_in_problems: Vec::new(),
            allowed: BTreeSet::new(),
            trusted: None,
        }
    }

    /// Whether the user has ever trusted this workspace (as opened).
    pub fn is_trusted(&self) -> bool {
        self.trusted.is_some()
    }

    /// The trusted record, when there is one and the workspace was opened
    /// with [`Workspace::open`].
    pub fn trusted(&self) -> Option<&TrustState> {
        self.trusted.as_ref()
    }

    /// The per-user trust store.
    pub fn trust_store(&self) -> Result<TrustStore, Error> {
        Ok(TrustStore::new(self.folders.trust()?))
    }

    /// This workspace's sessions, kept in the user's state folder.
    pub fn sessions(&self) -> Result<SessionStore, Error> {
        Ok(SessionStore::new(self.folders.sessions(&self.root)?))
    }

    /// SHA-256 of the workspace's `AGENTS.md` as it is now, if any.
    pub fn instructions_hash(&self) -> Option<String> {
        self.agents_md.as_ref().map(Instructions::hash)
    }

    /// Every drop-in file name with its SHA-256, trusted or not.
    pub fn drop_in_hashes(&self) -> BTreeMap<String, String> {
        self.drop_ins
            .iter()
            .map(|s| (file_name(&s.location), sha256_hex(&s.bytes)))
            .collect()
    }

    /// Where secrets named `file KEY` are read from, beneath warden's
    /// private config folder.
    fn secrets_dir(&self) -> Option<warden_state::StateDir> {
        warden_state::StateDir::open(&self.folders.config, "warden").ok()
    }

    /// Loads the built-ins, the user's tools and the allowed drop-ins, and
    /// binds every enabled tool to its grants. No drop-in that is not
    /// allowed is compiled or run. `on_compile` hears of components that
    /// are not in the compile cache (compiling takes seconds).
    pub fn toolset(&self, on_compile: Option<warden_sandbox::OnCompile>) -> Result<Toolset, Error> {
        let mut config = HostConfig::new(self.root.clone());
        config.cache = Some(self.folders.compile_cache()?);
        config.on_compile = on_compile;
        if self.mode != Mode::SafeDefaults {
            // Where secrets named `file KEY` are read from, beneath
            // warden's private config folder; a never-trusted workspace
            // has no secrets at all.
            config.config = self.secrets_dir();
        }
        let mut host = ToolHost::new(config)?;
        host.load(builtin_sources());
        if self.mode != Mode::SafeDefaults {
            // User tools before workspace ones: a cloned repository cannot
            // shadow them.
            if let Some(dir) = InputDir::users(&self.folders.user_tools())? {
                let (sources, problems) = ComponentSource::from_dir(&dir, Origin::User)?;
                host.add_problems(problems);
                host.load(sources);
            }
            host.add_problems(self.drop_in_problems.iter().cloned());
            host.load(
                self.drop_ins
                    .iter()
                    .filter(|s| self.allowed.contains(&file_name(&s.location)))
                    .cloned(),
            );
        }
        let pins = Pins {
            trusted: match self.mode {
                Mode::InForce => self.trusted.as_ref().map(|t| &t.tools),
                Mode::Current | Mode::SafeDefaults => None,
            },
            folders: &self.folders,
        };
        Ok(Toolset::build(Arc::new(host), &self.policy, &pins))
    }

    /// The enabled `[mcp.NAME]` servers of the policy in force, each with
    /// what its process may reach (pinned, like a tool's grants, to what
    /// was trusted), and warnings for the user. A never-trusted workspace
    /// has none; a server whose command line differs from the trusted one
    /// does not start.
    pub fn mcp_servers(&self) -> (Vec<McpServer>, Vec<String>) {
        let mut warnings = Vec::new();
        let mut servers = Vec::new();
        if self.mode == Mode::SafeDefaults {
            return (servers, warnings);
        }
        let trusted = match self.mode {
            Mode::InForce => self.trusted.as_ref().map(|t| &t.tools),
            Mode::Current | Mode::SafeDefaults => None,
        };
        let pins = Pins {
            trusted,
            folders: &self.folders,
        };
        for (name, section) in self.policy.mcp_servers() {
            let Some((grants, w)) = self.policy.mcp_grants(name) else {
                continue;
            };
            warnings.extend(w);
            let key = mcp_key(name);
            if let Some(t) = trusted
                && t.get(&key).and_then(ToolRecord::mcp_launch).as_ref() != Some(&section.launch)
            {
                let what = match section.launch {
                    McpLaunch::Command(_) => "command",
                    McpLaunch::Url(_) => "URL",
                };
                warnings.push(format!(
                    "MCP server `{name}` does not start: its {what} is not the one you \
                     trusted; review with `warden trust`"
                ));
                continue;
            }
            // What it runs from the workspace is what was trusted: a tool
            // that may write there must not rewrite the server's script.
            let files = crate::mcp::launch_files(&section.launch, &self.root);
            if let Some(why) = trusted
                .and_then(|t| t.get(&key))
                .and_then(|t| crate::mcp::files_changed(t.files.as_ref(), &files))
            {
                warnings.push(format!(
                    "MCP server `{name}` does not start: {why}; review with `warden trust`"
                ));
                continue;
            }
            let grants = pin(&key, grants, &pins, &mut warnings);
            servers.push(McpServer::new(name, section.launch.clone(), grants, files));
        }
        (servers, warnings)
    }

    /// [`Workspace::toolset`] with the `[mcp.NAME]` servers started, for
    /// the commands that call tools.
    pub fn toolset_with_mcp(
        &self,
        on_compile: Option<warden_sandbox::OnCompile>,
    ) -> Result<Toolset, Error> {
        let tools = self.toolset(on_compile)?;
        let (servers, warnings) = self.mcp_servers();
        if servers.is_empty() && warnings.is_empty() {
            return Ok(tools);
        }
        let mut mcp = McpTools::start(servers, &self.root, self.secrets_dir().as_ref());
        mcp.warn(warnings);
        Ok(tools.with_mcp(mcp))
    }

    /// The trust record of this configuration, with `tools` its toolset.
    pub fn state(&self, tools: &Toolset) -> TrustState {
        let components = self
            .drop_ins
            .iter()
            .filter(|s| self.allowed.contains(&file_name(&s.location)))
            .map(|s| {
                (
                    file_name(&s.location),
                    ComponentEntry {
                        hash: sha256_hex(&s.bytes),
                        size: s.bytes.len() as u64,
                    },
                )
            })
            .collect();
        TrustState {
            policy_hash: self
                .policy_text
                .as_deref()
                .filter(|_| self.mode != Mode::SafeDefaults)
                .map(|t| sha256_hex(t.as_bytes())),
            policy_text: self
                .policy_text
                .clone()
                .filter(|_| self.mode != Mode::SafeDefaults),
            components,
            instructions_hash: self
                .instructions_hash()
                .filter(|_| self.mode != Mode::SafeDefaults),
            tools: tools
                .entries()
                .iter()
                .filter_map(|e| {
                    let g = e.grants.as_ref()?;
                    Some((
                        e.info.spec.name.clone(),
                        ToolRecord::new(e.info.origin == Origin::Builtin, g),
                    ))
                })
                .chain(self.mcp_servers().0.into_iter().map(|s| {
                    let record = ToolRecord::mcp(&s.launch, s.files.clone(), &s.grants);
                    (mcp_key(&s.name), record)
                }))
                .collect(),
        }
    }
}
