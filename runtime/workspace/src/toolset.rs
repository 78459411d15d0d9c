//! The tools of one workspace, each bound once to its grants.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use warden_policy::{Grants, Policy, ToolRecord, inert};
use warden_sandbox::{
    BoundTool, CallControl, CallOutcome, ErrorKind, ToolError, ToolHost, ToolInfo,
};

use crate::folders::{Folders, Overlap};
use crate::manifest::baseline;
use crate::mcp::McpTools;

/// One loaded tool: its grants and bound form when enabled.
#[derive(Debug)]
pub struct Entry {
    /// The tool as its component described it.
    pub info: ToolInfo,
    /// Its effective grants; `None` when not enabled.
    pub grants: Option<Grants>,
    bound: Option<BoundTool>,
}

impl Entry {
    /// The tool bound to its grants, when enabled.
    pub fn bound(&self) -> Option<&BoundTool> {
        self.bound.as_ref()
    }
}

/// The tools a workspace may use, bound to their grants for the whole run:
/// a granted folder is opened once, when the toolset is built, and a call
/// finds its tool by one lookup.
#[derive(Debug)]
pub struct Toolset {
    host: Arc<ToolHost>,
    entries: Vec<Entry>,
    /// Names and aliases of enabled tools → entry.
    index: HashMap<String, usize>,
    warnings: Vec<String>,
    /// The tools of the `[mcp.NAME]` servers, once started.
    mcp: Option<McpTools>,
}

/// What grants are checked against while they are resolved.
pub(crate) struct Pins<'a> {
    /// The trusted record of every tool, when the workspace is trusted.
    pub trusted: Option<&'a BTreeMap<String, ToolRecord>>,
    /// warden's own folders, never granted.
    pub folders: &'a Folders,
}

impl Toolset {
    pub(crate) fn build(host: Arc<ToolHost>, policy: &Policy, pins: &Pins<'_>) -> Toolset {
        let mut warnings = Vec::new();
        let mut entries = Vec::new();
        let mut index = HashMap::new();
        for info in host.tools() {
            let name = &info.spec.name;
            let grants = policy
                .grants_for(name, baseline(info.origin, name))
                .map(|(g, w)| {
                    warnings.extend(w);
                    pin(name, g, pins, &mut warnings)
                });
            let bound = grants.as_ref().and_then(|g| match host.bind(name, g) {
                Ok(b) => Some(b),
                Err(why) => {
                    warnings.push(format!("`{name}` is disabled: {why}"));
                    None
                }
            });
            if bound.is_some() {
                for n in std::iter::once(name).chain(&info.spec.aliases) {
                    index.insert(n.clone(), entries.len());
                }
            }
            entries.push(Entry {
                info: info.clone(),
                grants: grants.filter(|_| bound.is_some()),
                bound,
            });
        }
        for name in policy.named_tools() {
            if host.tools().all(|t| t.spec.name != name) {
                warnings.push(format!(
                    "{}: `[tools.{}]` names no loaded tool (see `warden tools list`)",
                    policy.path().display(),
                    inert(name)
                ));
            }
        }
        Toolset {
            host,
            entries,
            index,
            warnings,
            mcp: None,
        }
    }

    /// Adds the tools of started MCP servers; a name a loaded tool already
    /// has stays that tool's.
    pub fn with_mcp(mut self, mut mcp: McpTools) -> Toolset {
        mcp.leave_out_taken(|name| self.index.contains_key(name));
        self.warnings.extend(mcp.problems().iter().cloned());
        self.mcp = Some(mcp);
        self
    }

    /// The MCP servers' tools, when started.
    pub fn mcp(&self) -> Option<&McpTools> {
        self.mcp.as_ref()
    }

    /// Every loaded tool, enabled or not, in load order.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The enabled tools.
    pub fn enabled(&self) -> impl Iterator<Item = &BoundTool> {
        self.entries.iter().filter_map(Entry::bound)
    }

    /// Problems with the policy and the grants, for the user.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The host behind this toolset.
    pub fn host(&self) -> &ToolHost {
        &self.host
    }

    /// The enabled tool called `name` (or one of its aliases).
    pub fn find(&self, name: &str) -> Option<&BoundTool> {
        self.index.get(name).and_then(|&i| self.entries[i].bound())
    }

    /// Runs one call from raw argument text; unknown and disabled tools get
    /// an error that says what exists.
    pub fn call(&self, name: &str, args: &str, control: &CallControl) -> CallOutcome {
        match self.find(name) {
            Some(tool) => tool.call_text(args, control),
            None => self.unknown(name),
        }
    }

    /// The outcome of calling a tool that is not enabled.
    pub fn unknown(&self, name: &str) -> CallOutcome {
        CallOutcome {
            tool: name.to_string(),
            result: Err(self.unknown_error(name)),
            truncated: false,
            duration: Duration::ZERO,
            stderr: String::new(),
        }
    }

    fn unknown_error(&self, name: &str) -> ToolError {
        let shown = inert(name);
        if let Some(info) = self.host.resolve(name) {
            return ToolError::new(
                ErrorKind::UnknownTool,
                format!(
                    "tool `{}` is installed but not enabled in this workspace (the user can \
                     enable it with a `[tools.{}]` section in warden.toml)",
                    info.spec.name, info.spec.name
                ),
            );
        }
        let names: Vec<&str> = self
            .enabled()
            .map(|t| t.info().spec.name.as_str())
            .chain(
                self.mcp
                    .iter()
                    .flat_map(|m| m.tools().iter().map(|t| t.def.name.as_str())),
            )
            .collect();
        let close = self
            .index
            .keys()
            .map(|n| (strsim::jaro_winkler(name, n), n))
            .filter(|(score, _)| *score > 0.8)
            .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
            .map(|(_, n)| format!(" Did you mean `{n}`?"))
            .unwrap_or_default();
        ToolError::new(
            ErrorKind::UnknownTool,
            format!(
                "there is no tool named `{shown}`.{close} Available tools: {}",
                names.join(", ")
            ),
        )
    }
}

/// Keeps only what may be granted: nothing that holds warden's own
/// folders, and in a trusted workspace only what the user accepted for the
/// tool. The same policy text can resolve to more than was accepted (a
/// granted folder replaced by a symlink); that part is dropped, with a
/// warning, before anything is opened.
pub(crate) fn pin(
    tool: &str,
    grants: Grants,
    pins: &Pins<'_>,
    warnings: &mut Vec<String>,
) -> Grants {
    let Grants { caps, limits } = grants;
    let mut kept = Grants {
        caps: Vec::with_capacity(caps.len()),
        limits,
    };
    let record = pins.trusted.map(|t| t.get(tool));
    for cap in caps {
        if let warden_policy::Capability::Dir { path, .. } = &cap
            && let Some(overlap) = pins.folders.owned_overlapping(path)
        {
            warnings.push(match overlap {
                Overlap::Holds(own) => format!(
                    "`{tool}`: {cap} is not granted: it contains warden's own folder {}; grant \
                     a folder inside it that is not warden's instead",
                    inert(&own.display().to_string())
                ),
                Overlap::Inside(own) => format!(
                    "`{tool}`: {cap} is not granted: it is inside warden's own folder {} \
                     (trust records, sessions, caches), which no tool may reach",
                    inert(&own.display().to_string())
                ),
            });
            continue;
        }
        match record {
            Some(Some(r)) if !r.caps.contains(&cap) => warnings.push(format!(
                "`{tool}`: {cap} is not among the grants you trusted (did a granted folder move \
                 or become a symlink?): not granted; review with `warden trust`"
            )),
            Some(None) => warnings.push(format!(
                "`{tool}`: {cap} is not granted: the tool is not in the trusted record; \
                 review with `warden trust`"
            )),
            _ => kept.add(cap),
        }
    }
    kept
}
