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
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::{Error, Grants, Origin, POLICY_FILE, Result};

mod diff;

pub use diff::{Change, diff};

/// Where drop-in components live, relative to the workspace (for messages).
const TOOLS_DIR: &str = ".warden/tools";

/// Version of the record file; bumped when its shape changes incompatibly.
const FORMAT: u32 = 1;

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
    /// e.g. when a granted directory becomes a symlink elsewhere.
    pub tools: BTreeMap<String, ToolGrants>,
}

/// One accepted drop-in component.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ComponentEntry {
    /// SHA-256 (hex) of the component file.
    pub hash: String,
    /// Names of the tools it provides.
    pub tools: Vec<String>,
}

/// The effective grants of one tool, in a plain form that serializes stably.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ToolGrants {
    /// `builtin`, `workspace` or `user` (see [`Origin`]).
    pub origin: String,
    /// Absolute directories mounted read-only, sorted.
    pub read: Vec<String>,
    /// Absolute directories mounted read-write, sorted.
    pub write: Vec<String>,
    /// Host environment variables passed through, sorted.
    pub env: Vec<String>,
    /// Reachable hosts, sorted.
    pub network: Vec<String>,
    /// Memory limit in bytes.
    pub memory: u64,
    /// Timeout of one call in milliseconds.
    pub timeout_ms: u64,
    /// Output limit in bytes.
    pub output: u64,
}

impl ToolGrants {
    /// Captures `g` for the record. Lists are sorted and deduplicated so that
    /// a reordered policy does not look like a change.
    pub fn from_grants(origin: Origin, g: &Grants) -> ToolGrants {
        let dirs = |write: bool| {
            sorted(
                g.dirs
                    .iter()
                    .filter(|d| d.write == write)
                    .map(|d| d.path.display().to_string()),
            )
        };
        ToolGrants {
            origin: origin.to_string(),
            read: dirs(false),
            write: dirs(true),
            env: sorted(g.env.iter().cloned()),
            network: sorted(g.network.iter().cloned()),
            memory: g.limits.memory,
            timeout_ms: u64::try_from(g.limits.timeout.as_millis()).unwrap_or(u64::MAX),
            output: g.limits.output,
        }
    }
}

fn sorted(items: impl Iterator<Item = String>) -> Vec<String> {
    items.collect::<BTreeSet<_>>().into_iter().collect()
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The per-user trust store: one JSON file per workspace.
///
/// It lives outside every workspace (the caller passes
/// `$XDG_STATE_HOME/warden/trust`) so that nothing a tool or a cloned
/// repository writes can vouch for itself.
#[derive(Debug, Clone)]
pub struct TrustStore {
    dir: PathBuf,
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
    /// A store keeping its records in `dir` (created on first save).
    pub fn new(dir: PathBuf) -> TrustStore {
        TrustStore { dir }
    }

    /// The trusted state of `workspace`, or `None` if it was never trusted.
    ///
    /// A record that cannot be parsed is an error rather than "never
    /// trusted", so that the user learns their acceptance was lost instead
    /// of silently running with different grants.
    pub fn load(&self, workspace: &Path) -> Result<Option<TrustState>> {
        let (path, ws) = self.record_path(workspace);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(Error::Read { path, source }),
        };
        let corrupt = |why: String| Error::Invalid {
            path: path.clone(),
            message: format!(
                "{why}; delete this file, or run `warden trust` in {ws} to review and trust \
                 the workspace again"
            ),
        };
        let head: RecordHead = serde_json::from_str(&text)
            .map_err(|e| corrupt(format!("corrupt trust record ({e})")))?;
        if head.format != FORMAT {
            return Err(corrupt(format!(
                "trust record has format {}, this warden reads format {FORMAT}",
                head.format
            )));
        }
        let record: RecordIn = serde_json::from_str(&text)
            .map_err(|e| corrupt(format!("corrupt trust record ({e})")))?;
        if record.workspace != ws {
            return Err(corrupt(format!(
                "trust record is for {}, not {ws}",
                record.workspace
            )));
        }
        Ok(Some(record.state))
    }

    /// Records `state` as trusted for `workspace`.
    ///
    /// Writes a temporary file and renames it over the record, so a crash
    /// leaves either the old or the new acceptance, never half of one.
    pub fn save(&self, workspace: &Path, state: &TrustState) -> Result<()> {
        let (path, ws) = self.record_path(workspace);
        let record = RecordOut {
            format: FORMAT,
            workspace: &ws,
            state,
        };
        let mut text = serde_json::to_string_pretty(&record).map_err(|e| write_error(&path, e))?;
        text.push('\n');
        create_private_dir(&self.dir).map_err(|e| write_error(&self.dir, e))?;
        // Unique per process and call: two warden processes (or threads)
        // saving at once must not write into the same temporary file.
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("record");
        let tmp = self.dir.join(format!(
            ".{name}.{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let written = (|| {
            let mut file = std::fs::File::create(&tmp)?;
            file.write_all(text.as_bytes())?;
            file.sync_all()?;
            std::fs::rename(&tmp, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(write_error(&path, e));
        }
        Ok(())
    }

    /// The record file of `workspace` and the canonical workspace path.
    ///
    /// Named by a hash of the canonical path so that `.`, `./`, symlinks and
    /// the absolute path all find the same record. A path that cannot be
    /// canonicalized (it no longer exists) is used as given.
    fn record_path(&self, workspace: &Path) -> (PathBuf, String) {
        let canon = workspace
            .canonicalize()
            .unwrap_or_else(|_| workspace.to_path_buf());
        // Raw bytes on Unix; elsewhere Rust's encoding. Were it ever to
        // change, records would only be missed (never trusted), not confused.
        let name = sha256_hex(canon.as_os_str().as_encoded_bytes());
        (
            self.dir.join(format!("{name}.json")),
            canon.display().to_string(),
        )
    }
}

/// The store is private to the user: other local users have no business
/// reading which workspaces they trust, let alone editing it.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The policy error type has no write variant; `Invalid` carries the cause.
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
