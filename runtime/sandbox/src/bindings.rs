//! Host bindings of the `warden:tool` world, generated once. Exports are
//! called asynchronously, so that the watchdog can stop a call waiting in
//! the host.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "warden:tool/component",
    exports: { default: async },
});

pub use exports::warden::tool::tool::{Error as GuestError, Spec as GuestSpec};

impl From<GuestError> for crate::ToolError {
    fn from(e: GuestError) -> crate::ToolError {
        use crate::ErrorKind;
        match e {
            GuestError::InvalidArgs(m) => crate::ToolError::new(ErrorKind::InvalidArgs, m),
            GuestError::NotFound(m) => crate::ToolError::new(ErrorKind::NotFound, m),
            GuestError::Denied(m) => crate::ToolError::new(ErrorKind::Denied, m),
            GuestError::Failed(m) => crate::ToolError::new(ErrorKind::Failed, m),
        }
    }
}
