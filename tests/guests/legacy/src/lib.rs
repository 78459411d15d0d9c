//! A tool built for contract 0.1.0 (`wit/` here is that version, kept as
//! it was): its spec has no effects. It must keep working, its calls shown
//! and undone as "effects unknown", and it may still run programs through
//! `warden:tool/process@0.1.0`. Never shipped.

wit_bindgen::generate!({
    path: "wit",
    world: "warden:tool/process-component",
});

use exports::warden::tool::tool::{Error, Guest, Spec};
use serde_json::Value;

const ARGS: &str = r#"{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"],"additionalProperties":false}"#;

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![
            Spec {
                name: "legacy_write".into(),
                description: "Writes `content` to the file at `path` (contract 0.1.0).".into(),
                parameters: ARGS.into(),
                aliases: vec![],
                mutates: true,
            },
            Spec {
                name: "legacy_programs".into(),
                description: "Lists the programs granted (process 0.1.0).".into(),
                parameters: r#"{"type":"object"}"#.into(),
                aliases: vec![],
                mutates: false,
            },
        ]
    }

    fn call(name: String, args: String) -> Result<String, Error> {
        if name == "legacy_programs" {
            return Ok(warden::tool::process::granted().join(","));
        }
        let args: Value =
            serde_json::from_str(&args).map_err(|e| Error::InvalidArgs(e.to_string()))?;
        let path = args["path"].as_str().unwrap_or_default();
        let content = args["content"].as_str().unwrap_or_default();
        std::fs::write(path, content).map_err(|e| Error::Failed(format!("{path}: {e}")))?;
        Ok(format!("wrote {path}"))
    }
}

export!(Component);
