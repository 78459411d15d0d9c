//! Project instructions: `AGENTS.md` at the workspace root and the user's
//! own `$XDG_CONFIG_HOME/warden/AGENTS.md`, added to the system prompt.
//!
//! The workspace file steers the model, so it follows trust like
//! `warden.toml`: its hash is in the trust record, and a version the user
//! did not accept is not used. It is read as warden reads every workspace
//! file for itself ([`InputDir`]): never through a link, a regular file
//! only (a FIFO cannot hang the start), capped in size.

use std::path::Path;

use warden_state::{InputDir, InputError};

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

/// `AGENTS.md` in the workspace `ws`, never through a link, a regular
/// file of at most 1 MiB. `Ok(None)` when there is none.
pub fn read_workspace(ws: &InputDir) -> Result<Option<Vec<u8>>, InputError> {
    ws.read(INSTRUCTIONS_FILE, READ_CAP)
}

/// The user's own instructions file; `Ok(None)` when there is none. It is
/// the user's, so a symlink to it is followed, but it must lead to a
/// regular file of at most 1 MiB.
pub fn read_user(path: &Path) -> Result<Option<Vec<u8>>, InputError> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(None);
    };
    match InputDir::users(dir)? {
        Some(dir) => dir.read(name, READ_CAP),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_regular_file_is_read_and_links_and_fifos_are_refused() {
        let ws = tempfile::tempdir().unwrap();
        let input = InputDir::workspace(ws.path()).unwrap();
        assert_eq!(read_workspace(&input).unwrap(), None);
        std::fs::write(ws.path().join("AGENTS.md"), "use tabs").unwrap();
        assert_eq!(
            read_workspace(&input).unwrap().as_deref(),
            Some(&b"use tabs"[..])
        );
        std::fs::remove_file(ws.path().join("AGENTS.md")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "secret").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), ws.path().join("AGENTS.md"))
            .unwrap();
        let e = read_workspace(&input).unwrap_err().to_string();
        assert!(e.contains("AGENTS.md is a symbolic link"), "{e}");
        // The user's own file may be a link they made.
        assert_eq!(
            read_user(&ws.path().join("AGENTS.md")).unwrap().as_deref(),
            Some(&b"secret"[..])
        );
        std::fs::remove_file(ws.path().join("AGENTS.md")).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            ws.path().join("AGENTS.md"),
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let e = read_workspace(&input).unwrap_err().to_string();
        assert!(
            e.contains("AGENTS.md is a named pipe (FIFO), not a regular file"),
            "{e}"
        );
        let e = read_user(&ws.path().join("AGENTS.md"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert_eq!(read_user(&ws.path().join("none/AGENTS.md")).unwrap(), None);
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
