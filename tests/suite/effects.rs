//! What you approve is what runs: the approval prompt, the changed list and
//! `warden undo` all come from a call's declared effects, resolved as the
//! tool resolves them, through the real binary on a pseudo-terminal.

use serde_json::json;
use warden_mock_llm::{MockLlm, answer, calls};
use warden_tests::{Sandbox, guests, run};

/// `warden run TASK` on a terminal against a model that makes `call` and
/// then answers "Done.", with `answers` typed at the prompts.
fn approve(sb: &Sandbox, call: (&str, serde_json::Value), answers: &str) -> String {
    let args = call.1.to_string();
    let mock = MockLlm::start(vec![calls(&[("c", call.0, &args)]), answer("Done.")]);
    let r = sb.run_in_terminal(&mock.base_url(), "go", answers);
    assert_eq!(r.code, 0, "{}", r.stdout);
    r.stdout
}

/// The case of issue 40: `write = ["."]` with `read = ["docs"]`, and a
/// path that leaves the read-only grant with `..`. It was shown as
/// refused, then written, and listed under the name the model gave.
#[test]
fn a_path_through_a_read_only_grant_is_shown_changed_and_undone_as_the_file_it_is() {
    let sb = Sandbox::new();
    sb.policy("[tools.write_file]\nwrite = [\".\"]\nread = [\"docs\"]\n");
    sb.trust();
    std::fs::write(sb.ws.join("notes.txt"), "old notes\n").unwrap();
    let call = json!({"path": "docs/../notes.txt", "content": "new notes\n"});
    let screen = approve(&sb, ("write_file", call), "y\n");
    assert!(screen.contains("write notes.txt (+1 -1 lines)"), "{screen}");
    assert!(
        screen.contains("- old notes") && screen.contains("+ new notes"),
        "{screen}"
    );
    assert!(!screen.contains("will be refused"), "{screen}");
    assert!(screen.contains("✓ write_file notes.txt"), "{screen}");
    assert!(screen.contains("changed: notes.txt"), "{screen}");
    assert!(!screen.contains("changed: docs/../notes.txt"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("notes.txt")).unwrap(),
        "new notes\n"
    );
    let r = run(sb.warden().arg("undo"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains(": notes.txt\n"), "{}", r.stderr);
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("notes.txt")).unwrap(),
        "old notes\n"
    );
}

/// A write that the read-only grant will refuse is shown as refused, and
/// is.
#[test]
fn a_write_into_a_read_only_grant_is_shown_refused_and_is() {
    let sb = Sandbox::new();
    sb.policy("[tools.write_file]\nwrite = [\".\"]\nread = [\"docs\"]\n");
    sb.trust();
    let call = json!({"path": "./docs//readme.md", "content": "gone\n"});
    let screen = approve(&sb, ("write_file", call), "y\n");
    assert!(
        screen.contains("write docs/readme.md: in a read-only grant, will be refused"),
        "{screen}"
    );
    assert!(screen.contains("✗ write_file docs/readme.md"), "{screen}");
    assert_ne!(
        std::fs::read_to_string(sb.ws.join("docs/readme.md")).unwrap(),
        "gone\n"
    );
}

/// The preview of an edit of a file with CRLF line ends, given with `\n`
/// as models write it, is the edit the tool then makes.
#[test]
fn the_preview_of_an_edit_of_a_crlf_file_is_the_edit_that_happens() {
    let sb = Sandbox::new();
    std::fs::write(sb.ws.join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    let call = json!({"path": "w.txt", "old_text": "one\ntwo", "new_text": "1\n2"});
    let screen = approve(&sb, ("edit_file", call), "y\n");
    assert!(screen.contains("edit w.txt (+2 -2 lines)"), "{screen}");
    assert!(
        screen.contains("+ 1\\r") && screen.contains("- two\\r"),
        "{screen}"
    );
    assert!(!screen.contains("will fail"), "{screen}");
    assert!(screen.contains("✓ edit_file w.txt"), "{screen}");
    assert_eq!(
        std::fs::read(sb.ws.join("w.txt")).unwrap(),
        b"1\r\n2\r\nthree\r\n"
    );
}

/// A component built for contract 0.1.0 keeps working; its calls are shown
/// and undone as "effects unknown", and the user is told so.
#[test]
fn a_contract_0_1_component_works_and_its_effects_are_unknown() {
    let sb = Sandbox::new();
    sb.drop_in(guests::LEGACY, "legacy.wasm");
    sb.policy("[tools.legacy_write]\nwrite = [\".\"]\n");
    sb.trust();
    let call = json!({"path": "hello.txt", "content": "legacy\n"});
    let screen = approve(&sb, ("legacy_write", call), "y\n");
    assert!(
        screen.contains(
            "effects unknown: `legacy_write` does not declare which files it changes; it may \
             change anything in ., and undo cannot put that back"
        ),
        "{screen}"
    );
    assert!(screen.contains("not tracked"), "{screen}");
    assert_eq!(
        std::fs::read_to_string(sb.ws.join("hello.txt")).unwrap(),
        "legacy\n"
    );
    let r = run(sb.warden().arg("undo"));
    assert_ne!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("changes made by `legacy_write` are not tracked and cannot be undone"),
        "{}",
        r.stderr
    );
}

/// `--json` events carry what a call touched, as its tool resolved it.
#[test]
fn json_events_name_the_paths_a_call_touched() {
    let sb = Sandbox::new();
    let args = json!({"from": "hello.txt", "to": "a//b/../moved.txt"}).to_string();
    let mock = MockLlm::start(vec![calls(&[("m", "move", &args)]), answer("Moved.")]);
    let r = run(sb
        .warden()
        .env("OPENAI_BASE_URL", mock.base_url())
        .args(["run", "--yes", "--json", "move it"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let result: serde_json::Value = r
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|e| e["type"] == "tool_result")
        .expect("a tool_result event");
    assert_eq!(
        result["touched"],
        json!([
            {"path": "hello.txt", "access": "move from", "refused": null},
            {"path": "a/moved.txt", "access": "move to", "refused": null},
        ])
    );
    assert!(sb.ws.join("a/moved.txt").is_file());
}

/// A 0.1.0 component that imports `warden:tool/process@0.1.0` links and
/// runs: the host offers that interface under its old version too.
#[test]
fn a_contract_0_1_component_still_reaches_the_process_interface() {
    let sb = Sandbox::new();
    sb.drop_in(guests::LEGACY, "legacy.wasm");
    sb.policy("[tools.legacy_programs]\nexec = [\"sh\"]\nwrite = [\".\"]\n");
    sb.trust();
    let r = run(sb.warden().args(["tools", "call", "legacy_programs", "{}"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout.trim(), "sh");
}
