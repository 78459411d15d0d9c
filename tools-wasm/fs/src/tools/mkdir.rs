//! `mkdir`: create a directory and its missing parents.

use std::fs;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::{kind_name, lstat, write_op};
use crate::error::{ToolError, invalid};
use crate::paths;

/// Create a directory and any missing parents; an existing one is fine.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Directory to create.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::create()))]
    path: String,
}

impl Tool for Args {
    const NAME: &str = "mkdir";
    const ALIASES: &[&str] = &["make_dir"];
    const MUTATES: bool = true;
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
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
