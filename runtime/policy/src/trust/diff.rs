//! What changed between the trusted configuration and the current one.

use std::collections::BTreeSet;
use std::fmt;

use super::{ToolGrants, TrustState};
use crate::units::format_size;
use crate::{Limits, POLICY_FILE};

/// One capability change between the trusted state and the current one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A tool is enabled that was not.
    ToolAdded {
        /// Tool name.
        tool: String,
        /// Everything it gets.
        grants: ToolGrants,
    },
    /// A tool is no longer enabled.
    ToolRemoved {
        /// Tool name.
        tool: String,
    },
    /// A tool may reach a directory (or write one) it could not.
    DirGained {
        /// Tool name.
        tool: String,
        /// Absolute directory.
        path: String,
        /// Read-write when true.
        write: bool,
    },
    /// A tool lost a directory grant.
    DirLost {
        /// Tool name.
        tool: String,
        /// Absolute directory.
        path: String,
        /// Read-write when true.
        write: bool,
    },
    /// A tool sees a host environment variable it did not.
    EnvGained {
        /// Tool name.
        tool: String,
        /// Variable name.
        name: String,
    },
    /// A tool no longer sees a host environment variable.
    EnvLost {
        /// Tool name.
        tool: String,
        /// Variable name.
        name: String,
    },
    /// A tool may reach a host it could not.
    NetworkGained {
        /// Tool name.
        tool: String,
        /// Host.
        host: String,
    },
    /// A tool can no longer reach a host.
    NetworkLost {
        /// Tool name.
        tool: String,
        /// Host.
        host: String,
    },
    /// A resource limit moved (either way: a raised limit is more power, a
    /// lowered one may break the tool).
    LimitChanged {
        /// Tool name.
        tool: String,
        /// `"memory"`, `"timeout"` or `"output"`.
        limit: &'static str,
        /// Trusted value, human form (`256MiB`, `30s`).
        from: String,
        /// Current value, human form.
        to: String,
    },
    /// A component file appeared in `.warden/tools`.
    ComponentAdded {
        /// File name.
        file: String,
        /// SHA-256 hex.
        hash: String,
        /// Tools it provides.
        tools: Vec<String>,
    },
    /// A trusted component file is gone.
    ComponentRemoved {
        /// File name.
        file: String,
    },
    /// A component file has different contents.
    ComponentChanged {
        /// File name.
        file: String,
        /// Trusted SHA-256 hex.
        from: String,
        /// Current SHA-256 hex.
        to: String,
    },
    /// The bytes of `warden.toml` changed, even if no capability did: the
    /// file also configures the model endpoint, and accepting it is what
    /// lets warden use the new text.
    PolicyChanged {
        /// Trusted SHA-256 hex; `None` when there was no file.
        from: Option<String>,
        /// Current SHA-256 hex; `None` when there is no file.
        to: Option<String>,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::ToolAdded { tool, grants } => {
                write!(f, "+ tool {tool} ({}): {}", grants.origin, describe(grants))
            }
            Change::ToolRemoved { tool } => write!(f, "- tool {tool}"),
            Change::DirGained { tool, path, write } => {
                write!(f, "+ {tool}: {} {path}", access(*write))
            }
            Change::DirLost { tool, path, write } => {
                write!(f, "- {tool}: {} {path}", access(*write))
            }
            Change::EnvGained { tool, name } => write!(f, "+ {tool}: env {name}"),
            Change::EnvLost { tool, name } => write!(f, "- {tool}: env {name}"),
            Change::NetworkGained { tool, host } => write!(f, "+ {tool}: network {host}"),
            Change::NetworkLost { tool, host } => write!(f, "- {tool}: network {host}"),
            Change::LimitChanged {
                tool,
                limit,
                from,
                to,
            } => write!(f, "~ {tool}: {limit} {from} → {to}"),
            Change::ComponentAdded { file, hash, tools } => {
                let tools = if tools.is_empty() {
                    "none".to_string()
                } else {
                    tools.join(", ")
                };
                write!(
                    f,
                    "+ component {file} sha256:{} (tools: {tools})",
                    short(hash)
                )
            }
            Change::ComponentRemoved { file } => write!(f, "- component {file}"),
            Change::ComponentChanged { file, from, to } => write!(
                f,
                "~ component {file} sha256:{} → sha256:{}",
                short(from),
                short(to)
            ),
            Change::PolicyChanged { from, to } => match (from, to) {
                (None, Some(to)) => write!(f, "+ {POLICY_FILE} sha256:{}", short(to)),
                (Some(_), None) => write!(f, "- {POLICY_FILE}"),
                (Some(from), Some(to)) => write!(
                    f,
                    "~ {POLICY_FILE} sha256:{} → sha256:{}",
                    short(from),
                    short(to)
                ),
                (None, None) => write!(f, "~ {POLICY_FILE}"),
            },
        }
    }
}

fn access(write: bool) -> &'static str {
    if write { "read-write" } else { "read-only" }
}

/// Enough of a hash to recognize it; the full one is in the record.
fn short(hash: &str) -> String {
    format!("{}…", hash.get(..8).unwrap_or(hash))
}

fn format_ms(ms: u64) -> String {
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    }
}

/// Everything a new tool gets, most dangerous first; limits only where they
/// differ from the built-in defaults, to keep the line short.
fn describe(g: &ToolGrants) -> String {
    let defaults = Limits::default();
    let mut parts: Vec<String> = g
        .write
        .iter()
        .map(|p| format!("read-write {p}"))
        .chain(g.read.iter().map(|p| format!("read-only {p}")))
        .chain(g.env.iter().map(|n| format!("env {n}")))
        .chain(g.network.iter().map(|h| format!("network {h}")))
        .collect();
    // Said outright, so that a line of limits alone is not read as access.
    if parts.is_empty() {
        parts.push("no access".to_string());
    }
    if g.memory != defaults.memory {
        parts.push(format!("memory {}", format_size(g.memory)));
    }
    if u128::from(g.timeout_ms) != defaults.timeout.as_millis() {
        parts.push(format!("timeout {}", format_ms(g.timeout_ms)));
    }
    if g.output != defaults.output {
        parts.push(format!("output {}", format_size(g.output)));
    }
    parts.join(", ")
}

/// The changes from `trusted` to `current`: the policy file first, then
/// components by file name, then tools alphabetically. Within a tool,
/// losses come before gains, so a directory going from read-only to
/// read-write reads as `DirLost` (read-only) then `DirGained` (read-write).
pub fn diff(trusted: &TrustState, current: &TrustState) -> Vec<Change> {
    let mut out = Vec::new();
    if trusted.policy_hash != current.policy_hash {
        out.push(Change::PolicyChanged {
            from: trusted.policy_hash.clone(),
            to: current.policy_hash.clone(),
        });
    }
    let files: BTreeSet<&String> = trusted
        .components
        .keys()
        .chain(current.components.keys())
        .collect();
    for file in files {
        match (trusted.components.get(file), current.components.get(file)) {
            (None, Some(c)) => out.push(Change::ComponentAdded {
                file: file.clone(),
                hash: c.hash.clone(),
                tools: c.tools.clone(),
            }),
            (Some(_), None) => out.push(Change::ComponentRemoved { file: file.clone() }),
            (Some(t), Some(c)) if t.hash != c.hash => out.push(Change::ComponentChanged {
                file: file.clone(),
                from: t.hash.clone(),
                to: c.hash.clone(),
            }),
            _ => {}
        }
    }
    let tools: BTreeSet<&String> = trusted.tools.keys().chain(current.tools.keys()).collect();
    for tool in tools {
        let added = |grants: &ToolGrants| Change::ToolAdded {
            tool: tool.clone(),
            grants: grants.clone(),
        };
        match (trusted.tools.get(tool), current.tools.get(tool)) {
            (None, Some(c)) => out.push(added(c)),
            (Some(_), None) => out.push(Change::ToolRemoved { tool: tool.clone() }),
            // Different code now answers to the name (a drop-in shadowing a
            // built-in, say): show it as a new tool with all its grants.
            (Some(t), Some(c)) if t.origin != c.origin => {
                out.push(Change::ToolRemoved { tool: tool.clone() });
                out.push(added(c));
            }
            (Some(t), Some(c)) => tool_changes(tool, t, c, &mut out),
            (None, None) => {}
        }
    }
    out
}

fn tool_changes(tool: &str, t: &ToolGrants, c: &ToolGrants, out: &mut Vec<Change>) {
    let dirs = |g: &'_ ToolGrants| -> BTreeSet<(String, bool)> {
        let ro = g.read.iter().map(|p| (p.clone(), false));
        ro.chain(g.write.iter().map(|p| (p.clone(), true)))
            .collect()
    };
    let (before, after) = (dirs(t), dirs(c));
    for (path, write) in before.difference(&after).cloned() {
        out.push(Change::DirLost {
            tool: tool.to_string(),
            path,
            write,
        });
    }
    for (path, write) in after.difference(&before).cloned() {
        out.push(Change::DirGained {
            tool: tool.to_string(),
            path,
            write,
        });
    }
    let (before, after) = (set(&t.env), set(&c.env));
    for name in before.difference(&after) {
        out.push(Change::EnvLost {
            tool: tool.to_string(),
            name: name.to_string(),
        });
    }
    for name in after.difference(&before) {
        out.push(Change::EnvGained {
            tool: tool.to_string(),
            name: name.to_string(),
        });
    }
    let (before, after) = (set(&t.network), set(&c.network));
    for host in before.difference(&after) {
        out.push(Change::NetworkLost {
            tool: tool.to_string(),
            host: host.to_string(),
        });
    }
    for host in after.difference(&before) {
        out.push(Change::NetworkGained {
            tool: tool.to_string(),
            host: host.to_string(),
        });
    }
    type Human = fn(u64) -> String;
    let limits: [(&'static str, u64, u64, Human); 3] = [
        ("memory", t.memory, c.memory, format_size),
        ("timeout", t.timeout_ms, c.timeout_ms, format_ms),
        ("output", t.output, c.output, format_size),
    ];
    for (limit, from, to, human) in limits {
        if from != to {
            out.push(Change::LimitChanged {
                tool: tool.to_string(),
                limit,
                from: human(from),
                to: human(to),
            });
        }
    }
}

fn set(items: &[String]) -> BTreeSet<&str> {
    items.iter().map(String::as_str).collect()
}
