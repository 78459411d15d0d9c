//! What one call will do in the desktop session, worked out when its
//! arguments are checked, from its tool's declarations: the approval
//! preview shows this, and the call can start, open or end nothing else.

use serde_json::Value;
use warden_desktop::{Launch, Started};
use warden_policy::{Grants, inert};

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

/// One thing a call does in the desktop session, in words, for whoever
/// decides on it (the terminal prompt, an MCP client's question): a
/// sentence, and the exact program line that runs when there is one.
/// Every string from the call is inert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Said {
    /// What it does.
    pub sentence: String,
    /// The program line it starts, as it will run.
    pub line: Option<String>,
}

impl DesktopCall {
    /// What this call does, in words: each action, then, for a tool that
    /// does not declare its actions, what its `grants` let it start.
    pub fn said(&self, tool: &str, grants: &Grants) -> Vec<Said> {
        let said = |sentence: String, line: Option<&Launch>| Said {
            sentence,
            line: line.map(|l| inert(&l.line()).into_owned()),
        };
        let mut out: Vec<Said> = self
            .actions
            .iter()
            .map(|action| match action {
                DesktopAction::Start { plan: Ok(l), .. } => said(
                    format!(
                        "start {} in your desktop session, unconfined (it keeps running after \
                         warden exits)",
                        inert(&l.name)
                    ),
                    Some(l),
                ),
                DesktopAction::Start {
                    request,
                    plan: Err(r),
                } => said(
                    format!(
                        "start {}: will be refused: {}",
                        inert(&request.app),
                        inert(r.message())
                    ),
                    None,
                ),
                DesktopAction::Browse { plan: Ok(l), url } => {
                    said(format!("open {} in your browser", inert(url)), Some(l))
                }
                DesktopAction::Browse { url, plan: Err(r) } => said(
                    format!(
                        "open {}: will be refused: {}",
                        inert(url),
                        inert(r.message())
                    ),
                    None,
                ),
                DesktopAction::Close { id, plan: Ok(s) } => said(
                    format!(
                        "end {} (id {id}, pid {}), which this session started, with every \
                         process of its group",
                        inert(&s.launch.name),
                        s.pid
                    ),
                    None,
                ),
                DesktopAction::Close { id, plan: Err(r) } => said(
                    format!("end app {id}: will be refused: {}", inert(r.message())),
                    None,
                ),
            })
            .collect();
        let apps: Vec<&str> = grants.apps().collect();
        let pages: Vec<&str> = grants.browse().collect();
        let may_open = !apps.is_empty() || !pages.is_empty();
        if !self.declared && may_open {
            let mut may = Vec::new();
            if !apps.is_empty() {
                may.push(format!(
                    "start {} in your desktop session, unconfined",
                    inert(&apps.join(", "))
                ));
            }
            if !pages.is_empty() {
                may.push(format!(
                    "open pages of {} in your browser",
                    inert(&pages.join(", "))
                ));
            }
            out.push(said(
                format!(
                    "desktop actions unknown: `{}` does not declare what it starts; it may {}",
                    inert(tool),
                    may.join(" and ")
                ),
                None,
            ));
        }
        out
    }
}
