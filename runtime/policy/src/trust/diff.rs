//! What changed between the trusted configuration and the current one.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use super::{ToolRecord, TrustState};
use crate::inert::inert;
use crate::units::{format_duration, format_size};
use crate::{Capability, Limits, McpLaunch, POLICY_FILE, PolicyFile};

/// One change between the trusted state and the current one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A tool is enabled that was not.
    ToolAdded {
        /// Tool name.
        tool: String,
        /// Everything it gets.
        record: ToolRecord,
    },
    /// A tool is no longer enabled.
    ToolRemoved {
        /// Tool name.
        tool: String,
    },
    /// A tool gains a capability.
    Gained {
        /// Tool name.
        tool: String,
        /// What it may now reach.
        cap: Capability,
    },
    /// A tool loses a capability.
    Lost {
        /// Tool name.
        tool: String,
        /// What it may no longer reach.
        cap: Capability,
    },
    /// A server started by command is granted hosts where it had none: the
    /// process gets the whole network (a process cannot be held to a host
    /// list).
    NetworkOpened {
        /// Tool name (`mcp.NAME`).
        tool: String,
        /// The hosts granted.
        hosts: Vec<String>,
    },
    /// A server started by command is granted no host any more: the
    /// process loses the network.
    NetworkClosed {
        /// Tool name (`mcp.NAME`).
        tool: String,
        /// The hosts it was granted.
        hosts: Vec<String>,
    },
    /// A server started by command is granted other hosts and still some:
    /// the process had the whole network and keeps it.
    NetworkHostsChanged {
        /// Tool name (`mcp.NAME`).
        tool: String,
        /// The hosts it was granted.
        from: Vec<String>,
        /// The hosts it is granted.
        to: Vec<String>,
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
    /// A workspace file an MCP server's command line names (its script)
    /// has other contents, appeared or went.
    LaunchFileChanged {
        /// Tool name (`mcp.NAME`).
        tool: String,
        /// The file as the command line names it.
        file: String,
        /// Trusted SHA-256 hex; `None` when it was not there.
        from: Option<String>,
        /// Current SHA-256 hex; `None` when it is not there.
        to: Option<String>,
    },
    /// A component file appeared in `.warden/tools`.
    ComponentAdded {
        /// File name.
        file: String,
        /// SHA-256 hex.
        hash: String,
        /// Size in bytes.
        size: u64,
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
    /// A setting of `warden.toml` outside the tools changed: a `[model]`
    /// field or `approval`.
    Setting {
        /// `model.base_url`, `approval`, ...
        key: &'static str,
        /// Trusted value as written (`None`: unset).
        from: Option<String>,
        /// Current value as written (`None`: unset).
        to: Option<String>,
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
    /// `AGENTS.md` appeared, changed or went: its text steers the model.
    InstructionsChanged {
        /// Trusted SHA-256 hex; `None` when there was none.
        from: Option<String>,
        /// Current SHA-256 hex; `None` when there is none.
        to: Option<String>,
    },
}

/// Every line is safe to print: paths and file names from the workspace
/// are shown inert.
impl Change {
    /// Whether it lets a tool run programs it could not (a program to
    /// `exec`, or a new tool or server that runs some): the confinement
    /// they run under is then part of what is trusted.
    pub fn runs_programs(&self) -> bool {
        match self {
            Change::ToolAdded { record, .. } => {
                matches!(record.mcp_launch(), Some(McpLaunch::Command(_)))
                    || record
                        .caps
                        .iter()
                        .any(|c| matches!(c, Capability::Exec { .. }))
            }
            Change::Gained { cap, .. } => matches!(cap, Capability::Exec { .. }),
            _ => false,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::ToolAdded { tool, record } => match record.mcp_launch() {
                Some(McpLaunch::Command(command)) => write!(
                    f,
                    "+ {tool}: starts `{}` confined to: {}; its tools reach the model",
                    inert(&command_line(&command)),
                    describe(tool, record)
                ),
                Some(McpLaunch::Url(url)) => write!(
                    f,
                    "+ {tool}: connects to {} with: {}; its tools reach the model",
                    inert(&url),
                    describe(tool, record)
                ),
                None => write!(
                    f,
                    "+ tool {tool} ({}): {}",
                    record.origin,
                    describe(tool, record)
                ),
            },
            Change::ToolRemoved { tool } if tool.starts_with("mcp.") => write!(f, "- {tool}"),
            Change::ToolRemoved { tool } => write!(f, "- tool {tool}"),
            Change::Gained { tool, cap } => write!(f, "+ {tool}: {}", shown(tool, cap)),
            Change::Lost { tool, cap } => write!(f, "- {tool}: {cap}"),
            Change::NetworkOpened { tool, hosts } => {
                write!(f, "+ {tool}: {}", whole_network(hosts))
            }
            Change::NetworkClosed { tool, hosts } => write!(
                f,
                "- {tool}: the whole network (it was granted for {})",
                hosts.join(", ")
            ),
            Change::NetworkHostsChanged { tool, from, to } => write!(
                f,
                "~ {tool}: still {}; it was granted for {}",
                whole_network(to),
                from.join(", ")
            ),
            Change::LimitChanged {
                tool,
                limit,
                from,
                to,
            } => write!(f, "~ {tool}: {limit} {from} → {to}"),
            Change::LaunchFileChanged {
                tool,
                file,
                from,
                to,
            } => match (from, to) {
                (Some(from), Some(to)) => write!(
                    f,
                    "~ {tool}: runs {} sha256:{} → sha256:{}",
                    inert(file),
                    short(from),
                    short(to)
                ),
                (None, Some(to)) => {
                    write!(f, "+ {tool}: runs {} sha256:{}", inert(file), short(to))
                }
                (_, None) => write!(f, "- {tool}: runs {} (gone)", inert(file)),
            },
            Change::ComponentAdded { file, hash, size } => write!(
                f,
                "+ component {} ({}, sha256:{}); it runs only once trusted, and its tools \
                 get only what warden.toml grants them",
                inert(file),
                format_size(*size),
                short(hash)
            ),
            Change::ComponentRemoved { file } => write!(f, "- component {}", inert(file)),
            Change::ComponentChanged { file, from, to } => write!(
                f,
                "~ component {} sha256:{} → sha256:{}",
                inert(file),
                short(from),
                short(to)
            ),
            Change::Setting { key, from, to } => setting(f, key, from.as_deref(), to.as_deref()),
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
            Change::InstructionsChanged { from, to } => match (from, to) {
                (Some(from), Some(to)) => write!(
                    f,
                    "~ {INSTRUCTIONS} sha256:{} → sha256:{}: its text goes into the model's \
                     instructions; read it before trusting",
                    short(from),
                    short(to)
                ),
                (_, Some(to)) => write!(
                    f,
                    "+ {INSTRUCTIONS} sha256:{}: its text goes into the model's instructions; \
                     read it before trusting",
                    short(to)
                ),
                (_, None) => write!(f, "- {INSTRUCTIONS}"),
            },
        }
    }
}

/// A capability as a diff line shows it a tool gets it; a secret with what
/// it means: the scrub is a second line, a host that echoes the value
/// hands it over.
fn shown(tool: &str, cap: &Capability) -> String {
    match cap {
        Capability::Secret { name, hosts, .. } => format!(
            "{cap}; {tool} can read {}'s value if {} reflects it",
            inert(name),
            inert(&hosts.join(" or "))
        ),
        _ => cap.to_string(),
    }
}

/// The project instructions file, as the diff names it.
const INSTRUCTIONS: &str = "AGENTS.md";

/// One setting's line: the values, then what the change means for the user.
fn setting(
    f: &mut fmt::Formatter<'_>,
    key: &str,
    from: Option<&str>,
    to: Option<&str>,
) -> fmt::Result {
    let shown = |v: &str| inert(v).into_owned();
    match (from, to) {
        (None, Some(to)) => write!(f, "+ {key} = {}", shown(to))?,
        (Some(from), None) => write!(f, "- {key} = {}", shown(from))?,
        (Some(from), Some(to)) => write!(f, "~ {key}: {} → {}", shown(from), shown(to))?,
        (None, None) => write!(f, "~ {key}")?,
    }
    // Values are shown as written: strings quoted.
    match (key, to.map(|v| v.trim_matches('"'))) {
        ("model.base_url", Some(url)) => write!(
            f,
            ": will send your API key, if one is set, to {} (unless --base-url, \
             OPENAI_BASE_URL or base_url in your own config names another endpoint)",
            inert(host_of(url))
        ),
        ("model.api_key_env", Some(_)) => write!(
            f,
            ": ignored, only your own config chooses the API key variable"
        ),
        ("approval", Some("never")) => write!(
            f,
            ": tool calls run without asking (unless your config or --approval asks more)"
        ),
        _ => Ok(()),
    }
}

/// `host[:port]` of a URL, without credentials: where a request goes.
fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit_once('@').map_or(authority, |(_, h)| h)
}

/// The settings of a policy text outside the tools, each with its value as
/// written; nothing for a text that does not parse (the start reports it).
fn settings(text: Option<&str>) -> Vec<(&'static str, Option<String>)> {
    let Some(file) = text.and_then(|t| toml::from_str::<PolicyFile>(t).ok()) else {
        return Vec::new();
    };
    let m = file.model;
    let quoted = |v: Option<String>| v.map(|v| format!("{v:?}"));
    let plain = |v: Option<String>| v;
    let secs = |v: Option<std::time::Duration>| v.map(format_duration);
    vec![
        ("approval", quoted(file.approval)),
        ("confinement", quoted(file.confinement)),
        ("model.base_url", quoted(m.base_url)),
        ("model.api_key_env", quoted(m.api_key_env)),
        ("model.model", quoted(m.model)),
        ("model.protocol", quoted(m.protocol)),
        ("model.stream", plain(m.stream.map(|b| b.to_string()))),
        ("model.max_turns", plain(m.max_turns.map(|n| n.to_string()))),
        (
            "model.max_attempts",
            plain(m.max_attempts.map(|n| n.to_string())),
        ),
        ("model.connect_timeout", secs(m.connect_timeout)),
        ("model.idle_timeout", secs(m.idle_timeout)),
    ]
}

/// A command as one line, each argument quoted where it needs to be.
fn command_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@".contains(c))
            {
                a.clone()
            } else {
                format!("{a:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Enough of a hash to recognize it; the full one is in the record.
fn short(hash: &str) -> String {
    format!("{}…", hash.get(..8).unwrap_or(hash))
}

/// The hosts `r` is granted.
fn hosts(r: &ToolRecord) -> Vec<String> {
    (r.caps.iter())
        .filter_map(|c| match c {
            Capability::Net { host } => Some(host.to_string()),
            _ => None,
        })
        .collect()
}

/// What a process granted `hosts` (at least one) gets.
fn whole_network(hosts: &[String]) -> String {
    format!(
        "the whole network, loopback and local addresses too (granted for {}: a process \
         cannot be held to a host list)",
        hosts.join(", ")
    )
}

/// Everything a new tool gets, most dangerous first; limits only where they
/// differ from the built-in defaults, to keep the line short.
fn describe(tool: &str, r: &ToolRecord) -> String {
    let writes = r
        .caps
        .iter()
        .filter(|c| matches!(c, Capability::Dir { write: true, .. }));
    let reads = r
        .caps
        .iter()
        .filter(|c| matches!(c, Capability::Dir { write: false, .. }));
    // A process cannot be held to a host list: a server started by command
    // that is granted any host gets the host's whole network, and the user
    // must see that, not the list.
    let process = matches!(r.mcp_launch(), Some(McpLaunch::Command(_)));
    let hosts = if process { hosts(r) } else { Vec::new() };
    // Each app it may start unconfined is a line of its own (see `diff`).
    let others = r.caps.iter().filter(|c| {
        let shown_apart =
            (matches!(c, Capability::Net { .. }) && process) || matches!(c, Capability::App { .. });
        !(matches!(c, Capability::Dir { .. }) || shown_apart)
    });
    let mut parts: Vec<String> = writes
        .chain(reads)
        .chain(others)
        .map(|c| shown(tool, c))
        .collect();
    if !hosts.is_empty() {
        parts.push(whole_network(&hosts));
    }
    // Said outright, so that a line of limits alone is not read as access.
    if parts.is_empty() {
        let apps = r.caps.iter().any(|c| matches!(c, Capability::App { .. }));
        parts.push(
            if apps {
                "the desktop apps below"
            } else {
                "no access"
            }
            .to_string(),
        );
    }
    let defaults = Limits::default().named();
    for ((name, value), (_, default)) in r.limits.named().into_iter().zip(defaults) {
        if value != default {
            parts.push(format!("{name} {value}"));
        }
    }
    parts.join(", ")
}

/// The changes from `trusted` to `current`: the policy file first, then
/// components by file name, then tools alphabetically. Within a tool,
/// losses come before gains, so a directory going from read-only to
/// read-write reads as `Lost` (read-only) then `Gained` (read-write).
pub fn diff(trusted: &TrustState, current: &TrustState) -> Vec<Change> {
    let mut out = Vec::new();
    if trusted.policy_hash != current.policy_hash {
        out.push(Change::PolicyChanged {
            from: trusted.policy_hash.clone(),
            to: current.policy_hash.clone(),
        });
        let before = settings(trusted.policy_text.as_deref());
        let after = settings(current.policy_text.as_deref());
        for (key, to) in &after {
            let from = before
                .iter()
                .find(|(k, _)| k == key)
                .and_then(|(_, v)| v.clone());
            if from != *to {
                out.push(Change::Setting {
                    key,
                    from,
                    to: to.clone(),
                });
            }
        }
        // A file that no longer parses, or is gone: what it set is unset.
        if after.is_empty() {
            for (key, from) in before.into_iter().filter(|(_, v)| v.is_some()) {
                out.push(Change::Setting {
                    key,
                    from,
                    to: None,
                });
            }
        }
    }
    if trusted.instructions_hash != current.instructions_hash {
        out.push(Change::InstructionsChanged {
            from: trusted.instructions_hash.clone(),
            to: current.instructions_hash.clone(),
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
                size: c.size,
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
        // A new tool with all its grants; each desktop app it may start,
        // unconfined, on a line of its own after it, said plainly.
        let added = |record: &ToolRecord, out: &mut Vec<Change>| {
            out.push(Change::ToolAdded {
                tool: tool.clone(),
                record: record.clone(),
            });
            for cap in record.caps.iter() {
                if matches!(cap, Capability::App { .. }) {
                    out.push(Change::Gained {
                        tool: tool.clone(),
                        cap: cap.clone(),
                    });
                }
            }
        };
        match (trusted.tools.get(tool), current.tools.get(tool)) {
            (None, Some(c)) => added(c, &mut out),
            (Some(_), None) => out.push(Change::ToolRemoved { tool: tool.clone() }),
            // Different code now answers to the name (a drop-in shadowing a
            // built-in, an MCP server started another way): show it as a
            // new tool with all its grants.
            (Some(t), Some(c)) if t.origin != c.origin || t.mcp_launch() != c.mcp_launch() => {
                out.push(Change::ToolRemoved { tool: tool.clone() });
                added(c, &mut out);
            }
            (Some(t), Some(c)) => tool_changes(tool, t, c, &mut out),
            (None, None) => {}
        }
    }
    out
}

fn tool_changes(tool: &str, t: &ToolRecord, c: &ToolRecord, out: &mut Vec<Change>) {
    let none = BTreeMap::new();
    let (tf, cf) = (
        t.files.as_ref().unwrap_or(&none),
        c.files.as_ref().unwrap_or(&none),
    );
    let files: BTreeSet<&String> = tf.keys().chain(cf.keys()).collect();
    for file in files {
        let (from, to) = (tf.get(file), cf.get(file));
        if from != to {
            out.push(Change::LaunchFileChanged {
                tool: tool.to_string(),
                file: file.clone(),
                from: from.cloned(),
                to: to.cloned(),
            });
        }
    }
    // A process gets the whole network for any host it is granted (the
    // launch is the same on both sides here): its host list is one change.
    let process = matches!(c.mcp_launch(), Some(McpLaunch::Command(_)));
    let apart = |cap: &&Capability| process && matches!(cap, Capability::Net { .. });
    for cap in t.caps.difference(&c.caps).filter(|c| !apart(c)) {
        out.push(Change::Lost {
            tool: tool.to_string(),
            cap: cap.clone(),
        });
    }
    for cap in c.caps.difference(&t.caps).filter(|c| !apart(c)) {
        out.push(Change::Gained {
            tool: tool.to_string(),
            cap: cap.clone(),
        });
    }
    if process {
        let (from, to) = (hosts(t), hosts(c));
        let tool = tool.to_string();
        match (from.is_empty(), to.is_empty()) {
            _ if from == to => {}
            (true, _) => out.push(Change::NetworkOpened { tool, hosts: to }),
            (_, true) => out.push(Change::NetworkClosed { tool, hosts: from }),
            _ => out.push(Change::NetworkHostsChanged { tool, from, to }),
        }
    }
    for ((limit, from), (_, to)) in t.limits.named().into_iter().zip(c.limits.named()) {
        if from != to {
            out.push(Change::LimitChanged {
                tool: tool.to_string(),
                limit,
                from,
                to,
            });
        }
    }
}
