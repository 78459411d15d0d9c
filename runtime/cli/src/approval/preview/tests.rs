use std::path::Path;

use serde_json::{Value, json};
use warden_policy::{Grants, Origin};
use warden_sandbox::{
    Access, AppRequest, Content, DesktopAction, DesktopCall, Effect, Effects, GrantedDirs, Launch,
    Mount, Refusal, Replacement, Started,
};
use warden_workspace::ApprovalRequest;

/// The effects the built-in file tools declare (their own declarations
/// are tested through the real binary, `tests/suite/approval.rs`).
fn declared(tool: &str) -> Option<Vec<Effect>> {
    let e = |argument: &str, access: Access, follow: bool| Effect {
        argument: argument.into(),
        access,
        follow,
    };
    let flag = |f: &str| Some(f.to_string());
    Some(match tool {
        "write_file" => vec![e(
            "path",
            Access::Write(Content::Whole("content".into())),
            true,
        )],
        "edit_file" => vec![e(
            "path",
            Access::Write(Content::Replace(Replacement {
                old: "old_text".into(),
                new: "new_text".into(),
                all: flag("replace_all"),
            })),
            true,
        )],
        "delete" => vec![e("path", Access::Delete(flag("recursive")), false)],
        "mkdir" => vec![e("path", Access::Create, false)],
        "move" => vec![
            e("from", Access::MoveFrom, false),
            e("to", Access::MoveTo(flag("overwrite")), false),
        ],
        "copy" => vec![
            e("from", Access::CopyFrom, false),
            e("to", Access::CopyTo(flag("overwrite")), false),
        ],
        _ => return None,
    })
}

fn preview(tool: &str, args: &Value, dirs: &GrantedDirs, fancy: bool) -> String {
    let effects = Effects::of(declared(tool).as_deref(), args, dirs);
    let grants = Grants::default();
    let request = ApprovalRequest {
        tool,
        origin: Origin::Builtin,
        arguments: args,
        effects: &effects,
        desktop: &DesktopCall::default(),
        grants: &grants,
        dirs,
    };
    super::preview(&request, fancy)
}

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

/// The case of issue 40: a read-only grant nested in the read-write
/// workspace, and a path that leaves it with `..`.
fn nested(ws: &Path) -> GrantedDirs {
    let docs = ws.join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let m = |host: &Path, guest: String, write: bool| Mount {
        host: host.to_path_buf(),
        guest,
        write,
    };
    GrantedDirs::open(&[
        m(ws, ws.display().to_string(), true),
        m(ws, ".".into(), true),
        m(&docs, docs.display().to_string(), false),
        m(&docs, "docs".into(), false),
    ])
    .unwrap()
}

#[test]
fn a_path_is_shown_where_the_tool_will_resolve_it() {
    let (_base, ws) = workspace();
    let d = nested(&ws);
    std::fs::write(ws.join("notes.txt"), "old\n").unwrap();
    let p = preview(
        "write_file",
        &json!({"path":"docs/../notes.txt","content":"new\n"}),
        &d,
        false,
    );
    assert_eq!(
        p,
        "  write notes.txt (+1 -1 lines)\n  @@ -1 +1 @@\n- old\n+ new\n"
    );
    let p = preview(
        "write_file",
        &json!({"path":"docs/x.md","content":"x\n"}),
        &d,
        false,
    );
    assert_eq!(
        p,
        "  write docs/x.md: in a read-only grant, will be refused\n"
    );
    let p = preview(
        "move",
        &json!({"from":"notes.txt","to":"./docs//n.txt"}),
        &d,
        false,
    );
    assert_eq!(
        p,
        "  move notes.txt → docs/n.txt: docs/n.txt is in a read-only grant, will be refused\n"
    );
}

#[test]
fn an_edit_of_a_crlf_file_shows_the_edit_the_tool_makes() {
    let (_base, ws) = workspace();
    std::fs::write(ws.join("w.txt"), "one\r\ntwo\r\nthree\r\n").unwrap();
    let p = preview(
        "edit_file",
        &json!({"path":"w.txt","old_text":"one\ntwo","new_text":"1\n2"}),
        &dirs(&ws),
        false,
    );
    // The line ends are shown inert, as `\r`.
    assert_eq!(
        p,
        "  edit w.txt (+2 -2 lines)\n  @@ -1,3 +1,3 @@\n- one\\r\n- two\\r\n+ 1\\r\n+ 2\\r\n  \
         three\\r\n",
        "{p:?}"
    );
}

#[test]
fn undeclared_effects_and_a_drop_ins_claims_are_said_so() {
    let (_base, ws) = workspace();
    let d = dirs(&ws);
    let args = json!({"command":"make\ntest"});
    let effects = Effects::default();
    let grants = Grants::default();
    let request = ApprovalRequest {
        tool: "shell",
        origin: Origin::Builtin,
        arguments: &args,
        effects: &effects,
        desktop: &DesktopCall::default(),
        grants: &grants,
        dirs: &d,
    };
    assert_eq!(
        super::preview(&request, false),
        "  command:\n    make\n    test\n  effects unknown: `shell` does not declare which files \
         it changes; it may change anything in ., and undo cannot put that back\n"
    );
    let args = json!({"path":"n.txt","content":"hi\n"});
    let effects = Effects::of(declared("write_file").as_deref(), &args, &d);
    let request = ApprovalRequest {
        tool: "save_note",
        origin: Origin::Workspace,
        effects: &effects,
        arguments: &args,
        ..request
    };
    assert_eq!(
        super::preview(&request, false),
        "  create n.txt (1 line)\n  @@ -0,0 +1 @@\n+ hi\n  (as `save_note` declares it; what \
         it can change is what it is granted: .)\n"
    );
}

#[test]
fn a_launch_shows_its_exact_program_line_and_covers_its_arguments() {
    let (_base, ws) = workspace();
    let d = dirs(&ws);
    std::fs::write(ws.join("report.txt"), "r\n").unwrap();
    let args = json!({"app": "eyes", "files": ["report.txt"], "urls": ["https://docs.rs/"],
                      "why": "look\u{1b}[2J"});
    let effects = Effects::of(
        Some(&[Effect {
            argument: "files".into(),
            access: Access::Read,
            follow: true,
        }]),
        &args,
        &d,
    );
    let launch = |argv: &[&str]| Launch {
        app: "eyes".into(),
        name: "Eyes".into(),
        argv: argv.iter().map(|a| a.to_string()).collect(),
    };
    let desktop = DesktopCall {
        declared: true,
        actions: vec![
            DesktopAction::Start {
                request: AppRequest {
                    app: "eyes".into(),
                    files: vec!["report.txt".into()],
                    urls: vec!["https://docs.rs/".into()],
                },
                plan: Ok(launch(&[
                    "/usr/bin/xeyes",
                    "-title",
                    "a b",
                    "/ws/report.txt",
                ])),
            },
            DesktopAction::Start {
                request: AppRequest {
                    app: "gimp".into(),
                    files: Vec::new(),
                    urls: Vec::new(),
                },
                plan: Err(Refusal::Denied("`gimp` is not granted to this tool".into())),
            },
            DesktopAction::Browse {
                url: "https://docs.rs/".into(),
                plan: Ok(launch(&["/usr/bin/xdg-open", "https://docs.rs/"])),
            },
            DesktopAction::Close {
                id: 3,
                plan: Ok(Started {
                    id: 3,
                    launch: launch(&["/usr/bin/xeyes"]),
                    pid: 77,
                    since: std::time::Instant::now(),
                }),
            },
        ],
        arguments: vec!["app".into(), "files".into(), "urls".into()],
    };
    let grants = Grants::default();
    let request = ApprovalRequest {
        tool: "open_app",
        origin: Origin::Builtin,
        arguments: &args,
        effects: &effects,
        desktop: &desktop,
        grants: &grants,
        dirs: &d,
    };
    assert_eq!(
        super::preview(&request, false),
        "  read report.txt\n\
         \x20 start Eyes in your desktop session, unconfined (it keeps running after warden \
         exits):\n    /usr/bin/xeyes -title 'a b' /ws/report.txt\n\
         \x20 start gimp: will be refused: `gimp` is not granted to this tool\n\
         \x20 open https://docs.rs/ in your browser:\n    /usr/bin/xdg-open https://docs.rs/\n\
         \x20 end Eyes (id 3, pid 77), which this session started, with every process of its \
         group\n\
         \x20 why: look\\x1b[2J\n"
    );
    // A tool granted apps that declares nothing says what it could start.
    let mut grants = Grants::default();
    grants.add(warden_policy::Capability::App {
        program: "xeyes".into(),
    });
    let none = DesktopCall::default();
    let request = ApprovalRequest {
        tool: "my_launcher",
        arguments: &json!({}),
        effects: &Effects {
            declared: true,
            touches: Vec::new(),
        },
        desktop: &none,
        grants: &grants,
        ..request
    };
    assert_eq!(
        super::preview(&request, false),
        "  desktop actions unknown: `my_launcher` does not declare what it starts; it may start \
         xeyes in your desktop session, unconfined\n"
    );
}
