//! Off Linux, no app is started (warden has no pidfd to hold it by).

use std::time::Instant;

use crate::launch::Launch;

/// An app this session started (never, here).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// Its number in this session.
    pub id: u32,
    /// As launched.
    pub launch: Launch,
    /// Its first process.
    pub pid: u32,
    /// When it started.
    pub since: Instant,
}

/// How an app ended when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It had ended already.
    Already,
    /// It ended on SIGTERM.
    Terminated,
    /// It was killed.
    Killed,
    /// Some of it remains.
    Remains,
}

const UNSUPPORTED: &str = "starting desktop apps is supported on Linux only";

/// Refused: see [`UNSUPPORTED`].
pub fn start(
    _: &Launch,
    _: &[(String, String)],
    _: &std::path::Path,
) -> Result<Option<Started>, String> {
    Err(UNSUPPORTED.into())
}

/// None.
pub fn running() -> Vec<Started> {
    Vec::new()
}

/// Refused: nothing was started.
pub fn close(id: u32) -> Result<(Started, Ended), String> {
    Err(format!("no app with id {id} was started in this session"))
}
