//! The model endpoint's settings, resolved one way for every command
//! that talks to it (`run`, `chat`, `models`, `doctor`).

use warden_agent::settings::{self, Overrides, Settings};
use warden_policy::ModelSection;
use warden_workspace::Folders;

use crate::agent_cmd::ConfigError;

/// The settings from the user's config, the workspace's trusted `[model]`,
/// the environment and `overrides`, with what the user should be told.
pub fn resolve(
    folders: &Folders,
    workspace: &ModelSection,
    overrides: &Overrides,
) -> anyhow::Result<(Settings, Vec<String>)> {
    let user = warden_policy::load_user_config(&folders.config_file())
        .map_err(|e| ConfigError(format!("{e:#}")))?;
    let env = |k: &str| std::env::var(k).ok();
    let (mut settings, notes) = settings::resolve_noted(&user.model, workspace, &env, overrides)?;
    settings::backoff_from_env(&env, &mut settings.client);
    Ok((settings, notes))
}

/// A runtime for one request or two, on this thread.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
