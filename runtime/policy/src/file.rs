//! The on-disk format of `warden.toml`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Deserializer, de::Error as _};
use toml::Spanned;

use crate::caps::Capability;
use crate::network::HostPattern;
use crate::units::{parse_duration, parse_size};

/// The whole policy file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    /// Default limits for every tool.
    #[serde(default)]
    pub limits: LimitSection,
    /// Per-tool sections, keyed by tool name; each with where it is in the
    /// text, for the errors found once the file is read.
    #[serde(default)]
    pub tools: BTreeMap<ToolName, Spanned<ToolSection>>,
    /// Which model to talk to, and how.
    #[serde(default)]
    pub model: ModelSection,
    /// When the user is asked before a tool call: "never", "writes" (calls
    /// that change state; the default) or "always".
    #[serde(default, deserialize_with = "approval")]
    pub approval: Option<String>,
    /// MCP servers whose tools the model may use, keyed by server name;
    /// each with where it is in the text.
    #[serde(default)]
    pub mcp: BTreeMap<ToolName, Spanned<McpSection>>,
    /// How commands must be confined: "auto" (namespaces where they can
    /// be made, else Landlock and seccomp alone) or "namespaces" (refuse
    /// commands rather than run them with less).
    #[serde(default, deserialize_with = "confinement")]
    pub confinement: Option<String>,
}

/// `[mcp.NAME]`: an MCP server, and what it may reach. Its tools appear
/// to the model as `NAME__TOOL`.
#[derive(Debug, Clone)]
pub struct McpSection {
    /// How warden reaches it.
    pub launch: McpLaunch,
    /// What it may reach (a process: `read`, `write`, `env`, `network`;
    /// a URL: `network` and `secrets`), its limits, and `enabled`:
    /// nothing unless granted.
    pub grants: ToolSection,
}

/// How warden reaches an MCP server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpLaunch {
    /// `command = [...]`: a program and its arguments, started confined
    /// and spoken to on stdio. The program is looked up on `PATH` when it
    /// has no `/`.
    Command(Vec<String>),
    /// `url = "..."`: a streamable-HTTP endpoint, reached only when its
    /// host is in the section's `network` grants.
    Url(String),
}

impl McpLaunch {
    /// How it is shown: the command line, or the URL.
    pub fn shown(&self) -> String {
        match self {
            McpLaunch::Command(argv) => argv.join(" "),
            McpLaunch::Url(url) => url.clone(),
        }
    }
}

/// `command` or `url`, then the keys of a tool section, each checked as
/// there (unknown keys are errors; serde's `flatten` would let them pass).
impl<'de> Deserialize<'de> for McpSection {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut table = toml::Table::deserialize(d)?;
        let launch = match (table.remove("command"), table.remove("url")) {
            (Some(_), Some(_)) => {
                return Err(D::Error::custom(
                    "both `command` and `url`: an MCP server is either a program warden \
                     starts or a URL it connects to",
                ));
            }
            (None, None) => {
                return Err(D::Error::custom(
                    "missing `command` or `url`: name the program and its arguments, e.g. \
                     command = [\"python3\", \"server.py\"], or its endpoint, e.g. \
                     url = \"https://mcp.example.com/mcp\"",
                ));
            }
            (Some(command), None) => {
                McpLaunch::Command(command_line(command).map_err(D::Error::custom)?)
            }
            (None, Some(url)) => McpLaunch::Url(mcp_url(url).map_err(D::Error::custom)?),
        };
        // What the other kind of server cannot use is refused rather than
        // silently not applied.
        let (refused, gets): (&[&str], &str) = match launch {
            McpLaunch::Command(_) => (
                &["secrets", "settings", "exec", "apps", "browse"],
                "its process gets only `read`, `write`, `env`, `network` and limits",
            ),
            McpLaunch::Url(_) => (
                &[
                    "read", "write", "env", "settings", "exec", "memory", "apps", "browse",
                ],
                "warden only sends it requests: it gets only `network`, `secrets`, \
                 `timeout` and `output`",
            ),
        };
        for key in refused {
            if table.contains_key(*key) {
                return Err(D::Error::custom(format!(
                    "`{key}` does not apply to this MCP server: {gets}"
                )));
            }
        }
        let grants =
            ToolSection::deserialize(toml::Value::Table(table)).map_err(D::Error::custom)?;
        if let McpLaunch::Url(url) = &launch {
            let (host, port) = url_host(url);
            let allow = crate::NetworkAllow::new(grants.network.iter().map(String::as_str));
            if !allow.allows(&host, port) {
                return Err(D::Error::custom(format!(
                    "the host of `{url}` is not granted: add `network = [\"{}\"]`; warden \
                     connects to no host the policy does not name",
                    if port == 443 || port == 80 {
                        host
                    } else {
                        format!("{host}:{port}")
                    }
                )));
            }
        }
        Ok(McpSection { launch, grants })
    }
}

/// An http(s) URL with a host and no user name or password in it.
fn mcp_url(value: toml::Value) -> Result<String, String> {
    let url: String = value
        .try_into()
        .map_err(|_| "`url` must be a string, e.g. \"https://mcp.example.com/mcp\"")?;
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .ok_or_else(|| format!("`{url}` is not an http:// or https:// URL"))?;
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("the URL contains spaces or control characters".into());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.contains('@') {
        return Err(format!(
            "`{url}` carries a user name or password: give credentials as `secrets`, which \
             warden adds to the requests and keeps out of the trust record"
        ));
    }
    if url_host(&url).0.is_empty() {
        return Err(format!("`{url}` names no host"));
    }
    Ok(url)
}

/// Host (IPv6 in brackets) and port of a URL [`mcp_url`] accepted.
fn url_host(url: &str) -> (String, u16) {
    let (tls, rest) = match url.strip_prefix("https://") {
        Some(rest) => (true, rest),
        None => (false, url.strip_prefix("http://").unwrap_or(url)),
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let default = if tls { 443 } else { 80 };
    let (host, port) = match authority.rfind(':') {
        Some(i) if !authority[i..].contains(']') => {
            (&authority[..i], authority[i + 1..].parse().ok())
        }
        _ => (authority, Some(default)),
    };
    (host.to_ascii_lowercase(), port.unwrap_or(0))
}

fn command_line(value: toml::Value) -> Result<Vec<String>, String> {
    let v: Vec<String> = value
        .try_into()
        .map_err(|_| "`command` must be a list of strings, e.g. [\"python3\", \"server.py\"]")?;
    match v.first() {
        None => Err(
            "empty command: name the program and its arguments, e.g. [\"python3\", \"server.py\"]"
                .into(),
        ),
        Some(p) if p.is_empty() => Err("the program name is empty".into()),
        _ if v.iter().any(|a| a.contains('\0')) => {
            Err("a command argument contains a NUL byte".into())
        }
        _ => Ok(v),
    }
}

fn confinement<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    match s.as_str() {
        "auto" | "namespaces" => Ok(Some(s)),
        "landlock" => Err(D::Error::custom(
            "confinement \"landlock\" (less than commands get where namespaces can be made) \
             is the user's choice, not a workspace's: set it in your config.toml, or use \
             \"auto\" or \"namespaces\" here",
        )),
        _ => Err(D::Error::custom(format!(
            "unknown confinement `{s}`: use \"auto\" or \"namespaces\""
        ))),
    }
}

fn user_confinement<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    match s.as_str() {
        "auto" | "namespaces" | "landlock" => Ok(Some(s)),
        _ => Err(D::Error::custom(format!(
            "unknown confinement `{s}`: use \"auto\", \"namespaces\" or \"landlock\""
        ))),
    }
}

fn approval<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    match s.as_str() {
        "never" | "writes" | "always" => Ok(Some(s)),
        _ => Err(D::Error::custom(format!(
            "unknown approval `{s}`: use \"never\", \"writes\" or \"always\""
        ))),
    }
}

/// `[model]`: the chat-completions endpoint and how to use it. Every field is
/// optional; unset ones fall back to the next layer (user config, defaults),
/// and the environment and flags override them.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// e.g. "https://api.openai.com/v1" or "http://127.0.0.1:8080/v1".
    pub base_url: Option<String>,
    /// Model name sent in each request.
    pub model: Option<String>,
    /// Name of the environment variable holding the API key.
    #[serde(default, deserialize_with = "env_name")]
    pub api_key_env: Option<String>,
    /// Stream answers (SSE); `false` for servers that stream badly.
    pub stream: Option<bool>,
    /// "auto", "native", "json" or "text" tool calling.
    #[serde(default, deserialize_with = "protocol")]
    pub protocol: Option<String>,
    /// Model round trips per task before giving up.
    pub max_turns: Option<u32>,
    /// Time to connect to the endpoint.
    #[serde(default, deserialize_with = "timeout")]
    pub connect_timeout: Option<Duration>,
    /// Longest silence while waiting for an answer or between stream chunks.
    #[serde(default, deserialize_with = "timeout")]
    pub idle_timeout: Option<Duration>,
    /// Attempts per request, retries included.
    pub max_attempts: Option<u32>,
    /// Longest wait for an answer to start, all attempts and pauses
    /// included (a streaming answer then runs as long as it keeps talking).
    #[serde(default, deserialize_with = "timeout")]
    pub request_timeout: Option<Duration>,
    /// The model's context window in tokens; older turns are compacted
    /// before a request would exceed it.
    pub context_window: Option<u64>,
    /// The tools offered to the model (default: every enabled tool).
    pub tools: Option<Vec<String>>,
}

impl ModelSection {
    /// Fields set in `over` replace those of `self`.
    pub fn overlay(&self, over: &ModelSection) -> ModelSection {
        ModelSection {
            base_url: over.base_url.clone().or_else(|| self.base_url.clone()),
            model: over.model.clone().or_else(|| self.model.clone()),
            api_key_env: over
                .api_key_env
                .clone()
                .or_else(|| self.api_key_env.clone()),
            stream: over.stream.or(self.stream),
            protocol: over.protocol.clone().or_else(|| self.protocol.clone()),
            max_turns: over.max_turns.or(self.max_turns),
            connect_timeout: over.connect_timeout.or(self.connect_timeout),
            idle_timeout: over.idle_timeout.or(self.idle_timeout),
            max_attempts: over.max_attempts.or(self.max_attempts),
            request_timeout: over.request_timeout.or(self.request_timeout),
            context_window: over.context_window.or(self.context_window),
            tools: over.tools.clone().or_else(|| self.tools.clone()),
        }
    }
}

fn protocol<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    match s.as_str() {
        "auto" | "native" | "json" | "text" => Ok(Some(s)),
        _ => Err(D::Error::custom(format!(
            "unknown protocol `{s}`: use \"auto\", \"native\", \"json\" or \"text\""
        ))),
    }
}

fn env_name<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(d)?;
    check_env_name(&name).map_err(D::Error::custom)?;
    Ok(Some(name))
}

fn check_env_name(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not an environment variable name (letters, digits, `_`)"
        ))
    }
}

/// The per-user configuration file (`$XDG_CONFIG_HOME/warden/config.toml`):
/// a `[model]` section, `approval` and `confinement`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    /// Model defaults for every workspace; the only place besides the
    /// environment and flags that chooses where the API key goes.
    #[serde(default)]
    pub model: ModelSection,
    /// When the user is asked before a tool call, in every workspace
    /// ("never", "writes" or "always"); a workspace may only ask more.
    #[serde(default, deserialize_with = "approval")]
    pub approval: Option<String>,
    /// How commands are confined in every workspace: "auto", "namespaces"
    /// (refuse rather than run with less) or "landlock" (Landlock and
    /// seccomp alone, even where namespaces can be made); a workspace may
    /// only ask for namespaces.
    #[serde(default, deserialize_with = "user_confinement")]
    pub confinement: Option<String>,
}

/// The user's config file, in warden's per-user config folder.
pub const USER_CONFIG: &str = "config.toml";

/// The variable holding the model's API key when the user's config names
/// none.
pub const DEFAULT_KEY_ENV: &str = "OPENAI_API_KEY";

impl UserConfig {
    /// The variable the model's API key is read from: only the user's
    /// config chooses it (a workspace's `api_key_env` is ignored).
    pub fn api_key_env(&self) -> &str {
        self.model.api_key_env.as_deref().unwrap_or(DEFAULT_KEY_ENV)
    }
}

/// Limits, each optional; unset ones fall back to the next layer.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitSection {
    /// Linear memory, e.g. "256MiB".
    #[serde(default, deserialize_with = "memory")]
    pub memory: Option<u64>,
    /// Wall-clock time of one call, e.g. "30s".
    #[serde(default, deserialize_with = "timeout")]
    pub timeout: Option<Duration>,
    /// Output returned to the model, e.g. "256KiB".
    #[serde(default, deserialize_with = "output")]
    pub output: Option<u64>,
}

/// `[tools.NAME]`: what one tool may do.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSection {
    /// Whether the tool exists at all. Built-ins default to on; a drop-in is
    /// on once it has a section.
    pub enabled: Option<bool>,
    /// Directories the tool may read (relative to the workspace or absolute).
    #[serde(default, deserialize_with = "dirs")]
    pub read: Option<Vec<String>>,
    /// Directories the tool may read and write.
    #[serde(default, deserialize_with = "dirs")]
    pub write: Option<Vec<String>>,
    /// Environment variables: `NAME` passes the host's by name,
    /// `NAME=value` sets a value (a toolchain's home, say).
    #[serde(default, deserialize_with = "env_entries")]
    pub env: Vec<EnvEntry>,
    /// Hosts the tool may send HTTP requests to (see [`crate::HostPattern`]).
    #[serde(default, deserialize_with = "hosts")]
    pub network: Vec<String>,
    /// Secrets the host adds to the tool's requests, by name.
    #[serde(default)]
    pub secrets: BTreeMap<String, SecretSection>,
    /// Settings the tool reads (e.g. the search provider), by key.
    #[serde(default)]
    pub settings: BTreeMap<String, String>,
    /// Programs the tool may run as confined host processes: names looked
    /// up on `PATH` when the tool is bound, or absolute paths.
    #[serde(default, deserialize_with = "programs")]
    pub exec: Vec<String>,
    /// Desktop apps the tool may start in the user's desktop session,
    /// unconfined: desktop-entry IDs, program names or absolute paths.
    #[serde(default, deserialize_with = "apps")]
    pub apps: Vec<String>,
    /// Hosts whose pages the tool may open in the user's browser (see
    /// [`crate::HostPattern`]).
    #[serde(default, deserialize_with = "hosts")]
    pub browse: Vec<String>,
    /// Overrides the default memory limit.
    #[serde(default, deserialize_with = "memory")]
    pub memory: Option<u64>,
    /// Overrides the default timeout.
    #[serde(default, deserialize_with = "timeout")]
    pub timeout: Option<Duration>,
    /// Overrides the default output limit.
    #[serde(default, deserialize_with = "output")]
    pub output: Option<u64>,
}

/// `[tools.NAME.secrets.SECRET]`: where a secret comes from, where it may
/// go and how it is sent. Validated by [`SecretSection::capability`].
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SecretSection {
    /// Refused in a workspace: which environment variable leaves is the
    /// user's choice, made in the secrets file. Kept to say so.
    pub env: Option<String>,
    /// A key of the per-user secrets file holding the value.
    pub file: Option<String>,
    /// Hosts it may be sent to (network entries, not `*`).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// `X-Api-Key` (the value as it is) or `Authorization: Bearer {}`.
    pub header: Option<String>,
    /// A query parameter name.
    pub query: Option<String>,
}

/// Headers a secret may not be sent in: they frame the request itself.
const FRAMING_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "te",
    "upgrade",
    "trailer",
];

impl SecretSection {
    /// The capability this section grants, or what is wrong with it.
    pub(crate) fn capability(&self, name: &str) -> Result<Capability, String> {
        let pre = format!("secret `{name}`");
        if !is_tool_name(name) {
            return Err(format!("{pre}: name it in snake_case, like `brave_key`"));
        }
        let key = match (&self.env, &self.file) {
            // The workspace would choose which of the user's values leaves,
            // the model key included.
            (Some(var), _) => {
                return Err(format!(
                    "{pre}: a workspace cannot take a secret from an environment variable \
                     (`env = \"{}\"`): name an entry of your secrets file, `file = \"key\"`; \
                     in the secrets file, `key = {{ env = \"VAR\" }}` reads it from your \
                     environment",
                    crate::inert::inert(var)
                ));
            }
            (None, Some(key)) => {
                if !is_tool_name(key) {
                    return Err(format!(
                        "{pre}: `file` names a key of the secrets file in snake_case, like `brave`"
                    ));
                }
                key
            }
            (None, None) => {
                return Err(format!(
                    "{pre}: name its value: `file = \"key\"`, an entry of your secrets file"
                ));
            }
        };
        let source = format!("file {key}");
        if self.hosts.is_empty() {
            return Err(format!(
                "{pre}: list the hosts it may be sent to, e.g. `hosts = [\"api.example.com\"]`"
            ));
        }
        let mut hosts: Vec<String> = Vec::new();
        for h in &self.hosts {
            let p = HostPattern::parse(h).map_err(|e| format!("{pre}: {e}"))?;
            p.check_secret_host().map_err(|e| format!("{pre}: {e}"))?;
            let shown = p.to_string();
            if !hosts.contains(&shown) {
                hosts.push(shown);
            }
        }
        let send = match (&self.header, &self.query) {
            (Some(h), None) => {
                let (hname, template) = match h.split_once(':') {
                    Some((n, t)) => (n.trim(), t.trim()),
                    None => (h.trim(), "{}"),
                };
                let token = !hname.is_empty()
                    && hname
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                if !token || FRAMING_HEADERS.contains(&hname.to_ascii_lowercase().as_str()) {
                    return Err(format!(
                        "{pre}: `{hname}` cannot carry a secret: use a header such as \
                         `X-Api-Key` or `Authorization: Bearer {{}}`"
                    ));
                }
                if template.matches("{}").count() != 1 || template.chars().any(|c| c.is_control()) {
                    return Err(format!(
                        "{pre}: the header value must contain `{{}}` once, where the secret goes \
                         (e.g. \"Authorization: Bearer {{}}\")"
                    ));
                }
                format!("header {hname}: {template}")
            }
            (None, Some(q)) => {
                let ok = !q.is_empty()
                    && q.bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-._~".contains(&b));
                if !ok {
                    return Err(format!(
                        "{pre}: `query` is a parameter name (letters, digits, `-._~`)"
                    ));
                }
                format!("query {q}")
            }
            _ => {
                return Err(format!(
                    "{pre}: say how it is sent: `header = \"X-Api-Key\"`, \
                     `header = \"Authorization: Bearer {{}}\"` or `query = \"api_key\"`"
                ));
            }
        };
        Ok(Capability::Secret {
            name: name.to_string(),
            source,
            hosts,
            send,
        })
    }
}

impl ToolSection {
    /// The capabilities this section grants besides directories (which need
    /// the workspace to resolve): one line per kind.
    pub(crate) fn other_caps(&self) -> impl Iterator<Item = Capability> + '_ {
        let env = self.env.iter().map(|e| Capability::Env {
            name: e.name.clone(),
            value: e.value.clone(),
        });
        let net = self
            .network
            .iter()
            .map(|host| Capability::Net { host: host.clone() });
        // Validated when the file was parsed (`Policy::parse`).
        let secrets = self
            .secrets
            .iter()
            .filter_map(|(name, s)| s.capability(name).ok());
        let settings = self
            .settings
            .iter()
            .map(|(key, value)| Capability::Setting {
                key: key.clone(),
                value: value.clone(),
            });
        let exec = self.exec.iter().map(|program| Capability::Exec {
            program: program.clone(),
        });
        let apps = self.apps.iter().map(|program| Capability::App {
            program: program.clone(),
        });
        let browse = self
            .browse
            .iter()
            .map(|host| Capability::Browse { host: host.clone() });
        env.chain(net)
            .chain(secrets)
            .chain(settings)
            .chain(exec)
            .chain(apps)
            .chain(browse)
    }

    /// What is wrong with its secrets and settings, if anything.
    pub(crate) fn check(&self) -> Result<(), String> {
        for (name, s) in &self.secrets {
            let hosts = match s.capability(name)? {
                Capability::Secret { hosts, .. } => hosts,
                _ => continue,
            };
            // A value the tool learns (a host that reflects it) must have
            // nowhere else to go.
            if let Some(other) = self.network.iter().find(|n| !hosts.contains(n)) {
                return Err(format!(
                    "`{other}` is in `network` but is not a host of secret `{name}`: a tool \
                     holding a secret reaches only that secret's hosts, so that what it learns \
                     of the value has nowhere else to go; add the host to the secret's `hosts` \
                     if the service owns it, or give it to another tool"
                ));
            }
        }
        for (key, value) in &self.settings {
            if !is_tool_name(key) {
                return Err(format!(
                    "setting `{key}`: use a snake_case key like `provider`"
                ));
            }
            if value.len() > 4096 || value.chars().any(|c| c.is_control()) {
                return Err(format!(
                    "setting `{key}`: the value must be one line of at most 4096 bytes"
                ));
            }
        }
        Ok(())
    }
}

/// A validated tool name (snake_case).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ToolName(pub String);

impl<'de> Deserialize<'de> for ToolName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if is_tool_name(&s) {
            Ok(ToolName(s))
        } else {
            Err(D::Error::custom(format!(
                "`{s}` is not a tool name: use snake_case like `read_file`"
            )))
        }
    }
}

/// Whether `s` is a valid tool name: `[a-z][a-z0-9_]*`, at most 64 bytes.
pub fn is_tool_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some('a'..='z'))
        && chars.all(|c| matches!(c, 'a'..='z' | '0'..='9' | '_'))
        && s.len() <= 64
}

fn memory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n = size_value(d)?;
    if !(1 << 20..=4 << 30).contains(&n) {
        return Err(D::Error::custom(
            "memory limit must be between 1MiB and 4GiB (wasm32 cannot address more)",
        ));
    }
    Ok(Some(n))
}

fn output<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    let n = size_value(d)?;
    if !(1..=64 << 20).contains(&n) {
        return Err(D::Error::custom(
            "output limit must be between 1B and 64MiB",
        ));
    }
    Ok(Some(n))
}

fn timeout<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let t = match SizeOrText::deserialize(d)? {
        SizeOrText::Number(n) => Duration::from_secs(n),
        SizeOrText::Text(s) => parse_duration(&s).map_err(D::Error::custom)?,
    };
    if t < Duration::from_millis(10) || t > Duration::from_secs(3600) {
        return Err(D::Error::custom("timeout must be between 10ms and 60m"));
    }
    Ok(Some(t))
}

#[derive(Deserialize)]
#[serde(untagged)]
enum SizeOrText {
    Number(u64),
    Text(String),
}

fn size_value<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    match SizeOrText::deserialize(d)? {
        SizeOrText::Number(n) => Ok(n),
        SizeOrText::Text(s) => parse_size(&s).map_err(D::Error::custom),
    }
}

fn dirs<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<String>>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    for p in &v {
        if p.is_empty() {
            return Err(D::Error::custom(
                "empty directory path: use \".\" for the workspace",
            ));
        }
        if p.contains('\0') {
            return Err(D::Error::custom("directory path contains a NUL byte"));
        }
    }
    Ok(Some(v))
}

fn hosts<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    let mut out: Vec<String> = Vec::new();
    for entry in &v {
        let pattern = HostPattern::parse(entry).map_err(D::Error::custom)?;
        let shown = pattern.to_string();
        if !out.contains(&shown) {
            out.push(shown);
        }
    }
    Ok(out)
}

/// One `env` entry of a tool section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvEntry {
    /// The variable's name.
    pub name: String,
    /// The value the policy sets, or `None` for the host's own.
    pub value: Option<String>,
}

/// The longest value an `env` entry may set.
const MAX_ENV_VALUE: usize = 4096;

fn env_entries<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<EnvEntry>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    let mut out: Vec<EnvEntry> = Vec::new();
    for entry in v {
        let (name, value) = match entry.split_once('=') {
            Some((name, value)) => (name, Some(value)),
            None => (entry.as_str(), None),
        };
        check_env_name(name).map_err(D::Error::custom)?;
        if let Some(value) = value
            && (value.len() > MAX_ENV_VALUE || value.chars().any(char::is_control))
        {
            return Err(D::Error::custom(format!(
                "env `{name}`: a value must be one line of at most {MAX_ENV_VALUE} bytes"
            )));
        }
        if out.iter().any(|e| e.name == name) {
            return Err(D::Error::custom(format!(
                "env `{name}` is listed twice; keep one entry (`{name}` passes your value, \
                 `{name}=value` sets one)"
            )));
        }
        out.push(EnvEntry {
            name: name.to_string(),
            value: value.map(str::to_string),
        });
    }
    Ok(out)
}

fn programs<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    let mut out: Vec<String> = Vec::new();
    for p in v {
        let bare = !p.is_empty() && !p.contains('/') && p != "." && p != "..";
        let absolute = p.starts_with('/') && !p.ends_with('/');
        if p.contains('\0') || !(bare || absolute) {
            return Err(D::Error::custom(format!(
                "exec entry `{}` is neither a program name (looked up on PATH, like \"cargo\") nor an absolute path (like \"/usr/bin/python3\")",
                crate::inert::inert(&p)
            )));
        }
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Desktop-entry IDs (`org.gnome.TextEditor`, `libreoffice-writer`),
/// program names (`xeyes`) or absolute paths: no spaces, no NUL, no
/// `.desktop` suffix (the ID is named without it).
fn apps<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let v = Vec::<String>::deserialize(d)?;
    let mut out: Vec<String> = Vec::new();
    for a in v {
        let shown = crate::inert::inert(&a).into_owned();
        let bare = !a.is_empty()
            && !a.starts_with(['-', '.'])
            && a.chars()
                .all(|c| c.is_alphanumeric() || "._-+@".contains(c));
        let absolute = a.starts_with('/')
            && !a.ends_with('/')
            && !a.contains(['\0', '\n', '\r'])
            && !a.split('/').any(|part| part == "..");
        if !(bare || absolute) {
            return Err(D::Error::custom(format!(
                "apps entry `{shown}` is neither a desktop-entry ID (like \"libreoffice-writer\"), \
                 a program name (like \"xeyes\") nor an absolute path"
            )));
        }
        if let Some(id) = a.strip_suffix(".desktop") {
            return Err(D::Error::custom(format!(
                "apps entry `{shown}`: name the desktop entry without `.desktop`, \"{}\"",
                crate::inert::inert(id)
            )));
        }
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}
