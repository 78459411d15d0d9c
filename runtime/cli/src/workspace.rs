//! The workspace: its root, its trusted policy, tool folders, the toolset.
//!
//! `warden.toml` and `.warden/tools/` live inside the workspace, where a
//! cloned repository or the model itself can change them. So they apply only
//! as last accepted with `warden trust` (a per-user record outside the
//! workspace); anything new or changed is reported and ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use warden_policy::{Origin, POLICY_FILE, Policy, ToolGrants, TrustStore, decide, sha256_hex};
use warden_sandbox::{ComponentSource, HostConfig, LoadProblem, ToolHost, Toolset};

use crate::agent_cmd::ConfigError;

/// Built-in components, embedded at build time (see build.rs).
const BUILTINS: &[(&str, &[u8])] = &[("fs", include_bytes!(env!("WARDEN_BUILTIN_FS")))];

/// Folder of drop-in tools inside a workspace.
pub const WORKSPACE_TOOLS: &str = ".warden/tools";

/// A workspace and where its tools come from.
pub struct Workspace {
    pub root: PathBuf,
    /// The policy in force: the trusted one, or safe defaults.
    pub policy: Policy,
    /// Drop-in files (by name) that may load: `None` loads them all.
    allowed: Option<BTreeSet<String>>,
    /// The current `warden.toml` text, if any.
    pub policy_text: Option<String>,
    /// `.warden/tools/*.wasm`, read once per start, and the unreadable ones.
    drop_ins: (Vec<ComponentSource>, Vec<LoadProblem>),
    /// Directory grants as accepted, per tool; `None` when nothing pins them.
    trusted_tools: Option<BTreeMap<String, ToolGrants>>,
}

/// The per-user trust store.
pub fn trust_store() -> anyhow::Result<TrustStore> {
    let dir = dirs::state_dir()
        .or_else(dirs::data_local_dir)
        .context("no per-user state folder (set XDG_STATE_HOME or HOME)")?;
    Ok(TrustStore::new(dir.join("warden/trust")))
}

fn read_drop_ins(root: &Path) -> anyhow::Result<(Vec<ComponentSource>, Vec<LoadProblem>)> {
    Ok(ComponentSource::from_dir(
        &root.join(WORKSPACE_TOOLS),
        Origin::Workspace,
    )?)
}

fn file_name(location: &str) -> String {
    Path::new(location)
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_else(|| location.to_string())
}

impl Workspace {
    fn root(dir: Option<&Path>) -> anyhow::Result<PathBuf> {
        let dir = match dir {
            Some(d) => d.to_path_buf(),
            None => std::env::current_dir().context("cannot read the current directory")?,
        };
        let root = dir.canonicalize().with_context(|| {
            format!(
                "workspace {} does not exist: pass an existing directory to --workspace",
                dir.display()
            )
        })?;
        anyhow::ensure!(
            root.is_dir(),
            "workspace {} is not a directory",
            root.display()
        );
        Ok(root)
    }

    fn read_policy(root: &Path) -> anyhow::Result<Option<String>> {
        let path = root.join(POLICY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Opens `dir` (default: the current directory) with its trusted policy
    /// and drop-ins; prints what is ignored and how to accept it.
    pub fn open(dir: Option<&Path>) -> anyhow::Result<Workspace> {
        let root = Self::root(dir)?;
        let policy_text = Self::read_policy(&root)?;
        let trusted = trust_store()?
            .load(&root)
            .map_err(|e| ConfigError(format!("{e:#}")))?;
        let drop_ins = read_drop_ins(&root)?;
        let hashes = Self::hashes(&drop_ins.0);
        let decision = decide(trusted.as_ref(), policy_text.as_deref(), &hashes);
        let path = root.join(POLICY_FILE);
        let policy = match &decision.use_policy_text {
            Some(text) => Policy::parse(text, &path, &root)
                .context("fix the policy file, or move it away to use the defaults")?,
            None => Policy::defaults(&root),
        };
        for n in &decision.notices {
            eprintln!("note: {n}");
        }
        // An untrusted file is not applied, but its mistakes are worth knowing now.
        if let Some(text) = policy_text
            .as_deref()
            .filter(|t| decision.use_policy_text.as_deref() != Some(*t))
            && let Err(e) = Policy::parse(text, &path, &root)
        {
            eprintln!("note: the untrusted {POLICY_FILE} is also invalid: {e}");
        }
        Ok(Workspace {
            root,
            policy,
            allowed: Some(decision.allowed_components),
            policy_text,
            drop_ins,
            trusted_tools: trusted.map(|t| t.tools),
        })
    }

    /// Opens `dir` with its current policy and every drop-in, trusted or
    /// not: what `warden trust` would accept.
    pub fn open_current(dir: Option<&Path>) -> anyhow::Result<Workspace> {
        let root = Self::root(dir)?;
        let policy_text = Self::read_policy(&root)?;
        let policy = match &policy_text {
            Some(text) => Policy::parse(text, &root.join(POLICY_FILE), &root)
                .map_err(|e| ConfigError(format!("{e}")))?,
            None => Policy::defaults(&root),
        };
        let drop_ins = read_drop_ins(&root)?;
        Ok(Workspace {
            root,
            policy,
            allowed: None,
            policy_text,
            drop_ins,
            trusted_tools: None,
        })
    }

    /// `root` as a never-trusted workspace runs: safe defaults, no drop-ins.
    pub fn safe_defaults(root: &Path) -> Workspace {
        Workspace {
            root: root.to_path_buf(),
            policy: Policy::defaults(root),
            allowed: Some(BTreeSet::new()),
            policy_text: None,
            drop_ins: (Vec::new(), Vec::new()),
            trusted_tools: None,
        }
    }

    fn hashes(sources: &[ComponentSource]) -> BTreeMap<String, String> {
        sources
            .iter()
            .map(|s| (file_name(&s.location), sha256_hex(&s.bytes)))
            .collect()
    }

    /// Every drop-in file name with its SHA-256, trusted or not.
    pub fn drop_in_hashes(&self) -> BTreeMap<String, String> {
        Self::hashes(&self.drop_ins.0)
    }

    /// The per-user tools folder (XDG data dir).
    pub fn user_tools_dir() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("warden/tools"))
    }

    /// Loads every allowed tool component and joins it with the policy.
    pub fn toolset(&self) -> anyhow::Result<Toolset> {
        let cache_dir = dirs::cache_dir().map(|d| d.join("warden/compiled"));
        let mut host = ToolHost::new(HostConfig {
            workspace: self.root.clone(),
            cache_dir,
            make_ahead: true,
        })?;
        host.load(
            BUILTINS
                .iter()
                .map(|(name, bytes)| ComponentSource::builtin(name, bytes)),
        );
        // User tools before workspace ones: a cloned repository cannot shadow them.
        if let Some(user) = Self::user_tools_dir() {
            let (sources, problems) = ComponentSource::from_dir(&user, Origin::User)?;
            host.add_problems(problems);
            host.load(sources);
        }
        let (sources, problems) = &self.drop_ins;
        host.add_problems(problems.iter().cloned());
        host.load(
            sources
                .iter()
                .filter(|s| {
                    self.allowed
                        .as_ref()
                        .is_none_or(|a| a.contains(&file_name(&s.location)))
                })
                .cloned(),
        );
        let mut tools = Toolset::new(Arc::new(host), &self.policy);
        // The trusted policy text can resolve to other directories than the
        // ones accepted (a granted folder replaced by a symlink): only the
        // accepted ones are mounted.
        if let Some(trusted) = &self.trusted_tools {
            tools.retain_dirs(
                |tool, d| {
                    let path = d.path.display().to_string();
                    trusted
                        .get(tool)
                        .is_some_and(|t| if d.write { &t.write } else { &t.read }.contains(&path))
                },
                "is not among the directories you trusted (did a granted folder move or become \
                 a symlink?): not mounted; review with `warden trust`",
            );
        }
        Ok(tools)
    }
}
