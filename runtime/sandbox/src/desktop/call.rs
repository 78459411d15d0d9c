//! What one call will do in the desktop session, worked out when its
//! arguments are checked, from its tool's declarations: the approval
//! preview shows this, and the call can start, open or end nothing else.

use serde_json::Value;
use warden_desktop::{Launch, Started};

use super::declared::{Declared, Does};
use super::plan::{DesktopPlan, Refusal};

/// An app to start, as a call asks for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppRequest {
    /// The app, as the call names it.
    pub app: String,
    /// Its files, as the call gives them.
    pub files: Vec<String>,
    /// Its URLs, as the call gives them.
    pub urls: Vec<String>,
}

/// One thing a call will do in the desktop session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DesktopAction {
    /// Start an app: this program line, or the reason it will not start.
    Start {
        /// What the call asks for.
        request: AppRequest,
        /// What runs.
        plan: Result<Launch, Refusal>,
    },
    /// Open a page in the browser.
    Browse {
        /// The URL as the call gives it.
        url: String,
        /// What runs.
        plan: Result<Launch, Refusal>,
    },
    /// End an app this session started, with its process group.
    Close {
        /// Its id.
        id: u64,
        /// The app it names.
        plan: Result<Started, Refusal>,
    },
}

/// Everything a call will do in the desktop session, as far as its tool
/// declares it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DesktopCall {
    /// Whether the tool declares its desktop actions: then the call does
    /// these and nothing else.
    pub declared: bool,
    /// In the order of the declarations.
    pub actions: Vec<DesktopAction>,
    /// The arguments they cover (shown through them, not as arguments).
    pub arguments: Vec<String>,
}

/// The strings of argument `name`: one string, or an array of strings.
fn strings(args: &Value, name: Option<&str>) -> Vec<String> {
    match name.and_then(|n| args.get(n)) {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    }
}

impl DesktopCall {
    /// The desktop actions of a call with `args` (checked against the
    /// schema) of a tool declaring `declared`, whose plan is `plan`.
    pub(crate) fn of(declared: &[Declared], args: &Value, plan: &DesktopPlan) -> DesktopCall {
        let mut call = DesktopCall {
            declared: !declared.is_empty(),
            ..DesktopCall::default()
        };
        for d in declared {
            let value = args.get(&d.argument);
            call.arguments.push(d.argument.clone());
            match &d.does {
                Does::OpenApp { files, urls } => {
                    call.arguments.extend(files.iter().chain(urls).cloned());
                    let Some(app) = value.and_then(Value::as_str) else {
                        continue;
                    };
                    let request = AppRequest {
                        app: app.to_string(),
                        files: strings(args, files.as_deref()),
                        urls: strings(args, urls.as_deref()),
                    };
                    let plan = plan.open_app(&request.app, &request.files, &request.urls);
                    call.actions.push(DesktopAction::Start { request, plan });
                }
                Does::Browse {} => {
                    let Some(url) = value.and_then(Value::as_str) else {
                        continue;
                    };
                    call.actions.push(DesktopAction::Browse {
                        url: url.to_string(),
                        plan: plan.browse(url),
                    });
                }
                Does::CloseApp {} => {
                    let Some(id) = value.and_then(Value::as_u64) else {
                        continue;
                    };
                    let plan = u32::try_from(id)
                        .map_err(|_| Refusal::Denied(format!("no app has id {id}")))
                        .and_then(|id| plan.close(id));
                    call.actions.push(DesktopAction::Close { id, plan });
                }
            }
        }
        call
    }
}
