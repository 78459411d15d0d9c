//! Host bindings of the `warden:tool` world, generated twice:
//! - exports called on a fiber (asynchronously), so that the watchdog can
//!   drop a call waiting in the host on something that may never come (a
//!   timer, a network answer, a program);
//! - exports called directly on the calling thread ([`direct`]), for a
//!   component that imports nothing that waits that way: it skips the
//!   fiber, the async runtime and their cold code. The watchdog stops it
//!   the same way otherwise: the epoch for wasm, a signal for a blocking
//!   system call.

use wasmtime::component::types::ComponentItem;

use crate::wasi::CallState;

wasmtime::component::bindgen!({
    path: "../../wit",
    world: "warden:tool/component",
    exports: { default: async },
});

/// The same world with its exports called directly.
pub(crate) mod direct {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "warden:tool/component",
    });
}

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

impl From<direct::exports::warden::tool::tool::Error> for GuestError {
    fn from(e: direct::exports::warden::tool::tool::Error) -> GuestError {
        use direct::exports::warden::tool::tool::Error as E;
        match e {
            E::InvalidArgs(m) => GuestError::InvalidArgs(m),
            E::NotFound(m) => GuestError::NotFound(m),
            E::Denied(m) => GuestError::Denied(m),
            E::Failed(m) => GuestError::Failed(m),
        }
    }
}

impl From<direct::exports::warden::tool::tool::Spec> for GuestSpec {
    fn from(s: direct::exports::warden::tool::tool::Spec) -> GuestSpec {
        GuestSpec {
            name: s.name,
            description: s.description,
            parameters: s.parameters,
            aliases: s.aliases,
            mutates: s.mutates,
        }
    }
}

/// A linked component: what each of its instances is made from.
pub(crate) enum Pre {
    /// Called on a fiber.
    Fiber(ComponentPre<CallState>),
    /// Called directly: it imports nothing that waits ([`never_waits`]).
    Direct(direct::ComponentPre<CallState>),
}

/// An instance of a component, called as its [`Pre`] says.
pub(crate) enum Guest {
    Fiber(Component),
    Direct(direct::Component),
}

impl Guest {
    pub(crate) fn into_fiber(self) -> Option<Component> {
        match self {
            Guest::Fiber(guest) => Some(guest),
            Guest::Direct(_) => None,
        }
    }

    pub(crate) fn into_direct(self) -> Option<direct::Component> {
        match self {
            Guest::Direct(guest) => Some(guest),
            Guest::Fiber(_) => None,
        }
    }
}

/// Interfaces whose functions return at once or after one system call
/// (which the watchdog's signal interrupts), with the functions of each
/// that do (`None`: all): the command line's streams (stdin is closed,
/// stdout and stderr are buffers), files, the clocks' readings (not the
/// monotonic clock's timers), randomness, streams and polls over those,
/// and the host's file extras. Anything else (timers, HTTP, sockets,
/// programs) is called on a fiber.
const NEVER_WAIT: &[(&str, Option<&[&str]>)] = &[
    ("wasi:cli/", None),
    ("wasi:clocks/wall-clock@", None),
    ("wasi:clocks/monotonic-clock@", Some(&["now", "resolution"])),
    ("wasi:filesystem/", None),
    ("wasi:io/", None),
    ("wasi:random/", None),
    ("warden:tool/host-fs@", None),
    ("warden:tool/call@", None),
];

/// Whether every import of `component` is of [`NEVER_WAIT`]: then a call
/// never waits in the host on anything but a system call, and needs no
/// fiber.
pub(crate) fn never_waits(
    component: &wasmtime::component::Component,
    engine: &wasmtime::Engine,
) -> bool {
    component
        .component_type()
        .imports(engine)
        .all(|(name, import)| {
            let ComponentItem::ComponentInstance(instance) = import.ty else {
                return false;
            };
            let Some((_, funcs)) = NEVER_WAIT.iter().find(|(p, _)| name.starts_with(p)) else {
                return false;
            };
            funcs.is_none_or(|funcs| {
                instance.exports(engine).all(|(name, item)| {
                    !matches!(item.ty, ComponentItem::ComponentFunc(_)) || funcs.contains(&name)
                })
            })
        })
}
