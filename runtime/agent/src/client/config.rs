//! Where and how to reach the chat-completions server.

use std::fmt;
use std::time::Duration;

/// Connection settings of a [`Client`](super::Client).
///
/// `Debug` redacts the API key so that the configuration can be logged.
#[derive(Clone)]
pub struct ClientConfig {
    /// The API root, e.g. `http://127.0.0.1:8080/v1` (a trailing slash is
    /// tolerated); `/chat/completions` is appended.
    pub base_url: String,
    /// Model name sent with every request.
    pub model: String,
    /// Sent as `Authorization: Bearer …` when set; never logged, never part
    /// of an error message.
    pub api_key: Option<String>,
    /// Stream the answer (SSE) instead of waiting for the whole of it
    /// (default: on, so that text shows as it is generated).
    pub stream: bool,
    /// Maximum time to establish the TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Maximum wait for the response head, and between two stream chunks:
    /// a slow model is fine as long as it keeps talking.
    pub idle_timeout: Duration,
    /// Deadline of a request until its answer starts, all attempts and
    /// pauses included: a server that never answers fails within it. Once
    /// the answer streams, only `idle_timeout` applies, so that a long
    /// answer is never cut.
    pub request_timeout: Duration,
    /// The environment variable the key comes from, named when the server
    /// refuses the key (401/403).
    pub api_key_env: Option<String>,
    /// Attempts in total, the first one included (0 counts as 1).
    pub max_attempts: u32,
    /// Upper bound of the first backoff; doubled at each retry.
    pub backoff_base: Duration,
    /// Cap of the exponential backoff.
    pub backoff_max: Duration,
}

impl ClientConfig {
    /// Settings for `model` at `base_url`, streaming, with the default
    /// timeouts (connect 10 s, idle 120 s, request 300 s) and retries (5
    /// attempts, backoff from 500 ms up to 30 s).
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> ClientConfig {
        ClientConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            stream: true,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(300),
            api_key_env: None,
            max_attempts: 5,
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(30),
        }
    }
}

impl fmt::Debug for ClientConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            // The key itself must never reach a log.
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("stream", &self.stream)
            .field("connect_timeout", &self.connect_timeout)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("api_key_env", &self.api_key_env)
            .field("max_attempts", &self.max_attempts)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .finish()
    }
}

/// `url` with any `user:password@` part replaced by `***@`, for anything
/// written down or shown (the transcript, errors): credentials in a base
/// URL must not reach a file the model's tools may read.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{scheme}://***@{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

#[cfg(test)]
mod redact_tests {
    use super::redact_url;

    #[test]
    fn credentials_in_a_url_are_redacted() {
        assert_eq!(
            redact_url("https://user:s3cret@example.com/v1"),
            "https://***@example.com/v1"
        );
        assert_eq!(
            redact_url("http://tok@10.0.0.1:8080"),
            "http://***@10.0.0.1:8080"
        );
        assert_eq!(
            redact_url("http://127.0.0.1:8080/v1?x=a@b"),
            "http://127.0.0.1:8080/v1?x=a@b"
        );
        assert_eq!(redact_url("not a url"), "not a url");
    }
}
