//! A program line to start in the desktop session, and an app started.

use std::time::Instant;

/// A program line to start in the desktop session, as shown to the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The app as granted (`xeyes`), or `browser`.
    pub app: String,
    /// Its name, to show (`Eyes`).
    pub name: String,
    /// The program (absolute path) and its arguments.
    pub argv: Vec<String>,
}

impl Launch {
    /// The line as a shell would read it, each argument quoted where it
    /// needs to be: what the user is shown, exactly what runs.
    pub fn line(&self) -> String {
        self.argv
            .iter()
            .map(|a| quoted(a))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// `a`, in single quotes unless it is made of safe characters only.
fn quoted(a: &str) -> String {
    let safe = !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if safe {
        a.to_string()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// An app this session started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Started {
    /// Its number in this session.
    pub id: u32,
    /// As launched.
    pub launch: Launch,
    /// Its first process, and its process group.
    pub pid: u32,
    /// When it started.
    pub since: Instant,
}

/// How an app ended when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It had ended already.
    Already,
    /// It ended on SIGTERM.
    Terminated,
    /// It did not end within the grace time and was killed (SIGKILL).
    Killed,
    /// Some of its processes were still there after SIGKILL.
    Remains,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_shown_as_a_shell_reads_it() {
        let l = Launch {
            app: "x".into(),
            name: "x".into(),
            argv: vec![
                "/usr/bin/x".into(),
                "a b".into(),
                "it's".into(),
                "--k=v".into(),
            ],
        };
        assert_eq!(l.line(), r#"/usr/bin/x 'a b' 'it'\''s' --k=v"#);
    }
}
