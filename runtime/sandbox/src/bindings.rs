//! Host bindings of the `warden:tool` world, generated once.

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "warden:tool/component",
});

pub use exports::warden::tool::tool::{Error as GuestError, Spec as GuestSpec};
