//! `warden undo` through the real binary: what a turn changed put back
//! byte for byte, through the grants of the tools that changed it, and
//! only where it is still as the turn left it; the model told of it.

use std::path::PathBuf;
use std::process::Stdio;

use serde_json::Value;
use warden_mock_llm::{Gate, MockLlm, Reply, answer, calls};
use warden_tests::{Sandbox, run};

use super::sessions::*;

#[test]
fn undo_restores_the_files_the_last_turn_changed_byte_for_byte() {
    let sb = Sandbox::new();
    let bin: Vec<u8> = (0..=255u8).rev().collect();
    std::fs::write(sb.ws.join("data.bin"), &bin).unwrap();
    std::fs::create_dir_all(sb.ws.join("keep/inner")).unwrap();
    std::fs::write(sb.ws.join("keep/inner/x.txt"), "x\n").unwrap();
    let before = tree(&sb.ws);

    let mock = MockLlm::start(vec![
        calls(&[
            (
                "w",
                "write_file",
                r#"{"path":"hello.txt","content":"overwritten"}"#,
            ),
            ("d", "delete", r#"{"path":"data.bin"}"#),
            (
                "n",
                "write_file",
                r#"{"path":"new/deep/n.txt","content":"new"}"#,
            ),
            ("m", "move", r#"{"from":"docs/readme.md","to":"moved.md"}"#),
            ("k", "delete", r#"{"path":"keep","recursive":true}"#),
            (
                "e",
                "edit_file",
                r#"{"path":"moved.md","old_text":"docs","new_text":"DOCS"}"#,
            ),
        ]),
        answer("Rearranged."),
    ]);
    let r = warden_run(&sb, &mock, &["rearrange"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let outputs = tool_outputs(&bodies(&mock)[1]);
    for out in &outputs {
        assert!(!out.starts_with("error"), "{out}");
    }
    assert!(
        r.stderr.contains(
            "changed: data.bin, docs/readme.md, hello.txt, keep, moved.md, new/deep/n.txt"
        ),
        "{}",
        r.stderr
    );
    assert_ne!(tree(&sb.ws), before);

    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("restored as before the last turn"),
        "{}",
        r.stderr
    );
    assert_eq!(tree(&sb.ws), before);

    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("nothing to undo"), "{}", r.stderr);
    // Snapshots live in the state folder, not in the workspace.
    assert!(!sb.ws.join(".warden").exists());
}

/// Every file under the undo state folder (snapshots and manifests).
fn undo_files(sb: &Sandbox) -> Vec<PathBuf> {
    let Ok(dirs) = std::fs::read_dir(sb.home.join("state/warden/undo")) else {
        return Vec::new();
    };
    dirs.flat_map(|d| std::fs::read_dir(d.unwrap().path()).unwrap())
        .map(|e| e.unwrap().path())
        .collect()
}

#[test]
fn removing_a_session_removes_its_undo_snapshots_and_no_other() {
    let sb = Sandbox::new();
    let secret = "a secret line the user wants gone\n";
    std::fs::write(sb.ws.join("notes.txt"), secret).unwrap();
    let session = |mock: &MockLlm, task: &str| {
        let r = warden_run(&sb, mock, &["--json", task]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let last: Value = serde_json::from_str(r.stdout.lines().last().unwrap()).unwrap();
        last["session"].as_str().unwrap().to_string()
    };
    // The first session overwrites the secret: its snapshot holds a copy.
    let first = MockLlm::start(vec![
        calls(&[(
            "w",
            "write_file",
            r#"{"path":"notes.txt","content":"gone"}"#,
        )]),
        answer("Overwritten."),
    ]);
    let first = session(&first, "forget the notes");
    let second = MockLlm::start(vec![
        calls(&[(
            "w",
            "write_file",
            r#"{"path":"hello.txt","content":"changed"}"#,
        )]),
        answer("Changed."),
    ]);
    let second = session(&second, "change hello");
    let holds_secret = |files: &[PathBuf]| {
        files.iter().any(|f| {
            std::fs::read(f)
                .unwrap()
                .windows(secret.len())
                .any(|w| w == secret.as_bytes())
        })
    };
    assert!(
        holds_secret(&undo_files(&sb)),
        "the snapshot should hold the old notes"
    );

    let r = run(sb.warden().args(["sessions", "rm", &first]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("removed 1 session(s) and the undo snapshots of their 1 turn(s)"),
        "{}",
        r.stderr
    );
    assert!(
        !holds_secret(&undo_files(&sb)),
        "a copy of the notes is left"
    );
    // The other session's turn can still be undone; then nothing is left.
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!("of session {second}")),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("notes.txt")).unwrap(),
        "gone"
    );
    let r = run(sb.warden().arg("undo"));
    assert!(r.stderr.contains("nothing to undo"), "{}", r.stderr);
}

/// The `not restored: ` lines of an undo's stderr.
fn not_restored(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix("not restored: "))
        .collect()
}

#[test]
fn undo_leaves_what_changed_since_the_turn_and_removes_only_what_the_turn_made() {
    let sb = Sandbox::new();
    let mock = MockLlm::start(vec![
        calls(&[
            (
                "g",
                "write_file",
                r#"{"path":"gen/out.txt","content":"made"}"#,
            ),
            ("o", "write_file", r#"{"path":"other/x.txt","content":"x"}"#),
            (
                "n",
                "write_file",
                r#"{"path":"notes.txt","content":"turn notes"}"#,
            ),
            (
                "c",
                "write_file",
                r#"{"path":"clean.txt","content":"clean"}"#,
            ),
            (
                "e",
                "edit_file",
                r#"{"path":"hello.txt","old_text":"world","new_text":"WORLD"}"#,
            ),
        ]),
        answer("Done."),
    ]);
    let r = warden_run(&sb, &mock, &["generate"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The user works on after the turn.
    let ws = &sb.ws;
    std::fs::write(ws.join("gen/mine.txt"), "mine").unwrap();
    std::fs::write(ws.join("notes.txt"), "user notes").unwrap();
    std::fs::write(ws.join("hello.txt"), "user hello\n").unwrap();

    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 3, "{}", r.stderr);
    let problems = not_restored(&r.stderr);
    assert!(
        problems.contains(&"notes.txt: changed since the turn (left as it is)")
            && problems.contains(&"hello.txt: changed since the turn (left as it is)")
            && problems.len() == 2,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("kept gen: it holds files the turn did not make"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("gen/mine.txt")).unwrap(),
        "mine"
    );
    assert!(!ws.join("gen/out.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("notes.txt")).unwrap(),
        "user notes"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).unwrap(),
        "user hello\n"
    );
    assert!(!ws.join("clean.txt").exists() && !ws.join("other").exists());

    // What was not restored stays recorded: once the user's changes are
    // gone, the next undo puts it back.
    std::fs::write(ws.join("notes.txt"), "turn notes").unwrap();
    std::fs::write(ws.join("hello.txt"), "hello\nWORLD\n").unwrap();
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(": hello.txt, notes.txt\n"),
        "{}",
        r.stderr
    );
    assert!(!ws.join("notes.txt").exists());
    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    let r = run(sb.warden().arg("undo"));
    assert!(r.stderr.contains("nothing to undo"), "{}", r.stderr);
}

#[test]
fn undo_of_a_write_through_a_symlink_restores_the_file_it_leads_to() {
    let sb = Sandbox::new();
    let ws = &sb.ws;
    std::fs::write(ws.join("real.txt"), "real original").unwrap();
    std::os::unix::fs::symlink("real.txt", ws.join("link.txt")).unwrap();
    std::fs::create_dir(ws.join("sub")).unwrap();
    std::fs::write(ws.join("sub/f.txt"), "sub original").unwrap();
    std::os::unix::fs::symlink("sub", ws.join("dl")).unwrap();
    let before = tree(ws);
    let mock = MockLlm::start(vec![
        calls(&[
            (
                "l",
                "write_file",
                r#"{"path":"link.txt","content":"model text"}"#,
            ),
            (
                "d",
                "write_file",
                r#"{"path":"dl/f.txt","content":"model too"}"#,
            ),
        ]),
        answer("Written."),
    ]);
    let r = warden_run(&sb, &mock, &["write"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(ws.join("real.txt")).unwrap(),
        "model text"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("sub/f.txt")).unwrap(),
        "model too"
    );

    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains(": sub/f.txt, real.txt\n"), "{}", r.stderr);
    assert_eq!(tree(ws), before);
}

#[test]
fn a_failed_restore_keeps_the_file_and_the_record_for_another_undo() {
    let sb = Sandbox::new();
    let ws = &sb.ws;
    std::fs::write(ws.join("data.txt"), "data").unwrap();
    // Too large to snapshot: said once, not twice.
    std::fs::write(ws.join("big.bin"), vec![b'b'; 9 << 20]).unwrap();
    let mock = MockLlm::start(vec![
        calls(&[
            (
                "h",
                "write_file",
                r#"{"path":"hello.txt","content":"overwritten"}"#,
            ),
            (
                "d",
                "write_file",
                r#"{"path":"data.txt","content":"changed"}"#,
            ),
            ("b", "write_file", r#"{"path":"big.bin","content":"small"}"#),
        ]),
        answer("Written."),
    ]);
    let r = warden_run(&sb, &mock, &["write"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The snapshot of hello.txt (the turn's first) goes missing.
    let blob = undo_files(&sb)
        .into_iter()
        .find(|f| f.to_string_lossy().ends_with(".0.blob"))
        .unwrap();
    let kept = std::fs::read(&blob).unwrap();
    std::fs::remove_file(&blob).unwrap();

    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 3, "{}", r.stderr);
    let problems = not_restored(&r.stderr);
    assert_eq!(problems.len(), 2, "{}", r.stderr);
    assert!(
        problems
            .iter()
            .any(|p| p.starts_with("hello.txt: snapshot"))
            && problems
                .iter()
                .any(|p| p.starts_with("big.bin: not snapshotted")),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("hello.txt")).unwrap(),
        "overwritten"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("data.txt")).unwrap(),
        "data"
    );

    // The snapshot is back: the next undo restores what is left of the turn.
    std::fs::write(&blob, kept).unwrap();
    undo_puts_hello_back_and_no_more(&sb);
}

#[test]
fn a_turn_whose_calls_changed_nothing_leaves_nothing_to_undo() {
    let sb = Sandbox::new();
    let first = MockLlm::start(vec![
        calls(&[(
            "w",
            "write_file",
            r#"{"path":"hello.txt","content":"first"}"#,
        )]),
        answer("Written."),
    ]);
    assert_eq!(warden_run(&sb, &first, &["write"]).code, 0);
    let second = MockLlm::start(vec![
        calls(&[(
            "e",
            "edit_file",
            r#"{"path":"hello.txt","old_text":"no such text","new_text":"x"}"#,
        )]),
        answer("Could not."),
    ]);
    let r = warden_run(&sb, &second, &["edit"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("changed:"), "{}", r.stderr);

    // The one undo goes to the turn that wrote.
    undo_puts_hello_back_and_no_more(&sb);
}

/// A model whose first turn writes `hello.txt` ("changed in chat") and
/// answers "Written.", then answers each of `then` in turn.
fn mock_writing_hello(then: &[&str]) -> MockLlm {
    let mut replies = vec![
        calls(&[(
            "w",
            "write_file",
            r#"{"path":"hello.txt","content":"changed in chat"}"#,
        )]),
        answer("Written."),
    ];
    replies.extend(then.iter().map(|a| answer(a)));
    MockLlm::start(replies)
}

#[test]
fn undo_in_chat_puts_back_the_last_turn_and_rm_all_clears_sessions() {
    let sb = Sandbox::new();
    let mock = mock_writing_hello(&[]);
    let r = warden_chat(&sb, &mock, &["--yes"], "change hello\n/undo\n/undo\n");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("changed: hello.txt (`warden undo` puts them back)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("restored as before the last turn of session")
            && r.stderr.contains(": hello.txt\n"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("nothing to undo"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );

    let again = MockLlm::start(vec![answer("x")]);
    assert_eq!(warden_run(&sb, &again, &["another"]).code, 0);
    assert_eq!(session_files(&sb).len(), 2);
    let r = run(sb.warden().args(["sessions", "rm", "--all"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("removed 2 session(s)"), "{}", r.stderr);
    assert!(session_files(&sb).is_empty());
}

/// A turn whose paths the user changed since blocks nothing: `warden undo
/// --skip` drops its record, and the next undo goes to the turn before.
#[test]
fn undo_skip_drops_a_blocked_turn_and_the_next_undo_goes_further_back() {
    let sb = Sandbox::new();
    let first = MockLlm::start(vec![
        calls(&[("a", "write_file", r#"{"path":"a.txt","content":"a"}"#)]),
        answer("Wrote a."),
    ]);
    assert_eq!(warden_run(&sb, &first, &["write a"]).code, 0);
    let second = MockLlm::start(vec![
        calls(&[(
            "h",
            "write_file",
            r#"{"path":"hello.txt","content":"by the model"}"#,
        )]),
        answer("Wrote hello."),
    ]);
    assert_eq!(warden_run(&sb, &second, &["write hello"]).code, 0);
    std::fs::write(sb.ws.join("hello.txt"), "by the user").unwrap();
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains("`warden undo --skip` drops it"),
        "{}",
        r.stderr
    );
    // Tried again, the same path blocks it.
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(sb.ws.join("a.txt").exists());

    let r = run(sb.warden().args(["undo", "--skip"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("dropped the undo record of the last turn of session")
            && r.stderr.contains("(not restored: hello.txt)"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "by the user"
    );
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains(": a.txt\n"), "{}", r.stderr);
    assert!(!sb.ws.join("a.txt").exists());
    let r = run(sb.warden().args(["undo", "--skip"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("nothing to undo"), "{}", r.stderr);
}

/// After `/undo` in chat, the model is told with the next message what
/// was put back, so it does not go on from what its results showed.
#[test]
fn the_model_hears_of_an_undo_in_chat_with_the_next_message() {
    let sb = Sandbox::new();
    let mock = mock_writing_hello(&["Noted.", "Fine."]);
    let input = "change hello\n/undo\n/undo\nwhat now?\nand then?\n";
    let r = warden_chat(&sb, &mock, &["--yes"], input);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 4, "{}", r.stderr);
    assert_told_of_undo(&last_user(&bodies[2]), "what now?");
    // Said once: the message after it is the user's alone.
    assert_eq!(last_user(&bodies[3]), "and then?");
}

/// `told` is the user's `words`, then the note that undo put back
/// `hello.txt`.
fn assert_told_of_undo(told: &str, words: &str) {
    assert!(
        told.starts_with(&format!("{words}\n\n[warden: the user ran undo."))
            && told.contains("before the last turn that changed them, so that turn's")
            && told.contains(": hello.txt. Read them again before you rely"),
        "{told}"
    );
}

/// An undo run outside the chat (`warden undo`) reaches the model too:
/// the session's next message, in a later warden, tells it, once.
#[test]
fn the_model_hears_of_an_undo_run_apart_when_its_session_goes_on() {
    let sb = Sandbox::new();
    let mock = mock_writing_hello(&["Noted.", "Fine."]);
    let r = warden_run(&sb, &mock, &["change hello"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    undo_puts_hello_back_and_no_more(&sb);
    for task in ["what now?", "and then?"] {
        let r = warden_run(&sb, &mock, &["-c", task]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let bodies = bodies(&mock);
    assert_eq!(bodies.len(), 4);
    assert_told_of_undo(&last_user(&bodies[2]), "what now?");
    assert_eq!(last_user(&bodies[3]), "and then?");
}

/// An undo run from another terminal does not touch a turn that is still
/// running: it would race the turn's calls, and the turn would write its
/// record back afterwards. A turn whose warden was killed is undone.
#[test]
fn a_turn_still_running_in_another_warden_is_not_undone() {
    let sb = Sandbox::new();
    let thinking = Gate::new();
    let mock = MockLlm::start(vec![
        calls(&[(
            "w",
            "write_file",
            r#"{"path":"hello.txt","content":"changed in chat"}"#,
        )]),
        Reply::Gated(thinking.clone(), Box::new(answer("Written."))),
    ]);
    let mut turn = sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .env("OPENAI_API_KEY", KEY)
        .args(["run", "--yes", "change hello"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The second request comes after the write: the turn waits on the model.
    let start = std::time::Instant::now();
    while mock.requests().len() < 2 {
        assert!(start.elapsed().as_secs() < 60, "no second request");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    for args in [&["undo"][..], &["undo", "--skip"]] {
        let r = run(sb.warden().args(args));
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("is still running in another warden"),
            "{}",
            r.stderr
        );
    }
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "changed in chat"
    );
    turn.kill().unwrap();
    turn.wait().unwrap();
    undo_puts_hello_back_and_no_more(&sb);
}

/// `warden undo` puts `hello.txt` back as the sandbox made it, and the
/// next one has nothing left to undo.
fn undo_puts_hello_back_and_no_more(sb: &Sandbox) {
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains(": hello.txt\n"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    let r = run(sb.warden().arg("undo"));
    assert!(r.stderr.contains("nothing to undo"), "{}", r.stderr);
}

/// A folder deleted after a file in it was edited is snapshotted with the
/// edit in it; the file's own snapshot, taken first, is what undo must
/// leave behind, even when the turn ended with the file as it found it.
#[test]
fn undo_puts_back_a_file_edited_then_deleted_with_its_folder_as_before_the_turn() {
    let sb = Sandbox::new();
    let before = tree(&sb.ws);
    let mock = MockLlm::start(vec![
        calls(&[
            (
                "e",
                "edit_file",
                r#"{"path":"docs/readme.md","old_text":"docs","new_text":"DOCS"}"#,
            ),
            ("d", "delete", r#"{"path":"docs","recursive":true}"#),
            (
                "w",
                "write_file",
                r##"{"path":"docs/readme.md","content":"# docs\n"}"##,
            ),
            (
                "x",
                "write_file",
                r#"{"path":"docs/extra.md","content":"extra"}"#,
            ),
        ]),
        answer("Shuffled."),
    ]);
    let r = warden_run(&sb, &mock, &["shuffle"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for out in tool_outputs(&bodies(&mock)[1]) {
        assert!(!out.starts_with("error"), "{out}");
    }
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("docs/readme.md")).unwrap(),
        "# docs\n",
        "{}",
        r.stderr
    );
    assert_eq!(tree(&sb.ws), before);
}

/// A path the user already put back by hand is not "restored": undo says
/// it is as before, and the model is not told it was put back.
#[test]
fn undo_of_a_path_already_as_before_says_so_and_tells_the_model_nothing() {
    let sb = Sandbox::new();
    let r = warden_run(&sb, &mock_writing_hello(&[]), &["write"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::write(sb.ws.join("hello.txt"), "hello\nworld\n").unwrap();
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("already as before the last turn of session")
            && r.stderr.contains(": hello.txt\n"),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("restored"), "{}", r.stderr);
    let told = undo_files(&sb)
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "undone"))
        .count();
    assert_eq!(told, 0, "the model would be told hello.txt was put back");
    let r = run(sb.warden().arg("undo"));
    assert!(r.stderr.contains("nothing to undo"), "{}", r.stderr);
}

/// A turn whose changes undo cannot know of (a command run through
/// `shell`) is still the last turn: undo says it cannot put it back, and
/// leaves the turn before as it is; only the next undo goes back to it.
#[test]
fn undo_after_a_turn_of_untracked_changes_does_not_undo_the_turn_before() {
    let sb = Sandbox::new();
    sb.policy("[tools.shell]\nexec = [\"sh\"]\nwrite = [\".\"]\n");
    sb.trust();
    let r = warden_run(&sb, &mock_writing_hello(&[]), &["write"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let second = MockLlm::start(vec![
        calls(&[("s", "shell", r#"{"command":"echo made > made.txt"}"#)]),
        answer("Made."),
    ]);
    let r = warden_run(&sb, &second, &["make"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("not tracked"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("made.txt")).unwrap(),
        "made\n"
    );

    let r = run(sb.warden().arg("undo"));
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("not restored: changes made by `shell` are not tracked"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "changed in chat",
        "the turn before was undone in its place"
    );
    assert!(sb.ws.join("made.txt").exists());
    undo_puts_hello_back_and_no_more(&sb);
}

/// A tool that may not write (here `fetch`, which needs approval for its
/// network grant) changes nothing undo should know of: the turn reports
/// no untracked change and undo puts back the rest without a problem.
#[test]
fn a_turn_that_fetches_and_writes_is_undone_cleanly() {
    let sb = Sandbox::new();
    sb.policy("[tools.fetch]\nnetwork = [\"127.0.0.1:9\"]\n");
    sb.trust();
    let mock = MockLlm::start(vec![
        calls(&[
            ("f", "fetch", r#"{"url":"http://127.0.0.1:9/"}"#),
            (
                "w",
                "write_file",
                r#"{"path":"hello.txt","content":"changed"}"#,
            ),
        ]),
        answer("Done."),
    ]);
    let r = warden_run(&sb, &mock, &["fetch and write"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!r.stderr.contains("not tracked"), "{}", r.stderr);
    undo_puts_hello_back_and_no_more(&sb);
}

/// A message that could not be written to the transcript (too long for
/// the disk) never reached the model: the news of an undo it would have
/// carried comes with the next message instead of being lost.
#[test]
fn the_news_of_an_undo_waits_for_a_message_that_reaches_the_transcript() {
    let sb = Sandbox::new();
    let mock = mock_writing_hello(&["Fine."]);
    let too_long = "what now? ".repeat(6000);
    let input = format!("change hello\n/undo\n{too_long}\nand then?\n");
    let Some(r) = chat_on_a_small_disk(&sb, &mock, &["--yes"], &input) else {
        return;
    };
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot write the session transcript"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "hello\nworld\n"
    );
    let bodies = bodies(&mock);
    // The long message was never sent; the next one tells of the undo.
    assert_eq!(bodies.len(), 3, "{}", r.stderr);
    assert_told_of_undo(&last_user(&bodies[2]), "and then?");
}
