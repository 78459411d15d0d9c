//! The workspace policy: which tools exist and what each may touch.
//!
//! `warden.toml` at the workspace root grants capabilities per tool. Nothing
//! is granted that the file (or a tool's documented [`Baseline`]) does not
//! name: the built-in file tools get the workspace read-write, a drop-in
//! tool gets nothing until a `[tools.NAME]` section enables it. Grants are
//! one typed set of [`Capability`] values plus [`Limits`]; the same values
//! are stored in the trust record and compared by the trust diff.
//!
//! ```
//! use warden_policy::{Baseline, Capability, Policy};
//! let ws = std::env::temp_dir();
//! let policy = Policy::parse(
//!     "[tools.uppercase]\nread = [\".\"]\ntimeout = \"5s\"\n",
//!     &ws.join("warden.toml"),
//!     &ws,
//! )
//! .unwrap();
//! let (grants, _warnings) = policy.grants_for("uppercase", Baseline::Off).unwrap();
//! assert!(matches!(grants.caps[0], Capability::Dir { write: false, .. }));
//! ```

mod caps;
mod error;
mod file;
mod grants;
mod inert;
mod network;
mod trust;
mod units;

pub use caps::{Capability, Grants, Limits};
pub use error::{Error, Result};
pub use file::{
    DEFAULT_KEY_ENV, EnvEntry, McpLaunch, McpSection, ModelSection, PolicyFile, ToolSection,
    USER_CONFIG, UserConfig, is_tool_name,
};
pub use grants::{Baseline, Origin, Policy, load_user_config, mcp_key};
pub use inert::{inert, inert_text, json_kind};
pub use network::{HostPattern, NetworkAllow};
pub use trust::{
    Change, ComponentEntry, Decision, ToolRecord, TrustState, TrustStore, decide, diff, sha256_hex,
    sha256_hex_of,
};
pub use units::{format_size, parse_duration, parse_size};

/// File name of the workspace policy.
pub const POLICY_FILE: &str = "warden.toml";

/// The most of `warden.toml` warden reads: a policy is a few KiB (more is
/// a mistake, or an attack on warden's memory).
pub const POLICY_MAX: u64 = 1 << 20;
