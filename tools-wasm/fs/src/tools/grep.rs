//! `grep`: search file contents with a regular expression.

use std::fmt::Write as _;
use std::ops::ControlFlow;
use std::path::Path;

use globset::GlobMatcher;
use grep_regex::RegexMatcher;
use serde::Deserialize;
use warden_tool::{JsonSchema, Tool, effect};

use super::{not_regular, read_op};
use crate::deadline::Deadline;
use crate::error::{ToolError, invalid};
use crate::file::{self, Meta};
use crate::rules::{Ancestor, Filter};
use crate::search::{Outcome, Searcher};
use crate::text::cut_line;
use crate::{paths, walk};

/// Matching lines are cut to this many characters.
const MAX_LINE_CHARS: usize = 300;

/// Search file contents for a regex (Rust syntax, per line); returns `path:line: text`. Skips hidden, ignored and binary files unless hidden / no_ignore.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Regular expression.
    #[schemars(length(min = 1, max = 4096))]
    pattern: String,
    /// File or directory (default .).
    #[serde(default)]
    #[schemars(length(min = 1), extend("x-warden-effect" = effect::read().follow()))]
    path: Option<String>,
    /// Glob on file names, e.g. *.rs.
    #[serde(default)]
    #[schemars(length(min = 1))]
    include: Option<String>,
    /// Ignore case.
    #[serde(default)]
    case_insensitive: bool,
    /// Stop after this many lines (default 200).
    #[serde(default = "default_max")]
    #[schemars(range(min = 1, max = 2000))]
    max_matches: usize,
    /// Include files .gitignore ignores.
    #[serde(default)]
    no_ignore: bool,
    /// Include hidden files.
    #[serde(default)]
    hidden: bool,
}

fn default_max() -> usize {
    200
}

/// The state of one search.
struct Search {
    searcher: Searcher,
    deadline: Deadline,
    max: usize,
    out: String,
    matches: usize,
    too_big: usize,
    out_of_time: bool,
}

impl Search {
    fn new(regex: RegexMatcher, max: usize, deadline: Deadline) -> Search {
        Search {
            searcher: Searcher::new(regex),
            deadline,
            max,
            out: String::new(),
            matches: 0,
            too_big: 0,
            out_of_time: false,
        }
    }

    /// Searches one file met in a walk (a regular file by its directory
    /// entry); `Break` once `max` matches were found or time is up. Files
    /// that are unreadable, over 16 MiB or binary are skipped.
    fn file(&mut self, shown: &str, full: &Path) -> ControlFlow<()> {
        // The directory entry said it is a regular file: no stat needed.
        let regular = Meta {
            is_dir: false,
            regular: true,
            len: 0,
        };
        let Ok(mut file) = file::open(&full.to_string_lossy(), &regular) else {
            return ControlFlow::Continue(());
        };
        match self.read(shown, &mut file, true) {
            Some(Outcome::TooBig) => {
                self.too_big += 1;
                ControlFlow::Continue(())
            }
            Some(Outcome::Searched(flow)) => flow,
            Some(Outcome::OutOfTime) => ControlFlow::Break(()),
            Some(Outcome::Binary) | None => ControlFlow::Continue(()),
        }
    }

    /// Searches the directory `base` (its `ancestors` hold ignore files too),
    /// each file that `include` admits. Fails only when `base` cannot be read.
    fn tree(
        &mut self,
        base: &str,
        filter: Filter,
        ancestors: &[Ancestor],
        include: Option<&GlobMatcher>,
    ) -> std::io::Result<(ControlFlow<()>, walk::Summary)> {
        let mut flow = ControlFlow::Continue(());
        let options = walk::Options {
            filter,
            ancestors,
            deadline: self.deadline,
        };
        let summary = walk::walk_files(base, &options, &mut |rel, full, file_type| {
            // Like ripgrep: symlinks met in the walk are not followed, and
            // special files are not opened.
            if !file_type.is_file() || !included(include, rel) {
                return ControlFlow::Continue(());
            }
            flow = self.file(&paths::display_join(base, rel), full);
            flow
        })?;
        self.out_of_time |= summary.out_of_time;
        Ok((flow, summary))
    }

    /// Searches what `reader` yields, shown as `shown`; `None` when it could
    /// not be read. Matches are added to the output as they are found.
    fn read(
        &mut self,
        shown: &str,
        reader: &mut impl std::io::Read,
        whole_only: bool,
    ) -> Option<Outcome> {
        let Search {
            searcher,
            deadline,
            max,
            out,
            matches,
            ..
        } = self;
        let outcome = searcher.search(reader, whole_only, deadline, &mut |number, line| {
            if *matches == *max {
                return ControlFlow::Break(());
            }
            *matches += 1;
            let line = String::from_utf8_lossy(line);
            let line = cut_line(&line, MAX_LINE_CHARS);
            let _ = writeln!(out, "{shown}:{number}: {line}");
            ControlFlow::Continue(())
        });
        let outcome = outcome.ok()?;
        self.out_of_time |= outcome == Outcome::OutOfTime;
        Some(outcome)
    }
}

impl Tool for Args {
    const NAME: &str = "grep";
    const ALIASES: &[&str] = &["search", "rg"];
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
    if args.max_matches == 0 {
        return Err(invalid("max_matches must be at least 1"));
    }
    let regex = compile(&args.pattern, args.case_insensitive)?;
    let include = args
        .include
        .as_deref()
        .map(super::glob::compile)
        .transpose()?;
    let deadline = Deadline::from_env();
    let mut search = Search::new(regex, args.max_matches, deadline);
    let meta = read_op(base, file::stat(base))?;
    let mut notes = Vec::new();
    let flow = if meta.is_dir {
        let filter = Filter {
            no_ignore: args.no_ignore,
            hidden: args.hidden,
        };
        let (flow, summary) = read_op(
            base,
            search.tree(
                base,
                filter,
                &paths::grant_ancestors(base),
                include.as_ref(),
            ),
        )?;
        notes.extend(summary.notes());
        flow
    } else if !meta.regular {
        return Err(not_regular(base, Args::NAME));
    } else {
        let mut file = read_op(base, file::open(base, &meta))?;
        match search.read(base, &mut file, false) {
            Some(Outcome::Binary) => {
                return Ok(format!("{base} is a binary file; grep only searches text"));
            }
            Some(Outcome::Searched(flow)) => flow,
            _ => ControlFlow::Continue(()),
        }
    };
    if flow.is_break() && !search.out_of_time {
        notes.push(format!(
            "[stopped after {} matches; narrow the pattern or path]",
            search.max
        ));
    }
    if search.out_of_time {
        notes.push(deadline.note());
    }
    if search.too_big > 0 {
        notes.push(format!(
            "[skipped {} file{} larger than 16 MiB; grep them one at a time with path]",
            search.too_big,
            if search.too_big == 1 { "" } else { "s" }
        ));
    }
    let mut out = search.out;
    if search.matches == 0 {
        let _ = writeln!(out, "no matches for /{}/ in {base}", args.pattern);
    }
    for note in notes {
        let _ = writeln!(out, "{note}");
    }
    Ok(out.trim_end().to_string())
}

/// Compiles the search regex, reporting syntax errors as invalid arguments.
pub fn compile(pattern: &str, case_insensitive: bool) -> Result<RegexMatcher, ToolError> {
    crate::search::compile(pattern, case_insensitive)
        .map_err(|e| invalid(format!("invalid regex: {e}")))
}

/// Whether the `include` glob admits the file at relative path `rel`: a glob
/// without '/' is matched against the file name only.
fn included(include: Option<&GlobMatcher>, rel: &str) -> bool {
    let Some(glob) = include else { return true };
    if glob.glob().glob().contains('/') {
        glob.is_match(rel)
    } else {
        glob.is_match(rel.rsplit('/').next().unwrap_or(rel))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn search(pattern: &str, max: usize) -> Search {
        let deadline = Deadline::new(Duration::from_secs(3600));
        Search::new(compile(pattern, false).unwrap(), max, deadline)
    }

    fn lines(s: &mut Search, shown: &str, text: &[u8]) -> Option<Outcome> {
        s.read(shown, &mut &text[..], true)
    }

    const DONE: Option<Outcome> = Some(Outcome::Searched(ControlFlow::Continue(())));

    #[test]
    fn formats_and_caps_matches() {
        let mut s = search("fo+", 3);
        assert_eq!(lines(&mut s, "a.rs", b"foo\r\nbar\nxfo"), DONE);
        assert_eq!(s.out, "a.rs:1: foo\na.rs:3: xfo\n");
        let stopped = Some(Outcome::Searched(ControlFlow::Break(())));
        assert_eq!(lines(&mut s, "b.rs", b"fo\nfo\n"), stopped);
        assert_eq!(s.matches, 3);
        assert!(s.out.ends_with("b.rs:1: fo\n"));
    }

    #[test]
    fn skips_binary_files_and_shows_bad_utf8() {
        let mut s = search("fo", 10);
        assert_eq!(lines(&mut s, "bin", b"fo\nfo\0"), Some(Outcome::Binary));
        assert_eq!((s.out.as_str(), s.matches), ("", 0));
        assert_eq!(lines(&mut s, "bad", b"fo \xff\n\xff\n"), DONE);
        assert_eq!(s.out, "bad:1: fo \u{fffd}\n");
    }

    #[test]
    fn case_and_errors() {
        use grep_matcher::Matcher;
        assert!(compile("HELLO", true).unwrap().is_match(b"hello").unwrap());
        assert!(!compile("HELLO", false).unwrap().is_match(b"hello").unwrap());
        let Err(ToolError::InvalidArgs(msg)) = compile("a(b", false) else {
            panic!()
        };
        assert!(msg.starts_with("invalid regex:"), "{msg}");
        // Lines are matched one at a time: a line end cannot be in a match.
        let Err(ToolError::InvalidArgs(msg)) = compile(r"a\nb", false) else {
            panic!()
        };
        assert!(msg.contains("not allowed"), "{msg}");
    }

    #[test]
    fn stops_at_the_deadline_with_what_it_found() {
        let dir = std::env::temp_dir().join(format!("fs-grep-deadline-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for i in 0..40 {
            std::fs::write(dir.join(format!("f{i:02}")), "hit\n").unwrap();
        }
        let passed = Deadline::new(Duration::ZERO);
        let mut s = Search::new(compile("hit", false).unwrap(), 1000, passed);
        let (_, summary) = s
            .tree(dir.to_str().unwrap(), Filter::default(), &[], None)
            .unwrap();
        // The clock is read every 32 entries: 31 files were searched.
        assert!(summary.out_of_time && s.out_of_time);
        assert_eq!(s.matches, 31);
        assert!(s.out.ends_with("f30:1: hit\n"), "{}", s.out);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn include_filter() {
        let glob = super::super::glob::compile("*.rs").unwrap();
        assert!(included(Some(&glob), "src/deep/x.rs"));
        assert!(!included(Some(&glob), "src/x.toml"));
        let glob = super::super::glob::compile("src/*.rs").unwrap();
        assert!(included(Some(&glob), "src/x.rs"));
        assert!(!included(Some(&glob), "lib/src/x.rs"));
        assert!(included(None, "anything"));
    }
}

#[cfg(test)]
mod bench;
