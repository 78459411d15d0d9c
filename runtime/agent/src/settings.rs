//! Where the model settings come from: defaults < user config < workspace
//! `[model]` < environment < flags, except for where the API key goes.
//!
//! The key's variable (`api_key_env`) comes only from the user's config; a
//! workspace's is ignored with a warning. The endpoint comes from the flag,
//! `OPENAI_BASE_URL`, the user's config, and only then the (trusted)
//! workspace, whose `warden trust` diff said where the key would go.

use std::time::Duration;

use warden_policy::ModelSection;

use crate::client::ClientConfig;

/// How tools are offered to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Native tool calling until the server fails it; then `json` where
    /// the server honours a reply schema, else `text`.
    Auto,
    /// Native tool calling (`tools` in the request).
    Native,
    /// Each reply one JSON object, a call of one tool or the answer,
    /// constrained by the server's structured output.
    Json,
    /// `[TOOL] name(args) [/TOOL]` in plain text.
    Text,
}

impl Protocol {
    /// Parses "auto", "native", "json" or "text".
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "auto" => Some(Protocol::Auto),
            "native" => Some(Protocol::Native),
            "json" => Some(Protocol::Json),
            "text" => Some(Protocol::Text),
            _ => None,
        }
    }

    /// The name used in configuration and transcripts.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Auto => "auto",
            Protocol::Native => "native",
            Protocol::Json => "json",
            Protocol::Text => "text",
        }
    }
}

/// Command-line overrides.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--base-url`.
    pub base_url: Option<String>,
    /// `--model`.
    pub model: Option<String>,
    /// `--no-stream`.
    pub no_stream: bool,
    /// `--protocol`.
    pub protocol: Option<Protocol>,
    /// `--max-turns`.
    pub max_turns: Option<u32>,
    /// `--tools`: the tools offered to the model.
    pub tools: Option<Vec<String>>,
}

/// Everything the agent needs to talk to the model.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The HTTP client configuration (holds the API key, if any).
    pub client: ClientConfig,
    /// Tool-calling protocol.
    pub protocol: Protocol,
    /// Model round trips per task.
    pub max_turns: u32,
    /// Variable the key was read from.
    pub api_key_env: String,
    /// The model's context window in tokens, when configured (else asked of
    /// the server's `/models`, else learnt from a context-length error).
    pub context_window: Option<u64>,
    /// The tools offered to the model, when not all of them.
    pub tools: Option<Vec<String>>,
}

/// No usable model configuration; the message says what to set.
#[derive(Debug, thiserror::Error)]
#[error(
    "no model configured: set OPENAI_BASE_URL (and OPENAI_API_KEY for a hosted API), \
     or `[model] base_url` in warden.toml. For example:\n  \
     OpenAI:     OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... WARDEN_MODEL=gpt-4o-mini\n  \
     llama.cpp:  OPENAI_BASE_URL=http://127.0.0.1:8080/v1   (llama-server --jinja -m model.gguf)\n  \
     Ollama:     OPENAI_BASE_URL=http://127.0.0.1:11434/v1 WARDEN_MODEL=llama3.1"
)]
pub struct NoModel;

/// Default model round trips per task.
pub const DEFAULT_MAX_TURNS: u32 = 30;

/// Resolves the settings. `env` reads the process environment (a parameter
/// so tests need not mutate it).
pub fn resolve(
    user: &ModelSection,
    workspace: &ModelSection,
    env: &dyn Fn(&str) -> Option<String>,
    flags: &Overrides,
) -> Result<Settings, NoModel> {
    resolve_noted(user, workspace, env, flags).map(|(settings, _)| settings)
}

/// [`resolve`], with what the user should know about the result, one line
/// each: a workspace value ignored, the key sent to the workspace's
/// endpoint.
pub fn resolve_noted(
    user: &ModelSection,
    workspace: &ModelSection,
    env: &dyn Fn(&str) -> Option<String>,
    flags: &Overrides,
) -> Result<(Settings, Vec<String>), NoModel> {
    // Where the key goes and which key: never the workspace's choice alone.
    let shared = ModelSection {
        base_url: None,
        api_key_env: None,
        ..workspace.clone()
    };
    let file = user.overlay(&shared);
    let non_empty = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
    let mut notes = Vec::new();
    if let Some(name) = &workspace.api_key_env {
        notes.push(format!(
            "warden.toml sets [model] api_key_env = \"{name}\": ignored; only your own config \
             chooses the API key variable"
        ));
    }
    let api_key_env = user
        .api_key_env
        .clone()
        .unwrap_or_else(|| warden_policy::DEFAULT_KEY_ENV.into());
    let api_key = non_empty(env(&api_key_env));
    let base_url = match flags
        .base_url
        .clone()
        .or_else(|| non_empty(env("OPENAI_BASE_URL")))
        .or(user.base_url.clone())
    {
        Some(url) => url,
        None => {
            let url = workspace.base_url.clone().ok_or(NoModel)?;
            if api_key.is_some() {
                notes.push(format!(
                    "sending your API key (${api_key_env}) to {}, the base_url of the trusted \
                     warden.toml",
                    crate::client::redact_url(&url)
                ));
            }
            url
        }
    };
    let model = flags
        .model
        .clone()
        .or_else(|| non_empty(env("WARDEN_MODEL")))
        .or(file.model.clone())
        .unwrap_or_else(|| "default".into());
    let mut client = ClientConfig::new(base_url, model);
    client.api_key = api_key;
    client.stream = !flags.no_stream && file.stream.unwrap_or(true);
    if let Some(t) = file.connect_timeout {
        client.connect_timeout = t;
    }
    if let Some(t) = file.idle_timeout {
        client.idle_timeout = t;
    }
    if let Some(n) = file.max_attempts {
        client.max_attempts = n.max(1);
    }
    if let Some(t) = file.request_timeout {
        client.request_timeout = t;
    }
    client.api_key_env = Some(api_key_env.clone());
    let protocol = flags
        .protocol
        .or_else(|| file.protocol.as_deref().and_then(Protocol::parse))
        .unwrap_or(Protocol::Auto);
    Ok((
        Settings {
            client,
            protocol,
            max_turns: flags
                .max_turns
                .or(file.max_turns)
                .unwrap_or(DEFAULT_MAX_TURNS)
                .max(1),
            api_key_env,
            context_window: file.context_window.filter(|n| *n > 0),
            tools: flags.tools.clone().or(file.tools.clone()),
        },
        notes,
    ))
}

/// Backoff for tests and impatient users: `WARDEN_RETRY_BASE_MS`.
pub fn backoff_from_env(env: &dyn Fn(&str) -> Option<String>, client: &mut ClientConfig) {
    if let Some(ms) = env("WARDEN_RETRY_BASE_MS").and_then(|v| v.parse::<u64>().ok()) {
        client.backoff_base = Duration::from_millis(ms);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn layers_in_order() {
        let user = ModelSection {
            base_url: Some("http://user/v1".into()),
            model: Some("user-model".into()),
            ..Default::default()
        };
        let ws = ModelSection {
            model: Some("ws-model".into()),
            protocol: Some("text".into()),
            ..Default::default()
        };
        let (s, notes) = resolve_noted(
            &user,
            &ws,
            &env_of(&[("OPENAI_API_KEY", "k1")]),
            &Overrides::default(),
        )
        .unwrap();
        assert_eq!(s.client.base_url, "http://user/v1");
        assert_eq!(s.client.model, "ws-model");
        assert_eq!(s.client.api_key.as_deref(), Some("k1"));
        assert_eq!(s.protocol, Protocol::Text);
        assert!(notes.is_empty(), "{notes:?}");
        let env = env_of(&[
            ("OPENAI_BASE_URL", "http://env/v1"),
            ("WARDEN_MODEL", "env-model"),
        ]);
        let flags = Overrides {
            model: Some("flag-model".into()),
            no_stream: true,
            ..Default::default()
        };
        let s = resolve(&user, &ws, &env, &flags).unwrap();
        assert_eq!(s.client.base_url, "http://env/v1");
        assert_eq!(s.client.model, "flag-model");
        assert!(!s.client.stream);
        assert_eq!(s.client.api_key, None);
    }

    #[test]
    fn the_workspace_never_chooses_the_key_nor_overrides_the_users_endpoint() {
        let ws = ModelSection {
            base_url: Some("http://ws.example:9/v1".into()),
            api_key_env: Some("AWS_SECRET_ACCESS_KEY".into()),
            ..Default::default()
        };
        let env = env_of(&[("AWS_SECRET_ACCESS_KEY", "aws"), ("OPENAI_API_KEY", "mine")]);
        let user = ModelSection {
            base_url: Some("http://user/v1".into()),
            ..Default::default()
        };
        let (s, notes) = resolve_noted(&user, &ws, &env, &Overrides::default()).unwrap();
        assert_eq!(s.client.base_url, "http://user/v1");
        assert_eq!(s.client.api_key.as_deref(), Some("mine"));
        assert_eq!(s.api_key_env, "OPENAI_API_KEY");
        assert_eq!(notes.len(), 1);
        assert!(
            notes[0].contains("AWS_SECRET_ACCESS_KEY\": ignored"),
            "{:?}",
            notes
        );
        // With no endpoint of the user's own, the trusted workspace's is used
        // and the user is told the key goes there.
        let (s, notes) =
            resolve_noted(&ModelSection::default(), &ws, &env, &Overrides::default()).unwrap();
        assert_eq!(s.client.base_url, "http://ws.example:9/v1");
        assert_eq!(s.client.api_key.as_deref(), Some("mine"));
        assert!(
            notes[1].contains("sending your API key ($OPENAI_API_KEY) to http://ws.example:9/v1"),
            "{:?}",
            notes
        );
        // A key variable of the user's own config is used.
        let user = ModelSection {
            api_key_env: Some("AWS_SECRET_ACCESS_KEY".into()),
            ..user
        };
        let s = resolve(&user, &ModelSection::default(), &env, &Overrides::default()).unwrap();
        assert_eq!(s.client.api_key.as_deref(), Some("aws"));
    }

    #[test]
    fn nothing_configured_says_what_to_set() {
        let e = resolve(
            &ModelSection::default(),
            &ModelSection::default(),
            &env_of(&[]),
            &Overrides::default(),
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("set OPENAI_BASE_URL")
                && msg.contains("Ollama")
                && msg.contains("llama.cpp")
        );
    }
}
