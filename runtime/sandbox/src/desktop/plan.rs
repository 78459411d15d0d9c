//! A tool's desktop grants, worked out once when it is bound, and the one
//! place a request (an app with files and URLs, a page, an id) becomes
//! the program line that runs, or the reason it will not: for the approval
//! preview before a call and for the call itself.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use warden_desktop::{App, AppDirs, Browser, Launch, Started};
use warden_policy::{Grants, NetworkAllow};

use crate::granted::{GrantedDirs, Peek};

/// Why a request will not run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not granted (an app, a file outside the directory grants, a host),
    /// or not an app of this session.
    Denied(String),
    /// There is no graphical session.
    NoDisplay(String),
    /// It cannot run (not installed, a missing file, ...).
    Failed(String),
}

impl Refusal {
    /// The message.
    pub fn message(&self) -> &str {
        match self {
            Refusal::Denied(m) | Refusal::NoDisplay(m) | Refusal::Failed(m) => m,
        }
    }
}

/// The apps granted to the tools of one host: what `list_apps` lists.
#[derive(Debug, Default)]
pub(crate) struct GrantedApps(Mutex<Vec<App>>);

impl GrantedApps {
    fn add(&self, apps: &[App]) {
        let mut all = self.0.lock().unwrap_or_else(|e| e.into_inner());
        for app in apps {
            if !all.iter().any(|a| a.granted == app.granted) {
                all.push(app.clone());
            }
        }
    }

    pub(crate) fn all(&self) -> Vec<App> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// What a tool may do in the desktop session.
pub(crate) struct DesktopPlan {
    /// Its `apps` grant, each found on this machine.
    pub(crate) apps: Vec<App>,
    /// Its `browse` grant.
    browse: NetworkAllow,
    browse_hosts: Vec<String>,
    /// How pages are opened, or why they cannot be (only looked for when
    /// the tool may open some).
    browser: Result<Browser, String>,
    /// The display, or why there is none.
    pub(crate) display: Result<String, String>,
    /// The environment an app gets.
    pub(crate) env: Vec<(String, String)>,
    /// Where an app starts: the user's home, as from a desktop launcher.
    pub(crate) cwd: PathBuf,
    /// The tool's directories, through which file arguments are checked.
    dirs: GrantedDirs,
    /// Every app granted in this host, for the listing.
    pub(crate) granted: Arc<GrantedApps>,
}

impl DesktopPlan {
    /// The plan of a tool with `grants`, whose directories are `dirs`.
    pub(crate) fn new(grants: &Grants, dirs: &GrantedDirs, granted: Arc<GrantedApps>) -> Self {
        let app_dirs = AppDirs::from_env();
        let apps: Vec<App> = grants.apps().map(|a| App::resolve(a, &app_dirs)).collect();
        granted.add(&apps);
        let browse_hosts: Vec<String> = grants.browse().map(str::to_string).collect();
        let browser = if browse_hosts.is_empty() {
            Err("this tool may open no page: no `browse` grant".into())
        } else {
            Browser::find(std::env::var("BROWSER").ok().as_deref())
        };
        DesktopPlan {
            apps,
            browse: NetworkAllow::new(grants.browse()),
            browse_hosts,
            browser,
            display: warden_desktop::display(),
            env: warden_desktop::session_env(),
            cwd: std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|h| h.is_absolute())
                .unwrap_or_else(|| PathBuf::from("/")),
            dirs: dirs.clone(),
            granted,
        }
    }

    fn display(&self) -> Result<(), Refusal> {
        self.display
            .as_ref()
            .map(drop)
            .map_err(|m| Refusal::NoDisplay(m.clone()))
    }

    /// The program line that starts `app` with `files` and `urls`.
    pub(crate) fn open_app(
        &self,
        app: &str,
        files: &[String],
        urls: &[String],
    ) -> Result<Launch, Refusal> {
        self.display()?;
        let Some(found) = self.apps.iter().find(|a| a.granted == app) else {
            let granted: Vec<&str> = self.apps.iter().map(|a| a.granted.as_str()).collect();
            return Err(Refusal::Denied(if granted.is_empty() {
                format!(
                    "`{app}` is not granted: this tool may start no app (the user grants apps \
                     with `apps = [...]` in its section of warden.toml)"
                )
            } else {
                format!(
                    "`{app}` is not granted to this tool; it may start only: {}",
                    granted.join(", ")
                )
            }));
        };
        let paths = files
            .iter()
            .map(|f| self.file(f))
            .collect::<Result<Vec<String>, Refusal>>()?;
        let urls = urls
            .iter()
            .map(|u| self.url(u))
            .collect::<Result<Vec<String>, Refusal>>()?;
        let argv = found.line(&paths, &urls).map_err(Refusal::Failed)?;
        Ok(Launch {
            app: found.granted.clone(),
            name: found.shown_name().to_string(),
            argv,
        })
    }

    /// The program line that opens `url` in the browser.
    pub(crate) fn browse(&self, url: &str) -> Result<Launch, Refusal> {
        self.display()?;
        let url = self.url(url)?;
        let browser = self
            .browser
            .as_ref()
            .map_err(|m| Refusal::Failed(m.clone()))?;
        Ok(Launch {
            app: "browser".into(),
            name: "the browser".into(),
            argv: browser.line(&url),
        })
    }

    /// The app of this session `id` names.
    pub(crate) fn close(&self, id: u32) -> Result<Started, Refusal> {
        warden_desktop::running()
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| {
                Refusal::Denied(format!(
                    "no app with id {id} was started in this session and still runs: only those \
                     can be closed (list_apps shows them)"
                ))
            })
    }

    fn url(&self, given: &str) -> Result<String, Refusal> {
        let hosts: Vec<&str> = self.browse_hosts.iter().map(String::as_str).collect();
        warden_desktop::checked_url(given, &self.browse, &hosts).map_err(Refusal::Denied)
    }

    /// A file argument as the app is given it: resolved by the one
    /// resolver against the tool's directories, looked at through their
    /// handles (no symlink out), and named by its absolute path.
    fn file(&self, given: &str) -> Result<String, Refusal> {
        let names: Vec<&str> = self.dirs.mounts().map(|m| m.guest.as_str()).collect();
        let r = warden_paths::resolve(given, &names).map_err(|why| {
            let mut granted: Vec<String> = Vec::new();
            for m in self.dirs.mounts() {
                if !granted.contains(&m.guest) {
                    granted.push(m.guest.clone());
                }
            }
            Refusal::Denied(format!(
                "{given} is outside the directories this tool may access ({why}; granted: {}); \
                 use a path inside them",
                if granted.is_empty() {
                    "none".to_string()
                } else {
                    granted.join(", ")
                }
            ))
        })?;
        match self.dirs.peek_at(r.mount, &r.rel, 0) {
            Peek::Outside => Err(Refusal::Denied(format!(
                "{given} leads out of the directories this tool may access (through a symlink)"
            ))),
            Peek::Missing => Err(Refusal::Failed(format!("{given}: no such file"))),
            Peek::Blocked => Err(Refusal::Failed(format!(
                "{given}: a part of the path is a file, not a directory"
            ))),
            Peek::Special => Err(Refusal::Failed(format!(
                "{given} is a pipe, socket or device, not a file an app can open"
            ))),
            Peek::Unreadable => Err(Refusal::Failed(format!("{given} cannot be read"))),
            Peek::Text(_) | Peek::Dir | Peek::TooLarge(_) | Peek::Binary(_) => {
                let host = &self.dirs.mount(r.mount).host;
                let path = if r.rel == "." {
                    host.clone()
                } else {
                    host.join(&r.rel)
                };
                Ok(path.to_string_lossy().into_owned())
            }
        }
    }
}
