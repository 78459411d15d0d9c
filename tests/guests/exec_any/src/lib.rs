//! Asks the host to run any program it is told to (`warden:tool/process`),
//! granted or not, for warden's integration tests: the host, not the
//! guest, decides. Never shipped.

wit_bindgen::generate!({
    path: "../../../wit",
    world: "warden:tool/process-component",
});

use exports::warden::tool::tool::{Error, Guest, Spec};
use serde_json::Value;
use warden::tool::process::{self, Command, ExecError};

const ARGS: &str = r#"{"type":"object","properties":{"program":{"type":"string"},"args":{"type":"array","items":{"type":"string"}},"cwd":{"type":"string"}},"required":["program"],"additionalProperties":false}"#;

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "run_program".into(),
            description: "Runs `program` with `args` through warden:tool/process; prints `exit=N` then stdout and stderr, or the host's refusal.".into(),
            parameters: ARGS.into(),
            aliases: vec![],
            mutates: false,
            effects: None,
        }]
    }

    fn call(_name: String, args: String) -> Result<String, Error> {
        let args: Value =
            serde_json::from_str(&args).map_err(|e| Error::InvalidArgs(e.to_string()))?;
        let cmd = Command {
            program: args["program"].as_str().unwrap_or_default().to_string(),
            args: args["args"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default(),
            cwd: args["cwd"].as_str().map(String::from),
        };
        match process::run(&cmd) {
            Ok(f) => Ok(format!(
                "exit={:?} signal={:?} timed_out={}\n{}{}",
                f.exit_code, f.signal, f.timed_out, f.stdout, f.stderr
            )),
            Err(ExecError::Denied(m)) => Err(Error::Denied(m)),
            Err(ExecError::Unavailable(m)) => Err(Error::Failed(format!("unavailable: {m}"))),
            Err(ExecError::Failed(m)) => Err(Error::Failed(m)),
        }
    }
}

export!(Component);
