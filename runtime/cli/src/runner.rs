//! The sandbox toolset as the agent's [`ToolRunner`].

use std::time::Duration;

use warden_agent::{AgentTool, ToolDef, ToolResult, ToolRunner};
use warden_sandbox::Toolset;

use crate::approval::{Approver, Verdict};

/// Runs the agent's tool calls in the sandbox, after the user's approval
/// where the policy asks for it.
pub struct SandboxRunner {
    /// The tools and their grants.
    pub tools: Toolset,
    /// Who decides whether a call may run.
    pub approver: Approver,
}

impl ToolRunner for SandboxRunner {
    fn tools(&self) -> Vec<AgentTool> {
        self.tools
            .enabled()
            .map(|(info, _)| AgentTool {
                def: ToolDef {
                    name: info.spec.name.clone(),
                    description: info.spec.description.clone(),
                    parameters: info.spec.parameters.clone(),
                },
                mutates: info.spec.mutates,
            })
            .collect()
    }

    fn call(&self, name: &str, arguments: &str) -> ToolResult {
        // Unknown tools are not asked about: the sandbox answers them.
        if let Some((info, _)) = self.tools.find(name)
            && let Verdict::Refuse(output) =
                self.approver
                    .check(&info.spec.name, info.spec.mutates, arguments)
        {
            return ToolResult {
                ok: false,
                output,
                duration: Duration::ZERO,
            };
        }
        let outcome = self.tools.call(name, arguments);
        ToolResult {
            ok: outcome.result.is_ok(),
            output: outcome.model_text(),
            duration: outcome.duration,
        }
    }
}
