//! `glob`: find files whose path matches a glob pattern.

use std::fmt::Write as _;
use std::ops::ControlFlow;

use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::read_op;
use crate::deadline::Deadline;
use crate::error::{ToolError, invalid};
use crate::file;
use crate::rules::Filter;
use crate::{paths, walk};

/// Most paths returned.
const MAX_RESULTS: usize = 1000;

/// Find files by path pattern, e.g. `**/*.rs` or `src/*.{rs,toml}` (`*.rs` matches the top level only). Skips hidden and ignored files unless hidden / no_ignore.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Glob, relative to path.
    #[schemars(length(min = 1, max = 4096))]
    pattern: String,
    /// Directory (default .).
    #[serde(default)]
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::read().follow()))]
    path: Option<String>,
    /// Include files .gitignore ignores.
    #[serde(default)]
    no_ignore: bool,
    /// Include hidden files.
    #[serde(default)]
    hidden: bool,
}

impl Tool for Args {
    const NAME: &str = "glob";
    const ALIASES: &[&str] = &["find_files"];
    fn run(self) -> Result<String, ToolError> {
        run(self)
    }
}

fn run(args: Args) -> Result<String, ToolError> {
    let base = args
        .path
        .as_deref()
        .filter(|p| !p.is_empty())
        .unwrap_or(".");
    let base_resolved = paths::resolve("path", base)?;
    let base = base_resolved.as_str();
    let matcher = compile(&args.pattern)?;
    if !read_op(base, file::stat(base))?.is_dir {
        return Err(invalid(format!(
            "{base} is a file, not a directory; give the directory to search in"
        )));
    }
    let mut found = Vec::new();
    let mut capped = false;
    let ancestors = paths::grant_ancestors(base);
    let deadline = Deadline::from_env();
    let options = walk::Options {
        filter: Filter {
            no_ignore: args.no_ignore,
            hidden: args.hidden,
        },
        ancestors: &ancestors,
        deadline,
    };
    let summary = read_op(
        base,
        walk::walk_files(base, &options, &mut |rel, _, _| {
            if matcher.is_match(rel) {
                if found.len() == MAX_RESULTS {
                    capped = true;
                    return ControlFlow::Break(());
                }
                found.push(paths::display_join(base, rel));
            }
            ControlFlow::Continue(())
        }),
    )?;
    found.sort();
    let mut out = String::new();
    if found.is_empty() {
        let _ = write!(out, "no files match {:?} under {base}", args.pattern);
        if !args.pattern.contains('/') {
            let _ = write!(
                out,
                " (a pattern without '/' only matches at the top level; try \"**/{}\")",
                args.pattern
            );
        }
        out.push('\n');
    }
    for path in &found {
        out.push_str(path);
        out.push('\n');
    }
    if capped {
        let _ = writeln!(
            out,
            "[stopped after {MAX_RESULTS} files; use a more specific pattern or path]"
        );
    }
    if summary.out_of_time {
        let _ = writeln!(out, "{}", deadline.note());
    }
    for note in summary.notes() {
        let _ = writeln!(out, "{note}");
    }
    Ok(out.trim_end().to_string())
}

/// Compiles a glob in which `*` does not cross `/`. A leading `./` is
/// ignored; absolute patterns are refused (use `path` for the directory).
pub fn compile(pattern: &str) -> Result<GlobMatcher, ToolError> {
    if pattern.starts_with('/') {
        return Err(invalid(
            "pattern must be relative; put the directory in path and the pattern below it, \
             e.g. path=\"src\", pattern=\"**/*.rs\"",
        ));
    }
    let pattern = pattern.trim_start_matches("./");
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| invalid(format!("invalid glob pattern: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, path: &str) -> bool {
        compile(pattern).unwrap().is_match(path)
    }

    #[test]
    fn glob_semantics() {
        assert!(matches("**/*.rs", "lib.rs"));
        assert!(matches("**/*.rs", "src/tools/read.rs"));
        assert!(matches("*.rs", "lib.rs"));
        assert!(!matches("*.rs", "src/lib.rs"));
        assert!(matches("src/*.{rs,toml}", "src/Cargo.toml"));
        assert!(!matches("src/*.{rs,toml}", "src/a/b.rs"));
        assert!(matches("./src/*.rs", "src/a.rs"));
        assert!(matches("src/**", "src/a/b"));
    }

    #[test]
    fn bad_patterns() {
        assert!(
            matches!(compile("a[b"), Err(ToolError::InvalidArgs(m)) if m.contains("invalid glob"))
        );
        assert!(matches!(
            compile("/abs/*.rs"),
            Err(ToolError::InvalidArgs(_))
        ));
    }
}
