//! What a call does in the user's desktop session, declared on the field
//! that names the app to start, the page to open or the app to end: the
//! host then works out the exact program line before the call, shows it
//! to the user, and lets the call start, open or end only that. A tool
//! using `warden:tool/desktop` without declaring this has its calls
//! checked against its grants only, and the user is not shown the line.
//!
//! ```ignore
//! use warden_tool::{desktop, effect, JsonSchema};
//!
//! /// Open a granted desktop app, with files.
//! #[derive(serde::Deserialize, JsonSchema)]
//! struct OpenApp {
//!     /// The app.
//!     #[schemars(extend("x-warden-desktop" = desktop::open_app().files("files")))]
//!     app: String,
//!     /// Files to open in it.
//!     #[schemars(extend("x-warden-effect" = effect::read().follow()))]
//!     files: Option<Vec<String>>,
//! }
//! ```
//!
//! Unlike an [`crate::effect`], the declaration stays in the parameters
//! schema the component describes; the host takes it out of what the
//! model sees.

use serde::{Deserialize, Serialize};

/// The schema keyword a declaration is written under.
pub const KEYWORD: &str = "x-warden-desktop";

/// A field's desktop action, as written in its `extend` attribute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum Action {
    /// The field names an app to start, with the files (paths) and URLs
    /// of the arguments named here.
    OpenApp {
        /// The argument holding the files (a string or an array).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        files: Option<String>,
        /// The argument holding the URLs (a string or an array).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        urls: Option<String>,
    },
    /// The field holds a URL to open in the user's browser.
    Browse,
    /// The field holds the id of an app of this session to end.
    CloseApp,
}

/// The field names the app to start.
pub fn open_app() -> Action {
    Action::OpenApp {
        files: None,
        urls: None,
    }
}

/// The field holds a URL to open in the user's browser.
pub fn browse() -> Action {
    Action::Browse
}

/// The field holds the id of an app of this session to end.
pub fn close_app() -> Action {
    Action::CloseApp
}

impl Action {
    /// The files to open are in argument `argument`.
    pub fn files(mut self, argument: &str) -> Action {
        if let Action::OpenApp { files, .. } = &mut self {
            *files = Some(argument.into());
        }
        self
    }

    /// The URLs to open are in argument `argument`.
    pub fn urls(mut self, argument: &str) -> Action {
        if let Action::OpenApp { urls, .. } = &mut self {
            *urls = Some(argument.into());
        }
        self
    }
}
