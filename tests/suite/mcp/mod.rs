//! MCP both ways: `warden mcp` driven by the official Python SDK
//! (`serving`), and `[mcp.NAME]` servers started confined inside `warden
//! run` or reached at their URL (`using`).

mod serving;
mod using;

use std::path::{Path, PathBuf};
use std::process::Command;

/// Whether the `mcp` Python SDK is importable. CI installs it (`.ci/run`)
/// and sets `WARDEN_REQUIRE_MCP`, so there a missing SDK fails the test;
/// elsewhere the test says what to install and passes over.
pub(super) fn python_mcp() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import mcp"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("WARDEN_REQUIRE_MCP").is_none(),
            "the `mcp` Python SDK is missing: `.ci/run` installs it (pip install mcp)"
        );
        eprintln!("skipped: `pip install mcp` to run the MCP client tests");
    }
    ok
}

pub(super) fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp").join(name)
}
