//! The smallest complete warden tool component. Copy this crate to start your own.
//!
//! A tool component implements the `warden:tool/component` world from
//! `wit/tool.wit`: `describe()` lists the tools it offers, `call()` runs one.
//! Build: `cargo build --release --target wasm32-wasip2` (see README.md).

// Generate Rust bindings for the WIT world. This creates the `Guest` trait we
// implement below, the `Spec`/`Error` types and the `export!` macro.
// `path` is relative to this crate's Cargo.toml.
wit_bindgen::generate!({ path: "../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

/// JSON Schema of the arguments. The host validates every call against it
/// before `call` runs, so keep it strict: list `required` fields and forbid
/// unknown ones with `additionalProperties: false`.
const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "text": { "type": "string", "description": "The text to uppercase." }
  },
  "required": ["text"],
  "additionalProperties": false
}"#;

/// The arguments, parsed from the JSON object the model sent.
/// `deny_unknown_fields` mirrors `additionalProperties: false`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    text: String,
}

/// The type that implements the exported interface. It holds no state: the
/// host runs every call in a fresh instance.
struct Component;

impl Guest for Component {
    /// Called once when the host loads the component.
    fn describe() -> Vec<Spec> {
        vec![Spec {
            // snake_case name the model calls.
            name: "uppercase".into(),
            // Written for the model: what it does and when to use it.
            description: "Return the given text converted to upper case.".into(),
            parameters: SCHEMA.into(),
            // Other names the model may use by mistake.
            aliases: vec!["upper".into()],
            // false: calling this cannot change anything outside the call.
            mutates: false,
        }]
    }

    /// Runs one tool. `args` is a JSON object that already matches SCHEMA.
    fn call(name: String, args: String) -> Result<String, Error> {
        if name != "uppercase" {
            // Every error message is shown to the model: say how to fix it.
            return Err(Error::NotFound(format!(
                "unknown tool {name:?}; this component offers: uppercase"
            )));
        }
        // Parse anyway: cheap, and gives a clear message if the host and the
        // schema ever disagree.
        let args: Args = serde_json::from_str(&args)
            .map_err(|e| Error::InvalidArgs(format!("bad arguments for uppercase: {e}")))?;
        // The returned string is what the model reads.
        Ok(args.text.to_uppercase())
    }
}

// Export `Component` as the implementation of the world's `tool` interface.
export!(Component);
