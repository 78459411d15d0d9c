//! The typed capability set: everything a tool may reach, as values of one
//! enum, plus its limits.
//!
//! The same values are parsed from `warden.toml`, stored in the trust
//! record, compared by the trust diff and applied by the sandbox. A new
//! kind of grant is a new [`Capability`] variant: its parsing
//! (`file.rs`), its line here ([`Capability`]'s `Display` and
//! [`Capability::needs_approval`]), and the one place the sandbox applies
//! it.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::inert::inert;
use crate::units::{format_duration, format_size};

/// One thing a tool may reach.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Capability {
    /// A directory (canonical absolute path), read-only or read-write.
    Dir {
        /// Canonical absolute host path.
        path: PathBuf,
        /// Read-write when true.
        write: bool,
    },
    /// An environment variable: the host's, passed by name, or a value the
    /// policy sets (`NAME=value`).
    Env {
        /// Variable name.
        name: String,
        /// The value the policy sets; `None`: the host's value, if it has one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
    /// A host the tool may send HTTP requests to: a normalised
    /// [`HostPattern`](crate::HostPattern).
    Net {
        /// `example.com`, `*.example.com`, `127.0.0.1:8080`, `*`.
        host: String,
    },
    /// A secret the host adds to the tool's HTTP requests to `hosts`; the
    /// tool never holds its value. Only where it comes from is recorded.
    Secret {
        /// Its name under `[tools.NAME.secrets]`.
        name: String,
        /// `env NAME` (a host environment variable) or `file KEY` (an
        /// entry of the per-user secrets file).
        source: String,
        /// Normalised host patterns it may be sent to (never `*`).
        hosts: Vec<String>,
        /// How it is sent: `header Name: template` or `query name`, the
        /// value standing for `{}`.
        send: String,
    },
    /// A setting the tool reads (`WARDEN_SETTING_<KEY>`), such as the
    /// search provider; it reaches nothing by itself.
    Setting {
        /// snake_case key.
        key: String,
        /// Its value.
        value: String,
    },
    /// A program the tool may start as a confined host process: a name
    /// looked up on `PATH` when the tool is bound, or an absolute path.
    Exec {
        /// `cargo`, `sh`, `/usr/bin/python3`.
        program: String,
    },
    /// A desktop app the tool may start in the user's desktop session,
    /// unconfined: a desktop-entry ID, a program name looked up on `PATH`
    /// when the tool is bound, or an absolute path.
    App {
        /// `libreoffice-writer`, `org.gnome.TextEditor`, `xeyes`.
        program: String,
    },
    /// A host whose pages the tool may open in the user's browser: a
    /// normalised [`HostPattern`](crate::HostPattern), as for `network`.
    Browse {
        /// `docs.rs`, `*.github.com`.
        host: String,
    },
}

impl Capability {
    /// Whether holding it makes a call worth asking about under
    /// `approval = "writes"`: it can change files or reach beyond the
    /// machine. Decided by what is granted, never by what a component says.
    pub fn needs_approval(&self) -> bool {
        match self {
            Capability::Dir { write, .. } => *write,
            // A desktop app or a page in the browser runs as the user,
            // outside any sandbox: always worth asking about.
            Capability::Net { .. }
            | Capability::Secret { .. }
            | Capability::Exec { .. }
            | Capability::App { .. }
            | Capability::Browse { .. } => true,
            Capability::Env { .. } | Capability::Setting { .. } => false,
        }
    }

    /// Every kind's word, in the order listings show them.
    pub const KINDS: &'static [&'static str] = &[
        "files", "env", "network", "exec", "apps", "browse", "secrets", "settings",
    ];

    /// The kinds listings show even when none is granted (`network:
    /// none`); the others only where present.
    pub const SHOWN_WHEN_NONE: &'static [&'static str] = &["files", "env", "network"];

    /// What a listing says once of a kind after its values, where the
    /// values alone would not say it: an app is not confined.
    pub fn kind_note(kind: &str) -> Option<&'static str> {
        match kind {
            "exec" => Some(
                "each runs confined to the tool's files and network; the confinement is on files \
                 and network, not on programs: a granted program may start any other program in \
                 the system folders or the write grants (git's hooks and aliases, python's \
                 os.system)",
            ),
            "apps" => Some(
                "started in your desktop session, unconfined; they keep running after warden exits",
            ),
            "browse" => Some("opened in your browser"),
            _ => None,
        }
    }

    /// The word of its kind in tables and diffs.
    pub fn kind(&self) -> &'static str {
        match self {
            Capability::Dir { .. } => "files",
            Capability::Env { .. } => "env",
            Capability::Net { .. } => "network",
            Capability::Secret { .. } => "secrets",
            Capability::Setting { .. } => "settings",
            Capability::Exec { .. } => "exec",
            Capability::App { .. } => "apps",
            Capability::Browse { .. } => "browse",
        }
    }

    /// Its parts for one-line summaries: `("rw", "out")`, `("env",
    /// "LANG")`, `("net", "example.com")`; directories inside `workspace`
    /// are shown relative to it, others by their absolute path, inert.
    pub fn short(&self, workspace: &Path) -> (&'static str, String) {
        match self {
            Capability::Dir { path, write } => {
                // Never relative to `/`: that would drop the leading `/`.
                let inside = path
                    .strip_prefix(workspace)
                    .ok()
                    .filter(|_| workspace.parent().is_some());
                let shown = match inside {
                    Some(rel) if rel.as_os_str().is_empty() => ".".to_string(),
                    Some(rel) => rel.display().to_string(),
                    None => path.display().to_string(),
                };
                (if *write { "rw" } else { "ro" }, inert(&shown).into_owned())
            }
            Capability::Env { name, value } => ("env", env_entry(name, value.as_deref())),
            Capability::Net { host } => ("net", host.clone()),
            Capability::Secret { name, hosts, .. } => (
                "secret",
                format!("{}@{}", inert(name), inert(&hosts.join("+"))),
            ),
            Capability::Setting { key, value } => {
                ("set", format!("{}={}", inert(key), inert(value)))
            }
            Capability::Exec { program } => ("exec", inert(program).into_owned()),
            Capability::App { program } => ("app", inert(program).into_owned()),
            Capability::Browse { host } => ("browse", host.clone()),
        }
    }
}

/// The line of a diff or a listing: `read-write /home/u/p`, `env LANG`,
/// `network api.github.com`. Paths are shown inert: a directory name cannot
/// redraw the line it is on.
impl fmt::Display for Capability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Capability::Dir { path, write } => write!(
                f,
                "{} {}",
                if *write { "read-write" } else { "read-only" },
                inert(&path.display().to_string())
            ),
            Capability::Env { name, value } => {
                write!(f, "env {}", env_entry(name, value.as_deref()))
            }
            Capability::Net { host } => write!(f, "network {host}"),
            Capability::Secret {
                name,
                source,
                hosts,
                send,
            } => write!(
                f,
                "secret {} ({}) to {} as {}",
                inert(name),
                secret_source(source),
                inert(&hosts.join(", ")),
                inert(send)
            ),
            Capability::Setting { key, value } => {
                write!(f, "setting {} = {}", inert(key), inert(value))
            }
            Capability::Exec { program } => write!(f, "exec {}", inert(program)),
            Capability::App { program } => write!(
                f,
                "apps: may start {} in your desktop session, unconfined",
                inert(program)
            ),
            Capability::Browse { host } => {
                write!(f, "browse: may open pages of {host} in your browser")
            }
        }
    }
}

/// Which of the user's values a secret is: `file KEY` is the entry `KEY`
/// of the secrets file (which may read it from the user's environment).
fn secret_source(source: &str) -> String {
    match source.split_once(' ') {
        Some(("file", key)) => format!("your secrets.toml entry `{}`", inert(key)),
        _ => inert(source).into_owned(),
    }
}

/// `NAME`, or `NAME=value` (inert) for a value the policy sets.
fn env_entry(name: &str, value: Option<&str>) -> String {
    match value {
        Some(v) => format!("{name}={}", inert(v)),
        None => name.to_string(),
    }
}

/// Resource limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Limits {
    /// Maximum memory in bytes: the instance's linear memories plus what
    /// the host holds for the call.
    pub memory: u64,
    /// Wall-clock limit of one call.
    #[serde(with = "millis")]
    pub timeout: Duration,
    /// Maximum output returned to the model, in bytes.
    pub output: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            memory: 256 << 20,
            timeout: Duration::from_secs(30),
            output: 256 << 10,
        }
    }
}

impl Limits {
    /// Each limit by name with its human form, in a fixed order, for diffs.
    pub fn named(&self) -> [(&'static str, String); 3] {
        [
            ("memory", format_size(self.memory)),
            ("timeout", format_duration(self.timeout)),
            ("output", format_size(self.output)),
        ]
    }
}

impl fmt::Display for Limits {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [(_, m), (_, t), (_, o)] = self.named();
        write!(f, "memory {m}, timeout {t}, output {o}")
    }
}

mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

/// Everything one tool may touch: its capabilities and its limits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Grants {
    /// What it may reach, without duplicates, in the order the policy
    /// names them (directories: read-write first, the most specific last).
    /// Compare with [`Grants::set`] where order must not matter.
    pub caps: Vec<Capability>,
    /// Limits of each call.
    pub limits: Limits,
}

impl Grants {
    /// Granted directories with their access.
    pub fn dirs(&self) -> impl Iterator<Item = (&Path, bool)> {
        self.caps.iter().filter_map(|c| match c {
            Capability::Dir { path, write } => Some((path.as_path(), *write)),
            _ => None,
        })
    }

    /// Names of the environment variables granted (passed through or set).
    pub fn env(&self) -> impl Iterator<Item = &str> {
        self.caps.iter().filter_map(|c| match c {
            Capability::Env { name, .. } => Some(name.as_str()),
            _ => None,
        })
    }

    /// The granted environment with its values: the value the policy sets,
    /// else the host's from `host` (a variable the host does not have is
    /// left out).
    pub fn env_values(&self, host: impl Fn(&str) -> Option<String>) -> Vec<(String, String)> {
        self.caps
            .iter()
            .filter_map(|c| match c {
                Capability::Env {
                    name,
                    value: Some(v),
                } => Some((name.clone(), v.clone())),
                Capability::Env { name, value: None } => host(name).map(|v| (name.clone(), v)),
                _ => None,
            })
            .collect()
    }

    /// Hosts it may send HTTP requests to.
    pub fn hosts(&self) -> impl Iterator<Item = &str> {
        self.caps.iter().filter_map(|c| match c {
            Capability::Net { host } => Some(host.as_str()),
            _ => None,
        })
    }

    /// The secrets the host adds to its requests.
    pub fn secrets(&self) -> impl Iterator<Item = &Capability> {
        self.caps
            .iter()
            .filter(|c| matches!(c, Capability::Secret { .. }))
    }

    /// Its settings, `(key, value)`.
    pub fn settings(&self) -> impl Iterator<Item = (&str, &str)> {
        self.caps.iter().filter_map(|c| match c {
            Capability::Setting { key, value } => Some((key.as_str(), value.as_str())),
            _ => None,
        })
    }

    /// Programs it may start (names or absolute paths, as granted).
    pub fn programs(&self) -> impl Iterator<Item = &str> {
        self.caps.iter().filter_map(|c| match c {
            Capability::Exec { program } => Some(program.as_str()),
            _ => None,
        })
    }

    /// Desktop apps it may start (as granted).
    pub fn apps(&self) -> impl Iterator<Item = &str> {
        self.caps.iter().filter_map(|c| match c {
            Capability::App { program } => Some(program.as_str()),
            _ => None,
        })
    }

    /// Hosts whose pages it may open in the user's browser.
    pub fn browse(&self) -> impl Iterator<Item = &str> {
        self.caps.iter().filter_map(|c| match c {
            Capability::Browse { host } => Some(host.as_str()),
            _ => None,
        })
    }

    /// Whether a call needs the user's approval under `approval =
    /// "writes"`: any capability that can change files or reach beyond the
    /// machine (see [`Capability::needs_approval`]).
    pub fn needs_approval(&self) -> bool {
        self.caps.iter().any(Capability::needs_approval)
    }

    /// The capabilities as a set: what the trust record and the diff
    /// compare, where order must not matter.
    pub fn set(&self) -> BTreeSet<Capability> {
        self.caps.iter().cloned().collect()
    }

    /// Adds `cap` unless it is there already.
    pub fn add(&mut self, cap: Capability) {
        if !self.caps.contains(&cap) {
            self.caps.push(cap);
        }
    }

    /// A one-line summary: `rw:. ro:docs env:LANG,TERM net:example.com`,
    /// or `no access`. Directories one by one, other kinds grouped.
    pub fn summary(&self, workspace: &Path) -> String {
        let mut dirs: Vec<String> = Vec::new();
        let mut groups: Vec<(&'static str, Vec<String>)> = Vec::new();
        for cap in &self.caps {
            let (kind, value) = cap.short(workspace);
            if matches!(cap, Capability::Dir { .. }) {
                dirs.push(format!("{kind}:{value}"));
            } else if let Some((_, values)) = groups.iter_mut().find(|(k, _)| *k == kind) {
                values.push(value);
            } else {
                groups.push((kind, vec![value]));
            }
        }
        let parts: Vec<String> = dirs
            .into_iter()
            .chain(
                groups
                    .into_iter()
                    .map(|(k, v)| format!("{k}:{}", v.join(","))),
            )
            .collect();
        if parts.is_empty() {
            "no access".to_string()
        } else {
            parts.join(" ")
        }
    }
}
