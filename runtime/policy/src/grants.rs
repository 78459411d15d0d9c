//! From the policy file to the effective grants of one tool.

use std::path::{Path, PathBuf};

use serde::Serialize;
use toml::Spanned;

use crate::caps::{Capability, Grants, Limits};
use crate::file::{McpSection, ModelSection, PolicyFile, ToolName, ToolSection, UserConfig};
use crate::inert::inert;
use crate::{Error, POLICY_FILE, POLICY_MAX, Result};
use warden_state::InputDir;

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

/// What a tool gets when `warden.toml` has no `[tools.NAME]` section for
/// it. Each built-in declares its own; every drop-in is [`Baseline::Off`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// Not enabled until a section names it (drop-ins; built-ins that must
    /// be asked for).
    Off,
    /// Enabled, with the workspace read-only (the built-in tools that
    /// only look: `read_file`, `grep`, ...).
    WorkspaceRead,
    /// Enabled, with the workspace read-write (the built-in tools that
    /// change files).
    Workspace,
    /// Enabled, with nothing: no directory, no network (web tools).
    Nothing,
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
        match Policy::read(&InputDir::workspace(workspace)?)? {
            Some(text) => Policy::parse(&text, &workspace.join(POLICY_FILE), workspace),
            None => Ok(Policy::defaults(workspace)),
        }
    }

    /// The text of `warden.toml` in the workspace `ws`, `None` when there is
    /// none: a regular file of at most [`POLICY_MAX`] bytes of UTF-8,
    /// never reached through a link.
    pub fn read(ws: &InputDir) -> Result<Option<String>> {
        let Some(bytes) = ws.read(POLICY_FILE, POLICY_MAX)? else {
            return Ok(None);
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|e| Error::Invalid {
                path: ws.path().join(POLICY_FILE),
                message: format!(
                    "it is not UTF-8 text (at byte {}): save it as UTF-8",
                    e.utf8_error().valid_up_to()
                ),
            })
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

    /// Parses policy text; `path` is only used in messages. Every error
    /// names the line and column it is about.
    pub fn parse(text: &str, path: &Path, workspace: &Path) -> Result<Policy> {
        let file: PolicyFile = parse_toml(text, path)?;
        let at = |span: std::ops::Range<usize>, message: String| {
            let (line, column) = line_column(text, span.start);
            Error::Syntax {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        };
        for (name, section) in &file.tools {
            let span = section.span();
            let section = section.get_ref();
            check_overlap(&name.0, section).map_err(|m| at(span.clone(), m))?;
            section
                .check()
                .map_err(|m| at(span, format!("[tools.{}]: {m}", name.0)))?;
        }
        for (name, server) in &file.mcp {
            let grants = &server.get_ref().grants;
            check_overlap(&mcp_key(&name.0), grants).map_err(|m| at(server.span(), m))?;
            grants
                .check()
                .map_err(|m| at(server.span(), format!("[mcp.{}]: {m}", name.0)))?;
        }
        Ok(Policy {
            workspace: canonical_workspace(workspace),
            path: path.to_path_buf(),
            file,
            present: true,
        })
    }

    /// `approval`: "never", "writes" or "always", when the file sets it.
    pub fn approval(&self) -> Option<&str> {
        self.file.approval.as_deref()
    }

    /// `confinement`: "auto" or "namespaces", when the file sets it.
    pub fn confinement(&self) -> Option<&str> {
        self.file.confinement.as_deref()
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
        self.file
            .tools
            .get(&ToolName(tool.to_string()))
            .map(Spanned::get_ref)
    }

    /// The effective grants of `tool`, or `None` when it is not enabled.
    /// `baseline` is what it gets without a section of its own.
    ///
    /// Also returns warnings (a granted directory that does not exist).
    pub fn grants_for(&self, tool: &str, baseline: Baseline) -> Option<(Grants, Vec<String>)> {
        self.grants_of(tool, self.section(tool), baseline)
    }

    /// The `[mcp.NAME]` sections, by name.
    pub fn mcp_servers(&self) -> impl Iterator<Item = (&str, &McpSection)> {
        self.file
            .mcp
            .iter()
            .map(|(k, v)| (k.0.as_str(), v.get_ref()))
    }

    /// What the process of MCP server `name` may reach, or `None` when it is
    /// not enabled: only what its section grants, never the workspace by
    /// default.
    pub fn mcp_grants(&self, name: &str) -> Option<(Grants, Vec<String>)> {
        let server = self.file.mcp.get(&ToolName(name.to_string()))?.get_ref();
        self.grants_of(&mcp_key(name), Some(&server.grants), Baseline::Nothing)
    }

    fn grants_of(
        &self,
        tool: &str,
        section: Option<&ToolSection>,
        baseline: Baseline,
    ) -> Option<(Grants, Vec<String>)> {
        let enabled = match (section.and_then(|s| s.enabled), section) {
            (Some(on), _) => on,
            (None, Some(_)) => true,
            (None, None) => baseline != Baseline::Off,
        };
        if !enabled {
            return None;
        }
        let defaults = &self.file.limits;
        let base = Limits::default();
        let limits = Limits {
            memory: section
                .and_then(|s| s.memory)
                .or(defaults.memory)
                .unwrap_or(base.memory),
            timeout: section
                .and_then(|s| s.timeout)
                .or(defaults.timeout)
                .unwrap_or(base.timeout),
            output: section
                .and_then(|s| s.output)
                .or(defaults.output)
                .unwrap_or(base.output),
        };
        let mut warnings = Vec::new();
        let mut grants = Grants {
            caps: Vec::new(),
            limits,
        };
        match section.filter(|s| s.read.is_some() || s.write.is_some()) {
            Some(s) => {
                for cap in self.dirs(tool, s, &mut warnings) {
                    grants.add(cap);
                }
            }
            None if matches!(baseline, Baseline::Workspace | Baseline::WorkspaceRead) => {
                grants.add(Capability::Dir {
                    path: self.workspace.clone(),
                    write: baseline == Baseline::Workspace,
                });
            }
            None => {}
        }
        if let Some(s) = section {
            for cap in s.other_caps() {
                grants.add(cap);
            }
        }
        Some((grants, warnings))
    }

    /// The directory grants of a section: read-write first, then read-only,
    /// most specific last, so that a read-only grant nested in a read-write
    /// one is the longer mount and wins for paths under it.
    fn dirs(&self, tool: &str, s: &ToolSection, warnings: &mut Vec<String>) -> Vec<Capability> {
        let mut dirs: Vec<(PathBuf, bool)> = Vec::new();
        for (list, write) in [(&s.write, true), (&s.read, false)] {
            for p in list.iter().flatten() {
                match self.resolve_dir(p) {
                    Ok(path) => {
                        // The same directory under two spellings in both
                        // lists: read-only wins.
                        if let Some(rw) = dirs.iter_mut().find(|(d, w)| *d == path && *w) {
                            rw.1 = write;
                        } else if !dirs.iter().any(|(d, _)| *d == path) {
                            dirs.push((path, write));
                        }
                    }
                    Err(why) => warnings.push(format!(
                        "{}: directory `{}` granted to `{tool}` {why}; it is not mounted",
                        self.path.display(),
                        inert(p)
                    )),
                }
            }
        }
        dirs.sort_by_key(|(d, _)| d.components().count());
        for (ro, _) in dirs.iter().filter(|(_, w)| !w) {
            if let Some((rw, _)) = dirs.iter().find(|(d, w)| *w && ro.starts_with(d)) {
                warnings.push(format!(
                    "{}: `{tool}` reads {} inside its read-write {}: paths named under it are \
                     read-only, but a symlink in the read-write part, or a component using the \
                     outer directory directly, can still write it (and a program it runs, or an \
                     MCP server, is not started at all); grant separate directories for a hard \
                     boundary",
                    self.path.display(),
                    inert(&ro.display().to_string()),
                    inert(&rw.display().to_string())
                ));
            }
        }
        dirs.into_iter()
            .map(|(path, write)| Capability::Dir { path, write })
            .collect()
    }

    fn resolve_dir(&self, p: &str) -> std::result::Result<PathBuf, &'static str> {
        let joined = self.workspace.join(p);
        let canon = joined.canonicalize().map_err(|_| "does not exist")?;
        if !canon.is_dir() {
            return Err("is not a directory");
        }
        if canon.to_str().is_none() {
            return Err("is not valid UTF-8 (tools cannot name it)");
        }
        Ok(canon)
    }
}

/// The name an MCP server's grants go by in the trust record and in
/// messages: `mcp.NAME`, which no tool name can be.
pub fn mcp_key(name: &str) -> String {
    format!("mcp.{name}")
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

/// What is wrong when a section lists one directory as both read-only and
/// read-write.
fn check_overlap(tool: &str, s: &ToolSection) -> std::result::Result<(), String> {
    for r in s.read.iter().flatten() {
        if s.write.iter().flatten().any(|w| same_dir(w, r)) {
            return Err(format!(
                "tool `{tool}` lists `{r}` under both `read` and `write`: keep one"
            ));
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

/// Line and column (in characters, both from 1) of byte `offset` of
/// `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[start..].chars().count() + 1)
}

#[cfg(test)]
mod tests;
