//! The sandbox: the only crate that knows wasmtime.
//!
//! It loads `warden:tool` components (compiled once, cached on disk under a
//! MAC), asks each which tools it offers (remembered in the cache, so that
//! later starts list them without loading the component before its first
//! call), and binds each tool to its
//! [`Grants`](warden_policy::Grants) once: the granted directories are
//! opened then and every call uses those handles. Each call runs in a fresh
//! instance with only what the grants give it (preopened directories, named
//! environment variables, HTTP to the granted hosts, a memory cap covering
//! what the host holds for it) and ends by its deadline, whatever it waits
//! on, or when cancelled.
//!
//! ```no_run
//! use std::sync::Arc;
//! use warden_policy::{Baseline, Policy};
//! use warden_sandbox::{CallControl, ComponentSource, HostConfig, ToolHost};
//!
//! let ws = std::env::current_dir().unwrap();
//! let mut host = ToolHost::new(HostConfig::new(ws.clone())).unwrap();
//! let bytes: &'static [u8] = Box::leak(std::fs::read("fs.wasm").unwrap().into_boxed_slice());
//! host.load([ComponentSource::builtin("fs", bytes)]);
//! let host = Arc::new(host);
//! let (grants, _) = Policy::load(&ws).unwrap().grants_for("read_file", Baseline::Workspace).unwrap();
//! let read = host.bind("read_file", &grants).unwrap();
//! let out = read.call_text(r#"{"path":"Cargo.toml"}"#, &CallControl::new());
//! println!("{}", out.model_text());
//! ```

mod addrs;
mod alloc;
mod bind;
mod bindings;
mod bound;
mod cache;
mod call;
mod clock;
mod desktop;
mod effects;
mod engine;
mod error;
mod extras;
mod granted;
mod host;
mod net;
mod outbound;
mod outcome;
mod process;
mod schema;
mod secrets;
mod send;
mod source;
mod spec;
mod wasi;
mod watchdog;

pub use alloc::{HostAlloc, host_memory_counted};
pub use bound::{BoundTool, Checked};
pub use cache::{CacheConfig, CacheStats};
pub use desktop::{AppRequest, Declared, DesktopAction, DesktopCall, Does, Refusal, Said};
pub use effects::{Access, At, Content, Effect, Effects, NewContent, Replacement, Touch};
pub use engine::{CALL_THREAD_STACK, PoolConfig};
pub use error::{Error, Result};
pub use granted::{GrantedDirs, Peek};
pub use host::{HostConfig, LoadProblem, OnCompile, ToolHost, ToolInfo};
pub use outbound::{Outbound, OutboundBody, OutboundError};
pub use outcome::{CallOutcome, ErrorKind, ToolError, cap_output};
pub use process::resolve_program;
pub use secrets::SECRETS_FILE;
pub use source::ComponentSource;
pub use spec::{ArgsCheck, ToolSpec};
pub use warden_desktop::{Launch, Started};
pub use wasi::{Mount, mounts};
pub use watchdog::CallControl;
