//! The workspace policy: which tools exist and what each may touch.
//!
//! `warden.toml` at the workspace root grants capabilities per tool. Nothing
//! is granted that the file (or the documented defaults) does not name:
//! built-in file tools get the workspace read-write, a drop-in tool gets
//! nothing until a `[tools.NAME]` section enables it.
//!
//! ```
//! use warden_policy::{Origin, Policy};
//! let ws = std::env::temp_dir();
//! let policy = Policy::parse(
//!     "[tools.uppercase]\nread = [\".\"]\ntimeout = \"5s\"\n",
//!     &ws.join("warden.toml"),
//!     &ws,
//! )
//! .unwrap();
//! let (grants, _warnings) = policy.grants_for("uppercase", Origin::Workspace).unwrap();
//! assert!(!grants.dirs[0].write);
//! ```

mod error;
mod file;
mod grants;
mod network;
mod trust;
mod units;

pub use error::{Error, Result};
pub use file::{ModelSection, PolicyFile, ToolSection, UserConfig, is_tool_name};
pub use grants::{DirGrant, Grants, Limits, Origin, Policy, load_user_config};
pub use network::{HostPattern, NetworkAllow};
pub use trust::{
    Change, ComponentEntry, Decision, ToolGrants, TrustState, TrustStore, decide, diff, sha256_hex,
};
pub use units::{parse_duration, parse_size};

/// File name of the workspace policy.
pub const POLICY_FILE: &str = "warden.toml";
