//! The sandbox: the only crate that knows wasmtime.
//!
//! It loads `warden:tool` components (compiled once, cached on disk), asks
//! each which tools it offers, and runs every call in a fresh instance that
//! has only what the call's [`Grants`](warden_policy::Grants) give it:
//! preopened directories, named environment variables, HTTP to the granted
//! hosts only, a memory cap and a time limit. Nothing else exists for the
//! guest.
//!
//! ```no_run
//! use std::sync::Arc;
//! use warden_policy::Policy;
//! use warden_sandbox::{ComponentSource, HostConfig, ToolHost, Toolset};
//!
//! let ws = std::env::current_dir().unwrap();
//! let mut host = ToolHost::new(HostConfig { workspace: ws.clone(), cache_dir: None, make_ahead: true }).unwrap();
//! let bytes: &'static [u8] = Box::leak(std::fs::read("fs.wasm").unwrap().into_boxed_slice());
//! host.load([ComponentSource::builtin("fs", bytes)]);
//! let tools = Toolset::new(Arc::new(host), &Policy::load(&ws).unwrap());
//! let out = tools.call("read_file", r#"{"path":"Cargo.toml"}"#);
//! println!("{}", out.model_text());
//! ```

mod bindings;
mod cache;
mod clock;
mod dirs;
mod engine;
mod error;
mod host;
mod net;
mod outcome;
mod source;
mod spec;
mod toolset;
mod warm;
mod wasi;

pub use cache::CacheStats;
pub use error::{Error, Result};
pub use host::{HostConfig, LoadProblem, ToolHost, ToolInfo};
pub use outcome::{CallOutcome, ErrorKind, ToolError};
pub use source::ComponentSource;
pub use spec::ToolSpec;
pub use toolset::{Entry, Toolset};
pub use wasi::{Mount, mounts};
