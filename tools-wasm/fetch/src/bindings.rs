//! The WIT bindings and the exported `tool` interface: a thin adapter from
//! the component ABI to [`crate::call`].

wit_bindgen::generate!({
    path: "../../wit",
    world: "warden:tool/fs-component",
    with: {
        "wasi:filesystem/types@0.2.12": wasip2::filesystem::types,
        "wasi:io/error@0.2.12": wasip2::io::error,
        "wasi:io/poll@0.2.12": wasip2::io::poll,
        "wasi:io/streams@0.2.12": wasip2::io::streams,
        "wasi:clocks/wall-clock@0.2.12": wasip2::clocks::wall_clock,
    },
});

use crate::ToolError;
use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        crate::TOOLS
            .iter()
            .map(|t| Spec {
                name: t.name.into(),
                description: t.description.into(),
                parameters: t.schema.into(),
                aliases: Vec::new(),
                mutates: false,
                // It touches no files (the network is its grants' to allow).
                effects: Some(Vec::new()),
            })
            .collect()
    }

    fn call(name: String, args: String) -> Result<String, Error> {
        crate::call(&name, &args).map_err(|e| match e {
            ToolError::InvalidArgs(m) => Error::InvalidArgs(m),
            ToolError::NotFound(m) => Error::NotFound(m),
            ToolError::Denied(m) => Error::Denied(m),
            ToolError::Failed(m) => Error::Failed(m),
        })
    }
}

export!(Component);
