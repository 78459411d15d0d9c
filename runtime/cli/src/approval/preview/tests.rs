use std::path::Path;

use serde_json::json;
use warden_sandbox::{GrantedDirs, Mount};

use super::preview;

fn dirs(ws: &Path) -> GrantedDirs {
    GrantedDirs::open(&[
        Mount {
            host: ws.to_path_buf(),
            guest: ws.display().to_string(),
            write: true,
        },
        Mount {
            host: ws.to_path_buf(),
            guest: ".".into(),
            write: true,
        },
    ])
    .unwrap()
}

fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let base = tempfile::tempdir().unwrap();
    let ws = base.path().canonicalize().unwrap().join("ws");
    std::fs::create_dir(&ws).unwrap();
    (base, ws)
}

#[test]
fn a_write_is_a_diff_against_the_current_file() {
    let (_base, ws) = workspace();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    let p = preview(
        "write_file",
        &json!({"path":"a.txt","content":"one\nthree\n"}),
        &dirs(&ws),
        false,
    );
    assert_eq!(
        p,
        "  write a.txt (+1 -1 lines)\n  @@ -1,2 +1,2 @@\n  one\n- two\n+ three\n"
    );
    let p = preview(
        "write_file",
        &json!({"path":"new.txt","content":"x\ny\n"}),
        &dirs(&ws),
        false,
    );
    assert_eq!(
        p,
        "  create new.txt (2 lines)\n  @@ -0,0 +1,2 @@\n+ x\n+ y\n"
    );
}

#[test]
fn an_edit_is_shown_in_its_file_with_context_and_long_diffs_are_cut() {
    let (_base, ws) = workspace();
    let text: String = (1..=200).map(|i| format!("line {i}\n")).collect();
    std::fs::write(ws.join("long.txt"), &text).unwrap();
    let p = preview(
        "edit_file",
        &json!({"path":"long.txt","old_text":"line 100\n","new_text":"hundred\n"}),
        &dirs(&ws),
        false,
    );
    assert_eq!(
        p,
        "  edit long.txt (+1 -1 lines)\n  @@ -97,7 +97,7 @@\n  line 97\n  line 98\n  line 99\n\
         - line 100\n+ hundred\n  line 101\n  line 102\n  line 103\n"
    );
    // Every line changed: 1 header + 400 changes, cut at 40 lines.
    let new: String = (1..=200).map(|i| format!("LINE {i}\n")).collect();
    let p = preview(
        "write_file",
        &json!({"path":"long.txt","content": new}),
        &dirs(&ws),
        false,
    );
    let lines: Vec<&str> = p.lines().collect();
    assert_eq!(lines.len(), 1 + 40 + 1, "{p}");
    assert_eq!(lines[0], "  write long.txt (+200 -200 lines)");
    assert_eq!(lines[41], "  … 361 more lines");
    // An edit that cannot apply says so.
    let p = preview(
        "edit_file",
        &json!({"path":"long.txt","old_text":"line 1","new_text":"x"}),
        &dirs(&ws),
        false,
    );
    assert!(
        p.starts_with(
            "  edit long.txt: the text to replace appears 111 times, the call will fail\n"
        ),
        "{p}"
    );
}

#[test]
fn delete_move_copy_and_mkdir_read_as_sentences() {
    let (_base, ws) = workspace();
    let notes: String = (1..=12).map(|i| format!("{i}\n")).collect();
    std::fs::write(ws.join("notes.txt"), notes).unwrap();
    std::fs::create_dir(ws.join("docs")).unwrap();
    let d = dirs(&ws);
    let cases = [
        (
            "delete",
            json!({"path":"notes.txt"}),
            "  delete notes.txt (12 lines)\n",
        ),
        (
            "delete",
            json!({"path":"docs","recursive":true}),
            "  delete the directory docs and everything in it\n",
        ),
        (
            "delete",
            json!({"path":"../notes.txt"}),
            "  delete ../notes.txt: outside the grants, will be refused\n",
        ),
        (
            "move",
            json!({"from":"notes.txt","to":"b.txt"}),
            "  move notes.txt → b.txt\n",
        ),
        (
            "copy",
            json!({"from":"notes.txt","to":"docs","overwrite":true}),
            "  copy notes.txt → docs (replacing the existing docs)\n",
        ),
        (
            "move",
            json!({"from":"notes.txt","to":"/tmp/x"}),
            "  move notes.txt → /tmp/x: /tmp/x is outside the grants, will be refused\n",
        ),
        ("mkdir", json!({"path":"d/e"}), "  create directory d/e\n"),
    ];
    for (tool, args, want) in cases {
        assert_eq!(preview(tool, &args, &d, false), want, "{tool} {args}");
    }
}

#[test]
fn nothing_outside_the_grants_or_special_is_read() {
    let (base, ws) = workspace();
    let base = base.path().canonicalize().unwrap();
    std::fs::write(base.join("outside.txt"), "TOP SECRET\n").unwrap();
    std::os::unix::fs::symlink("../outside.txt", ws.join("link")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        ws.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let d = dirs(&ws);
    let outside = base.join("outside.txt").display().to_string();
    for path in [
        "../outside.txt",
        "link",
        outside.as_str(),
        "/etc/passwd",
        "/dev/zero",
    ] {
        for (tool, args) in [
            ("write_file", json!({"path": path, "content": "x\n"})),
            (
                "edit_file",
                json!({"path": path, "old_text": "TOP", "new_text": "x"}),
            ),
            ("delete", json!({"path": path})),
        ] {
            let p = preview(tool, &args, &d, false);
            assert!(!p.contains("SECRET") && !p.contains("root:"), "{path}: {p}");
            assert!(
                p.contains("outside the grants, will be refused"),
                "{path}: {p}"
            );
        }
    }
    let p = preview(
        "write_file",
        &json!({"path": "fifo", "content": "x\n"}),
        &d,
        false,
    );
    assert_eq!(p, "  write fifo: not a regular file, the call will fail\n");
}

#[test]
fn model_text_in_a_preview_is_inert() {
    let (_base, ws) = workspace();
    let d = dirs(&ws);
    let evil = "a\u{1b}[2J\u{1b}]0;owned\u{7}\r\u{202e}";
    for (tool, args) in [
        ("delete", json!({"path": evil})),
        ("write_file", json!({"path": evil, "content": evil})),
        ("move", json!({"from": evil, "to": evil})),
        ("uppercase", json!({"text": evil})),
    ] {
        let p = preview(tool, &args, &d, false);
        assert!(
            !p.contains(['\u{1b}', '\u{7}', '\r', '\u{202e}']),
            "{tool}: {p:?}"
        );
    }
}
