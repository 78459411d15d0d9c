//! Whether the server takes a request feature: one tiny request, sent
//! once, that carries it (`warden doctor --model-check`).

use std::time::Instant;

use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Value, json};

use super::error::excerpt;
use super::{Client, ClientError};

/// A feature of a chat-completions request a server may refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// Native tool calling: a `tools` list (one tool with no arguments).
    Tools,
    /// Structured output: `response_format` with a JSON schema.
    JsonSchema,
}

impl Feature {
    /// How it is named to the user.
    pub fn name(self) -> &'static str {
        match self {
            Feature::Tools => "native tool calls (`tools`)",
            Feature::JsonSchema => "structured output (`response_format` json_schema)",
        }
    }

    /// The request: a one-word task, so that the answer is a few tokens.
    /// No `max_tokens`: some servers refuse it, and a request refused for
    /// another field would be a wrong verdict on this one.
    fn body(self, model: &str) -> Value {
        let mut body = json!({
            "model": model,
            "messages": [{"role": "user", "content": "Answer with the single word ok."}],
            "stream": false,
        });
        match self {
            Feature::Tools => {
                body["tools"] = json!([{
                    "type": "function",
                    "function": {
                        "name": "ping",
                        "description": "Does nothing.",
                        "parameters": {"type": "object", "properties": {}},
                    },
                }]);
            }
            Feature::JsonSchema => {
                body["response_format"] = json!({
                    "type": "json_schema",
                    "json_schema": {
                        "name": "answer",
                        "strict": true,
                        "schema": {
                            "type": "object",
                            "properties": {"ok": {"type": "boolean"}},
                            "required": ["ok"],
                            "additionalProperties": false,
                        },
                    },
                });
            }
        }
        body
    }
}

/// What the server did with a request carrying a feature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeatureCheck {
    /// It answered (2xx with a chat completion).
    Accepted,
    /// It refused the request (400 or 422), with its reason.
    Refused {
        /// The status.
        status: u16,
        /// The server's message.
        reason: String,
    },
}

impl Client {
    /// Sends one small non-streamed request carrying `feature`, without
    /// retries, and says whether the server took it. Errors that say
    /// nothing about the feature (no connection, a refused key, an unknown
    /// model, a server error) are errors.
    pub async fn check(&self, feature: Feature) -> Result<FeatureCheck, ClientError> {
        let endpoint = self.endpoint.clone();
        let mut req = self
            .http
            .post(self.url.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(feature.body(&self.cfg.model).to_string());
        if let Some(key) = &self.cfg.api_key {
            req = req.bearer_auth(key);
        }
        let deadline = Instant::now() + self.cfg.request_timeout;
        let (status, text) =
            super::once::once(&endpoint, req, self.cfg.idle_timeout, deadline).await?;
        let reason = excerpt(&text, self.cfg.api_key.as_deref());
        if matches!(status, 400 | 422) {
            return Ok(FeatureCheck::Refused { status, reason });
        }
        if status >= 300 {
            return Err(ClientError::Status {
                endpoint,
                status,
                body: reason,
                hint: super::attempt::status_hint(&self.cfg, status),
                attempts: 0,
                earlier: Vec::new(),
            });
        }
        let answer: Value = serde_json::from_str(&text).map_err(|_| ClientError::NotOpenAi {
            endpoint: endpoint.clone(),
            found: format!("something that is not JSON: {reason}"),
        })?;
        if answer.get("choices").and_then(Value::as_array).is_none() {
            return Err(ClientError::Malformed {
                endpoint,
                reason: format!("the answer is not a chat completion: {reason}"),
            });
        }
        Ok(FeatureCheck::Accepted)
    }
}
