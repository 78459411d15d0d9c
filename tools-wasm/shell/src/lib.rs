//! The built-in `shell` tool: one command line through a shell of the
//! tool's `exec` grant (`sh -c LINE`), run by the host as a confined
//! process (`warden:tool/process`). It is off unless `warden.toml` enables
//! it and grants it a shell; what the command can reach is what the tool's
//! grants give, enforced by the kernel, not by reading the line.

wit_bindgen::generate!({ path: "../../wit", world: "warden:tool/process-component" });

use exports::warden::tool::tool::{Error, Guest, Spec};
use warden::tool::process::{self, Command, ExecError, Finished};

const SCHEMA: &str = r#"{
  "type": "object",
  "properties": {
    "command": {
      "type": "string",
      "minLength": 1,
      "description": "The command line, run by `sh -c` (pipes, `&&`, redirections work)."
    },
    "workdir": {
      "type": "string",
      "description": "Directory to run in, relative to the workspace or absolute, inside the tool's directory grants. Default: the workspace."
    }
  },
  "required": ["command"],
  "additionalProperties": false
}"#;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    command: String,
    workdir: Option<String>,
}

/// Shells the tool can use, in order of preference, by name.
const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh"];

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "shell".into(),
            description: "Run a command line (build, test, git, scripts) with `sh -c` in the \
                          workspace and return its exit code, stdout and stderr. Only the \
                          directories and programs granted to this tool are reachable; there \
                          is no network unless granted, no stdin, and the call's time limit \
                          ends the command and everything it started."
                .into(),
            parameters: SCHEMA.into(),
            aliases: vec!["bash".into(), "run_command".into(), "exec".into()],
            mutates: true,
            // Not declared: a command may change anything its grants reach.
            effects: None,
        }]
    }

    fn call(name: String, args: String) -> Result<String, Error> {
        if name != "shell" {
            return Err(Error::NotFound(format!(
                "unknown tool {name:?}; this component offers: shell"
            )));
        }
        let args: Args = serde_json::from_str(&args)
            .map_err(|e| Error::InvalidArgs(format!("bad arguments for shell: {e}")))?;
        let granted = process::granted();
        let Some(shell) = pick_shell(&granted) else {
            return Err(Error::Denied(if granted.is_empty() {
                "shell has no shell to run: it may run no program (grant one in warden.toml: \
                 [tools.shell] exec = [\"sh\"])"
                    .to_string()
            } else {
                format!(
                    "shell has no shell to run: it may run only {}; grant `sh` in its exec list",
                    granted.join(", ")
                )
            }));
        };
        let cmd = Command {
            program: shell,
            args: vec!["-c".into(), args.command.clone()],
            cwd: args.workdir,
        };
        match process::run(&cmd) {
            Ok(done) => Ok(render(&args.command, &done)),
            Err(ExecError::Denied(m)) => Err(Error::Denied(m)),
            Err(ExecError::Unavailable(m)) => Err(Error::Failed(m)),
            Err(ExecError::Failed(m)) => Err(Error::InvalidArgs(m)),
        }
    }
}

/// The first granted shell: by name, or an absolute path ending in one.
fn pick_shell(granted: &[String]) -> Option<String> {
    SHELLS.iter().find_map(|s| {
        granted
            .iter()
            .find(|g| *g == s || g.rsplit('/').next() == Some(s))
            .cloned()
    })
}

/// What the model reads: the line, how it ended, then each stream that
/// has something, labelled.
fn render(line: &str, done: &Finished) -> String {
    let mut out = format!("$ {line}\n");
    match (done.timed_out, done.exit_code, done.signal) {
        (true, _, _) => out.push_str(
            "timed out: the call's time limit ended the command and everything it started\n",
        ),
        (false, Some(code), _) => out.push_str(&format!("exit code: {code}\n")),
        (false, None, Some(sig)) => out.push_str(&format!("killed by signal {sig}\n")),
        (false, None, None) => out.push_str("ended\n"),
    }
    for (label, text) in [("stdout", &done.stdout), ("stderr", &done.stderr)] {
        if text.is_empty() {
            out.push_str(&format!("{label}: (empty)\n"));
        } else {
            out.push_str(&format!("--- {label} ---\n{text}"));
            if !text.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    if done.truncated {
        out.push_str("(the middle of long output was elided)\n");
    }
    out
}

export!(Component);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_a_granted_shell_by_name_or_path() {
        assert_eq!(
            pick_shell(&["cargo".into(), "sh".into()]),
            Some("sh".into())
        );
        assert_eq!(
            pick_shell(&["/usr/bin/bash".into()]),
            Some("/usr/bin/bash".into())
        );
        assert_eq!(pick_shell(&["cargo".into()]), None);
    }

    #[test]
    fn renders_exit_code_and_both_streams() {
        let done = Finished {
            exit_code: Some(101),
            signal: None,
            stdout: "running 1 test\n".into(),
            stderr: String::new(),
            timed_out: false,
            truncated: false,
        };
        assert_eq!(
            render("cargo test", &done),
            "$ cargo test\nexit code: 101\n--- stdout ---\nrunning 1 test\nstderr: (empty)\n"
        );
    }
}
