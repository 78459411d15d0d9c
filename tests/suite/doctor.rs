//! `warden doctor` through the real binary: the confinement on this
//! machine and without user namespaces, the model endpoint (the mock on
//! loopback) with and without `--model-check`, warden's folders, the
//! workspace's trust; exit 0 only when every check passes.

use std::process::Command;

use serde_json::json;
use warden_mock_llm::{MockLlm, Reply};
use warden_tests::{Run, Sandbox, run, warden_bin};

fn doctor(sb: &Sandbox, env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut cmd = sb.warden();
    cmd.envs(env.iter().copied()).arg("doctor").args(args);
    run(&mut cmd)
}

/// The lines of one group of the report (indented under its name).
fn group<'a>(out: &'a str, name: &str) -> Vec<&'a str> {
    out.lines()
        .skip_while(|l| *l != name)
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect()
}

/// A whole chat completion, as a server answers a non-streamed request.
fn completion() -> Reply {
    Reply::Json(json!({
        "id": "c", "object": "chat.completion", "model": "mock",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "ok"}}],
    }))
}

#[test]
fn on_this_machine_every_check_passes_with_a_model_that_answers() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![]);
    let url = mock.base_url();
    let r = doctor(
        &sb,
        &[("OPENAI_BASE_URL", &url), ("WARDEN_MODEL", "mock")],
        &[],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let commands = group(&r.stdout, "commands");
    assert!(
        commands[0].starts_with("  ✓ commands are confined: Landlock ABI "),
        "{}",
        r.stdout
    );
    // Each guarantee of the mechanism, every one holding with namespaces.
    let m = warden_tests::confinement();
    assert_eq!(
        commands[1..=m.guarantees.len()],
        m.lines()
            .iter()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>(),
        "{}",
        r.stdout
    );
    // The kernel's parts, one line each: this machine confines commands,
    // so Landlock and user namespaces are there.
    let kernel = &commands[m.guarantees.len() + 1..];
    assert!(kernel[0].starts_with("  ✓ Landlock ABI "), "{}", r.stdout);
    assert!(
        kernel[1].starts_with("  ✓ user namespaces can be made (user.max_user_namespaces = "),
        "{}",
        r.stdout
    );
    assert_eq!(
        group(&r.stdout, "model"),
        vec![
            "  · no API key ($OPENAI_API_KEY is not set; local servers need none)",
            &format!("  ✓ {url} answers: 1 model listed"),
            "  ✓ model `mock` is served",
            "  · native tool calls and structured output not asked (`warden doctor \
             --model-check` sends two small requests)",
        ]
    );
    // Nothing was sent to the model without --model-check.
    assert!(mock.requests().is_empty());
    let state = sb.home.join("state/warden");
    let folders = group(&r.stdout, "folders");
    assert!(
        folders[0].starts_with(&format!("  ✓ state  {}: mode 0700, ", state.display())),
        "{}",
        r.stdout
    );
    assert!(
        folders.contains(
            &format!(
                "  ✓ tools  {}: not made yet (warden makes it when first needed)",
                sb.home.join("data/warden/tools").display()
            )
            .as_str()
        ),
        "{}",
        r.stdout
    );
    assert_eq!(
        group(&r.stdout, "workspace"),
        vec![format!(
            "  ✓ {}: no warden.toml or .warden/tools: the built-in tools with their defaults \
             (`warden init` writes a warden.toml)",
            sb.ws.display()
        )]
    );
    assert!(r.stdout.ends_with("every check passed\n"), "{}", r.stdout);
}

#[test]
fn without_user_namespaces_it_reports_what_confinement_holds() {
    // A user namespace of the test's own where no more can be made;
    // nothing changes on the host.
    let probe = Command::new("unshare")
        .args([
            "-Urm",
            "sh",
            "-c",
            "echo 0 > /proc/sys/user/max_user_namespaces",
        ])
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("skipped: no user namespace can be made here to take them away in");
        return;
    }
    let sb = Sandbox::new();
    let mut cmd = sb.warden_at(std::path::Path::new("unshare"));
    cmd.args([
        "-Urm",
        "sh",
        "-c",
        "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$0\" doctor",
    ])
    .arg(warden_bin());
    let r = run(&mut cmd);
    let commands = group(&r.stdout, "commands");
    // Commands still run, under Landlock and seccomp alone, and the lines
    // say why and what that gives less.
    assert!(
        commands[0].starts_with("  ✓ commands are confined: Landlock ABI ")
            && commands[0].contains(" + seccomp alone, no namespaces")
            && commands[0]
                .ends_with(" (user namespaces are disabled: user.max_user_namespaces = 0)"),
        "{}",
        r.stdout
    );
    let failed: Vec<&str> = commands
        .iter()
        .filter(|l| l.starts_with("  ✗ "))
        .map(|l| l.split(':').next().unwrap())
        .collect();
    assert_eq!(
        failed,
        [
            "  ✗ metadata",
            "  ✗ /proc",
            "  ✗ user namespaces are disabled"
        ],
        "{}",
        r.stdout
    );
    assert!(
        commands.contains(
            &"  ✗ user namespaces are disabled: user.max_user_namespaces = 0 → commands run \
              under Landlock and seccomp alone, with the guarantees above; for namespaces, \
              allow them (`sysctl -w user.max_user_namespaces=15000`, or your system's \
              setting)"
        ),
        "{}",
        r.stdout
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
}

#[test]
fn model_check_sends_one_small_request_per_feature() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![completion(), completion()]);
    let url = mock.base_url();
    let r = doctor(
        &sb,
        &[("OPENAI_BASE_URL", &url), ("WARDEN_MODEL", "mock")],
        &["--model-check"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let model = group(&r.stdout, "model");
    assert_eq!(
        model[3..],
        [
            "  ✓ native tool calls (`tools`): accepted",
            "  ✓ structured output (`response_format` json_schema): accepted",
        ]
    );
    let sent = mock.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].body["tools"][0]["function"]["name"], "ping");
    assert!(sent[0].body.get("response_format").is_none());
    assert_eq!(sent[1].body["response_format"]["type"], "json_schema");
    assert!(sent[1].body.get("tools").is_none());
    for s in &sent {
        assert_eq!(s.body["stream"], false);
        assert_eq!(s.body["model"], "mock");
        warden_mock_llm::check_chat_body(&s.body).unwrap();
    }
}

#[test]
fn a_refused_feature_fails_with_the_servers_reason_and_the_fix() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        Reply::Status {
            status: 400,
            body: json!({"error": {"message": "tools param requires --jinja flag"}}).to_string(),
            retry_after: None,
        },
        completion(),
    ]);
    let url = mock.base_url();
    let r = doctor(
        &sb,
        &[("OPENAI_BASE_URL", &url), ("WARDEN_MODEL", "mock")],
        &["--model-check"],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    let model = group(&r.stdout, "model");
    assert_eq!(
        model[3],
        "  ✗ native tool calls (`tools`): refused (http 400): tools param requires --jinja \
         flag → warden falls back to tool calls written as text (`protocol = \"text\"` starts \
         there); llama.cpp needs `llama-server --jinja` for native calls"
    );
    assert!(r.stdout.ends_with("1 check failed\n"), "{}", r.stdout);
}

#[test]
fn no_endpoint_or_one_that_does_not_answer_fails_with_what_to_do() {
    let sb = Sandbox::new();
    let r = doctor(&sb, &[], &[]);
    assert_eq!(r.code, 1);
    assert_eq!(
        group(&r.stdout, "model"),
        vec![
            "  ✗ no model endpoint is configured → set OPENAI_BASE_URL (e.g. \
             http://127.0.0.1:8080/v1; and OPENAI_API_KEY for a hosted API), or `[model] \
             base_url` in your config.toml"
        ]
    );
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/v1");
    let r = doctor(&sb, &[("OPENAI_BASE_URL", &url)], &["--model-check"]);
    assert_eq!(r.code, 1);
    let model = group(&r.stdout, "model");
    assert_eq!(model.len(), 2, "{}", r.stdout);
    assert!(
        model[1].starts_with(&format!(
            "  ✗ listing the models failed: cannot connect to http://127.0.0.1:{port}/v1/models"
        )),
        "{}",
        r.stdout
    );
    assert!(
        model[1].ends_with("→ start the server, or point OPENAI_BASE_URL (--base-url) at it"),
        "{}",
        r.stdout
    );
}

#[test]
fn an_untrusted_policy_and_an_open_state_folder_fail() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![]);
    let url = mock.base_url();
    let env = [("OPENAI_BASE_URL", url.as_str()), ("WARDEN_MODEL", "mock")];
    sb.policy("[tools.read_file]\nread = [\"docs\"]\n");
    let r = doctor(&sb, &env, &[]);
    assert_eq!(r.code, 1);
    let ws = group(&r.stdout, "workspace");
    assert!(
        ws[0].starts_with(&format!(
            "  ✗ {}: this workspace is not trusted: ignoring warden.toml",
            sb.ws.display()
        )),
        "{}",
        r.stdout
    );
    assert!(
        ws[0].ends_with("→ review it with `warden trust`, which shows each change and accepts it"),
        "{}",
        r.stdout
    );
    sb.trust();
    let r = doctor(&sb, &env, &[]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        group(&r.stdout, "workspace"),
        vec![format!(
            "  ✓ {}: trusted, as its files are now",
            sb.ws.display()
        )]
    );
    // A state folder others may write is not used, and the report says so.
    use std::os::unix::fs::PermissionsExt;
    let state = sb.home.join("state/warden");
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o777)).unwrap();
    let r = doctor(&sb, &env, &[]);
    assert_eq!(r.code, 1);
    assert!(
        group(&r.stdout, "folders")[0].starts_with(&format!(
            "  ✗ state  {}: {} is writable by other users; run `chmod 700 {}`",
            state.display(),
            state.display(),
            state.display()
        )),
        "{}",
        r.stdout
    );
}
