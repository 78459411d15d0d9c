//! `warden models`: the endpoint's model list, the one in use marked.

use anyhow::Context;
use serde_json::json;
use warden_agent::client::{Client, ListedModel, redact_url};
use warden_agent::settings::Overrides;
use warden_policy::inert;
use warden_workspace::Workspace;

use crate::agent_cmd::EXIT_FAILED;
use crate::args::EndpointFlags;

/// Lists the models; exit 3 when the endpoint does not answer with a list.
pub fn run(ws: &Workspace, flags: &EndpointFlags, json: bool) -> anyhow::Result<u8> {
    let overrides = Overrides {
        base_url: flags.base_url.clone(),
        model: flags.model.clone(),
        ..Overrides::default()
    };
    let (settings, notes) = crate::endpoint::resolve(&ws.folders, ws.policy.model(), &overrides)?;
    for n in notes {
        stderr_line!("note: {}", inert(&n));
    }
    let in_use = settings.client.model.clone();
    let endpoint = redact_url(&settings.client.base_url);
    let client = Client::new(settings.client)?;
    let rt = crate::endpoint::runtime().context("cannot start the async runtime")?;
    let models = match rt.block_on(client.models()) {
        Ok(m) => m,
        Err(e) => {
            stderr_line!("error: {}", inert(&e.to_string()));
            return Ok(EXIT_FAILED);
        }
    };
    if json {
        let list: Vec<_> = models
            .iter()
            .map(|m| {
                json!({
                    "id": m.id,
                    "context_window": m.context_window,
                    "in_use": m.id == in_use,
                })
            })
            .collect();
        let doc = json!({ "endpoint": endpoint, "model": in_use, "models": list });
        stdout_line!("{}", serde_json::to_string_pretty(&doc)?);
        return Ok(0);
    }
    print_list(&models, &in_use);
    if models.is_empty() {
        stderr_line!("note: {} lists no models", inert(&endpoint));
    } else if !models.iter().any(|m| m.id == in_use) {
        // A server of one model answers to any name; with several, the
        // name must be one of them.
        let what = if models.len() == 1 {
            "the server answers with its one model whatever name is asked".to_string()
        } else {
            "pick one with --model, WARDEN_MODEL or `[model] model`".to_string()
        };
        stderr_line!(
            "note: the model in use, `{}`, is not in this list: {what}",
            inert(&in_use)
        );
    }
    Ok(0)
}

/// One line a model: `*` before the one in use, its context window after.
fn print_list(models: &[ListedModel], in_use: &str) {
    let width = models
        .iter()
        .map(|m| inert(&m.id).chars().count())
        .max()
        .unwrap_or(0);
    for m in models {
        let mark = if m.id == in_use { '*' } else { ' ' };
        let id = inert(&m.id);
        match m.context_window {
            Some(n) => stdout_line!("{mark} {id:width$}  {n} tokens"),
            None => stdout_line!("{mark} {id}"),
        }
    }
}
