//! The model endpoint: configured, answering, listing the model in use,
//! and (with `--model-check`) taking native tool calls and structured
//! output.

use warden_agent::client::{Client, ClientError, Feature, FeatureCheck, ListedModel, redact_url};
use warden_agent::settings::{NoModel, Overrides};
use warden_policy::ModelSection;
use warden_workspace::Folders;

use super::Check;
use crate::args::EndpointFlags;

/// The endpoint's checks; `ask` sends the two small requests.
pub fn checks(
    folders: &Folders,
    workspace: &ModelSection,
    flags: &EndpointFlags,
    ask: bool,
) -> Vec<Check> {
    let overrides = Overrides {
        base_url: flags.base_url.clone(),
        model: flags.model.clone(),
        ..Overrides::default()
    };
    let (settings, notes) = match crate::endpoint::resolve(folders, workspace, &overrides) {
        Ok(s) => s,
        Err(e) if e.is::<NoModel>() => {
            return vec![Check::fail(
                "no model endpoint is configured",
                "set OPENAI_BASE_URL (e.g. http://127.0.0.1:8080/v1; and OPENAI_API_KEY for a \
                 hosted API), or `[model] base_url` in your config.toml",
            )];
        }
        Err(e) => return vec![Check::fail(format!("{e:#}"), "fix the file it names")],
    };
    let mut out: Vec<Check> = notes.into_iter().map(Check::note).collect();
    let endpoint = redact_url(&settings.client.base_url);
    let model = settings.client.model.clone();
    out.push(match &settings.client.api_key {
        Some(_) => Check::note(format!("API key from ${}", settings.api_key_env)),
        None => Check::note(format!(
            "no API key (${} is not set; local servers need none)",
            settings.api_key_env
        )),
    });
    let client = match Client::new(settings.client) {
        Ok(c) => c,
        Err(e) => {
            out.push(Check::fail(
                e.to_string(),
                "fix the base URL (OPENAI_BASE_URL, --base-url or `[model] base_url`)",
            ));
            return out;
        }
    };
    let rt = match crate::endpoint::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            out.push(Check::fail(
                format!("cannot start the async runtime: {e}"),
                "report this",
            ));
            return out;
        }
    };
    match rt.block_on(client.models()) {
        Ok(models) => {
            out.push(Check::pass(format!(
                "{endpoint} answers: {} model{} listed",
                models.len(),
                if models.len() == 1 { "" } else { "s" }
            )));
            out.push(listed(&models, &model));
        }
        Err(e) => {
            out.push(unreachable(&e));
            // Nothing more can be learnt from a server that does not answer.
            if matches!(e, ClientError::Connect { .. } | ClientError::Timeout { .. }) {
                return out;
            }
        }
    }
    if !ask {
        out.push(Check::note(
            "native tool calls and structured output not asked (`warden doctor --model-check` \
             sends two small requests)",
        ));
        return out;
    }
    for feature in [Feature::Tools, Feature::JsonSchema] {
        out.push(match rt.block_on(client.check(feature)) {
            Ok(FeatureCheck::Accepted) => Check::pass(format!("{}: accepted", feature.name())),
            Ok(FeatureCheck::Refused { status, reason }) => Check::fail(
                format!("{}: refused (http {status}): {reason}", feature.name()),
                refused_fix(feature),
            ),
            Err(e) => Check::fail(
                format!("{}: not known, the request failed: {e}", feature.name()),
                "fix what the error says, then run `warden doctor --model-check` again",
            ),
        });
    }
    out
}

/// Whether the model in use is among those listed.
fn listed(models: &[ListedModel], model: &str) -> Check {
    if models.iter().any(|m| m.id == model) {
        return Check::pass(format!("model `{model}` is served"));
    }
    match models {
        [] => Check::fail(
            format!("the server lists no models, so `{model}` may not exist"),
            "load a model into the server",
        ),
        // A server of one model answers to whatever name is asked.
        [one] => Check::pass(format!(
            "model `{model}`: the server serves one, `{}`, whatever name is asked",
            one.id
        )),
        many => {
            let names: Vec<&str> = many.iter().take(8).map(|m| m.id.as_str()).collect();
            let more = if many.len() > 8 { ", ..." } else { "" };
            Check::fail(
                format!("model `{model}` is not among those listed"),
                format!(
                    "pick one with --model, WARDEN_MODEL or `[model] model`: {}{more} \
                     (`warden models` lists them all)",
                    names.join(", ")
                ),
            )
        }
    }
}

/// The line for a `/models` that failed.
fn unreachable(e: &ClientError) -> Check {
    let fix = match e {
        ClientError::Connect { .. } | ClientError::Timeout { .. } => {
            "start the server, or point OPENAI_BASE_URL (--base-url) at it"
        }
        ClientError::Status {
            status: 401 | 403, ..
        } => "set a key this server accepts",
        ClientError::Status { status: 404, .. } | ClientError::NotOpenAi { .. } => {
            "check the base URL: it usually ends in /v1"
        }
        _ => "check the server and the base URL",
    };
    Check::fail(format!("listing the models failed: {e}"), fix)
}

fn refused_fix(feature: Feature) -> &'static str {
    match feature {
        Feature::Tools => {
            "warden falls back to tool calls written as text (`protocol = \"text\"` starts \
             there); llama.cpp needs `llama-server --jinja` for native calls"
        }
        Feature::JsonSchema => {
            "answers cannot be held to a JSON schema by this server; use a server with \
             structured output (llama.cpp, vLLM, OpenAI, Ollama)"
        }
    }
}
