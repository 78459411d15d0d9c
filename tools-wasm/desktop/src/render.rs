//! The host's answers in words, for the model.

use crate::bindings::warden::tool::desktop::{App, Ended, Started};

/// `list_apps`: the display, the granted apps, the session's running ones.
pub fn listing(display: &Result<String, String>, apps: &[App], running: &[Started]) -> String {
    let mut out = match display {
        Ok(d) => format!("Apps open on the {d}.\n"),
        Err(why) => format!("No app can be opened: {why}.\n"),
    };
    if apps.is_empty() {
        out.push_str(
            "No app is granted: the user can allow some with `apps = [...]` under \
             [tools.open_app] in warden.toml.\n",
        );
    } else {
        out.push_str("Apps you may open with open_app:\n");
        for a in apps {
            let name = if a.name == a.granted {
                String::new()
            } else {
                format!(" ({})", a.name)
            };
            match &a.program {
                Ok(program) => out.push_str(&format!("- {}{name}: {program}\n", a.granted)),
                Err(why) => out.push_str(&format!("- {}{name}: cannot start: {why}\n", a.granted)),
            }
        }
    }
    if running.is_empty() {
        out.push_str("No app this session started is running.\n");
    } else {
        out.push_str("Started by this session and still running (close_app takes the id):\n");
        for s in running {
            out.push_str(&format!(
                "- id {}: {} ({}), pid {}, for {}: {}\n",
                s.id,
                s.name,
                s.app,
                s.pid,
                duration(s.seconds),
                s.line
            ));
        }
    }
    out
}

/// `open_app`'s answer.
pub fn opened(app: &str, started: Option<&Started>) -> String {
    match started {
        Some(s) => format!(
            "Started {} (id {}, pid {}) in the user's desktop session: {}\nIt keeps running \
             after this session; close_app with id {} ends it.",
            s.name, s.id, s.pid, s.line, s.id
        ),
        None => format!(
            "{app} ended at once without an error: it most likely handed the request to a copy \
             of itself that was already running."
        ),
    }
}

/// `browse`'s answer.
pub fn browsed(url: &str, started: Option<&Started>) -> String {
    match started {
        Some(s) => format!(
            "Opened {url} in the user's browser (started: {}, id {}).",
            s.line, s.id
        ),
        None => format!("Opened {url} in the user's browser."),
    }
}

/// `close_app`'s answer.
pub fn closed(app: &Started, ended: Ended) -> String {
    let what = format!("{} (id {}, pid {})", app.name, app.id, app.pid);
    match ended {
        Ended::Already => format!("{what} had already ended."),
        Ended::Terminated => format!("Closed {what}: it ended when asked (SIGTERM)."),
        Ended::Killed => format!(
            "Closed {what}: it did not end within 3 s when asked, so it was killed (SIGKILL); \
             unsaved work in it is lost."
        ),
        Ended::Remains => format!(
            "Asked {what} to end and then killed it, but some of its processes are still \
             there; the user may have to end them."
        ),
    }
}

fn duration(seconds: u64) -> String {
    match seconds {
        s if s < 120 => format!("{s} s"),
        s if s < 7200 => format!("{} min", s / 60),
        s => format!("{} h", s / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn started() -> Started {
        Started {
            id: 2,
            app: "xeyes".into(),
            name: "Eyes".into(),
            line: "/usr/bin/xeyes -geometry 200x200".into(),
            pid: 4242,
            seconds: 75,
        }
    }

    #[test]
    fn the_listing_says_what_may_open_what_cannot_and_what_runs() {
        let apps = [
            App {
                granted: "xeyes".into(),
                name: "Eyes".into(),
                program: Ok("/usr/bin/xeyes".into()),
                mine: false,
            },
            App {
                granted: "gimp".into(),
                name: "gimp".into(),
                program: Err("not installed: no program `gimp` on PATH".into()),
                mine: false,
            },
        ];
        assert_eq!(
            listing(&Ok("X11 display :99".into()), &apps, &[started()]),
            "Apps open on the X11 display :99.\n\
             Apps you may open with open_app:\n\
             - xeyes (Eyes): /usr/bin/xeyes\n\
             - gimp: cannot start: not installed: no program `gimp` on PATH\n\
             Started by this session and still running (close_app takes the id):\n\
             - id 2: Eyes (xeyes), pid 4242, for 75 s: /usr/bin/xeyes -geometry 200x200\n"
        );
        assert_eq!(
            listing(&Err("there is no graphical session here".into()), &[], &[]),
            "No app can be opened: there is no graphical session here.\n\
             No app is granted: the user can allow some with `apps = [...]` under \
             [tools.open_app] in warden.toml.\n\
             No app this session started is running.\n"
        );
    }

    #[test]
    fn answers_name_the_id_and_how_it_ended() {
        assert!(opened("xeyes", Some(&started())).contains("close_app with id 2 ends it"));
        assert!(opened("xeyes", None).starts_with("xeyes ended at once without an error"));
        assert_eq!(
            closed(&started(), Ended::Terminated),
            "Closed Eyes (id 2, pid 4242): it ended when asked (SIGTERM)."
        );
        assert_eq!(
            browsed("https://docs.rs/", None),
            "Opened https://docs.rs/ in the user's browser."
        );
    }
}
