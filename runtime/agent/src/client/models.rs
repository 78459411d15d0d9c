//! The server's model list, and the model's context window as the server
//! reports it in `/models` (vLLM `max_model_len`, OpenRouter and LM Studio
//! `context_length`, …), or, for llama-server, which lists only the
//! model's training context there, in its `/props`
//! (`default_generation_settings.n_ctx`, the context of one slot).

use std::time::{Duration, Instant};

use reqwest::header::ACCEPT;
use serde_json::Value;

use super::error::excerpt;
use super::{Client, ClientError};

/// Fields that hold the window, in the entry or its `meta`.
const FIELDS: [&str; 5] = [
    "context_length",
    "max_model_len",
    "context_window",
    "max_context_length",
    "n_ctx",
];

/// A model the server lists in `/models`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct ListedModel {
    /// Its name, as requests give it.
    pub id: String,
    /// Its context window in tokens, when the server says.
    pub context_window: Option<u64>,
}

impl Client {
    /// The context window of the configured model according to the
    /// server's `/models`, else llama-server's `/props`, or `None` when
    /// neither says (or answers within a few seconds). Never an error: the
    /// window is only a hint, and a context-length error from the server
    /// is handled anyway.
    pub async fn context_window(&self) -> Option<u64> {
        if let Ok(list) = self.model_list().await
            && let Some(window) = window_of(&list, &self.cfg.model)
        {
            return Some(window);
        }
        // llama-server serves `/props` at its root, beside `/v1`.
        let api = self.api_path();
        let root = api.strip_suffix("/v1").unwrap_or(&api);
        self.get_json(&format!("{root}/props"))
            .await
            .ok()?
            .pointer("/default_generation_settings/n_ctx")
            .and_then(Value::as_u64)
            .filter(|n| *n > 0)
    }

    /// The models the server lists (`GET /models`), in its order.
    pub async fn models(&self) -> Result<Vec<ListedModel>, ClientError> {
        let list = self.model_list().await?;
        let data =
            list.get("data")
                .and_then(Value::as_array)
                .ok_or_else(|| ClientError::Malformed {
                    endpoint: self.models_endpoint(),
                    reason: "the answer has no `data` list of models".into(),
                })?;
        Ok(data
            .iter()
            .filter_map(|m| {
                Some(ListedModel {
                    id: m.get("id")?.as_str()?.to_string(),
                    context_window: window_in(m),
                })
            })
            .collect())
    }

    /// `GET /models` as shown in messages.
    fn models_endpoint(&self) -> String {
        format!(
            "{}/models",
            self.endpoint.trim_end_matches("/chat/completions")
        )
    }

    /// The body of `GET /models`.
    async fn model_list(&self) -> Result<Value, ClientError> {
        self.get_json(&format!("{}/models", self.api_path())).await
    }

    /// The path of the API, where `/chat/completions` and `/models` are.
    fn api_path(&self) -> String {
        self.url
            .path()
            .trim_end_matches("/chat/completions")
            .to_string()
    }

    /// The JSON body of `GET path` on the server, within the connect
    /// timeout and 5 s more for each of the answer's head and body.
    async fn get_json(&self, path: &str) -> Result<Value, ClientError> {
        let mut url = self.url.clone();
        url.set_path(path);
        let endpoint = super::redact_url(url.as_str());
        let mut req = self.http.get(url).header(ACCEPT, "application/json");
        if let Some(key) = &self.cfg.api_key {
            req = req.bearer_auth(key);
        }
        let wait = self.cfg.connect_timeout + Duration::from_secs(5);
        let deadline = Instant::now() + 2 * wait;
        let (status, text) = super::once::once(&endpoint, req, wait, deadline).await?;
        if status >= 400 {
            let hint = match status {
                404 => " (this server lists no models there: check that the base URL ends in /v1)"
                    .to_string(),
                _ => super::attempt::status_hint(&self.cfg, status),
            };
            return Err(ClientError::Status {
                endpoint,
                status,
                body: excerpt(&text, self.cfg.api_key.as_deref()),
                hint,
                attempts: 0,
                earlier: Vec::new(),
            });
        }
        serde_json::from_str(&text).map_err(|_| ClientError::NotOpenAi {
            endpoint,
            found: if text.trim_start().starts_with('<') {
                "an HTML page".into()
            } else {
                format!(
                    "something that is not JSON: {}",
                    excerpt(&text, self.cfg.api_key.as_deref())
                )
            },
        })
    }
}

/// The window an entry of the list gives, in the entry or its `meta`.
fn window_in(entry: &Value) -> Option<u64> {
    let meta = entry.get("meta");
    FIELDS
        .iter()
        .find_map(|f| {
            entry
                .get(*f)
                .or_else(|| meta.and_then(|m| m.get(*f)))
                .and_then(Value::as_u64)
        })
        .filter(|n| *n > 0)
}

/// The window of `model` in a `/models` list; a list of one model answers
/// for whatever name was configured (local servers serve one model).
pub(crate) fn window_of(list: &Value, model: &str) -> Option<u64> {
    let data = list.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
    window_in(entry)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::window_of;

    #[test]
    fn windows_as_servers_report_them() {
        let vllm = json!({"data": [{"id": "qwen", "max_model_len": 32768}]});
        assert_eq!(window_of(&vllm, "qwen"), Some(32768));
        assert_eq!(window_of(&vllm, "other"), Some(32768));
        let many = json!({"data": [{"id": "a", "context_length": 8192}, {"id": "b"}]});
        assert_eq!(window_of(&many, "a"), Some(8192));
        assert_eq!(window_of(&many, "b"), None);
        assert_eq!(window_of(&many, "c"), None);
        assert_eq!(
            window_of(
                &json!({"data": [{"id": "x", "meta": {"n_ctx": 4096}}]}),
                "x"
            ),
            Some(4096)
        );
    }
}
