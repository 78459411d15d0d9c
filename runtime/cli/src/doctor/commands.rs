//! How commands (`shell`, MCP servers started by command) are confined
//! here, as the confinement itself reports it.

use super::Check;

/// The confinement a command gets: `warden-confine` confines `true` and
/// says what was in force, or what is missing.
pub fn checks() -> Vec<Check> {
    match warden_confine::probe() {
        Ok(mechanism) => vec![Check::pass(format!("commands are confined: {mechanism}"))],
        Err(e) => vec![Check::fail(
            e.to_string(),
            "tools that run programs (shell, MCP servers by command) are refused here; \
             the rest of warden works",
        )],
    }
}
