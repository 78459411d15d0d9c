//! OpenAI-compatible chat-completions client (OpenAI, llama.cpp server,
//! vLLM, Ollama, DeepSeek, …), streaming or not, with retries.
//!
//! - `config`: [`ClientConfig`], where and how to connect.
//! - `types`: [`Request`], [`Structured`], [`ClientEvent`], [`Completion`].
//! - `request`: [`Client`], the request body and the retry loop.
//! - `attempt`: one HTTP exchange and the sorting of its failures.
//! - `events`: the event-stream format, decoded from bytes.
//! - `sse`: reading a streamed answer (text, tool-call deltas, usage).
//! - `reply`: reading a whole answer; JSON helpers.
//! - `models`: the server's `/models`: its list, and the context window.
//! - `check`: whether the server takes `tools` or `response_format`.
//! - `verdict`: how a server's error is handled, as a status or in a stream.
//! - `structured`: whether the server honours a JSON schema for the reply
//!   (`response_format`, Ollama's `format`), probed once and cached.
//! - `retry`: backoff with jitter, `Retry-After`.
//! - `shown`: text reported once across retries.
//! - `error`: [`ClientError`] and body excerpts.

mod attempt;
mod check;
mod config;
mod error;
mod events;
mod models;
mod once;
mod reply;
mod request;
mod retry;
mod shown;
mod sse;
#[cfg(test)]
mod sse_tests;
mod structured;
mod types;
mod verdict;

pub use check::{Feature, FeatureCheck};
pub use config::{ClientConfig, redact_url};
pub use error::ClientError;
pub use models::ListedModel;
pub use request::Client;
pub use sse::read_sse_body;
pub use types::{ClientEvent, Completion, Request, Structured};
