//! The tool contract as the host calls it: the `warden:tool/tool`
//! interface a component exports, in either version of the contract
//! (0.2.0, whose specs declare effects, or 0.1.0, whose do not), called
//! directly on the calling thread or on a fiber.
//!
//! A component whose imports never wait in the host ([`never_waits`]) is
//! called directly: it skips the fiber, the async runtime and their cold
//! code. Any other is called on a fiber, so that the watchdog can drop a
//! call waiting in the host on something that may never come (a timer, a
//! network answer, a program). The watchdog stops both the same way
//! otherwise: the epoch for wasm, a signal for a blocking system call.
//!
//! The types are written out here rather than generated: one set serves
//! both versions (wasmtime checks them against each component's own types
//! when its functions are looked up).

use serde::{Deserialize, Serialize};
use wasmtime::component::types::ComponentItem;
use wasmtime::component::{ComponentExportIndex, ComponentType, Instance, InstancePre, Lift};
use wasmtime::{AsContextMut, Store};

use crate::wasi::CallState;

/// `error`: why a call failed, as the guest says it.
#[derive(Debug, Clone, ComponentType, Lift)]
#[component(variant)]
pub enum GuestError {
    #[component(name = "invalid-args")]
    InvalidArgs(String),
    #[component(name = "not-found")]
    NotFound(String),
    #[component(name = "denied")]
    Denied(String),
    #[component(name = "failed")]
    Failed(String),
}

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

/// `spec` of contract 0.2.0 (and, without `effects`, of 0.1.0): what the
/// component says of one tool. Also how a description is kept in the
/// compile cache.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Serialize, Deserialize)]
#[component(record)]
pub struct GuestSpec {
    pub name: String,
    pub description: String,
    pub parameters: String,
    pub aliases: Vec<String>,
    pub mutates: bool,
    /// `None`: not declared (and always so under contract 0.1.0).
    #[serde(default)]
    pub effects: Option<Vec<Effect>>,
}

/// `spec` of contract 0.1.0.
#[derive(ComponentType, Lift)]
#[component(record)]
struct SpecV1 {
    name: String,
    description: String,
    parameters: String,
    aliases: Vec<String>,
    mutates: bool,
}

impl From<SpecV1> for GuestSpec {
    fn from(s: SpecV1) -> GuestSpec {
        GuestSpec {
            name: s.name,
            description: s.description,
            parameters: s.parameters,
            aliases: s.aliases,
            mutates: s.mutates,
            effects: None,
        }
    }
}

/// `effect`: one path argument and what a call does to it, as the tool
/// declares it.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Serialize, Deserialize)]
#[component(record)]
pub struct Effect {
    pub argument: String,
    pub access: Access,
    pub follow: bool,
}

/// `access`.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Serialize, Deserialize)]
#[component(variant)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    #[component(name = "read")]
    Read,
    #[component(name = "write")]
    Write(Content),
    #[component(name = "create")]
    Create,
    #[component(name = "delete")]
    Delete(Option<String>),
    #[component(name = "copy-from")]
    CopyFrom,
    #[component(name = "copy-to")]
    CopyTo(Option<String>),
    #[component(name = "move-from")]
    MoveFrom,
    #[component(name = "move-to")]
    MoveTo(Option<String>),
}

/// `content`.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Serialize, Deserialize)]
#[component(variant)]
#[serde(rename_all = "snake_case")]
pub enum Content {
    #[component(name = "unknown")]
    Unknown,
    #[component(name = "whole")]
    Whole(String),
    #[component(name = "replace")]
    Replace(Replacement),
}

/// `replacement`.
#[derive(Debug, Clone, PartialEq, Eq, ComponentType, Lift, Serialize, Deserialize)]
#[component(record)]
pub struct Replacement {
    pub old: String,
    pub new: String,
    pub all: Option<String>,
}

/// The versions of the contract the host calls, newest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Contract {
    V0_2,
    V0_1,
}

impl Contract {
    const ALL: [(Contract, &'static str); 2] = [
        (Contract::V0_2, "warden:tool/tool@0.2.0"),
        (Contract::V0_1, "warden:tool/tool@0.1.0"),
    ];
}

/// A linked component: what each of its instances is made from, and where
/// its two functions are.
pub(crate) struct Pre {
    pre: InstancePre<CallState>,
    contract: Contract,
    describe: ComponentExportIndex,
    call: ComponentExportIndex,
    /// Called directly ([`never_waits`]), else on a fiber.
    pub(crate) direct: bool,
}

impl Pre {
    /// `pre`'s tool interface, in the newest version it exports. The
    /// error says what it lacks.
    pub(crate) fn new(pre: InstancePre<CallState>, direct: bool) -> Result<Pre, String> {
        let component = pre.component();
        let found = Contract::ALL.iter().find_map(|&(contract, name)| {
            let (_, tool) = component.get_export(None, name)?;
            Some((contract, tool))
        });
        let Some((contract, tool)) = found else {
            return Err(
                "not a warden tool component: it does not export `warden:tool/tool@0.2.0` \
                 (nor 0.1.0); build it against wit/tool.wit"
                    .into(),
            );
        };
        let func = |name: &str| {
            component
                .get_export_index(Some(&tool), name)
                .ok_or_else(|| {
                    format!("not a warden tool component: its `warden:tool/tool` has no `{name}`")
                })
        };
        Ok(Pre {
            contract,
            describe: func("describe")?,
            call: func("call")?,
            pre,
            direct,
        })
    }

    /// A new instance, made on this thread.
    pub(crate) fn instantiate(&self, store: &mut Store<CallState>) -> wasmtime::Result<Instance> {
        self.pre.instantiate(store)
    }

    /// A new instance, made on a fiber.
    pub(crate) async fn instantiate_async(
        &self,
        store: &mut Store<CallState>,
    ) -> wasmtime::Result<Instance> {
        self.pre.instantiate_async(store).await
    }

    /// `describe()`, called directly.
    pub(crate) fn describe(
        &self,
        mut store: impl AsContextMut<Data = CallState>,
        guest: Instance,
    ) -> wasmtime::Result<Vec<GuestSpec>> {
        match self.contract {
            Contract::V0_2 => {
                let f =
                    guest.get_typed_func::<(), (Vec<GuestSpec>,)>(&mut store, &self.describe)?;
                let (specs,) = f.call(&mut store, ())?;
                Ok(specs)
            }
            Contract::V0_1 => {
                let f = guest.get_typed_func::<(), (Vec<SpecV1>,)>(&mut store, &self.describe)?;
                let (specs,) = f.call(&mut store, ())?;
                Ok(specs.into_iter().map(GuestSpec::from).collect())
            }
        }
    }

    /// `describe()`, called on a fiber.
    pub(crate) async fn describe_async(
        &self,
        mut store: impl AsContextMut<Data = CallState>,
        guest: Instance,
    ) -> wasmtime::Result<Vec<GuestSpec>> {
        match self.contract {
            Contract::V0_2 => {
                let f =
                    guest.get_typed_func::<(), (Vec<GuestSpec>,)>(&mut store, &self.describe)?;
                let (specs,) = f.call_async(&mut store, ()).await?;
                Ok(specs)
            }
            Contract::V0_1 => {
                let f = guest.get_typed_func::<(), (Vec<SpecV1>,)>(&mut store, &self.describe)?;
                let (specs,) = f.call_async(&mut store, ()).await?;
                Ok(specs.into_iter().map(GuestSpec::from).collect())
            }
        }
    }

    /// `call(name, args)`, called directly (the same in both versions).
    pub(crate) fn call(
        &self,
        mut store: impl AsContextMut<Data = CallState>,
        guest: Instance,
        name: &str,
        args: &str,
    ) -> wasmtime::Result<Result<String, GuestError>> {
        let f = guest.get_typed_func::<(&str, &str), (Result<String, GuestError>,)>(
            &mut store, &self.call,
        )?;
        let (answer,) = f.call(&mut store, (name, args))?;
        Ok(answer)
    }

    /// `call(name, args)`, called on a fiber.
    pub(crate) async fn call_async(
        &self,
        mut store: impl AsContextMut<Data = CallState>,
        guest: Instance,
        name: &str,
        args: &str,
    ) -> wasmtime::Result<Result<String, GuestError>> {
        let f = guest.get_typed_func::<(&str, &str), (Result<String, GuestError>,)>(
            &mut store, &self.call,
        )?;
        let (answer,) = f.call_async(&mut store, (name, args)).await?;
        Ok(answer)
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
