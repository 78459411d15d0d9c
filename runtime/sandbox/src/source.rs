//! Where tool components come from: built in, or `*.wasm` files in a folder.

use std::borrow::Cow;
use std::path::Path;

use warden_policy::Origin;

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

    /// One component file (a regular file of at most 256 MiB).
    pub fn from_file(path: &Path, origin: Origin) -> std::io::Result<ComponentSource> {
        Ok(ComponentSource::from_bytes(
            path.display().to_string(),
            origin,
            read_component(path)?,
        ))
    }

    /// Every `*.wasm` file directly in `dir`, sorted by name. A missing folder
    /// is empty; a file that cannot be read is reported, the others load.
    pub fn from_dir(
        dir: &Path,
        origin: Origin,
    ) -> Result<(Vec<ComponentSource>, Vec<LoadProblem>)> {
        let entries = match std::fs::read_dir(dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Default::default()),
            Err(source) => {
                return Err(Error::ToolsDir {
                    path: dir.to_path_buf(),
                    source,
                });
            }
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "wasm"))
            .collect();
        paths.sort();
        let mut sources = Vec::new();
        let mut problems = Vec::new();
        for path in paths {
            // In a workspace, a component is read as warden reads its own
            // files there: never through a link. The user's own folder may
            // link to a component built elsewhere.
            let read = match origin {
                Origin::Workspace => {
                    let name = path
                        .file_name()
                        .and_then(|n| n.to_str())
                        .unwrap_or_default();
                    warden_state::read_workspace_file(dir, name, MAX_COMPONENT)
                        .and_then(|b| b.ok_or_else(|| std::io::ErrorKind::NotFound.into()))
                }
                _ => read_component(&path),
            };
            match read {
                Ok(bytes) => sources.push(ComponentSource::from_bytes(
                    path.display().to_string(),
                    origin,
                    bytes,
                )),
                Err(e) => problems.push(LoadProblem {
                    location: path.display().to_string(),
                    reason: format!("cannot read the file: {e}"),
                }),
            }
        }
        Ok((sources, problems))
    }
}

/// Largest component file read (an interpreter with its runtime is ~20 MB).
const MAX_COMPONENT: u64 = 256 << 20;

/// Reads a component file: a regular file only (a named pipe would block
/// the start, a device never ends), at most [`MAX_COMPONENT`] bytes.
fn read_component(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    // Opening a named pipe for reading waits for a writer unless
    // non-blocking; a regular file ignores the flag.
    #[cfg(unix)]
    options.custom_flags(libc::O_NONBLOCK);
    let file = options.open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a named pipe, socket or device); components are .wasm files",
        ));
    }
    if meta.len() > MAX_COMPONENT {
        return Err(std::io::Error::other(format!(
            "it is {} MiB; components larger than {} MiB are not loaded",
            meta.len() >> 20,
            MAX_COMPONENT >> 20
        )));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_COMPONENT).read_to_end(&mut bytes)?;
    Ok(bytes)
}
