use std::path::PathBuf;

/// A policy that cannot be used. Each message names the file and what to fix.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is refused before it is read: a link, not a regular file,
    /// too large.
    #[error(transparent)]
    Input(#[from] warden_state::InputError),
    /// The file is not valid TOML or does not match the policy format.
    #[error("invalid {path} at line {line}, column {column}: {message}")]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A record could not be written.
    #[error("cannot write {path}: {message}; check that the folder is writable")]
    Write { path: PathBuf, message: String },
    /// The file parsed but says something impossible.
    #[error("invalid {path}: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// Result with the policy error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
