//! From the policy file to the effective grants of one tool.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::file::{ModelSection, PolicyFile, ToolName, ToolSection, UserConfig};
use crate::units::format_size;
use crate::{Error, POLICY_FILE, Result};

/// Where a tool component came from; decides the defaults it gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Shipped with warden.
    Builtin,
    /// `<workspace>/.warden/tools/`.
    Workspace,
    /// The per-user tools folder.
    User,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Origin::Builtin => "builtin",
            Origin::Workspace => "workspace",
            Origin::User => "user",
        })
    }
}

/// One directory a tool may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DirGrant {
    /// Canonical absolute host path.
    pub path: PathBuf,
    /// Read-write when true, read-only otherwise.
    pub write: bool,
}

/// Resource limits of one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Maximum linear memory in bytes.
    pub memory: u64,
    /// Wall-clock limit of one call.
    #[serde(serialize_with = "ser_duration")]
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

impl std::fmt::Display for Limits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "memory {}, timeout {}, output {}",
            format_size(self.memory),
            format_duration(self.timeout),
            format_size(self.output)
        )
    }
}

fn format_duration(d: Duration) -> String {
    if d.subsec_millis() != 0 {
        format!("{}ms", d.as_millis())
    } else {
        format!("{}s", d.as_secs())
    }
}

fn ser_duration<S: serde::Serializer>(d: &Duration, s: S) -> std::result::Result<S::Ok, S::Error> {
    s.serialize_u64(d.as_millis() as u64)
}

/// Everything one tool may touch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grants {
    /// Directories, most specific last.
    pub dirs: Vec<DirGrant>,
    /// Names of host environment variables passed through.
    pub env: Vec<String>,
    /// Hosts the tool may send HTTP requests to, normalised (see
    /// [`crate::HostPattern`]); empty means no network.
    pub network: Vec<String>,
    /// Limits of each call.
    pub limits: Limits,
    /// True when these come from a `[tools.NAME]` section, false for defaults.
    pub from_policy: bool,
}

impl Grants {
    /// A one-line summary: `rw:. ro:docs env:LANG`.
    pub fn summary(&self, workspace: &Path) -> String {
        let mut parts: Vec<String> = self
            .dirs
            .iter()
            .map(|d| {
                let shown = match d.path.strip_prefix(workspace) {
                    Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
                    Ok(rel) => rel.display().to_string(),
                    Err(_) => d.path.display().to_string(),
                };
                format!("{}:{shown}", if d.write { "rw" } else { "ro" })
            })
            .collect();
        if !self.env.is_empty() {
            parts.push(format!("env:{}", self.env.join(",")));
        }
        if !self.network.is_empty() {
            parts.push(format!("net:{}", self.network.join(",")));
        }
        if parts.is_empty() {
            parts.push("no access".into());
        }
        parts.join(" ")
    }
}

/// A loaded workspace policy.
#[derive(Debug, Clone)]
pub struct Policy {
    workspace: PathBuf,
    path: PathBuf,
    file: PolicyFile,
    present: bool,
}

impl Policy {
    /// Loads `<workspace>/warden.toml`, or the defaults when there is none.
    pub fn load(workspace: &Path) -> Result<Policy> {
        let path = workspace.join(POLICY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Policy::parse(&text, &path, workspace),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Policy::defaults(workspace)),
            Err(source) => Err(Error::Read { path, source }),
        }
    }

    /// The policy of a workspace without `warden.toml`.
    pub fn defaults(workspace: &Path) -> Policy {
        Policy {
            workspace: canonical_workspace(workspace),
            path: workspace.join(POLICY_FILE),
            file: PolicyFile::default(),
            present: false,
        }
    }

    /// Parses policy text; `path` is only used in messages.
    pub fn parse(text: &str, path: &Path, workspace: &Path) -> Result<Policy> {
        let file: PolicyFile = parse_toml(text, path)?;
        for (name, section) in &file.tools {
            check_overlap(path, &name.0, section)?;
        }
        Ok(Policy {
            workspace: canonical_workspace(workspace),
            path: path.to_path_buf(),
            file,
            present: true,
        })
    }

    /// `approval`: "never", "writes" (default) or "always".
    pub fn approval(&self) -> &str {
        self.file.approval.as_deref().unwrap_or("writes")
    }

    /// The `[model]` section (all fields unset when absent).
    pub fn model(&self) -> &ModelSection {
        &self.file.model
    }

    /// The canonical workspace root.
    pub fn workspace(&self) -> &Path {
        &self.workspace
    }

    /// Path of the policy file (which may not exist).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the workspace has a policy file.
    pub fn is_present(&self) -> bool {
        self.present
    }

    /// Tool names that have a `[tools.NAME]` section.
    pub fn named_tools(&self) -> impl Iterator<Item = &str> {
        self.file.tools.keys().map(|k| k.0.as_str())
    }

    /// The section of one tool, if the file has one.
    pub fn section(&self, tool: &str) -> Option<&ToolSection> {
        self.file.tools.get(&ToolName(tool.to_string()))
    }

    /// The effective grants of `tool`, or `None` when it is not enabled.
    ///
    /// Also returns warnings (a granted directory that does not exist).
    pub fn grants_for(&self, tool: &str, origin: Origin) -> Option<(Grants, Vec<String>)> {
        let section = self.section(tool);
        let enabled = match (section.and_then(|s| s.enabled), section, origin) {
            (Some(on), _, _) => on,
            (None, Some(_), _) => true,
            (None, None, Origin::Builtin) => true,
            (None, None, _) => false,
        };
        if !enabled {
            return None;
        }
        let defaults = &self.file.limits;
        let base = Limits::default();
        let pick = |s: Option<&ToolSection>| Limits {
            memory: s
                .and_then(|s| s.memory)
                .or(defaults.memory)
                .unwrap_or(base.memory),
            timeout: s
                .and_then(|s| s.timeout)
                .or(defaults.timeout)
                .unwrap_or(base.timeout),
            output: s
                .and_then(|s| s.output)
                .or(defaults.output)
                .unwrap_or(base.output),
        };
        let limits = pick(section);
        let mut warnings = Vec::new();
        let explicit_dirs = section.is_some_and(|s| s.read.is_some() || s.write.is_some());
        let dirs = if explicit_dirs {
            let s = section.expect("explicit_dirs implies a section");
            let mut dirs = Vec::new();
            // Read-write first so that a nested read-only grant is the more
            // specific (longer) mount and wins for paths under it.
            for (list, write) in [(&s.write, true), (&s.read, false)] {
                for p in list.iter().flatten() {
                    match self.resolve_dir(p) {
                        Ok(path) => dirs.push(DirGrant { path, write }),
                        Err(why) => warnings.push(format!(
                            "{}: directory `{p}` granted to `{tool}` {why}; it is not mounted",
                            self.path.display()
                        )),
                    }
                }
            }
            dirs.sort_by_key(|d| d.path.components().count());
            for ro in dirs.iter().filter(|d| !d.write) {
                if let Some(rw) = dirs
                    .iter()
                    .find(|d| d.write && ro.path.starts_with(&d.path))
                {
                    warnings.push(format!(
                        "{}: `{tool}` reads {} inside its read-write {}: paths named under it are \
                         read-only, but a symlink in the read-write part, or a component using the \
                         outer directory directly, can still write it; grant separate directories \
                         for a hard boundary",
                        self.path.display(),
                        ro.path.display(),
                        rw.path.display()
                    ));
                }
            }
            dirs
        } else if origin == Origin::Builtin {
            vec![DirGrant {
                path: self.workspace.clone(),
                write: true,
            }]
        } else {
            Vec::new()
        };
        let grants = Grants {
            dirs,
            env: section.map(|s| s.env.clone()).unwrap_or_default(),
            network: section.map(|s| s.network.clone()).unwrap_or_default(),
            limits,
            from_policy: section.is_some(),
        };
        Some((grants, warnings))
    }

    fn resolve_dir(&self, p: &str) -> std::result::Result<PathBuf, &'static str> {
        let joined = self.workspace.join(p);
        let canon = joined.canonicalize().map_err(|_| "does not exist")?;
        if !canon.is_dir() {
            return Err("is not a directory");
        }
        Ok(canon)
    }
}

/// Parses TOML into `T`; errors carry the line and column.
pub(crate) fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, path: &Path) -> Result<T> {
    toml::from_str(text).map_err(|e| {
        let (line, column) = e
            .span()
            .map(|s| line_column(text, s.start))
            .unwrap_or((1, 1));
        Error::Syntax {
            path: path.to_path_buf(),
            line,
            column,
            message: e.message().trim().to_string(),
        }
    })
}

/// Loads the per-user config file; a missing file is the empty config.
pub fn load_user_config(path: &Path) -> Result<UserConfig> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_toml(&text, path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(UserConfig::default()),
        Err(source) => Err(Error::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn canonical_workspace(workspace: &Path) -> PathBuf {
    workspace
        .canonicalize()
        .unwrap_or_else(|_| workspace.to_path_buf())
}

fn check_overlap(path: &Path, tool: &str, s: &ToolSection) -> Result<()> {
    for r in s.read.iter().flatten() {
        if s.write.iter().flatten().any(|w| same_dir(w, r)) {
            return Err(Error::Invalid {
                path: path.to_path_buf(),
                message: format!(
                    "tool `{tool}` lists `{r}` under both `read` and `write`: keep one"
                ),
            });
        }
    }
    Ok(())
}

fn same_dir(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        let t = s.trim_end_matches('/');
        let t = t.strip_prefix("./").unwrap_or(t);
        if t.is_empty() {
            ".".to_string()
        } else {
            t.to_string()
        }
    };
    norm(a) == norm(b)
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |i| before.len() - i - 1)
        + 1;
    (line, column)
}

#[cfg(test)]
mod tests;
