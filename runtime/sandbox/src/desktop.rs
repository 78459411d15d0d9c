//! `warden:tool/desktop`: a tool starts desktop apps and opens pages in the
//! user's browser, in the user's desktop session, unconfined (see
//! `warden-desktop` for why and how).
//!
//! What a tool may do is decided here from its grants, once when it is
//! bound ([`DesktopPlan`]): the apps of its `apps` grant, found on this
//! machine; file arguments inside its directory grants, checked by the one
//! resolver and through its directory handles; URLs on the hosts of its
//! `browse` grant. A tool that declares its desktop actions has each
//! call's program lines worked out when its arguments are checked
//! ([`DesktopCall`]), for the approval preview; the call then starts
//! exactly those and nothing else.

mod call;
mod declared;
mod plan;

use std::sync::Arc;

use wasmtime::component::{HasData, Linker};

pub use call::{AppRequest, DesktopAction, DesktopCall, Said};
pub(crate) use declared::take as take_declared;
pub use declared::{Declared, Does};
pub use plan::Refusal;
pub(crate) use plan::{DesktopPlan, GrantedApps};

use crate::wasi::CallState;

mod bindings {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "warden:tool/host-desktop",
    });
}

use bindings::warden::tool::desktop::{self, DesktopError, Ended};

/// The desktop side of a call's state.
pub(crate) struct DesktopState {
    /// What the tool may do.
    pub(crate) plan: Arc<DesktopPlan>,
    /// What this call was checked to do.
    pub(crate) call: Arc<DesktopCall>,
}

/// Adds `warden:tool/desktop` to the linker.
pub(crate) fn add_desktop(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    desktop::add_to_linker::<CallState, Desktop>(linker, |state| &mut state.desktop)
}

struct Desktop;

impl HasData for Desktop {
    type Data<'a> = &'a mut DesktopState;
}

impl From<Refusal> for DesktopError {
    fn from(r: Refusal) -> DesktopError {
        match r {
            Refusal::Denied(m) => DesktopError::Denied(m),
            Refusal::NoDisplay(m) => DesktopError::NoDisplay(m),
            Refusal::Failed(m) => DesktopError::Failed(m),
        }
    }
}

fn wit_started(s: warden_desktop::Started) -> desktop::Started {
    desktop::Started {
        id: s.id,
        app: s.launch.app.clone(),
        name: s.launch.name.clone(),
        line: s.launch.line(),
        pid: s.pid,
        seconds: s.since.elapsed().as_secs(),
    }
}

impl DesktopState {
    /// Starts `launch` (or says why not).
    fn start(
        &self,
        launch: Result<warden_desktop::Launch, Refusal>,
    ) -> Result<Option<desktop::Started>, DesktopError> {
        let launch = launch?;
        warden_desktop::start(&launch, &self.plan.env, &self.plan.cwd)
            .map(|s| s.map(wit_started))
            .map_err(DesktopError::Failed)
    }

    /// Said when a tool that declares its actions asks for another.
    fn not_shown(what: &str) -> DesktopError {
        DesktopError::Denied(format!(
            "{what} is not what this call was checked (and the user shown) to do; a tool that \
             declares its desktop actions does only those"
        ))
    }
}

impl desktop::Host for &mut DesktopState {
    fn display(&mut self) -> Result<String, String> {
        self.plan.display.clone()
    }

    fn apps(&mut self) -> Vec<desktop::App> {
        self.plan
            .granted
            .all()
            .into_iter()
            .map(|a| desktop::App {
                mine: self.plan.apps.iter().any(|m| m.granted == a.granted),
                name: a.shown_name().to_string(),
                program: a
                    .start
                    .as_ref()
                    .map(|s| s.program.to_string_lossy().into_owned())
                    .map_err(Clone::clone),
                granted: a.granted,
            })
            .collect()
    }

    fn running(&mut self) -> Vec<desktop::Started> {
        warden_desktop::running()
            .into_iter()
            .map(wit_started)
            .collect()
    }

    fn open_app(
        &mut self,
        app: String,
        files: Vec<String>,
        urls: Vec<String>,
    ) -> Result<Option<desktop::Started>, DesktopError> {
        let asked = AppRequest { app, files, urls };
        let launch = if self.call.declared {
            self.call
                .actions
                .iter()
                .find_map(|a| match a {
                    DesktopAction::Start { request, plan } if *request == asked => {
                        Some(plan.clone())
                    }
                    _ => None,
                })
                .ok_or_else(|| DesktopState::not_shown(&format!("starting `{}`", asked.app)))?
        } else {
            self.plan.open_app(&asked.app, &asked.files, &asked.urls)
        };
        self.start(launch)
    }

    fn browse(&mut self, url: String) -> Result<Option<desktop::Started>, DesktopError> {
        let launch = if self.call.declared {
            self.call
                .actions
                .iter()
                .find_map(|a| match a {
                    DesktopAction::Browse { url: u, plan } if *u == url => Some(plan.clone()),
                    _ => None,
                })
                .ok_or_else(|| DesktopState::not_shown(&format!("opening {url}")))?
        } else {
            self.plan.browse(&url)
        };
        self.start(launch)
    }

    fn close(&mut self, id: u32) -> Result<(desktop::Started, Ended), DesktopError> {
        if self.call.declared {
            self.call
                .actions
                .iter()
                .find_map(|a| match a {
                    DesktopAction::Close { id: i, plan } if *i == u64::from(id) => {
                        Some(plan.clone())
                    }
                    _ => None,
                })
                .ok_or_else(|| DesktopState::not_shown(&format!("ending app {id}")))??;
        }
        let (started, ended) = warden_desktop::close(id).map_err(DesktopError::Denied)?;
        let ended = match ended {
            warden_desktop::Ended::Already => Ended::Already,
            warden_desktop::Ended::Terminated => Ended::Terminated,
            warden_desktop::Ended::Killed => Ended::Killed,
            warden_desktop::Ended::Remains => Ended::Remains,
        };
        Ok((wit_started(started), ended))
    }
}
