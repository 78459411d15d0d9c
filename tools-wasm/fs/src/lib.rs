//! `fs`: the built-in file tools of warden, as one WASI 0.2 component.
//!
//! Every path is used exactly as the model gave it, with `std::fs`. The host
//! preopens the granted directories and wasmtime confines every access to
//! them; this crate does no sandboxing of its own, it only turns failures into
//! messages the model can act on.
//!
//! Table of contents:
//! - `bindings`: the host extras' WIT bindings and the exported `describe` /
//!   `call` (made by `warden_tool::export!` from [`TOOLS`]).
//! - `error`: [`ToolError`] (the SDK's typed error), io error messages.
//! - `paths`: path checks, lexical normalisation, granted-root detection.
//! - `text`: binary detection, line cutting, sizes, line numbers.
//! - `rules`: ripgrep's ignore rules (`.gitignore`, `.ignore`, ...) and
//!   hidden files: what a walk leaves out.
//! - `walk`: the recursive directory walk shared by `glob` and `grep`.
//! - `search`: grep's search core, a whole block per regex run.
//! - `deadline`: the soft deadline after which a search returns what it has.
//! - `tools`: one module per tool, each an argument struct (its doc comments
//!   are the description and schema) implementing `warden_tool::Tool`:
//!   - `read_file` (`tools::read`), `write_file` (`tools::write`),
//!     `edit_file` (`tools::edit`),
//!   - `list_files` (`tools::list`), `glob` (`tools::glob`),
//!     `grep` (`tools::grep`),
//!   - `copy` (`tools::copy`), `move` (`tools::mv`),
//!     `mkdir` (`tools::mkdir`), `delete` (`tools::delete`).

mod bindings;
mod deadline;
mod error;
mod file;
mod paths;
mod rules;
mod search;
mod text;
mod tools;
mod walk;

pub use error::ToolError;
use warden_tool::Entry;

/// Every tool this component offers, in the order `describe` lists them.
pub const TOOLS: &[Entry] = &[
    Entry::of::<tools::read::Args>(),
    Entry::of::<tools::write::Args>(),
    Entry::of::<tools::edit::Args>(),
    Entry::of::<tools::list::Args>(),
    Entry::of::<tools::glob::Args>(),
    Entry::of::<tools::grep::Args>(),
    Entry::of::<tools::copy::Args>(),
    Entry::of::<tools::mv::Args>(),
    Entry::of::<tools::mkdir::Args>(),
    Entry::of::<tools::delete::Args>(),
];

/// Runs tool `name` (or one of its aliases) on `args`.
pub fn call(name: &str, args: &str) -> Result<String, ToolError> {
    warden_tool::dispatch(TOOLS, name, args)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn specs_are_well_formed() {
        let mut seen = std::collections::HashSet::new();
        for tool in TOOLS {
            let is_snake = |s: &str| {
                s.len() <= 64
                    && s.starts_with(|c: char| c.is_ascii_lowercase())
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            };
            assert!(is_snake(tool.name), "{}", tool.name);
            assert!(seen.insert(tool.name), "duplicate {}", tool.name);
            for alias in tool.aliases {
                assert!(is_snake(alias), "{alias}");
                assert!(seen.insert(alias), "duplicate {alias}");
            }
            let described = tool.describe();
            assert!(described.description.len() > 40, "{}", tool.name);
            let schema: Value = serde_json::from_str(&described.schema)
                .unwrap_or_else(|e| panic!("{}: bad schema: {e}", tool.name));
            assert_eq!(schema["type"], "object", "{}", tool.name);
            assert_eq!(schema["additionalProperties"], false, "{}", tool.name);
            let props = schema["properties"].as_object().unwrap();
            let required = schema["required"].as_array().cloned().unwrap_or_default();
            for req in &required {
                assert!(props.contains_key(req.as_str().unwrap()), "{}", tool.name);
            }
            for (key, prop) in props {
                assert!(prop["description"].is_string(), "{}.{key}", tool.name);
            }
        }
    }

    #[test]
    fn mutating_tools() {
        let mutating: Vec<&str> = TOOLS.iter().filter(|t| t.mutates).map(|t| t.name).collect();
        assert_eq!(
            mutating,
            ["write_file", "edit_file", "copy", "move", "mkdir", "delete"]
        );
    }

    #[test]
    fn unknown_tool_lists_names() {
        let ToolError::NotFound(msg) = call("nope", "{}").unwrap_err() else {
            panic!()
        };
        assert!(msg.contains("read_file, write_file"), "{msg}");
    }

    #[test]
    fn bad_args_are_invalid_args() {
        let err = call("read_file", r#"{"path":"x","bogus":1}"#).unwrap_err();
        assert!(matches!(err, ToolError::InvalidArgs(_)), "{err:?}");
        let err = call("cat", r#"{}"#).unwrap_err();
        assert!(matches!(err, ToolError::InvalidArgs(_)), "{err:?}");
    }
}
