/// A host-side failure that stops loading (not a tool failure: those are
/// [`crate::ToolError`] values returned to the model).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The wasmtime engine could not be created.
    #[error("cannot start the wasm engine: {0}")]
    Engine(String),
    /// Linking WASI into the engine failed.
    #[error("cannot link WASI: {0}")]
    Link(String),
    /// A tools folder exists but cannot be listed.
    #[error(transparent)]
    ToolsDir(warden_state::InputError),
}

/// Result with the sandbox error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
