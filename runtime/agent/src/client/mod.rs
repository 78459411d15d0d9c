//! OpenAI-compatible chat-completions client (OpenAI, llama.cpp server,
//! vLLM, Ollama, DeepSeek, …), streaming or not, with retries.
//!
//! - `config`: [`ClientConfig`], where and how to connect.
//! - `types`: [`Request`], [`ClientEvent`], [`Completion`].
//! - `request`: [`Client`], the request body and the retry loop.
//! - `attempt`: one HTTP exchange and the sorting of its failures.
//! - `sse`: assembling a streamed answer (text, tool-call deltas, usage).
//! - `reply`: reading a whole answer; JSON helpers.
//! - `models`: the context window a server reports in `/models`.
//! - `retry`: backoff with jitter, `Retry-After`.
//! - `shown`: text reported once across retries.
//! - `error`: [`ClientError`] and body excerpts.

mod attempt;
mod config;
mod error;
mod models;
mod reply;
mod request;
mod retry;
mod shown;
mod sse;
#[cfg(test)]
mod sse_tests;
mod types;

pub use config::{ClientConfig, redact_url};
pub use error::ClientError;
pub use request::Client;
pub use types::{ClientEvent, Completion, Request};
