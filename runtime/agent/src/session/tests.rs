use std::collections::HashSet;
use std::fs;

use super::*;
use crate::ToolCall;

fn store() -> (tempfile::TempDir, SessionStore) {
    let tmp = tempfile::tempdir().unwrap();
    let store =
        SessionStore::new(warden_state::StateDir::open(tmp.path(), "warden/sessions").unwrap());
    (tmp, store)
}

fn user(ts: &str, content: &str) -> Record {
    Record::Message {
        ts: ts.into(),
        message: Message::User {
            content: content.into(),
        },
    }
}

fn start(ts: &str) -> Record {
    Record::Start {
        ts: ts.into(),
        model: "qwen3".into(),
        base_url: "http://localhost:8080/v1".into(),
        workspace: "/work/ws".into(),
        protocol: "native".into(),
    }
}

fn every_kind() -> Vec<Record> {
    vec![
        start("2026-01-01T00:00:00.000Z"),
        Record::Message {
            ts: "t1".into(),
            message: Message::System {
                content: "be brief".into(),
            },
        },
        user("t2", "read the manifest"),
        Record::Message {
            ts: "t3".into(),
            message: Message::Assistant {
                content: None,
                tool_calls: vec![ToolCall::new(
                    "call_1",
                    "read_file",
                    r#"{"path":"Cargo.toml"}"#,
                )],
            },
        },
        Record::ToolResult {
            ts: "t4".into(),
            id: "call_1".into(),
            name: "read_file".into(),
            ok: true,
            output: "[package]\nname = \"x\"\n".into(),
            duration_ms: 3,
        },
        Record::Message {
            ts: "t5".into(),
            message: Message::Tool {
                tool_call_id: "call_1".into(),
                content: "ok".into(),
            },
        },
        Record::Usage {
            ts: "t6".into(),
            usage: Usage {
                prompt_tokens: 10,
                completion_tokens: 5,
                total_tokens: 15,
            },
        },
        Record::Error {
            ts: "t7".into(),
            message: "HTTP 503".into(),
        },
        Record::Clear { ts: "t7b".into() },
        Record::End {
            ts: "t8".into(),
            reason: "done".into(),
        },
    ]
}

fn write_all(session: &mut Session, records: &[Record]) {
    for r in records {
        session.append(r).unwrap();
    }
}

#[test]
fn round_trip_every_record_kind() {
    let (_tmp, store) = store();
    assert_eq!(
        fs::read_dir(store.dir()).unwrap().count(),
        0,
        "no file before the first session"
    );
    let mut session = store.create().unwrap();
    assert!(session.path().starts_with(store.dir()));
    assert_eq!(
        session.path().file_name().unwrap().to_str().unwrap(),
        format!("{}.jsonl", session.id())
    );
    let records = every_kind();
    write_all(&mut session, &records);
    let text = fs::read_to_string(session.path()).unwrap();
    assert_eq!(text.lines().count(), records.len());
    assert!(text.starts_with(r#"{"type":"start","ts":"#), "{text}");
    let (id, path) = (session.id().to_string(), session.path().to_path_buf());
    drop(session);
    let (reopened, read) = store.open(&id).unwrap();
    assert_eq!(read, records);
    assert_eq!(reopened.path(), path);
    // Everything was cleared at the end: nothing to resend.
    assert!(messages(&read).is_empty());
    let conversation = messages(&read[..read.len() - 2]);
    assert_eq!(conversation.len(), 4);
    assert_eq!(
        conversation[1],
        Message::User {
            content: "read the manifest".into()
        }
    );
}

#[test]
fn a_resumed_session_continues_after_the_last_clear() {
    let records = vec![
        start("t0"),
        user("t1", "first"),
        Record::Clear { ts: "t2".into() },
        user("t3", "second"),
        Record::Clear { ts: "t4".into() },
        user("t5", "third"),
    ];
    assert_eq!(
        messages(&records),
        vec![Message::User {
            content: "third".into()
        }]
    );
}

#[test]
fn a_resumed_session_continues_from_the_last_compacted_history() {
    let said = |content: &str| Message::User {
        content: content.into(),
    };
    let records = vec![
        start("t0"),
        user("t1", "first, with a long output"),
        Record::Compacted {
            ts: "t2".into(),
            before_tokens: 900,
            after_tokens: 100,
            history: vec![said("[summary of the first]")],
        },
        user("t3", "second"),
        Record::Compacted {
            ts: "t4".into(),
            before_tokens: 800,
            after_tokens: 90,
            history: vec![said("[summary of both]")],
        },
        user("t5", "third"),
    ];
    assert_eq!(
        messages(&records),
        vec![said("[summary of both]"), said("third")]
    );
    // A clear after it still wins.
    let mut cleared = records.clone();
    cleared.push(Record::Clear { ts: "t6".into() });
    cleared.push(user("t7", "fourth"));
    assert_eq!(messages(&cleared), vec![said("fourth")]);
}

#[test]
fn what_was_asked_skips_tool_results_and_compaction_summaries() {
    // Under the text protocol, tool results are user messages.
    let results = user;
    let mut records = vec![
        start("t0"),
        user("t1", "first"),
        results("t2", "[RESULT read_file]\nx\n[/RESULT]"),
        Record::Compacted {
            ts: "t3".into(),
            before_tokens: 900,
            after_tokens: 100,
            history: vec![Message::User {
                content: "[summary]\n\n[RESULT read_file]\nx\n[/RESULT]".into(),
            }],
        },
        user("t4", "second"),
        results("t5", "[RESULT list_files]\n[/RESULT]"),
    ];
    assert_eq!(asked(&records), ["first", "second"]);
    records.push(Record::Clear { ts: "t6".into() });
    assert!(asked(&records).is_empty());
    records.push(user("t7", "third"));
    assert_eq!(asked(&records), ["third"]);
}

#[test]
fn summaries_count_turns_and_sum_usage_and_latest_is_the_newest() {
    let (_tmp, store) = store();
    assert_eq!(store.latest().unwrap(), None);
    let usage = |p, c| Record::Usage {
        ts: "t".into(),
        usage: Usage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: p + c,
        },
    };
    let mut s = store.create().unwrap();
    write_all(
        &mut s,
        &[
            start("2026-01-01T10:00:00.000Z"),
            user("2026-01-01T10:00:01.000Z", "one"),
            usage(100, 7),
            user("2026-01-01T10:00:02.000Z", "two"),
            usage(150, 3),
        ],
    );
    let mut older = store.create().unwrap();
    write_all(&mut older, &[start("2025-01-01T10:00:00.000Z")]);
    let list = store.list().unwrap();
    assert_eq!((list[0].id.as_str(), list[0].turns), (s.id(), 2));
    assert_eq!(
        list[0].usage,
        Usage {
            prompt_tokens: 250,
            completion_tokens: 10,
            total_tokens: 260
        }
    );
    assert_eq!(store.latest().unwrap().as_deref(), Some(s.id()));
}

#[test]
fn ids_are_sortable_and_unique() {
    let (_tmp, store) = store();
    let mut ids = HashSet::new();
    for _ in 0..50 {
        let id = store.create().unwrap().id().to_string();
        let b = id.as_bytes();
        assert_eq!(id.len(), 20, "{id}");
        assert!(b[8] == b'-' && b[15] == b'-', "{id}");
        assert!(
            id[..8]
                .chars()
                .chain(id[9..15].chars())
                .all(|c| c.is_ascii_digit()),
            "{id}"
        );
        assert!(id[16..].chars().all(|c| c.is_ascii_hexdigit()), "{id}");
        ids.insert(id);
    }
    assert_eq!(ids.len(), 50);
    assert_eq!(fs::read_dir(store.dir()).unwrap().count(), 50);
}

#[test]
fn torn_last_line_is_skipped_and_cut_before_appending() {
    let (_tmp, store) = store();
    let mut session = store.create().unwrap();
    write_all(&mut session, &[start("a"), user("b", "hi")]);
    let line = serde_json::to_string(&user("c", "lost in the crash")).unwrap();
    let torn = &line[..line.len() / 2];
    fs::OpenOptions::new()
        .append(true)
        .open(session.path())
        .unwrap()
        .write_all(torn.as_bytes())
        .unwrap();
    drop(session);

    let (mut resumed, records) = store.open(&store.list().unwrap()[0].id).unwrap();
    assert_eq!(records, [start("a"), user("b", "hi")]);
    resumed.append(&user("d", "again")).unwrap();
    let id = resumed.id().to_string();
    drop(resumed);
    let (_, records) = store.open(&id).unwrap();
    assert_eq!(records, [start("a"), user("b", "hi"), user("d", "again")]);
}

/// A write that fails partway (a full disk) leaves nothing for the next
/// record to glue onto: cut off at once, or before the next record when
/// that could not be done at once.
#[test]
fn a_record_whose_write_failed_partway_leaves_the_transcript_whole() {
    let (_tmp, store) = store();
    let mut session = store.create().unwrap();
    write_all(&mut session, &[start("a"), user("b", "hi")]);
    let id = session.id().to_string();
    let full = || io::Error::from_raw_os_error(28); // ENOSPC
    let line = serde_json::to_string(&user("c", "lost to a full disk")).unwrap() + "\n";
    let half = |file: &mut File, line: &[u8]| {
        file.write_all(&line[..line.len() / 2])?;
        Err(full())
    };
    assert!(session.append_line(line.as_bytes(), half).is_err());
    session.append(&user("d", "after it")).unwrap();
    // When the cut cannot be made at once (here the descriptor is
    // read-only), it is made before the next record.
    let read_only = File::open(session.path()).unwrap();
    let writable = std::mem::replace(&mut session.file, read_only);
    let mut w = writable.try_clone().unwrap();
    let through = move |_: &mut File, line: &[u8]| -> io::Result<()> {
        w.write_all(&line[..line.len() / 2])?;
        Err(full())
    };
    let line = serde_json::to_string(&user("e", "lost too")).unwrap() + "\n";
    assert!(session.append_line(line.as_bytes(), through).is_err());
    assert!(session.torn_at.is_some());
    session.file = writable;
    session.append(&user("f", "last")).unwrap();
    drop(session);
    let (_, records) = store.open(&id).unwrap();
    assert_eq!(
        records,
        [
            start("a"),
            user("b", "hi"),
            user("d", "after it"),
            user("f", "last")
        ]
    );
}

#[test]
fn whole_last_record_without_newline_is_kept() {
    let (_tmp, store) = store();
    let mut session = store.create().unwrap();
    write_all(&mut session, &[start("a")]);
    let line = serde_json::to_string(&user("b", "hi")).unwrap();
    fs::OpenOptions::new()
        .append(true)
        .open(session.path())
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
    let id = session.id().to_string();
    drop(session);

    let (mut resumed, records) = store.open(&id).unwrap();
    assert_eq!(records, [start("a"), user("b", "hi")]);
    resumed.append(&user("c", "more")).unwrap();
    drop(resumed);
    assert_eq!(store.open(&id).unwrap().1.len(), 3);
}

/// A whole JSON line that is not a record this warden knows (one a newer
/// warden wrote, its newline lost) is not a torn write: it is reported,
/// and the transcript is left as it is, not cut.
#[test]
fn an_unknown_whole_last_line_without_newline_is_reported_not_cut() {
    let (_tmp, store) = store();
    let mut session = store.create().unwrap();
    write_all(&mut session, &[start("a")]);
    let newer = r#"{"type":"from_a_newer_warden","at":"2027-01-01T00:00:00Z"}"#;
    fs::OpenOptions::new()
        .append(true)
        .open(session.path())
        .unwrap()
        .write_all(newer.as_bytes())
        .unwrap();
    let (id, path) = (session.id().to_string(), session.path().to_path_buf());
    let before = fs::read(&path).unwrap();
    drop(session);

    let err = store.open(&id).unwrap_err();
    assert!(
        matches!(err, SessionError::Corrupt { line: 2, .. }),
        "{err}"
    );
    assert!(matches!(
        store.read(&id),
        Err(SessionError::Corrupt { line: 2, .. })
    ));
    assert_eq!(
        fs::read(&path).unwrap(),
        before,
        "the transcript was changed"
    );
}

#[test]
fn corrupt_middle_line_is_reported() {
    let (_tmp, store) = store();
    let session = store.create().unwrap();
    let good = serde_json::to_string(&start("a")).unwrap();
    fs::write(
        session.path(),
        format!("{good}\n{{\"type\":\"bogus\"}}\n\n{good}\n"),
    )
    .unwrap();
    let (id, session_path) = (session.id().to_string(), session.path().to_path_buf());
    drop(session);
    match store.open(&id) {
        Err(SessionError::Corrupt { path, line, reason }) => {
            assert_eq!((path.as_path(), line), (session_path.as_path(), 2));
            assert!(reason.contains("bogus"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    // Blank lines are not corruption.
    fs::write(&session_path, format!("{good}\n\n{good}\n")).unwrap();
    assert_eq!(store.open(&id).unwrap().1.len(), 2);
}

#[test]
fn unknown_or_hostile_ids_are_not_found() {
    let (_tmp, store) = store();
    for id in ["20260101-000000-abcd", "../../etc/passwd", "", "a/b"] {
        let err = store.open(id).unwrap_err();
        assert!(
            matches!(err, SessionError::NotFound { .. }),
            "{id}: {err:?}"
        );
        assert!(err.to_string().contains("run `warden sessions`"), "{err}");
    }
}

#[test]
fn resume_appends_to_the_same_file() {
    let (_tmp, store) = store();
    let mut session = store.create().unwrap();
    write_all(&mut session, &[start("a"), user("b", "first")]);
    let path = session.path().to_path_buf();
    drop(session);
    let (mut resumed, _) = store
        .open(path.file_stem().unwrap().to_str().unwrap())
        .unwrap();
    assert_eq!(resumed.path(), path);
    resumed.append(&user("c", "second")).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 3);
    assert_eq!(fs::read_dir(store.dir()).unwrap().count(), 1);
}

#[test]
fn list_is_newest_first_with_titles() {
    let (_tmp, store) = store();
    assert!(
        store.list().unwrap().is_empty(),
        "a missing directory lists nothing"
    );
    let mut old = store.create().unwrap();
    write_all(
        &mut old,
        &[
            start("2026-01-01T10:00:00.000Z"),
            user("2026-01-01T10:00:01.000Z", "old task"),
        ],
    );
    let mut new = store.create().unwrap();
    let long = format!("\n  {}  \nsecond line", "word ".repeat(30));
    write_all(
        &mut new,
        &[
            start("2026-01-02T10:00:00.000Z"),
            user("2026-01-02T10:00:01.000Z", &long),
        ],
    );
    // Started first but updated last: the most recently active comes first.
    old.append(&user("2026-01-03T09:00:00.000Z", "follow-up"))
        .unwrap();
    let mut empty = store.create().unwrap();
    write_all(&mut empty, &[start("2026-01-02T12:00:00.000Z")]);
    fs::write(store.dir().join("notes.txt"), "not a session").unwrap();

    let list = store.list().unwrap();
    let ids: Vec<&str> = list.iter().map(|s| s.id.as_str()).collect();
    assert_eq!(ids, [old.id(), empty.id(), new.id()]);
    assert_eq!(list[0].title, "old task");
    assert_eq!(
        (list[0].started.as_str(), list[0].updated.as_str()),
        ("2026-01-01T10:00:00.000Z", "2026-01-03T09:00:00.000Z")
    );
    assert_eq!(list[0].messages, 2);
    assert_eq!(list[0].path, old.path());
    assert_eq!((list[1].title.as_str(), list[1].messages), ("", 0));
    let title = &list[2].title;
    assert_eq!(title.chars().count(), 60, "{title}");
    assert!(
        title.starts_with("word word") && title.ends_with('…'),
        "{title}"
    );
}

#[test]
fn list_skips_damaged_transcripts_gracefully() {
    let (_tmp, store) = store();
    let mut s = store.create().unwrap();
    write_all(&mut s, &[start("a"), user("b", "fine")]);
    fs::write(store.dir().join("broken.jsonl"), "garbage\n{\"type\":").unwrap();
    let list = store.list().unwrap();
    assert_eq!(list.len(), 2);
    assert!(list.iter().any(|s| s.id == "broken" && s.messages == 0));
}

#[test]
fn timestamps_are_rfc3339_utc() {
    let ts = now();
    assert_eq!(ts.len(), 24, "{ts}");
    let b = ts.as_bytes();
    assert_eq!(
        (b[4], b[7], b[10], b[13], b[16], b[19], b[23]),
        (b'-', b'-', b'T', b':', b':', b'.', b'Z'),
        "{ts}"
    );
    assert!(ts.as_str() > "2025-01-01");
    let at = |secs: u64| utc_parts(UNIX_EPOCH + std::time::Duration::from_secs(secs));
    assert_eq!(at(0), ("1970-01-01".into(), "00:00:00".into(), 0));
    assert_eq!(
        at(951_782_400 + 3661),
        ("2000-02-29".into(), "01:01:01".into(), 0)
    );
    assert_eq!(
        at(1_704_067_199),
        ("2023-12-31".into(), "23:59:59".into(), 0)
    );
    assert_eq!(
        at(4_102_444_800),
        ("2100-01-01".into(), "00:00:00".into(), 0)
    );
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
}

#[test]
fn a_session_open_in_another_process_is_refused_until_closed() {
    let (_tmp, store) = store();
    let mut session = store.create().unwrap();
    write_all(&mut session, &[start("a")]);
    let id = session.id().to_string();
    // A lock is per open file: a second open conflicts as another process's.
    let Err(err) = store.open(&id) else {
        panic!("refused while open")
    };
    assert!(
        err.to_string()
            .starts_with(&format!("session {id} is in use by another warden")),
        "{err}"
    );
    drop(session);
    let (mut resumed, _) = store.open(&id).unwrap();
    assert!(store.open(&id).is_err());
    resumed.append(&user("b", "hi")).unwrap();
    drop(resumed);
    assert_eq!(store.open(&id).unwrap().1, [start("a"), user("b", "hi")]);
}

#[test]
fn a_whole_last_line_that_does_not_parse_is_reported_not_cut() {
    let (_tmp, store) = store();
    let mut session = store.create().unwrap();
    write_all(&mut session, &[start("a"), user("b", "hi")]);
    let (id, path) = (session.id().to_string(), session.path().to_path_buf());
    drop(session);
    // A record of a newer warden, written whole.
    fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap()
        .write_all(b"{\"type\":\"checkpoint\",\"ts\":\"c\"}\n")
        .unwrap();
    let before = fs::read(&path).unwrap();
    match store.open(&id) {
        Err(SessionError::Corrupt {
            path: p,
            line,
            reason,
        }) => {
            assert_eq!((p.as_path(), line), (path.as_path(), 3));
            assert!(reason.contains("checkpoint"), "{reason}");
        }
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(fs::read(&path).unwrap(), before, "nothing is cut");
}

/// A message recorded from the borrowed message is the line its record
/// makes, and reads back as it.
#[test]
fn a_message_appended_borrowed_reads_back_as_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let store = SessionStore::new(StateDir::open(dir.path(), "s").unwrap());
    let mut session = store.create().unwrap();
    let message = Message::Assistant {
        content: Some("a \"b\"\n".into()),
        tool_calls: vec![crate::ToolCall::new("c1", "write_file", r#"{"path":"a"}"#)],
    };
    session
        .append_message("2026-01-01T00:00:00Z", &message)
        .unwrap();
    let id = session.id().to_string();
    drop(session);
    let (_, records) = store.open(&id).unwrap();
    let want = Record::Message {
        ts: "2026-01-01T00:00:00Z".into(),
        message,
    };
    assert!(records.contains(&want), "{records:?}");
}
