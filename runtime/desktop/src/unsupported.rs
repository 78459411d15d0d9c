//! Off Linux, no app is started (warden has no pidfd to hold it by).

use crate::launch::{Ended, Launch, Started};

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
