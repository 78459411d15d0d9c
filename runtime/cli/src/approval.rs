//! Asking the user before a tool call, and showing what it will change.

use std::collections::HashSet;
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;
use std::sync::Mutex;

use serde_json::Value;
use similar::{ChangeTag, TextDiff};

use warden_policy::{inert, inert_text};
use warden_sandbox::Mount;
use warden_workspace::{ApprovalRequest, Approve, Verdict};

use crate::style::paint;

/// Decides per call, asking on the terminal when it must.
pub struct Approver {
    yes: bool,
    interactive: bool,
    fancy: bool,
    always: Mutex<HashSet<String>>,
    // One prompt at a time, even when read-only calls run concurrently.
    prompt: Mutex<()>,
}

impl Approver {
    /// `yes` approves everything (`--yes`).
    pub fn new(yes: bool) -> Approver {
        Approver {
            yes,
            interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
            fancy: crate::style::stderr_is_fancy(),
            always: Mutex::new(HashSet::new()),
            prompt: Mutex::new(()),
        }
    }

    /// Whether calls that need approval can be asked about (a terminal, or
    /// `--yes`): without either they are all refused.
    pub fn can_approve(&self) -> bool {
        self.yes || self.interactive
    }
}

impl Approve for Approver {
    fn approve(&self, request: &ApprovalRequest<'_>) -> Verdict {
        let tool = request.tool;
        if self.yes || self.always.lock().expect("poisoned").contains(tool) {
            return Verdict::Allow;
        }
        if !self.interactive {
            return Verdict::Refuse(format!(
                "error (denied): `{tool}` needs the user's approval (it is granted {}), but \
                 warden runs without a terminal and without --yes, so the call was refused. \
                 Do not retry it; say what you would change instead.",
                request.grants.summary(Path::new("/"))
            ));
        }
        let _one = self.prompt.lock().expect("poisoned");
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "\n{}",
            paint(self.fancy, "1", &format!("{tool} wants to run:"))
        );
        let _ = write!(
            err,
            "{}",
            preview(tool, request.arguments, request.mounts, self.fancy)
        );
        let _ = write!(
            err,
            "Allow? [y]es / [n]o / [a]lways for {tool} in this session: "
        );
        let _ = err.flush();
        let mut answer = String::new();
        if std::io::stdin().lock().read_line(&mut answer).is_err() {
            answer.clear();
        }
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Verdict::Allow,
            "a" | "always" => {
                self.always
                    .lock()
                    .expect("poisoned")
                    .insert(tool.to_string());
                Verdict::Allow
            }
            _ => Verdict::Refuse(format!(
                "error (denied): the user refused this `{tool}` call. Ask them what they want, \
                 or try another approach."
            )),
        }
    }
}

/// Largest current file shown in a write preview.
const PREVIEW_MAX: u64 = 256 * 1024;

/// What a call will do: a diff for file writes and edits, else the
/// arguments. Everything from the model is shown inert.
pub fn preview(tool: &str, args: &Value, mounts: &[Mount], fancy: bool) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str);
    match (tool, s("path")) {
        ("write_file", Some(path)) => {
            let old = match current_text(path, mounts) {
                Ok(text) => text,
                Err(why) => {
                    return format!(
                        "  {} ({why})\n{}",
                        inert(path),
                        diff("", s("content").unwrap_or(""), fancy)
                    );
                }
            };
            let new = s("content").unwrap_or("");
            format!("  {}\n{}", inert(path), diff(&old, new, fancy))
        }
        ("edit_file", Some(path)) => {
            format!(
                "  {}\n{}",
                inert(path),
                diff(
                    s("old_text").unwrap_or(""),
                    s("new_text").unwrap_or(""),
                    fancy
                )
            )
        }
        _ => format!(
            "  {}\n",
            inert_text(&serde_json::to_string_pretty(args).unwrap_or_default())
        ),
    }
}

/// The current text of `path` as the tool would see it: looked up in the
/// tool's mounts and opened by the kernel beneath the mounted directory
/// (no `..`, no symlink out, no special file, no more than
/// [`PREVIEW_MAX`]). Anything else is not shown.
fn current_text(path: &str, mounts: &[Mount]) -> Result<String, &'static str> {
    use rustix::fs::{Mode, OFlags, ResolveFlags};
    use std::io::Read;
    // The longest mount the path is under; relative paths are under `.`.
    let (mount, rel) = mounts
        .iter()
        .filter_map(|m| {
            if m.guest == "." && !path.starts_with('/') {
                return Some((m, path));
            }
            let rest = path.strip_prefix(m.guest.as_str())?;
            (rest.is_empty() || rest.starts_with('/')).then(|| (m, rest.trim_start_matches('/')))
        })
        .max_by_key(|(m, _)| m.guest.len())
        .ok_or("outside the tool's directories")?;
    let rel = if rel.is_empty() { "." } else { rel };
    let dir = rustix::fs::open(
        &mount.host,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|_| "its directory cannot be opened")?;
    let fd = match rustix::fs::openat2(
        &dir,
        rel,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Ok(String::new()),
        Err(_) => return Err("cannot be read beneath the tool's directory"),
    };
    let file = std::fs::File::from(fd);
    let meta = file.metadata().map_err(|_| "cannot be read")?;
    if !meta.is_file() {
        return Err("not a regular file");
    }
    if meta.len() > PREVIEW_MAX {
        return Err("the current file is too large to show");
    }
    let mut bytes = Vec::new();
    file.take(PREVIEW_MAX)
        .read_to_end(&mut bytes)
        .map_err(|_| "cannot be read")?;
    String::from_utf8(bytes).map_err(|_| "the current file is not text")
}

fn diff(old: &str, new: &str, fancy: bool) -> String {
    let mut out = String::new();
    for change in TextDiff::from_lines(old, new).iter_all_changes() {
        let (sign, code) = match change.tag() {
            ChangeTag::Delete => ("-", "31"),
            ChangeTag::Insert => ("+", "32"),
            ChangeTag::Equal => (" ", ""),
        };
        let line = format!("{sign} {}", inert(change.value().trim_end_matches('\n')));
        out.push_str(&if code.is_empty() {
            line
        } else {
            paint(fancy, code, &line)
        });
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mount(dir: &Path) -> Vec<Mount> {
        vec![Mount {
            host: dir.to_path_buf(),
            guest: ".".into(),
            write: true,
        }]
    }

    #[test]
    fn write_preview_is_a_line_diff_against_the_current_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
        let m = mount(dir.path());
        let p = preview(
            "write_file",
            &json!({"path":"a.txt","content":"one\nthree\n"}),
            &m,
            false,
        );
        assert_eq!(p, "  a.txt\n  one\n- two\n+ three\n");
        let p = preview(
            "edit_file",
            &json!({"path":"a.txt","old_text":"two","new_text":"2"}),
            &m,
            false,
        );
        assert_eq!(p, "  a.txt\n- two\n+ 2\n");
    }

    #[test]
    fn the_preview_never_reads_outside_the_mounts_or_special_files() {
        let base = tempfile::tempdir().unwrap();
        let ws = base.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        std::fs::write(base.path().join("secret.txt"), "TOP SECRET\n").unwrap();
        std::os::unix::fs::symlink("../secret.txt", ws.join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            ws.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let m = mount(&ws);
        let secret = base.path().join("secret.txt").display().to_string();
        for path in [
            "../secret.txt",
            "link",
            secret.as_str(),
            "/dev/zero",
            "fifo",
        ] {
            let p = preview(
                "write_file",
                &json!({"path": path, "content": "x\n"}),
                &m,
                false,
            );
            assert!(!p.contains("SECRET"), "{path}: {p}");
            assert!(p.contains("+ x"), "{path}: {p}");
        }
    }

    #[test]
    fn model_text_in_a_preview_is_inert() {
        let dir = tempfile::tempdir().unwrap();
        let p = preview(
            "delete",
            &json!({"path": "a\u{1b}[2J\u{1b}]0;owned\u{7}"}),
            &mount(dir.path()),
            false,
        );
        assert!(!p.contains('\u{1b}'), "{p:?}");
    }
}
