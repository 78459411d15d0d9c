//! `write_file`: create or overwrite a whole file.

use std::fs;

use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::{create_parents, is_special, lstat, not_regular, write_op};
use crate::error::{ToolError, invalid};
use crate::paths;

/// Create a text file or replace all of its content; missing parent directories are created. To change part of a file use edit_file.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// File path.
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::write().whole("content").follow()))]
    path: String,
    /// The whole new content.
    content: String,
}

impl Tool for Args {
    const NAME: &str = "write_file";
    const ALIASES: &[&str] = &["write", "create_file"];
    const MUTATES: bool = true;
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let path = args.path.as_str();
    let path_resolved = paths::resolve("path", path)?;
    let path = path_resolved.as_str();
    if path.ends_with('/') {
        return Err(invalid(format!(
            "{path} ends with '/', so it names a directory; give a file path"
        )));
    }
    let before = match lstat(path)? {
        Some(meta) if meta.is_dir() => {
            return Err(invalid(format!(
                "{path} is a directory; give the path of a file (for example {}/NAME)",
                path.trim_end_matches('/')
            )));
        }
        // Through a symlink, report the size of the file it points to.
        Some(meta) => match fs::metadata(path) {
            Ok(target) if is_special(target.file_type()) => {
                return Err(not_regular(path, Args::NAME));
            }
            Ok(target) => Some(target.len()),
            Err(_) => Some(meta.len()),
        },
        None => {
            create_parents(path)?;
            None
        }
    };
    write_op(path, fs::write(path, &args.content))?;
    let n = args.content.len();
    Ok(match before {
        None => format!("wrote {n} bytes to {path} (created a new file)"),
        Some(old) => format!("wrote {n} bytes to {path} (overwrote the existing {old}-byte file)"),
    })
}
