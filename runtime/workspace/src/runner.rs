//! The bound toolset as the agent's [`ToolRunner`], with approval.
//!
//! Whether a call needs approval follows from what the tool is granted
//! (write access, network, ...), never from what its component claims.

use serde_json::Value;
use warden_agent::{AgentTool, CallCancel, ToolDef, ToolResult, ToolRunner, Touched};
use warden_policy::{Grants, Origin};
use warden_sandbox::{
    BoundTool, CallControl, CallOutcome, Checked, DesktopCall, Effects, GrantedDirs,
};

use std::sync::Arc;

use crate::mcp::{McpTool, McpTools};
use crate::toolset::Toolset;
use crate::undo::Journal;

/// When calls are put to the user (`approval` in warden.toml, the user
/// config, `--approval`). Ordered from the laxest to the strictest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ApprovalMode {
    /// Never ask.
    Never,
    /// Ask for calls of tools granted more than reading (the default).
    Writes,
    /// Ask for every call.
    Always,
}

impl ApprovalMode {
    /// From the policy value (`never`, `writes`, `always`).
    pub fn parse(s: &str) -> ApprovalMode {
        match s {
            "never" => ApprovalMode::Never,
            "always" => ApprovalMode::Always,
            _ => ApprovalMode::Writes,
        }
    }

    /// The mode in force: `flag` (`--approval`) when given, else the
    /// stricter of the user's config and the (trusted) workspace policy,
    /// else `writes`. A workspace can make warden ask more often than the
    /// user's config says, never less.
    pub fn resolve(
        flag: Option<ApprovalMode>,
        user: Option<ApprovalMode>,
        workspace: Option<ApprovalMode>,
    ) -> ApprovalMode {
        flag.or_else(|| user.max(workspace))
            .unwrap_or(ApprovalMode::Writes)
    }

    /// Whether a call of a tool with `grants` is put to the user.
    pub fn asks(self, grants: &Grants) -> bool {
        match self {
            ApprovalMode::Never => false,
            ApprovalMode::Writes => grants.needs_approval(),
            ApprovalMode::Always => true,
        }
    }
}

/// One call put to the user, its arguments already valid for the tool.
#[derive(Debug)]
pub struct ApprovalRequest<'a> {
    /// The tool's canonical name.
    pub tool: &'a str,
    /// Where the tool comes from: the effects of a tool not built in are
    /// its claim (its grants decide what it can reach).
    pub origin: Origin,
    /// Parsed, schema-checked arguments.
    pub arguments: &'a Value,
    /// What the call will touch: the same value its undo snapshot and its
    /// event line are made from.
    pub effects: &'a Effects,
    /// What it will start, open or end in the desktop session: the same
    /// value the call is held to.
    pub desktop: &'a DesktopCall,
    /// What the tool is granted.
    pub grants: &'a Grants,
    /// Its granted directories, opened: a preview looks through these same
    /// handles, so it reads nothing the call could not.
    pub dirs: &'a GrantedDirs,
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Run the call.
    Allow,
    /// Refuse it, with the message the model sees.
    Refuse(String),
}

/// Decides on calls that need approval (the cli asks on the terminal).
pub trait Approve: Send + Sync {
    /// Whether the call may run.
    fn approve(&self, request: &ApprovalRequest<'_>) -> Verdict;
}

/// A shared approver, so that its owner can still ask it what happened.
impl<T: Approve + ?Sized> Approve for std::sync::Arc<T> {
    fn approve(&self, request: &ApprovalRequest<'_>) -> Verdict {
        (**self).approve(request)
    }
}

/// Runs the agent's calls in the sandbox, after approval where it is due.
pub struct SandboxRunner {
    tools: Toolset,
    mode: ApprovalMode,
    approver: Box<dyn Approve>,
    journal: Option<Arc<Journal>>,
}

impl std::fmt::Debug for SandboxRunner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxRunner")
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl SandboxRunner {
    /// Runs `tools`, asking `approver` for calls `mode` puts to the user.
    pub fn new(tools: Toolset, mode: ApprovalMode, approver: Box<dyn Approve>) -> SandboxRunner {
        SandboxRunner {
            tools,
            mode,
            approver,
            journal: None,
        }
    }

    /// Snapshots what each call that changes files will touch into
    /// `journal`, for undo, and records what changed.
    pub fn with_journal(mut self, journal: Arc<Journal>) -> SandboxRunner {
        self.journal = Some(journal);
        self
    }

    /// The toolset.
    pub fn toolset(&self) -> &Toolset {
        &self.tools
    }

    /// Runs a call of a sandboxed tool; the result goes to `deliver`.
    /// With `ahead`, the tool's next instance is then made on this thread.
    fn run(
        &self,
        tool: &BoundTool,
        arguments: &Value,
        cancel: &CallCancel,
        ahead: bool,
        deliver: impl FnOnce(ToolResult),
    ) {
        let args = match self.prepare(tool, arguments, cancel) {
            Err(refused) => return deliver(*refused),
            Ok((args, control)) => (args, control),
        };
        let (args, control) = args;
        let effects = args.effects();
        // A tool that says it changes things, or may write a file: a fetch
        // or a read is no change to undo.
        let journal = self
            .journal
            .as_ref()
            .filter(|_| tool.info().spec.mutates || tool.grants().dirs().any(|(_, write)| write));
        if let Some(j) = journal {
            j.before(tool, effects);
        }
        let done = |outcome: CallOutcome| {
            if let Some(j) = journal {
                j.after(tool, effects, outcome.result.is_ok());
            }
            deliver(result_of(outcome, Some(effects)));
        };
        if ahead {
            args.call_then(&control, done);
        } else {
            done(args.call(&control));
        }
    }

    /// Everything before a call runs: its arguments checked, approval,
    /// cancellation. The error is the call's result.
    fn prepare<'t>(
        &self,
        tool: &'t BoundTool,
        arguments: &'t Value,
        cancel: &CallCancel,
    ) -> Result<(Checked<'t>, CallControl), Box<ToolResult>> {
        let args = tool.check(arguments).map_err(|e| {
            Box::new(ToolResult {
                ok: false,
                output: e.to_string(),
                error_kind: Some(e.kind.label().to_string()),
                ..ToolResult::default()
            })
        })?;
        let request = ApprovalRequest {
            tool: &tool.info().spec.name,
            origin: tool.info().origin,
            arguments,
            effects: args.effects(),
            desktop: args.desktop(),
            grants: tool.grants(),
            dirs: tool.dirs(),
        };
        if let Some(refused) = self.refused(&request) {
            return Err(Box::new(refused));
        }
        if cancel.is_cancelled() {
            return Err(Box::new(ToolResult {
                ok: false,
                output: "cancelled by the user before it ran".into(),
                error_kind: Some("cancelled".into()),
                touched: touched(args.effects()),
                ..ToolResult::default()
            }));
        }
        let control = CallControl::new();
        cancel.on_cancel({
            let control = control.clone();
            move || control.cancel()
        });
        Ok((args, control))
    }
}

impl SandboxRunner {
    /// A call of an MCP server's tool: approval follows from what the
    /// server's process is granted; its arguments are checked against the
    /// server's schema first (nobody is asked about a call that cannot run).
    fn run_mcp(
        &self,
        mcp: &McpTools,
        tool: &McpTool,
        arguments: &Value,
        cancel: &CallCancel,
    ) -> ToolResult {
        if let Err(e) = tool.check(arguments) {
            return ToolResult {
                ok: false,
                output: e.to_string(),
                error_kind: Some(e.kind.label().to_string()),
                ..ToolResult::default()
            };
        }
        let request = ApprovalRequest {
            tool: &tool.def.name,
            origin: Origin::Workspace,
            arguments,
            effects: &Effects::default(),
            desktop: &DesktopCall::default(),
            grants: &mcp.server(tool).grants,
            dirs: mcp.no_dirs(),
        };
        if let Some(refused) = self.refused(&request) {
            return refused;
        }
        mcp.call(tool, arguments.clone(), cancel)
    }

    /// The result of a call the user refused, when the mode puts it to
    /// them and they do.
    fn refused(&self, request: &ApprovalRequest<'_>) -> Option<ToolResult> {
        if !self.mode.asks(request.grants) {
            return None;
        }
        match self.approver.approve(request) {
            Verdict::Allow => None,
            Verdict::Refuse(output) => Some(ToolResult {
                ok: false,
                output,
                error_kind: Some("refused".into()),
                touched: touched(request.effects),
                ..ToolResult::default()
            }),
        }
    }
}

fn result_of(outcome: CallOutcome, effects: Option<&Effects>) -> ToolResult {
    ToolResult {
        ok: outcome.result.is_ok(),
        error_kind: outcome
            .result
            .as_ref()
            .err()
            .map(|e| e.kind.label().to_string()),
        output: outcome.model_text(),
        duration: outcome.duration,
        truncated: outcome.truncated,
        touched: effects.and_then(touched),
    }
}

/// What a call names and does to each path, for its result; `None` when
/// its tool does not declare it.
fn touched(effects: &Effects) -> Option<Vec<Touched>> {
    effects.declared.then(|| {
        effects
            .touches
            .iter()
            .map(|t| Touched {
                path: t.shown().to_string(),
                access: t.access.verb(),
                refused: t.refused(),
            })
            .collect()
    })
}

impl ToolRunner for SandboxRunner {
    fn tools(&self) -> Vec<AgentTool> {
        let mcp = self.tools.mcp().into_iter().flat_map(|m| {
            m.tools().iter().map(|t| AgentTool {
                def: t.def.clone(),
                mutates: m.server(t).grants.needs_approval(),
                programs: Vec::new(),
                apps: Vec::new(),
                browse: Vec::new(),
            })
        });
        self.tools
            .enabled()
            .map(|t| {
                let spec = &t.info().spec;
                AgentTool {
                    def: ToolDef {
                        name: spec.name.clone(),
                        description: spec.description.clone(),
                        parameters: spec.parameters.clone(),
                    },
                    // What can change state runs alone, in order: what the
                    // component says, or what its grants allow.
                    mutates: spec.mutates || t.grants().needs_approval(),
                    programs: t.grants().programs().map(str::to_string).collect(),
                    apps: t.grants().apps().map(str::to_string).collect(),
                    browse: t.grants().browse().map(str::to_string).collect(),
                }
            })
            .chain(mcp)
            .collect()
    }

    fn call(&self, name: &str, arguments: &Value, cancel: &CallCancel) -> ToolResult {
        let mut result = None;
        self.dispatch(name, arguments, cancel, false, |r| result = Some(r));
        result.expect("every call delivers its result")
    }

    fn call_then(
        &self,
        name: &str,
        arguments: &Value,
        cancel: &CallCancel,
        deliver: Box<dyn FnOnce(ToolResult) + Send>,
    ) {
        self.dispatch(name, arguments, cancel, true, deliver);
    }
}

impl SandboxRunner {
    fn dispatch(
        &self,
        name: &str,
        arguments: &Value,
        cancel: &CallCancel,
        ahead: bool,
        deliver: impl FnOnce(ToolResult),
    ) {
        if let Some(tool) = self.tools.find(name) {
            return self.run(tool, arguments, cancel, ahead, deliver);
        }
        if let Some((mcp, tool)) = self.tools.mcp().and_then(|m| m.find(name).map(|t| (m, t))) {
            return deliver(self.run_mcp(mcp, tool, arguments, cancel));
        }
        deliver(result_of(self.tools.unknown(name), None));
    }
}

#[cfg(test)]
mod tests {
    use super::ApprovalMode::{self, Always, Never, Writes};

    #[test]
    fn the_flag_wins_and_a_workspace_never_loosens_the_user_config() {
        let r = ApprovalMode::resolve;
        assert_eq!(r(Some(Never), Some(Always), Some(Always)), Never);
        assert_eq!(r(Some(Always), None, Some(Never)), Always);
        assert_eq!(r(None, Some(Writes), Some(Never)), Writes);
        assert_eq!(r(None, Some(Writes), Some(Always)), Always);
        assert_eq!(r(None, Some(Never), Some(Writes)), Writes);
        assert_eq!(r(None, Some(Never), None), Never);
        assert_eq!(r(None, None, Some(Never)), Never);
        assert_eq!(r(None, None, None), Writes);
    }
}
