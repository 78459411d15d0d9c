//! OpenAI-compatible chat-completions client (OpenAI, llama.cpp server,
//! vLLM, Ollama, DeepSeek, …), streaming or not, with retries.
//!
//! - `config`: [`ClientConfig`], where and how to connect.
//! - `types`: [`Request`], [`ClientEvent`], [`Completion`].
//! - `request`: [`Client`], the request body and the retry loop.
//! - `attempt`: one HTTP exchange and the sorting of its failures.
//! - `sse`: assembling a streamed answer (text, tool-call deltas, usage).
//! - `reply`: reading a whole answer; JSON helpers.
//! - `retry`: backoff with jitter, `Retry-After`.
//! - `error`: [`ClientError`] and body excerpts.

mod attempt;
mod config;
mod error;
mod reply;
mod request;
mod retry;
mod sse;
mod types;

pub use config::{ClientConfig, redact_url};
pub use error::ClientError;
pub use request::Client;
pub use types::{ClientEvent, Completion, Request};
