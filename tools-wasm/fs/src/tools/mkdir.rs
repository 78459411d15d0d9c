//! `mkdir`: create a directory and its missing parents.

use std::fs;

use serde::Deserialize;

use super::{kind_name, lstat, write_op};
use crate::error::{ToolError, invalid, parse_args};
use crate::{Tool, paths};

pub const TOOL: Tool = Tool {
    name: "mkdir",
    description: "Create a directory and any missing parents; an existing one is fine.",
    schema: r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "Directory to create."}
  },
  "required": ["path"],
  "additionalProperties": false
}"#,
    aliases: &["make_dir"],
    mutates: true,
    run,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
}

fn run(args: &str) -> Result<String, ToolError> {
    let args: Args = parse_args(TOOL.name, args)?;
    let path = args.path.as_str();
    let path_resolved = paths::resolve("path", path)?;
    let path = path_resolved.as_str();
    match lstat(path)? {
        Some(meta) if meta.is_dir() => Ok(format!("directory {path} already exists")),
        Some(meta) => Err(invalid(format!(
            "{path} already exists and is a {}, not a directory",
            kind_name(&meta)
        ))),
        None => {
            write_op(path, fs::create_dir_all(path))?;
            Ok(format!("created directory {path}"))
        }
    }
}
