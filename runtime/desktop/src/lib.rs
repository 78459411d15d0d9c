//! Desktop apps and the browser, in the user's desktop session.
//!
//! These programs cannot be confined as `exec` commands are: they need the
//! display, the session bus and the user's configuration, and on X11 any
//! client can read every other client's input. So what a tool may start
//! is narrow and said plainly: only the apps of its `apps` grant, with
//! files inside its directory grants, and pages of the hosts of its
//! `browse` grant; each start is a program line worked out here, once,
//! shown to the user and run exactly as shown. The apps a session started
//! are held by pidfd and process group (`session`): they keep running when
//! warden exits, and only they can be ended.
//!
//! - `entry`: desktop files and their `Exec` lines (field codes, quoting);
//! - `app`: a granted app found on this machine, and its program line;
//! - `browser`: `$BROWSER`, `xdg-open` or `open`, and its program line;
//! - `url`: the URLs a tool may open (http(s), granted hosts);
//! - `session_env`: whether there is a display, what an app's
//!   environment is;
//! - `session`: starting, listing and ending the session's apps.
//!
//! ```no_run
//! use warden_desktop::{App, AppDirs, Launch, session_env, start};
//!
//! let app = App::resolve("xeyes", &AppDirs::from_env());
//! let argv = app.line(&[], &[]).unwrap();
//! let launch = Launch { app: app.granted.clone(), name: app.shown_name().into(), argv };
//! println!("starting {}", launch.line());
//! match start(&launch, &session_env(), std::path::Path::new("/")).unwrap() {
//!     Some(started) => println!("id {}", started.id),
//!     None => println!("it ended at once"),
//! }
//! ```

mod app;
mod browser;
mod entry;
mod launch;
#[cfg(target_os = "linux")]
mod session;
mod session_env;
#[cfg(not(target_os = "linux"))]
mod unsupported;
mod url;

pub use app::{App, AppDirs, Start};
pub use browser::Browser;
#[cfg(target_os = "linux")]
pub use launch::{Ended, Launch, Started};
#[cfg(target_os = "linux")]
pub use session::{close, running, start};
pub use session_env::{NO_DISPLAY, display, session_env};
#[cfg(not(target_os = "linux"))]
pub use unsupported::{close, running, start};
pub use url::checked_url;
