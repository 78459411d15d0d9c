//! The model's context window as the server reports it in `/models`
//! (vLLM `max_model_len`, OpenRouter and LM Studio `context_length`, …).

use std::time::Duration;

use reqwest::header::ACCEPT;
use serde_json::Value;

use super::Client;

/// Fields that hold the window, in the entry or its `meta`.
const FIELDS: [&str; 5] = [
    "context_length",
    "max_model_len",
    "context_window",
    "max_context_length",
    "n_ctx",
];

impl Client {
    /// The context window of the configured model according to the
    /// server's `/models`, or `None` when it does not say (or does not
    /// answer within a few seconds). Never an error: the window is only a
    /// hint, and a context-length error from the server is handled anyway.
    pub async fn context_window(&self) -> Option<u64> {
        let mut url = self.url.clone();
        let path = url.path().trim_end_matches("/chat/completions").to_string();
        url.set_path(&format!("{path}/models"));
        let mut req = self.http.get(url).header(ACCEPT, "application/json");
        if let Some(key) = &self.cfg.api_key {
            req = req.bearer_auth(key);
        }
        let wait = self.cfg.connect_timeout + Duration::from_secs(5);
        let resp = tokio::time::timeout(wait, req.send()).await.ok()?.ok()?;
        if !resp.status().is_success() {
            return None;
        }
        let body: Value = tokio::time::timeout(wait, resp.json()).await.ok()?.ok()?;
        window_of(&body, &self.cfg.model)
    }
}

/// The window of `model` in a `/models` list; a list of one model answers
/// for whatever name was configured (local servers serve one model).
pub(crate) fn window_of(list: &Value, model: &str) -> Option<u64> {
    let data = list.get("data")?.as_array()?;
    let entry = data
        .iter()
        .find(|m| m.get("id").and_then(Value::as_str) == Some(model))
        .or_else(|| (data.len() == 1).then(|| &data[0]))?;
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
