//! Approval of tool calls through the real binary: the prompt on a
//! pseudo-terminal (typeahead, Ctrl-C, previews, reasons), `--approval`
//! and the user config, and runs without a terminal.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use warden_mock_llm::{Gate, MockLlm, Reply, answer, calls};
use warden_tests::{Run, Sandbox, Terminal, run};

/// Long enough for a loaded machine; a prompt that waits for Enter after
/// Ctrl-C never ends at all.
const PATIENCE: Duration = Duration::from_secs(30);

fn warden(sb: &Sandbox, mock: &MockLlm) -> Command {
    let mut cmd = sb.warden();
    cmd.env("OPENAI_BASE_URL", mock.base_url())
        .env("WARDEN_RETRY_BASE_MS", "5");
    cmd
}

/// The content of each `tool` message the model was sent in request `i`.
fn tool_messages(mock: &MockLlm, i: usize) -> Vec<String> {
    warden_tests::tool_contents(&mock.requests()[i].body)
}

/// Every session transcript of the sandbox, concatenated.
fn transcripts(sb: &Sandbox) -> String {
    let mut text = String::new();
    for dir in std::fs::read_dir(sb.home.join("state/warden/sessions")).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            text.push_str(&std::fs::read_to_string(f.unwrap().path()).unwrap());
        }
    }
    text
}

fn write_call(path: &str, content: &str) -> String {
    json!({"path": path, "content": content}).to_string()
}

#[test]
fn keys_typed_while_the_model_thinks_do_not_answer_the_prompt() {
    let sb = Sandbox::new();
    let thought = Gate::new();
    let mock = MockLlm::start(vec![
        Reply::Gated(
            thought.clone(),
            Box::new(calls(&[("d", "delete", r#"{"path":"hello.txt"}"#)])),
        ),
        answer("Kept it."),
    ]);
    let mut t = Terminal::start(warden(&sb, &mock).args(["run", "tidy up"]));
    // The model is thinking (its answer is held back); the user types ahead.
    let start = Instant::now();
    while mock.requests().is_empty() {
        assert!(start.elapsed() < PATIENCE, "no request: {}", t.screen());
        std::thread::sleep(Duration::from_millis(10));
    }
    t.send("y\n");
    t.wait_for("y\r\n", 1, PATIENCE); // echoed: the terminal has the keys
    thought.open();
    t.wait_for("Allow?", 1, PATIENCE);
    let screen = t.screen();
    assert!(
        screen.find("y\r\n").unwrap() < screen.find("delete wants to").unwrap(),
        "the keys were typed before the prompt: {screen}"
    );
    // Had the typeahead answered, the file would be gone and the run over.
    assert!(sb.ws.join("hello.txt").exists(), "{screen}");
    t.send("n\n");
    let (code, screen) = t.finish(PATIENCE);
    assert_eq!(code, 0, "{screen}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert!(screen.contains("delete hello.txt (2 lines)"), "{screen}");
    assert!(
        tool_messages(&mock, 1)[0].contains("the user refused this `delete` call"),
        "{:?}",
        tool_messages(&mock, 1)
    );
}

#[test]
fn ctrl_c_at_the_prompt_refuses_at_once_and_cancels_the_turn() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[
            ("w", "write_file", &write_call("hello.txt", "bye\n")),
            ("x", "write_file", &write_call("other.txt", "x\n")),
        ]),
        answer("never asked for"),
    ]);
    let mut t = Terminal::start(warden(&sb, &mock).args(["run", "change hello.txt"]));
    t.wait_for("Allow?", 1, PATIENCE);
    let pressed = Instant::now();
    t.send("\x03");
    let (code, screen) = t.finish(PATIENCE);
    let took = pressed.elapsed();
    assert_eq!(code, 130, "{screen}");
    assert!(took < Duration::from_secs(10), "took {took:?}: {screen}");
    assert!(screen.contains("cancelled"), "{screen}");
    // One prompt only: the second call never ran nor asked.
    assert_eq!(screen.matches("Allow?").count(), 1, "{screen}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert!(!sb.ws.join("other.txt").exists());
    assert_eq!(mock.requests().len(), 1, "the turn went on");
    assert!(
        transcripts(&sb).contains("stopped the turn (Ctrl-C)"),
        "{}",
        transcripts(&sb)
    );
}

/// Calls that run side by side (reads, under `--approval always`) wait
/// for the prompt together: after Ctrl-C at the first, no other is asked.
#[test]
fn ctrl_c_at_one_prompt_of_a_batch_asks_about_no_other_call() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[
            ("a", "read_file", r#"{"path":"hello.txt"}"#),
            ("b", "read_file", r#"{"path":"docs/readme.md"}"#),
        ]),
        answer("never asked for"),
    ]);
    let mut t = Terminal::start(warden(&sb, &mock).args(["run", "--approval", "always", "read"]));
    t.wait_for("Allow?", 1, PATIENCE);
    t.send("\x03");
    let (code, screen) = t.finish(PATIENCE);
    assert_eq!(code, 130, "{screen}");
    assert_eq!(screen.matches("Allow?").count(), 1, "{screen}");
    assert_eq!(mock.requests().len(), 1, "the turn went on");
}

#[test]
fn previews_read_nothing_outside_the_grants_and_never_block() {
    let sb = Sandbox::new();
    std::os::unix::fs::symlink("../outside/secret.txt", sb.ws.join("link")).unwrap();
    let fifo = sb.ws.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success(),
        "mkfifo"
    );
    let secret = sb.outside.join("secret.txt").display().to_string();
    let paths = [
        "../outside/secret.txt",
        "/etc/passwd",
        "/dev/zero",
        "link",
        secret.as_str(),
        "fifo",
    ];
    let ids: Vec<String> = (0..paths.len()).map(|i| format!("c{i}")).collect();
    let args: Vec<String> = paths.iter().map(|p| write_call(p, "x\n")).collect();
    let list: Vec<(&str, &str, &str)> = ids
        .iter()
        .zip(&args)
        .map(|(id, a)| (id.as_str(), "write_file", a.as_str()))
        .collect();
    let mock = MockLlm::start(vec![calls(&list), answer("ok")]);
    let before = sb.outside_snapshot();
    let mut t = Terminal::start(warden(&sb, &mock).args(["run", "look"]));
    let start = Instant::now();
    for n in 1..=paths.len() {
        t.wait_for("Allow?", n, PATIENCE);
        t.send("n\n");
    }
    let (code, screen) = t.finish(PATIENCE);
    assert_eq!(code, 0, "{screen}");
    assert!(start.elapsed() < Duration::from_secs(20), "{screen}");
    assert!(!screen.contains("top secret"), "{screen}");
    assert!(!screen.contains("root:"), "{screen}");
    for p in &paths[..5] {
        assert!(
            screen.contains(&format!("write {p}: outside the grants, will be refused")),
            "{p}: {screen}"
        );
    }
    assert!(
        screen.contains("write fifo: not a regular file, the call will fail"),
        "{screen}"
    );
    assert_eq!(sb.outside_snapshot(), before);
}

#[test]
fn a_refusal_can_tell_the_model_why() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[("w", "write_file", &write_call("hello.txt", "bye\n"))]),
        answer("I will use a new file."),
    ]);
    let mut t = Terminal::start(warden(&sb, &mock).args(["run", "change hello.txt"]));
    t.wait_for("Allow?", 1, PATIENCE);
    t.send("n use a new file instead\n");
    let (code, screen) = t.finish(PATIENCE);
    assert_eq!(code, 0, "{screen}");
    assert!(
        screen.contains("- world") && screen.contains("+ bye"),
        "{screen}"
    );
    let told = &tool_messages(&mock, 1)[0];
    assert!(
        told.ends_with("refused this `write_file` call, saying: use a new file instead"),
        "{told}"
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
}

fn write_then_answer() -> MockLlm {
    MockLlm::start(vec![
        calls(&[("w", "write_file", &write_call("new.txt", "x"))]),
        answer("Done, I wrote new.txt."),
    ])
}

fn run_without_terminal(sb: &Sandbox, mock: &MockLlm, extra: &[&str]) -> Run {
    run(warden(sb, mock).arg("run").args(extra).arg("write new.txt"))
}

#[test]
fn without_a_terminal_refusals_are_announced_and_fail_the_run() {
    let sb = Sandbox::new();
    let mock = write_then_answer();
    let r = run_without_terminal(&sb, &mock, &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    let first = r.stderr.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("note: no terminal and no --yes: calls that need approval"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("warden: 1 call(s) needing approval were refused"),
        "{}",
        r.stderr
    );
    assert!(!sb.ws.join("new.txt").exists());
    // The model's claim is still shown, but the exit code tells the truth.
    assert!(r.stdout.contains("Done"), "{}", r.stdout);
}

#[test]
fn the_approval_flag_and_the_user_config_choose_when_to_ask() {
    // --approval never: runs without asking.
    let sb = Sandbox::new();
    let mock = write_then_answer();
    let r = run_without_terminal(&sb, &mock, &["--approval", "never"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read_to_string(sb.ws.join("new.txt")).unwrap(), "x");

    // The user config says never: the same.
    let sb = Sandbox::new();
    let config = sb.home.join("config/warden");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(config.join("config.toml"), "approval = \"never\"\n").unwrap();
    let mock = write_then_answer();
    let r = run_without_terminal(&sb, &mock, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(sb.ws.join("new.txt").exists());

    // A trusted workspace asks for more than the user config: it is asked.
    sb.policy("approval = \"always\"\n");
    sb.trust();
    std::fs::remove_file(sb.ws.join("new.txt")).unwrap();
    let mock = write_then_answer();
    let r = run_without_terminal(&sb, &mock, &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(!sb.ws.join("new.txt").exists());
    // ... and the flag still wins.
    let mock = write_then_answer();
    let r = run_without_terminal(&sb, &mock, &["--approval", "never"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(sb.ws.join("new.txt").exists());

    // A trusted workspace cannot ask less than the user config.
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.home.join("config/warden")).unwrap();
    std::fs::write(
        sb.home.join("config/warden/config.toml"),
        "approval = \"writes\"\n",
    )
    .unwrap();
    sb.policy("approval = \"never\"\n");
    sb.trust();
    let mock = write_then_answer();
    let r = run_without_terminal(&sb, &mock, &[]);
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(!sb.ws.join("new.txt").exists());

    // A bad value is a usage error naming the choices.
    let r = run_without_terminal(&sb, &mock, &["--approval", "sometimes"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("never, writes, always"), "{}", r.stderr);
    std::fs::write(
        sb.home.join("config/warden/config.toml"),
        "approval = \"sometimes\"\n",
    )
    .unwrap();
    let r = run_without_terminal(&sb, &mock, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("unknown approval `sometimes`"),
        "{}",
        r.stderr
    );
}

/// The refusal names each grant as written: inside the workspace relative
/// to it, outside it by its absolute path (never `rw:tmp/...`).
#[test]
fn a_refusal_names_grants_outside_the_workspace_by_their_absolute_path() {
    let sb = Sandbox::new();
    sb.policy(&format!(
        "[tools.write_file]\nwrite = [\".\", {:?}]\n",
        sb.outside.display().to_string()
    ));
    sb.trust();
    let mock = MockLlm::start(vec![
        calls(&[("w", "write_file", r#"{"path":"new.txt","content":"x"}"#)]),
        answer("refused"),
    ]);
    let r = run(warden(&sb, &mock).args(["run", "write"]));
    assert_eq!(r.code, 3, "{}", r.stderr);
    let refusal = &tool_messages(&mock, 1)[0];
    let granted = format!("(it is granted rw:. rw:{})", sb.outside.display());
    assert!(refusal.contains(&granted), "{granted} in {refusal}");
}
