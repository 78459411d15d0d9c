//! The trust store: what the user accepted for a workspace.
//!
//! `warden.toml` and `.warden/tools/*.wasm` live inside the workspace, so
//! anything that can write there (a cloned repository, a tool the model was
//! steered into using) could grant tools more power by editing them. warden
//! therefore runs a workspace's configuration only as far as the user
//! accepted it with `warden trust`: the accepted policy text, the hashes of
//! the accepted components and the grants they resulted in are recorded
//! outside the workspace, per user, and compared on every start.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use warden_state::StateDir;

use crate::{Capability, Error, Grants, Limits, McpLaunch, POLICY_FILE, Result};

mod diff;

pub use diff::{Change, diff};

/// Where drop-in components live, relative to the workspace (for messages).
const TOOLS_DIR: &str = ".warden/tools";

/// Version of the record file; bumped when its shape changes incompatibly.
/// Format 2: tools carry a typed capability set; components no tool list.
const FORMAT: u32 = 2;

/// What a workspace's configuration grants, captured for trust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct TrustState {
    /// SHA-256 (hex) of the `warden.toml` bytes; `None` when there is no file.
    pub policy_hash: Option<String>,
    /// The accepted file text, so warden can keep running with the last
    /// trusted policy when the file changes behind the user's back.
    pub policy_text: Option<String>,
    /// Drop-in components, keyed by file name in `.warden/tools`
    /// (e.g. `uppercase.wasm`).
    pub components: BTreeMap<String, ComponentEntry>,
    /// Effective grants of every enabled tool, keyed by tool name. Recorded
    /// (not just the policy hash) because the same text can grant more later,
    /// e.g. when a granted directory becomes a symlink elsewhere: only what
    /// is recorded here is ever granted.
    pub tools: BTreeMap<String, ToolRecord>,
    /// SHA-256 (hex) of the workspace's `AGENTS.md`, which goes into the
    /// model's instructions; `None` when there is none (or none accepted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions_hash: Option<String>,
}

/// One accepted drop-in component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ComponentEntry {
    /// SHA-256 (hex) of the component file.
    pub hash: String,
    /// Size in bytes, for the diff.
    #[serde(default)]
    pub size: u64,
}

/// What one enabled tool was granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolRecord {
    /// `builtin`, `drop-in` for a tool a component file provides, or `mcp`
    /// for an MCP server (keyed `mcp.NAME`).
    pub origin: String,
    /// The command line an MCP server starts with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Vec<String>>,
    /// The URL of an MCP server warden connects to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// SHA-256 of each workspace file an MCP server's command line runs
    /// (its program or script), keyed as the command line names it: a tool
    /// that may write the workspace must not change what the server runs
    /// with its grants. `None` for other tools, and in records of MCP
    /// servers written before warden recorded them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<BTreeMap<String, String>>,
    /// Its capabilities.
    pub caps: BTreeSet<Capability>,
    /// Its limits.
    pub limits: Limits,
}

impl ToolRecord {
    /// Captures `grants` for the record.
    pub fn new(builtin: bool, grants: &Grants) -> ToolRecord {
        ToolRecord {
            origin: if builtin { "builtin" } else { "drop-in" }.to_string(),
            launch: None,
            url: None,
            files: None,
            caps: grants.set(),
            limits: grants.limits,
        }
    }

    /// Captures how an MCP server is reached, the workspace files its
    /// command line names (`files`: name → SHA-256), and what it is
    /// granted.
    pub fn mcp(launch: &McpLaunch, files: BTreeMap<String, String>, grants: &Grants) -> ToolRecord {
        let (command, url) = match launch {
            McpLaunch::Command(argv) => (Some(argv.clone()), None),
            McpLaunch::Url(url) => (None, Some(url.clone())),
        };
        ToolRecord {
            origin: "mcp".to_string(),
            launch: command,
            url,
            files: Some(files),
            caps: grants.set(),
            limits: grants.limits,
        }
    }

    /// How the MCP server it records was reached, if it records one.
    pub fn mcp_launch(&self) -> Option<McpLaunch> {
        match (&self.launch, &self.url) {
            (Some(argv), _) => Some(McpLaunch::Command(argv.clone())),
            (None, Some(url)) => Some(McpLaunch::Url(url.clone())),
            (None, None) => None,
        }
    }
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// SHA-256 of what `reader` reads to its end, lowercase hex, without
/// holding it all in memory.
pub fn sha256_hex_of(reader: impl std::io::Read) -> std::io::Result<String> {
    let mut hash = Sha256::default();
    std::io::copy(&mut std::io::BufReader::new(reader), &mut hash)?;
    Ok(hex(&hash.finalize()))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// The per-user trust store: one JSON file per workspace.
///
/// It lives outside every workspace (the caller opens
/// `$XDG_STATE_HOME/warden/trust`) so that nothing a tool or a cloned
/// repository writes can vouch for itself; its files are never reached
/// through a symlink ([`StateDir`]).
#[derive(Debug)]
pub struct TrustStore {
    dir: StateDir,
}

/// The file as written: the state plus what a human needs to recognize it.
#[derive(Serialize)]
struct RecordOut<'a> {
    format: u32,
    workspace: &'a str,
    state: &'a TrustState,
}

/// `format` is checked through [`RecordHead`] before this is parsed.
#[derive(Deserialize)]
struct RecordIn {
    workspace: String,
    state: TrustState,
}

/// Read first, alone, so that a record from another warden version gets a
/// message about versions rather than a parse error.
#[derive(Deserialize)]
struct RecordHead {
    format: u32,
}

impl TrustStore {
    /// A store keeping its records in `dir`.
    pub fn new(dir: StateDir) -> TrustStore {
        TrustStore { dir }
    }

    /// The folder of the records.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The trusted state of `workspace`, or `None` if it was never trusted.
    ///
    /// A record that cannot be parsed is an error rather than "never
    /// trusted", so that the user learns their acceptance was lost instead
    /// of silently running with different grants.
    pub fn load(&self, workspace: &Path) -> Result<Option<TrustState>> {
        let (name, ws) = record_name(workspace);
        let path = self.dir.path().join(&name);
        let bytes = match self.dir.read(&name) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return Ok(None),
            Err(source) => return Err(Error::Read { path, source }),
        };
        let corrupt = |why: String| Error::Invalid {
            path: path.clone(),
            message: format!(
                "{why}; run `warden trust` in {ws} to review and trust the workspace again \
                 (or delete this file)"
            ),
        };
        let head: RecordHead = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(format!("corrupt trust record ({e})")))?;
        if head.format != FORMAT {
            return Err(corrupt(format!(
                "trust record has format {}, this warden reads format {FORMAT}",
                head.format
            )));
        }
        let record: RecordIn = serde_json::from_slice(&bytes)
            .map_err(|e| corrupt(format!("corrupt trust record ({e})")))?;
        if record.workspace != ws {
            return Err(corrupt(format!(
                "trust record is for {}, not {ws}",
                record.workspace
            )));
        }
        Ok(Some(record.state))
    }

    /// Records `state` as trusted for `workspace`, atomically: a crash
    /// leaves either the old or the new acceptance, never half of one.
    pub fn save(&self, workspace: &Path, state: &TrustState) -> Result<()> {
        let (name, ws) = record_name(workspace);
        let path = self.dir.path().join(&name);
        let record = RecordOut {
            format: FORMAT,
            workspace: &ws,
            state,
        };
        let mut text = serde_json::to_string_pretty(&record).map_err(|e| write_error(&path, e))?;
        text.push('\n');
        self.dir
            .write_atomic(&name, text.as_bytes())
            .map_err(|e| write_error(&path, e))
    }

    /// Forgets `workspace` (the next start runs it with safe defaults).
    pub fn remove(&self, workspace: &Path) -> Result<()> {
        let (name, _) = record_name(workspace);
        self.dir
            .remove(&name)
            .map_err(|e| write_error(&self.dir.path().join(&name), e))
    }
}

/// The record file name of `workspace` and the canonical workspace path.
///
/// Named by a hash of the canonical path so that `.`, `./`, symlinks and
/// the absolute path all find the same record. A path that cannot be
/// canonicalized (it no longer exists) is used as given.
fn record_name(workspace: &Path) -> (String, String) {
    let canon = workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf());
    // Raw bytes on Unix; elsewhere Rust's encoding. Were it ever to
    // change, records would only be missed (never trusted), not confused.
    let name = sha256_hex(canon.as_os_str().as_encoded_bytes());
    (format!("{name}.json"), canon.display().to_string())
}

fn write_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Write {
        path: path.to_path_buf(),
        message: format!("cannot save the trust record: {e}"),
    }
}

/// What runs in a workspace, given what the user trusted.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Decision {
    /// The text to parse as the policy: the current file when trusted and
    /// unchanged, else the last trusted text; `None` means the safe defaults
    /// (built-in tools only, the workspace only, no network).
    pub use_policy_text: Option<String>,
    /// Component file names whose current hash is the one trusted for them.
    pub allowed_components: BTreeSet<String>,
    /// What differs from the trusted state and how to accept it, one line
    /// each, for the user.
    pub notices: Vec<String>,
}

/// Decides which policy text and which components run.
///
/// `components` maps each file in `.warden/tools` to its current hash. A
/// component is allowed only under the file name it was trusted as, so a
/// copy of a trusted component cannot add a second set of tools unasked.
///
/// This compares hashes only. The same policy text can still grant more than
/// it did (a granted directory replaced by a symlink elsewhere), so callers
/// should also [`diff()`] the trusted `tools` against the current ones.
pub fn decide(
    trusted: Option<&TrustState>,
    policy_text: Option<&str>,
    components: &BTreeMap<String, String>,
) -> Decision {
    let Some(trusted) = trusted else {
        return never_trusted(policy_text, components);
    };
    let mut notices = Vec::new();
    let current_hash = policy_text.map(|t| sha256_hex(t.as_bytes()));
    let use_policy_text = if current_hash == trusted.policy_hash {
        policy_text.map(str::to_string)
    } else {
        let trust = "review and accept with `warden trust`";
        notices.push(match (&trusted.policy_hash, policy_text) {
            (None, _) => format!(
                "{POLICY_FILE} is new since you trusted this workspace: ignoring it and using \
                 the safe defaults; {trust}"
            ),
            (Some(_), None) => format!(
                "{POLICY_FILE} was removed since you trusted this workspace: still using the \
                 last trusted version; {trust}"
            ),
            (Some(_), Some(_)) => format!(
                "{POLICY_FILE} changed since you trusted this workspace: using the last trusted \
                 version; {trust}"
            ),
        });
        // Only a text that still matches its recorded hash: a damaged record
        // must not become a policy nobody accepted.
        trusted
            .policy_text
            .clone()
            .filter(|t| Some(sha256_hex(t.as_bytes())) == trusted.policy_hash)
    };
    let mut allowed_components = BTreeSet::new();
    let files: BTreeSet<&String> = components.keys().chain(trusted.components.keys()).collect();
    for file in files {
        match (trusted.components.get(file), components.get(file)) {
            (Some(t), Some(hash)) if t.hash == *hash => {
                allowed_components.insert(file.clone());
            }
            (Some(_), Some(_)) => notices.push(format!(
                "ignoring {TOOLS_DIR}/{file}: changed since you trusted this workspace; run \
                 `warden trust` to allow the new version"
            )),
            (None, Some(_)) => notices.push(format!(
                "ignoring {TOOLS_DIR}/{file}: new since you trusted this workspace; run \
                 `warden trust` to allow it"
            )),
            // Nothing runs that is not there; said so only because the
            // trusted state will differ until the user accepts the removal.
            (Some(_), None) => notices.push(format!(
                "{TOOLS_DIR}/{file} was removed since you trusted this workspace; run \
                 `warden trust` to accept the removal"
            )),
            (None, None) => {}
        }
    }
    Decision {
        use_policy_text,
        allowed_components,
        notices,
    }
}

fn never_trusted(policy_text: Option<&str>, components: &BTreeMap<String, String>) -> Decision {
    let ignored: Vec<String> = policy_text
        .map(|_| POLICY_FILE.to_string())
        .into_iter()
        .chain(components.keys().map(|f| format!("{TOOLS_DIR}/{f}")))
        .collect();
    // A workspace with nothing to trust runs exactly as it would trusted.
    let notices = if ignored.is_empty() {
        Vec::new()
    } else {
        vec![format!(
            "this workspace is not trusted: ignoring {}; built-in tools get the workspace only \
             and no network; review and accept with `warden trust`",
            ignored.join(", ")
        )]
    };
    Decision {
        use_policy_text: None,
        allowed_components: BTreeSet::new(),
        notices,
    }
}

#[cfg(test)]
mod tests;
