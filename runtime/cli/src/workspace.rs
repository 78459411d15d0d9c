//! The workspace: its root, policy, tool folders, and the loaded toolset.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use warden_policy::{Origin, Policy};
use warden_sandbox::{ComponentSource, HostConfig, ToolHost, Toolset};

/// Built-in components, embedded at build time (see build.rs).
const BUILTINS: &[(&str, &[u8])] = &[("fs", include_bytes!(env!("WARDEN_BUILTIN_FS")))];

/// Folder of drop-in tools inside a workspace.
pub const WORKSPACE_TOOLS: &str = ".warden/tools";

/// A workspace and where its tools come from.
pub struct Workspace {
    pub root: PathBuf,
    pub policy: Policy,
}

impl Workspace {
    /// Opens `dir` (default: the current directory) and reads its policy.
    pub fn open(dir: Option<&Path>) -> anyhow::Result<Workspace> {
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
        let policy = Policy::load(&root)
            .context("fix the policy file, or move it away to use the defaults")?;
        Ok(Workspace { root, policy })
    }

    /// The per-user tools folder (XDG data dir).
    pub fn user_tools_dir() -> Option<PathBuf> {
        dirs::data_dir().map(|d| d.join("warden/tools"))
    }

    /// Loads every tool component and joins it with the policy.
    pub fn toolset(&self) -> anyhow::Result<Toolset> {
        let cache_dir = dirs::cache_dir().map(|d| d.join("warden/compiled"));
        let mut host = ToolHost::new(HostConfig {
            workspace: self.root.clone(),
            cache_dir,
        })?;
        host.load(
            BUILTINS
                .iter()
                .map(|(name, bytes)| ComponentSource::builtin(name, bytes)),
        );
        // User tools before workspace ones: a cloned repository cannot shadow them.
        let mut folders = Vec::new();
        if let Some(user) = Self::user_tools_dir() {
            folders.push((user, Origin::User));
        }
        folders.push((self.root.join(WORKSPACE_TOOLS), Origin::Workspace));
        for (dir, origin) in folders {
            let (sources, problems) = ComponentSource::from_dir(&dir, origin)?;
            host.add_problems(problems);
            host.load(sources);
        }
        Ok(Toolset::new(Arc::new(host), &self.policy))
    }
}
