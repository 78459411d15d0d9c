//! Whether a server constrains a reply to a JSON schema (structured
//! output), and in which field: asked once per endpoint and model by a
//! one-line generation whose schema allows a single value, and remembered
//! in a cache folder of warden's own.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use warden_state::StateDir;

use super::{Client, ClientError, Request, Structured};
use crate::Message;

/// The one value the probe's schema allows: a model that is not
/// constrained, asked to greet, does not write it.
const PROBE_VALUE: &str = "structured-output-ok";

/// Generous enough for a model that reasons first.
const PROBE_MAX_TOKENS: u64 = 512;

/// What the cache keeps for an endpoint and model.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    endpoint: String,
    model: String,
    /// The field that constrains replies; `None`: neither does.
    structured: Option<String>,
}

impl Client {
    /// Whether this endpoint and model honour a JSON schema for the reply,
    /// and in which field: what `cache` remembers for them, else
    /// [`Client::probe_structured`], remembered there. `Ok(None)`: neither
    /// `response_format` nor `format` is honoured. An error: the server
    /// could not be asked (nothing is remembered).
    pub async fn structured_output(
        &self,
        cache: Option<&StateDir>,
    ) -> Result<Option<Structured>, ClientError> {
        let name = self.cache_name();
        if let Some(cache) = cache
            && let Ok(Some(bytes)) = cache.read(&name)
            && let Ok(entry) = serde_json::from_slice::<Entry>(&bytes)
            && entry.endpoint == self.endpoint
            && entry.model == self.cfg.model
        {
            match entry.structured.as_deref().map(Structured::parse) {
                None => return Ok(None),
                Some(Some(s)) => return Ok(Some(s)),
                // Written by a newer warden: asked again.
                Some(None) => {}
            }
        }
        let found = self.probe_structured().await?;
        if let Some(cache) = cache {
            let entry = Entry {
                endpoint: self.endpoint.clone(),
                model: self.cfg.model.clone(),
                structured: found.map(|s| s.as_str().to_string()),
            };
            // Not remembered, it is asked again next time: nothing lost.
            if let Ok(bytes) = serde_json::to_vec(&entry) {
                let _ = cache.write_atomic(&name, &bytes);
            }
        }
        Ok(found)
    }

    /// Asks the server, uncached: a short generation constrained by
    /// `response_format`, then by Ollama's `format`; the first whose reply
    /// is the one value the schema allows is the field it honours. A
    /// server that refuses a field (400, 422) does not honour it.
    pub async fn probe_structured(&self) -> Result<Option<Structured>, ClientError> {
        let schema = json!({
            "type": "object",
            "properties": {"status": {"type": "string", "enum": [PROBE_VALUE]}},
            "required": ["status"],
            "additionalProperties": false,
        });
        let messages = [Message::User {
            content: "Greet me in one short sentence.".into(),
        }];
        for form in [Structured::ResponseFormat, Structured::Format] {
            let request = Request {
                format: Some((form, &schema)),
                max_tokens: Some(PROBE_MAX_TOKENS),
                ..Request::new(&messages, &[])
            };
            match self.complete(request, &mut |_| {}).await {
                Ok(reply) => {
                    let value: Option<Value> = serde_json::from_str(reply.content.trim()).ok();
                    if value.is_some_and(|v| v["status"] == PROBE_VALUE) {
                        return Ok(Some(form));
                    }
                }
                // The field refused as a bad request.
                Err(ClientError::Status {
                    status: 400 | 422, ..
                }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }

    /// The cache file of this endpoint and model.
    fn cache_name(&self) -> String {
        let key = format!("{}\n{}", self.endpoint, self.cfg.model);
        format!(
            "structured-{}.json",
            &warden_policy::sha256_hex(key.as_bytes())[..32]
        )
    }
}
