//! The tools of one workspace: loaded components joined with the policy.

use std::sync::Arc;
use std::time::Duration;

use warden_policy::{DirGrant, Grants, Policy};

use crate::outcome::{CallOutcome, ErrorKind, ToolError};
use crate::{ToolHost, ToolInfo};

/// A loaded tool with its effective grants (`None`: not enabled).
#[derive(Debug, Clone)]
pub struct Entry {
    /// The tool.
    pub info: ToolInfo,
    /// Its grants, or `None` when the policy does not enable it.
    pub grants: Option<Grants>,
}

/// The tools a workspace may use, with their grants.
#[derive(Debug, Clone)]
pub struct Toolset {
    host: Arc<ToolHost>,
    entries: Vec<Entry>,
    warnings: Vec<String>,
}

impl Toolset {
    /// Joins the host's tools with the policy's grants.
    pub fn new(host: Arc<ToolHost>, policy: &Policy) -> Toolset {
        let mut warnings = Vec::new();
        let entries = host
            .tools()
            .map(|info| {
                let grants = policy
                    .grants_for(&info.spec.name, info.origin)
                    .map(|(g, w)| {
                        warnings.extend(w);
                        g
                    });
                Entry {
                    info: info.clone(),
                    grants,
                }
            })
            .collect();
        for name in policy.named_tools() {
            if host.tools().all(|t| t.spec.name != name) {
                warnings.push(format!(
                    "{}: `[tools.{name}]` names no loaded tool (see `warden tools list`)",
                    policy.path().display()
                ));
            }
        }
        Toolset {
            host,
            entries,
            warnings,
        }
    }

    /// Unmounts every directory grant that `keep(tool, grant)` rejects, with a
    /// warning for each: the caller pins grants to what the user accepted.
    pub fn retain_dirs(&mut self, keep: impl Fn(&str, &DirGrant) -> bool, why: &str) {
        for e in &mut self.entries {
            let Some(g) = e.grants.as_mut() else { continue };
            let name = &e.info.spec.name;
            g.dirs.retain(|d| {
                let kept = keep(name, d);
                if !kept {
                    self.warnings.push(format!(
                        "`{name}`: {} ({}) {why}",
                        d.path.display(),
                        if d.write { "read-write" } else { "read-only" }
                    ));
                }
                kept
            });
        }
    }

    /// Every loaded tool, enabled or not.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The enabled tools with their grants.
    pub fn enabled(&self) -> impl Iterator<Item = (&ToolInfo, &Grants)> {
        self.entries
            .iter()
            .filter_map(|e| e.grants.as_ref().map(|g| (&e.info, g)))
    }

    /// Problems with the policy (a granted directory that does not exist, ...).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The host behind this toolset.
    pub fn host(&self) -> &ToolHost {
        &self.host
    }

    /// The enabled tool called `name` (or an alias).
    pub fn find(&self, name: &str) -> Option<(&ToolInfo, &Grants)> {
        let info = self.host.resolve(name)?;
        self.enabled().find(|(i, _)| i.spec.name == info.spec.name)
    }

    /// Runs one call; unknown and disabled tools get an error that says what
    /// exists.
    pub fn call(&self, name: &str, args: &str) -> CallOutcome {
        match self.find(name) {
            Some((info, grants)) => self.host.call(&info.spec.name, args, grants),
            None => CallOutcome {
                tool: name.to_string(),
                result: Err(self.unknown(name)),
                truncated: false,
                duration: Duration::ZERO,
                stderr: String::new(),
            },
        }
    }

    fn unknown(&self, name: &str) -> ToolError {
        if let Some(info) = self.host.resolve(name) {
            return ToolError::new(
                ErrorKind::UnknownTool,
                format!(
                    "tool `{}` is installed but not enabled in this workspace \
                     (the user can enable it with a `[tools.{}]` section in warden.toml)",
                    info.spec.name, info.spec.name
                ),
            );
        }
        let names: Vec<&str> = self.enabled().map(|(i, _)| i.spec.name.as_str()).collect();
        let close = names
            .iter()
            .copied()
            .chain(
                self.enabled()
                    .flat_map(|(i, _)| i.spec.aliases.iter().map(String::as_str)),
            )
            .map(|n| (strsim::jaro_winkler(name, n), n))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, n)| format!(" Did you mean `{n}`?"))
            .unwrap_or_default();
        ToolError::new(
            ErrorKind::UnknownTool,
            format!(
                "there is no tool named `{name}`.{close} Available tools: {}",
                names.join(", ")
            ),
        )
    }
}
