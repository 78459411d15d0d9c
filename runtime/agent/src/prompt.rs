//! The system prompt: where the model is and what it may reach, in a few lines.

use std::path::Path;

use crate::AgentTool;
use crate::textproto;

/// Builds the system prompt.
pub fn system_prompt(workspace: &Path, tools: &[AgentTool], text_protocol: bool) -> String {
    let names: Vec<&str> = tools.iter().map(|t| t.def.name.as_str()).collect();
    let mut p = format!(
        "You are warden, an agent that completes tasks in the workspace {ws} using tools.\n\
         - Tools: {names}.\n\
         - Relative paths resolve inside the workspace. Everything outside the directories \
         granted to a tool does not exist for it; the network is reachable only from tools \
         granted specific hosts; there is no shell.\n\
         - Read before you edit; prefer small, exact edits. When a tool fails, read its \
         error and adjust the call.\n\
         - When the task is done, answer briefly with what you did.",
        ws = workspace.display(),
        names = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        },
    );
    if text_protocol {
        let defs: Vec<_> = tools.iter().map(|t| t.def.clone()).collect();
        p.push_str("\n\n");
        p.push_str(&textproto::instructions(&defs));
    }
    p
}

/// Appends instructions files (`(source, text)`) to a system prompt, each
/// under a header naming where it came from.
pub fn add_instructions(prompt: &mut String, instructions: &[(String, String)]) {
    for (source, text) in instructions {
        prompt.push_str(&format!(
            "\n\nInstructions from {source} (follow them where they do not conflict with the \
             rules above):\n{}",
            text.trim_end()
        ));
    }
}
