//! `desktop`: the built-in desktop tools of warden, as one WASI 0.2
//! component: `list_apps`, `open_app`, `close_app` and `browse`.
//!
//! Everything happens in the host (`warden:tool/desktop`): which apps the
//! tool may start, where its files may be, which hosts its pages may be
//! on, the exact program line, and which apps this session started. Each
//! tool declares its arguments' meaning (`warden_tool::desktop`, and the
//! files as read effects), so that the user is shown the program line
//! before a call, and the call runs exactly that. This crate only asks the
//! host and puts its answers in words for the model.
//!
//! - `bindings`: the host interface's WIT bindings;
//! - `render`: the answers in words.

mod bindings {
    wit_bindgen::generate!({ path: "../../wit", world: "warden:tool/host-desktop" });
}
mod render;

use bindings::warden::tool::desktop::{self as host, DesktopError};
use warden_tool::{Entry, Error, JsonSchema, Tool, desktop, effect};

/// List the desktop apps the user allows you to open with `open_app`
/// (whether each is installed, and its name), and the apps this session
/// started that are still running, with the ids `close_app` takes.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListApps {}

impl Tool for ListApps {
    const NAME: &str = "list_apps";
    const NO_FILES: bool = true;
    fn run(self) -> Result<String, Error> {
        Ok(render::listing(
            &host::display(),
            &host::apps(),
            &host::running(),
        ))
    }
}

/// Open a desktop app the user allows (see `list_apps`) in the user's
/// desktop session, optionally with files from the workspace or web pages
/// in it: "open the report in LibreOffice". The app runs as the user, not
/// in a sandbox, and keeps running after this session; `close_app` ends
/// it. Only files inside your granted directories and pages on hosts the
/// user allows can be given to it.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenApp {
    /// The app, as `list_apps` names it (a desktop-entry ID such as
    /// "libreoffice-writer", or a program name such as "xeyes").
    #[schemars(extend("x-warden-desktop" = desktop::open_app().files("files").urls("urls")))]
    pub app: String,
    /// Files to open in it: paths in the workspace (relative) or another
    /// granted directory.
    #[serde(default)]
    #[schemars(extend("x-warden-effect" = effect::read().follow()))]
    pub files: Option<Vec<String>>,
    /// Web pages to open in it: http or https URLs on hosts the user
    /// allows.
    #[serde(default)]
    pub urls: Option<Vec<String>>,
}

impl Tool for OpenApp {
    const NAME: &str = "open_app";
    const ALIASES: &[&str] = &["launch_app", "start_app"];
    const MUTATES: bool = true;
    fn run(self) -> Result<String, Error> {
        let files = self.files.unwrap_or_default();
        let urls = self.urls.unwrap_or_default();
        host::open_app(&self.app, &files, &urls)
            .map(|started| render::opened(&self.app, started.as_ref()))
            .map_err(error)
    }
}

/// End an app that this session started (its id is in `open_app`'s answer
/// and in `list_apps`), with every process it started. Apps the user
/// opened themselves cannot be closed.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseApp {
    /// The app's id in this session.
    #[schemars(extend("x-warden-desktop" = desktop::close_app()))]
    pub id: u32,
}

impl Tool for CloseApp {
    const NAME: &str = "close_app";
    const ALIASES: &[&str] = &["quit_app"];
    const MUTATES: bool = true;
    const NO_FILES: bool = true;
    fn run(self) -> Result<String, Error> {
        host::close(self.id)
            .map(|(app, ended)| render::closed(&app, ended))
            .map_err(error)
    }
}

/// Open a web page in the user's browser, for the user to see: "show me
/// this page". Only pages on hosts the user allows can be opened. To read
/// a page yourself, use `fetch` instead.
#[derive(serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Browse {
    /// The page: an http or https URL.
    #[schemars(extend("x-warden-desktop" = desktop::browse()))]
    pub url: String,
}

impl Tool for Browse {
    const NAME: &str = "browse";
    const ALIASES: &[&str] = &["open_url", "open_in_browser"];
    const MUTATES: bool = true;
    const NO_FILES: bool = true;
    fn run(self) -> Result<String, Error> {
        host::browse(&self.url)
            .map(|started| render::browsed(&self.url, started.as_ref()))
            .map_err(error)
    }
}

/// The host's refusal as the model reads it.
fn error(e: DesktopError) -> Error {
    match e {
        DesktopError::Denied(m) => Error::Denied(m),
        DesktopError::NoDisplay(m) | DesktopError::Failed(m) => Error::Failed(m),
    }
}

/// Every tool of this component, in the order `describe` lists them.
pub const TOOLS: &[Entry] = &[
    Entry::of::<ListApps>(),
    Entry::of::<OpenApp>(),
    Entry::of::<CloseApp>(),
    Entry::of::<Browse>(),
];

warden_tool::export!(tools = TOOLS);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn specs_declare_what_each_call_does() {
        let open = TOOLS[1].spec();
        let schema: Value = serde_json::from_str(&open.parameters).unwrap();
        // The host reads the desktop declaration from the schema.
        assert_eq!(
            schema["properties"]["app"]["x-warden-desktop"],
            json!({"action": "open_app", "files": "files", "urls": "urls"})
        );
        let effects = open.effects.unwrap();
        assert_eq!(effects.len(), 1);
        assert_eq!(effects[0].argument, "files");
        assert!(open.mutates);
        // list_apps changes nothing and touches no file.
        let list = TOOLS[0].spec();
        assert!(!list.mutates && list.effects.is_some_and(|e| e.is_empty()));
        for (tool, field) in [(&TOOLS[2], "id"), (&TOOLS[3], "url")] {
            let schema: Value = serde_json::from_str(&tool.spec().parameters).unwrap();
            assert!(
                schema["properties"][field]["x-warden-desktop"].is_object(),
                "{}",
                tool.name
            );
        }
    }
}
