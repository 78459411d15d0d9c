//! The workspace files warden reads for itself (`warden.toml`,
//! `.warden/tools/*`, `AGENTS.md`): never through a link, regular files
//! only, never blocking, capped in size; each refusal says what and why.

use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use warden_tests::{Run, Sandbox, guests};

use super::fs_tools_tree::host_mkfifo;

/// Longest a refused command may take: a hang (a named pipe opened for
/// reading waits for a writer; `/dev/zero` never ends) fails the test
/// instead of stalling the suite.
const PROMPTLY: Duration = Duration::from_secs(20);

/// Runs `warden ARGS` in the sandbox, killed and failed if it does not end
/// within [`PROMPTLY`].
fn promptly(sb: &Sandbox, args: &[&str]) -> Run {
    let child = sb
        .warden()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start warden");
    let pid = child.id();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let Ok(out) = rx.recv_timeout(PROMPTLY) else {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        panic!(
            "`warden {}` did not end within {PROMPTLY:?}",
            args.join(" ")
        );
    };
    let out = out.expect("wait for warden");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Every command that opens the workspace refuses `warden.toml` with
/// `expected`, at once, with the configuration exit code.
fn every_command_refuses(sb: &Sandbox, expected: &str) {
    for args in [
        &["policy"][..],
        &["tools", "list"],
        &["trust"],
        &["trust", "--show"],
        &["run", "say hi"],
    ] {
        let r = promptly(sb, args);
        assert_eq!(
            (r.code, r.stderr.as_str()),
            (2, format!("error: {expected}\n").as_str()),
            "warden {}",
            args.join(" ")
        );
    }
}

#[test]
fn a_named_pipe_as_the_policy_is_refused_at_once() {
    let sb = Sandbox::new();
    host_mkfifo(&sb, "warden.toml");
    every_command_refuses(
        &sb,
        &format!(
            "{}/warden.toml is a named pipe (FIFO), not a regular file; warden reads its own \
             files only from regular files: replace it with a regular file",
            sb.ws.display()
        ),
    );
}

#[test]
fn a_policy_linked_to_a_device_is_refused_at_once() {
    let sb = Sandbox::new();
    std::os::unix::fs::symlink("/dev/zero", sb.ws.join("warden.toml")).unwrap();
    let r = promptly(&sb, &["policy"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is a symbolic link"), "{}", r.stderr);
}

#[test]
fn a_linked_policy_is_refused_and_the_user_told_to_replace_the_link() {
    let sb = Sandbox::new();
    // A policy that would parse, outside the workspace.
    std::fs::write(sb.outside.join("policy.toml"), "[tools.read_file]\n").unwrap();
    std::os::unix::fs::symlink(sb.outside.join("policy.toml"), sb.ws.join("warden.toml")).unwrap();
    every_command_refuses(
        &sb,
        &format!(
            "{}/warden.toml is a symbolic link; warden does not follow links for its own files: \
             replace the link with the file it points to",
            sb.ws.display()
        ),
    );
}

#[test]
fn a_policy_over_one_mebibyte_is_refused_naming_the_cap() {
    let sb = Sandbox::new();
    // Valid TOML all the way: only its size is wrong.
    let mut text = "# padding\n".repeat((2 << 20) / 10);
    text.push_str("[tools.read_file]\n");
    sb.policy(&text);
    let r = promptly(&sb, &["policy"]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            format!(
                "error: {}/warden.toml is 2 MiB, more than the 1 MiB warden reads of this file: \
                 make it smaller\n",
                sb.ws.display()
            )
            .as_str()
        )
    );
    // Just under the cap is fine.
    sb.policy(&text[text.len() - (1 << 20)..]);
    let r = promptly(&sb, &["policy"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn a_link_or_a_pipe_among_the_drop_ins_is_skipped_with_the_reason() {
    let sb = Sandbox::new();
    let tools = sb.ws.join(".warden/tools");
    std::fs::create_dir_all(&tools).unwrap();
    // A working component, reached only through a link.
    std::fs::copy(guests::UPPERCASE, sb.outside.join("uppercase.wasm")).unwrap();
    std::os::unix::fs::symlink(sb.outside.join("uppercase.wasm"), tools.join("upper.wasm"))
        .unwrap();
    host_mkfifo(&sb, ".warden/tools/pipe.wasm");
    std::os::unix::fs::symlink("/dev/zero", tools.join("zero.wasm")).unwrap();
    sb.policy("[tools.uppercase]\n");
    let r = promptly(&sb, &["trust"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = promptly(&sb, &["tools", "list"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stdout.contains("uppercase"),
        "a linked component was loaded:\n{}",
        r.stdout
    );
    let dir = tools.display();
    assert!(
        r.stderr.contains(&format!(
            "warning: skipped {dir}/pipe.wasm: the file is a named pipe (FIFO), not a regular \
             file; warden reads its own files only from regular files: replace it with a \
             regular file\n"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "warning: skipped {dir}/upper.wasm: the file is a symbolic link; warden does not \
             follow links for its own files: replace the link with the file it points to\n"
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "warning: skipped {dir}/zero.wasm: the file is a symbolic link; "
        )),
        "{}",
        r.stderr
    );
}

#[test]
fn a_linked_tools_folder_is_refused() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.outside.join("tools")).unwrap();
    std::fs::copy(guests::UPPERCASE, sb.outside.join("tools/uppercase.wasm")).unwrap();
    std::fs::create_dir(sb.ws.join(".warden")).unwrap();
    std::os::unix::fs::symlink(sb.outside.join("tools"), sb.ws.join(".warden/tools")).unwrap();
    let r = promptly(&sb, &["tools", "list"]);
    assert_eq!(
        (r.code, r.stderr.as_str()),
        (
            2,
            format!(
                "error: {}/.warden/tools is a symbolic link; warden does not follow links for \
                 its own files: replace the link with the folder it points to\n",
                sb.ws.display()
            )
            .as_str()
        )
    );
}

#[test]
fn a_named_pipe_as_agents_md_is_a_notice_not_a_hang() {
    let sb = Sandbox::new();
    host_mkfifo(&sb, "AGENTS.md");
    let r = promptly(&sb, &["policy"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("AGENTS.md is not used: ")
            && r.stderr
                .contains("AGENTS.md is a named pipe (FIFO), not a regular file"),
        "{}",
        r.stderr
    );
}
