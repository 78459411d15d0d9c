//! `write_file`: create or overwrite a whole file.

use std::fs;

use serde::Deserialize;

use super::{create_parents, is_special, lstat, not_regular, write_op};
use crate::error::{ToolError, invalid, parse_args};
use crate::{Tool, paths};

pub const TOOL: Tool = Tool {
    name: "write_file",
    description: "Create a text file or replace all of its content; missing parent \
        directories are created. To change part of a file use edit_file.",
    schema: r#"{
  "type": "object",
  "properties": {
    "path": {"type": "string", "minLength": 1, "description": "File path."},
    "content": {"type": "string", "description": "The whole new content."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}"#,
    aliases: &["write", "create_file"],
    mutates: true,
    run,
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

fn run(args: &str) -> Result<String, ToolError> {
    let args: Args = parse_args(TOOL.name, args)?;
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
                return Err(not_regular(path, TOOL.name));
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
