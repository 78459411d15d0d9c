//! Project instructions: `AGENTS.md` at the workspace root and the user's
//! own `$XDG_CONFIG_HOME/warden/AGENTS.md`, added to the system prompt.
//!
//! The workspace file steers the model, so it follows trust like
//! `warden.toml`: its hash is in the trust record, and a version the user
//! did not accept is not used. It is opened beneath the workspace root
//! without following a symlink, must be a regular file (a FIFO cannot hang
//! the start), and is capped in size.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use rustix::fs::{Mode, OFlags};

/// File name of project instructions.
pub const INSTRUCTIONS_FILE: &str = "AGENTS.md";

/// Most of one file that goes into the system prompt.
pub const PROMPT_CAP: usize = 16 * 1024;

/// Largest file read at all (hashed whole for trust).
const READ_CAP: u64 = 1024 * 1024;

/// One instructions file as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instructions {
    /// Where it came from, for the prompt and the user.
    pub source: String,
    /// The whole file.
    pub bytes: Vec<u8>,
}

impl Instructions {
    /// The text for the system prompt: at most [`PROMPT_CAP`] bytes, cut at
    /// a character boundary, with a note when cut.
    pub fn prompt_text(&self) -> String {
        let text = String::from_utf8_lossy(&self.bytes);
        if text.len() <= PROMPT_CAP {
            return text.into_owned();
        }
        let mut end = PROMPT_CAP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        format!(
            "{}\n[… cut: {} has {} bytes, only the first {PROMPT_CAP} are shown]",
            &text[..end],
            self.source,
            self.bytes.len()
        )
    }

    /// SHA-256 (hex) of the whole file, as the trust record keeps it.
    pub fn hash(&self) -> String {
        warden_policy::sha256_hex(&self.bytes)
    }
}

/// `AGENTS.md` at `root`, opened beneath the root without following a
/// symlink. `Ok(None)` when there is none.
pub fn read_workspace(root: &Path) -> io::Result<Option<Vec<u8>>> {
    warden_state::read_workspace_file(root, INSTRUCTIONS_FILE, READ_CAP)
        .map_err(|e| io::Error::new(e.kind(), format!("{INSTRUCTIONS_FILE}: {e}")))
}

/// The user's own instructions file; `Ok(None)` when there is none. It is
/// the user's, so a symlink to it is followed, but it must lead to a
/// regular file.
pub fn read_user(path: &Path) -> io::Result<Option<Vec<u8>>> {
    let opened = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    );
    match opened {
        Ok(fd) => read_regular(File::from(fd)).map(Some),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn read_regular(file: File) -> io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!(
            "{INSTRUCTIONS_FILE} is not a regular file"
        )));
    }
    if meta.len() > READ_CAP {
        return Err(io::Error::other(format!(
            "{INSTRUCTIONS_FILE} is larger than {} KiB; keep it short",
            READ_CAP / 1024
        )));
    }
    let mut bytes = Vec::new();
    file.take(READ_CAP + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > READ_CAP {
        return Err(io::Error::other(format!(
            "{INSTRUCTIONS_FILE} grew past {} KiB while read",
            READ_CAP / 1024
        )));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_links_and_fifos_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        assert_eq!(read_workspace(ws.path()).unwrap(), None);
        std::fs::write(ws.path().join("AGENTS.md"), "use tabs").unwrap();
        assert_eq!(
            read_workspace(ws.path()).unwrap().as_deref(),
            Some(&b"use tabs"[..])
        );
        std::fs::remove_file(ws.path().join("AGENTS.md")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("AGENTS.md"))
            .unwrap();
        let e = read_workspace(ws.path()).unwrap_err().to_string();
        assert!(e.starts_with("AGENTS.md: it is a symbolic link"), "{e}");
        std::fs::remove_file(ws.path().join("AGENTS.md")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            ws.path().join("AGENTS.md"),
            Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let e = read_workspace(ws.path()).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
    }

    #[test]
    fn a_long_file_is_cut_for_the_prompt_with_a_note() {
        let long = Instructions {
            source: "AGENTS.md".into(),
            bytes: "é".repeat(PROMPT_CAP).into_bytes(),
        };
        let text = long.prompt_text();
        assert!(text.len() < PROMPT_CAP + 200);
        assert!(
            text.ends_with(&format!(
                "[… cut: AGENTS.md has {} bytes, only the first {PROMPT_CAP} are shown]",
                2 * PROMPT_CAP
            )),
            "{}",
            &text[text.len() - 100..]
        );
        let short = Instructions {
            source: "AGENTS.md".into(),
            bytes: b"be brief".to_vec(),
        };
        assert_eq!(short.prompt_text(), "be brief");
    }
}
