//! A hostile tool that imports nothing that waits in the host (no timers,
//! no HTTP, no programs), so warden calls it directly instead of on a
//! fiber: it must still be stopped at its deadline or when cancelled,
//! whether it spins in wasm or blocks in a system call. Never shipped.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "warden:tool/component",
});

use exports::warden::tool::tool::{Error, Guest, Spec};
use serde_json::Value;

const NO_ARGS: &str = r#"{"type":"object","additionalProperties":false}"#;
const PATH_ARGS: &str = r#"{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}"#;

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        [
            ("plain_spin", "Loops forever in wasm.", NO_ARGS),
            (
                "plain_read",
                "Reads the file at `path` with std::fs.",
                PATH_ARGS,
            ),
            ("plain_recurse", "Recurses without end.", NO_ARGS),
            ("plain_ok", "Answers `ok`.", NO_ARGS),
        ]
        .iter()
        .map(|(name, description, parameters)| Spec {
            name: name.to_string(),
            description: description.to_string(),
            parameters: parameters.to_string(),
            aliases: vec![],
            mutates: false,
            effects: None,
        })
        .collect()
    }

    fn call(name: String, args: String) -> Result<String, Error> {
        let args: Value =
            serde_json::from_str(&args).map_err(|e| Error::InvalidArgs(e.to_string()))?;
        match name.as_str() {
            "plain_spin" => {
                let mut n = 0u64;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "plain_read" => {
                let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
                std::fs::read(path)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .map_err(|e| Error::Failed(e.to_string()))
            }
            "plain_recurse" => Ok(recurse(0).to_string()),
            "plain_ok" => Ok("ok".into()),
            _ => Err(Error::NotFound(format!("no tool {name}"))),
        }
    }
}

/// Recursion whose frames live on wasm's own stack (no locals in linear
/// memory): it runs into wasmtime's stack limit, not off the guest's
/// stack in linear memory.
fn recurse(depth: u64) -> u64 {
    if depth == u64::MAX {
        return 0;
    }
    recurse(depth + 1).wrapping_mul(3).wrapping_add(depth)
}

export!(Component);
