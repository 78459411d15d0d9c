//! warden's own per-user folders, outside every workspace.
//!
//! State (trust records, sessions, the cache key), the compile cache, the
//! user config and the user's tools follow the XDG base directories. None
//! of them may be reachable by a tool: a workspace that contains one is
//! refused, and a grant that contains one is dropped.

use std::io;
use std::path::{Path, PathBuf};

use warden_policy::inert;
use warden_state::StateDir;

use crate::Error;

/// The per-user base folders warden uses.
#[derive(Debug, Clone)]
pub struct Folders {
    /// `$XDG_STATE_HOME` (trust records, sessions, the cache key).
    pub state: PathBuf,
    /// `$XDG_CACHE_HOME` (compiled components).
    pub cache: PathBuf,
    /// `$XDG_CONFIG_HOME` (`warden/config.toml`).
    pub config: PathBuf,
    /// `$XDG_DATA_HOME` (`warden/tools`, the user's own tools).
    pub data: PathBuf,
}

impl Folders {
    /// The user's folders, from the XDG variables or their defaults.
    pub fn from_env() -> Result<Folders, Error> {
        let missing = || {
            Error::Folders(
                "no per-user folders: set HOME (or XDG_STATE_HOME, XDG_CACHE_HOME, \
                 XDG_CONFIG_HOME and XDG_DATA_HOME)"
                    .into(),
            )
        };
        Ok(Folders {
            state: dirs::state_dir()
                .or_else(dirs::data_local_dir)
                .ok_or_else(missing)?,
            cache: dirs::cache_dir().ok_or_else(missing)?,
            config: dirs::config_dir().ok_or_else(missing)?,
            data: dirs::data_dir().ok_or_else(missing)?,
        })
    }

    /// All four under one folder (tests, benchmarks).
    pub fn under(base: &Path) -> Folders {
        Folders {
            state: base.join("state"),
            cache: base.join("cache"),
            config: base.join("config"),
            data: base.join("data"),
        }
    }

    /// The folders warden owns, as they are spelled and, where they exist,
    /// canonical.
    pub fn owned(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for base in [&self.state, &self.cache, &self.config, &self.data] {
            let own = base.join("warden");
            // The nearest existing ancestor, canonical, plus the rest: a
            // folder not created yet is still warden's.
            let mut probe = own.as_path();
            let mut rest = Vec::new();
            while let Some(parent) = probe.parent() {
                if let Ok(canon) = probe.canonicalize() {
                    let mut p = canon;
                    p.extend(rest.iter().rev());
                    out.push(p);
                    break;
                }
                rest.push(probe.file_name().map(PathBuf::from).unwrap_or_default());
                probe = parent;
            }
            out.push(own);
        }
        out.sort();
        out.dedup();
        out
    }

    /// The first of warden's folders that `dir` (canonical) holds or lies
    /// in, if any.
    pub fn owned_overlapping(&self, dir: &Path) -> Option<Overlap> {
        self.owned().into_iter().find_map(|own| {
            if own.starts_with(dir) {
                Some(Overlap::Holds(own))
            } else if dir.starts_with(&own) {
                Some(Overlap::Inside(own))
            } else {
                None
            }
        })
    }

    /// Refuses a workspace root that contains warden's own folders, or
    /// lies in one: its tools could rewrite trust records, sessions and
    /// cached native code.
    pub fn check_workspace(&self, root: &Path) -> Result<(), Error> {
        let (how, own) = match self.owned_overlapping(root) {
            None => return Ok(()),
            Some(Overlap::Holds(own)) => ("contains", own),
            Some(Overlap::Inside(own)) => ("is inside", own),
        };
        Err(Error::Folders(format!(
            "the workspace {} {how} warden's own folder {}: tools granted the workspace \
             could rewrite trust records, sessions and compiled code. Run warden in a \
             project folder, or point XDG_STATE_HOME, XDG_CACHE_HOME, XDG_CONFIG_HOME and \
             XDG_DATA_HOME elsewhere",
            inert(&root.display().to_string()),
            inert(&own.display().to_string())
        )))
    }

    fn open(base: &Path, rel: &str) -> Result<StateDir, Error> {
        StateDir::open(base, rel).map_err(|e| {
            Error::Folders(format!(
                "cannot open warden's folder {}: {e}",
                base.join(rel).display()
            ))
        })
    }

    /// The trust records.
    pub fn trust(&self) -> Result<StateDir, Error> {
        Self::open(&self.state, "warden/trust")
    }

    /// The sessions of the workspace at `root` (canonical), in a folder
    /// named by a hash of its path.
    pub fn sessions(&self, root: &Path) -> Result<StateDir, Error> {
        Self::open(
            &self.state,
            &format!("warden/sessions/{}", workspace_id(root)),
        )
    }

    /// The undo snapshots of the workspace at `root` (canonical).
    pub fn undo(&self, root: &Path) -> Result<StateDir, Error> {
        Self::open(&self.state, &format!("warden/undo/{}", workspace_id(root)))
    }

    /// The chat line history file's folder.
    pub fn history(&self) -> Result<StateDir, Error> {
        Self::open(&self.state, "warden")
    }

    /// The compile cache with its key: a secret made once per user and
    /// kept in the state folder, away from the cache it vouches for.
    pub fn compile_cache(&self) -> Result<warden_sandbox::CacheConfig, Error> {
        let state = Self::open(&self.state, "warden")?;
        let key = match state.read("cache-key").map_err(key_error)? {
            Some(bytes) if bytes.len() == 32 => {
                let mut key = [0u8; 32];
                key.copy_from_slice(&bytes);
                key
            }
            // Missing or damaged: a new key (old entries are then refused
            // and recompiled, never trusted).
            _ => {
                let mut key = [0u8; 32];
                getrandom::fill(&mut key).map_err(|e| key_error(io::Error::other(e)))?;
                state.write_atomic("cache-key", &key).map_err(key_error)?;
                key
            }
        };
        Ok(warden_sandbox::CacheConfig {
            dir: Self::open(&self.cache, "warden/compiled")?,
            key,
        })
    }

    /// What warden learnt about model endpoints (whether each constrains
    /// replies to a JSON schema), kept per endpoint and model.
    pub fn endpoints(&self) -> Result<StateDir, Error> {
        Self::open(&self.cache, "warden/endpoints")
    }

    /// The user config file.
    pub fn config_file(&self) -> PathBuf {
        self.config.join("warden").join(warden_policy::USER_CONFIG)
    }

    /// The user's own tools folder.
    pub fn user_tools(&self) -> PathBuf {
        self.data.join("warden/tools")
    }
}

/// A workspace's folder name under `sessions/` and `undo/`: a hash of its
/// canonical path.
fn workspace_id(root: &Path) -> String {
    warden_policy::sha256_hex(root.as_os_str().as_encoded_bytes())[..16].to_string()
}

/// How a folder meets one of warden's own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Overlap {
    /// It holds warden's folder.
    Holds(PathBuf),
    /// It lies in warden's folder.
    Inside(PathBuf),
}

fn key_error(e: io::Error) -> Error {
    Error::Folders(format!("cannot read or create the compile cache key: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_holding_warden_folders_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().canonicalize().unwrap();
        let f = Folders::under(&home.join(".local"));
        // HOME itself, and the folder above the state folder.
        for root in [home.clone(), home.join(".local")] {
            std::fs::create_dir_all(&root).unwrap();
            let e = f.check_workspace(&root).unwrap_err().to_string();
            assert!(e.contains("contains warden's own folder"), "{e}");
        }
        let project = home.join("project");
        std::fs::create_dir_all(&project).unwrap();
        f.check_workspace(&project).unwrap();
        // Inside one of them: the sessions folder, the user's tools.
        for root in [
            home.join(".local/state/warden/sessions"),
            home.join(".local/data/warden/tools"),
        ] {
            std::fs::create_dir_all(&root).unwrap();
            let e = f.check_workspace(&root).unwrap_err().to_string();
            assert!(e.contains("is inside warden's own folder"), "{e}");
        }
    }

    #[test]
    fn a_workspace_reaching_warden_folders_through_a_symlink_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().canonicalize().unwrap();
        let real = home.join("real");
        std::fs::create_dir_all(real.join("state")).unwrap();
        std::os::unix::fs::symlink(&real, home.join("link")).unwrap();
        // The state folder is spelled through the link; the workspace is
        // the real folder.
        let f = Folders::under(&home.join("link"));
        assert!(f.check_workspace(&real).is_err());
    }

    #[test]
    fn the_cache_key_is_made_once_and_kept() {
        let base = tempfile::tempdir().unwrap();
        let f = Folders::under(base.path());
        let a = f.compile_cache().unwrap().key;
        let b = f.compile_cache().unwrap().key;
        assert_eq!(a, b);
        assert_ne!(a, [0u8; 32]);
    }
}
