//! `warden.toml` to grants: no text panics the parser or the grants built
//! from it, and every error names a line and a column inside the text.

use std::path::Path;

use warden_policy::{Baseline, Error, Policy};

/// Parses `data` as a policy; a policy that parses gives every tool and
/// MCP server it names its grants, under every baseline.
pub fn check(data: &[u8]) {
    let text = crate::text(data);
    // A workspace that does not exist: no directory grant resolves, and
    // the check reads nothing but what absolute paths the input names.
    let ws = Path::new("/nonexistent/warden-properties");
    match Policy::parse(&text, &ws.join("warden.toml"), ws) {
        Ok(policy) => {
            let tools: Vec<String> = policy.named_tools().map(str::to_string).collect();
            for tool in &tools {
                for baseline in [
                    Baseline::Off,
                    Baseline::WorkspaceRead,
                    Baseline::Workspace,
                    Baseline::Nothing,
                ] {
                    let _ = policy.grants_for(tool, baseline);
                }
            }
            let servers: Vec<String> = policy.mcp_servers().map(|(n, _)| n.to_string()).collect();
            for name in &servers {
                let _ = policy.mcp_grants(name);
            }
        }
        Err(Error::Syntax {
            line,
            column,
            message,
            ..
        }) => {
            let lines: Vec<&str> = text.split('\n').collect();
            assert!(
                (1..=lines.len()).contains(&line),
                "line {line} of a text of {} lines: {message}",
                lines.len()
            );
            let width = lines[line - 1].chars().count();
            assert!(
                (1..=width + 1).contains(&column),
                "column {column} of line {line}, {width} characters long: {message}"
            );
            assert!(
                !message.trim().is_empty(),
                "an empty message at {line}:{column}"
            );
        }
        Err(e) => panic!("an error without a line and a column: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::drive;

    #[test]
    fn seeds() {
        drive::replay("policy", super::check);
    }

    proptest! {
        #![proptest_config(drive::config(2_000))]

        #[test]
        fn edited_seeds(data in drive::mutated("policy")) {
            super::check(&data);
        }
    }
}
