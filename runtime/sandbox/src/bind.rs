//! Grants → what every call of a tool starts from, worked out once when the
//! toolset is bound: the granted directories opened (and never looked up by
//! path again), the environment values, the network allow-list.

use std::path::Path;
use std::sync::Arc;

use warden_policy::{Grants, NetworkAllow};
use warden_state::StateDir;
use wasmtime_wasi::filesystem::WasiFilesystemCtx;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use crate::desktop::{DesktopPlan, GrantedApps};
use crate::granted::GrantedDirs;
use crate::process::ExecPlan;
use crate::secrets::Secrets;
use crate::wasi::mounts;

/// What a call of a bound tool is made from.
pub(crate) struct Prepared {
    /// The preopens: directory handles opened at bind time, cloned (not
    /// reopened) into each call.
    pub(crate) preopens: WasiFilesystemCtx,
    /// The granted directories, opened, with where each appears inside
    /// the guest (for previews through the same handles).
    pub(crate) dirs: GrantedDirs,
    /// Granted environment variables with their values, read at bind time.
    pub(crate) env: Vec<(String, String)>,
    /// Hosts the tool may send HTTP requests to.
    pub(crate) allow: Arc<NetworkAllow>,
    /// Secrets the host adds to its requests (values never in the guest).
    pub(crate) secrets: Arc<Secrets>,
    /// The workspace, when granted: the guest's initial working directory.
    pub(crate) initial_cwd: Option<String>,
    /// How the tool's granted programs run (`warden:tool/process`).
    pub(crate) exec: Arc<ExecPlan>,
    /// What it may start in the desktop session (`warden:tool/desktop`).
    pub(crate) desktop: Arc<DesktopPlan>,
}

/// Prepares the calls of a tool with `grants`. Each granted directory is
/// opened once, here; a directory that cannot be opened, or whose path no
/// longer leads to itself, is an error naming it.
pub(crate) fn prepare(
    grants: &Grants,
    workspace: &Path,
    config: Option<&StateDir>,
    apps: &Arc<GrantedApps>,
) -> Result<Prepared, String> {
    let secrets = Secrets::resolve(grants, config)?;
    let mounts = mounts(grants, workspace);
    let mut b = WasiCtxBuilder::new();
    // Calls already run on their own thread: doing file I/O in place avoids a
    // hop to tokio's blocking pool per operation (10x on small calls); a
    // blocking operation is interrupted by the watchdog at the deadline.
    // Must be set before the preopens, which capture it.
    b.allow_blocking_current_thread(true);
    let dirs = GrantedDirs::open(&mounts)?;
    for (m, link) in dirs.preopens() {
        let perms = if m.write {
            FsPerms::ReadWrite
        } else {
            FsPerms::ReadOnly
        };
        b.preopened_dir(link, &m.guest, perms)
            .map_err(|e| format!("cannot open granted directory {}: {e:#}", m.host.display()))?;
    }
    let mut ctx = b.build();
    let preopens = std::mem::take(ctx.filesystem());
    let granted_env = grants.env_values(|name| std::env::var(name).ok());
    let exec = Arc::new(ExecPlan::new(grants, &dirs, workspace, &granted_env));
    let desktop = Arc::new(DesktopPlan::new(grants, &dirs, apps.clone()));
    let mut env = granted_env;
    for (key, value) in grants.settings() {
        env.push((
            format!("WARDEN_SETTING_{}", key.to_ascii_uppercase()),
            value.to_string(),
        ));
    }
    let initial_cwd = workspace
        .to_str()
        .filter(|_| grants.dirs().any(|(p, _)| p == workspace))
        .map(str::to_string);
    Ok(Prepared {
        preopens,
        dirs,
        env,
        allow: Arc::new(NetworkAllow::new(grants.hosts())),
        secrets: Arc::new(secrets),
        initial_cwd,
        exec,
        desktop,
    })
}
