//! The trust diff of two arbitrary policies: it never panics, equal
//! states give no change and different states at least one, and every
//! line of it is safe to print as it is.

use std::collections::BTreeMap;
use std::path::Path;

use warden_policy::{
    Baseline, ComponentEntry, Policy, ToolRecord, TrustState, diff, inert, sha256_hex,
};

/// `data`: two policy texts, then the component files of each state
/// (lines `FILE CONTENT`), separated by `0xFF`.
pub fn check(data: &[u8]) {
    let parts = crate::parts(data);
    let part = |i: usize| parts.get(i).copied().unwrap_or_default();
    let a = state(part(0), part(2));
    let b = state(part(1), part(3));
    for (x, y) in [(&a, &a), (&b, &b), (&a, &b), (&b, &a)] {
        let changes = diff(x, y);
        assert_eq!(
            changes.is_empty(),
            x == y,
            "{} changes between {}equal states: {changes:#?}",
            changes.len(),
            if x == y { "" } else { "un" }
        );
        for change in &changes {
            let line = change.to_string();
            assert_eq!(inert(&line), line, "a line not safe to print");
        }
    }
}

/// The trust record of a workspace whose `warden.toml` is `text`: the
/// grants of every tool and MCP server it names (none when it does not
/// parse), and the component files listed in `components`.
fn state(text: &[u8], components: &[u8]) -> TrustState {
    let text = crate::text(text).into_owned();
    let ws = Path::new("/nonexistent/warden-properties");
    let mut tools = BTreeMap::new();
    if let Ok(policy) = Policy::parse(&text, &ws.join("warden.toml"), ws) {
        for tool in policy.named_tools() {
            if let Some((grants, _)) = policy.grants_for(tool, Baseline::Off) {
                tools.insert(tool.to_string(), ToolRecord::new(false, &grants));
            }
        }
        for (name, server) in policy.mcp_servers() {
            if let Some((grants, _)) = policy.mcp_grants(name) {
                let key = warden_policy::mcp_key(name);
                let files = BTreeMap::new();
                tools.insert(key, ToolRecord::mcp(&server.launch, files, &grants));
            }
        }
    }
    let components = crate::text(components)
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(file, content)| {
            // A file name is the workspace's to choose, a hash warden's.
            let entry = ComponentEntry {
                hash: sha256_hex(content.as_bytes()),
                size: content.len() as u64,
            };
            (file.to_string(), entry)
        })
        .collect();
    TrustState {
        policy_hash: Some(sha256_hex(text.as_bytes())),
        policy_text: Some(text),
        components,
        tools,
        instructions_hash: None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::drive;

    #[test]
    fn seeds() {
        drive::replay("trust", super::check);
    }

    /// Two policies: one seed, and the same seed edited, so that most
    /// pairs parse and differ a little.
    fn pair() -> impl Strategy<Value = Vec<u8>> {
        (drive::mutated("policy"), drive::mutated("policy")).prop_map(|(a, b)| {
            let mut data = a.clone();
            data.push(0xFF);
            data.extend(b);
            data
        })
    }

    proptest! {
        #![proptest_config(drive::config(1_000))]

        #[test]
        fn edited_seeds(data in drive::mutated("trust")) {
            super::check(&data);
        }

        #[test]
        fn edited_policies(data in pair()) {
            super::check(&data);
        }
    }
}
