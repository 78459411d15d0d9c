//! The sandbox toolset as the agent's [`ToolRunner`].

use warden_agent::{AgentTool, ToolDef, ToolResult, ToolRunner};
use warden_sandbox::Toolset;

/// Runs the agent's tool calls in the sandbox.
pub struct SandboxRunner(pub Toolset);

impl ToolRunner for SandboxRunner {
    fn tools(&self) -> Vec<AgentTool> {
        self.0
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
        let outcome = self.0.call(name, arguments);
        ToolResult {
            ok: outcome.result.is_ok(),
            output: outcome.model_text(),
            duration: outcome.duration,
        }
    }
}
