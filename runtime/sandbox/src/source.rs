//! Where tool components come from: built in, or `*.wasm` files in a folder.

use std::borrow::Cow;
use std::path::Path;

use warden_policy::Origin;
use warden_state::{InputDir, InputError, Why};

use crate::{Error, LoadProblem, Result};

/// One component to load.
#[derive(Debug, Clone)]
pub struct ComponentSource {
    /// Built-in, workspace or user.
    pub origin: Origin,
    /// The file path, or `builtin:NAME`; shown in listings and diagnostics.
    pub location: String,
    /// The component bytes.
    pub bytes: Cow<'static, [u8]>,
    /// Their SHA-256, when known before (a built-in's, worked out when
    /// warden was built).
    known_sha256: Option<&'static str>,
}

impl ComponentSource {
    /// A component compiled into the warden binary.
    pub fn builtin(name: &str, bytes: &'static [u8]) -> ComponentSource {
        ComponentSource {
            origin: Origin::Builtin,
            location: format!("builtin:{name}"),
            bytes: Cow::Borrowed(bytes),
            known_sha256: None,
        }
    }

    /// A built-in whose SHA-256 (hex) was worked out from the same bytes
    /// when warden was built, so that starting does not hash megabytes.
    /// It must be theirs: the compile cache knows components by it.
    pub fn builtin_hashed(
        name: &str,
        bytes: &'static [u8],
        sha256: &'static str,
    ) -> ComponentSource {
        debug_assert_eq!(warden_policy::sha256_hex(bytes), sha256);
        ComponentSource {
            known_sha256: Some(sha256),
            ..ComponentSource::builtin(name, bytes)
        }
    }

    /// A component from a file, with `bytes` read from it.
    pub fn from_bytes(location: String, origin: Origin, bytes: Vec<u8>) -> ComponentSource {
        ComponentSource {
            origin,
            location,
            bytes: Cow::Owned(bytes),
            known_sha256: None,
        }
    }

    /// SHA-256 of the bytes, in hex: what the compile cache and the trust
    /// record know the component by.
    pub fn sha256(&self) -> String {
        match self.known_sha256 {
            Some(known) => known.to_string(),
            None => warden_policy::sha256_hex(&self.bytes),
        }
    }

    /// One component file the user named (a link to it is followed, as
    /// the user gave it): a regular file of at most [`MAX_COMPONENT`] bytes.
    pub fn from_file(path: &Path, origin: Origin) -> Result<ComponentSource, InputError> {
        let missing = || InputError {
            path: path.to_path_buf(),
            why: Why::Io(std::io::ErrorKind::NotFound.into()),
        };
        let name = path.file_name().ok_or_else(missing)?;
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = InputDir::users(parent)?.ok_or_else(missing)?;
        let bytes = dir.read(name, MAX_COMPONENT)?.ok_or_else(missing)?;
        Ok(ComponentSource::from_bytes(
            path.display().to_string(),
            origin,
            bytes,
        ))
    }

    /// Every `*.wasm` file directly in `dir`, sorted by name, each read as
    /// `dir` reads its files (beneath a workspace, never through a link)
    /// and at most [`MAX_COMPONENT`] bytes. A file that cannot be used is
    /// reported, the others load.
    pub fn from_dir(
        dir: &InputDir,
        origin: Origin,
    ) -> Result<(Vec<ComponentSource>, Vec<LoadProblem>)> {
        let mut sources = Vec::new();
        let mut problems = Vec::new();
        for name in dir.names().map_err(Error::ToolsDir)? {
            if Path::new(&name).extension().is_none_or(|x| x != "wasm") {
                continue;
            }
            let location = dir.path().join(&name).display().to_string();
            match dir.read(&name, MAX_COMPONENT) {
                Ok(Some(bytes)) => {
                    sources.push(ComponentSource::from_bytes(location, origin, bytes))
                }
                // Removed since listed.
                Ok(None) => {}
                Err(e) => problems.push(LoadProblem {
                    location,
                    reason: format!("the file {}", e.why),
                }),
            }
        }
        Ok((sources, problems))
    }
}

/// Largest component file read (an interpreter with its runtime is ~20 MB).
const MAX_COMPONENT: u64 = 256 << 20;
