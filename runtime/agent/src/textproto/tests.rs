use serde_json::{Value, json};

use super::*;

mod errors;

fn params(name: &str) -> Option<Vec<String>> {
    let names: &[&str] = match name {
        "read_file" => &["path", "limit"],
        "write_file" => &["path", "content"],
        "search" => &["pattern", "path", "options"],
        "list_dir" => &[],
        _ => return None,
    };
    Some(names.iter().map(|s| s.to_string()).collect())
}

fn p(reply: &str) -> Vec<Segment> {
    parse(reply, &params)
}

/// The calls of a reply, failing on anything malformed.
fn calls(reply: &str) -> Vec<(String, Value)> {
    p(reply)
        .into_iter()
        .filter_map(|s| match s {
            Segment::Call(c) => Some((c.name, c.arguments)),
            Segment::Malformed { raw, error } => panic!("malformed {raw:?}: {error}"),
            Segment::Text(_) => None,
        })
        .collect()
}

fn one(reply: &str) -> Value {
    let mut c = calls(reply);
    assert_eq!(c.len(), 1, "{reply}");
    c.remove(0).1
}

/// The single error of a reply.
fn error(reply: &str) -> String {
    let errors: Vec<String> = p(reply)
        .into_iter()
        .filter_map(|s| match s {
            Segment::Malformed { error, .. } => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(errors.len(), 1, "{reply}: {errors:?}");
    errors[0].clone()
}

fn text(s: &str) -> Segment {
    Segment::Text(s.into())
}

#[test]
fn prose_and_two_calls() {
    let reply = "I'll write the notes first.\n\
        [TOOL] write_file(\"notes, (draft).txt\", \"a \\\"quoted\\\" line\\n\") [/TOOL]\n\
        Then check the manifest:\n\
        [TOOL] read_file({\"path\": \"Cargo.toml\"}) [/TOOL]";
    let segments = p(reply);
    assert_eq!(segments.len(), 4, "{segments:#?}");
    assert_eq!(segments[0], text("I'll write the notes first."));
    assert_eq!(segments[2], text("Then check the manifest:"));
    let Segment::Call(write) = &segments[1] else {
        panic!("{segments:?}")
    };
    assert_eq!(write.name, "write_file");
    assert_eq!(
        write.arguments,
        json!({"path": "notes, (draft).txt", "content": "a \"quoted\" line\n"})
    );
    assert_eq!(
        write.raw,
        "[TOOL] write_file(\"notes, (draft).txt\", \"a \\\"quoted\\\" line\\n\") [/TOOL]"
    );
    let Segment::Call(read) = &segments[3] else {
        panic!("{segments:?}")
    };
    assert_eq!(
        (read.name.as_str(), &read.arguments),
        ("read_file", &json!({"path": "Cargo.toml"}))
    );
}

#[test]
fn argument_forms() {
    let expect = json!({"path": "a b.txt", "limit": 3});
    assert_eq!(
        one(r#"[TOOL] read_file({"path": "a b.txt", "limit": 3}) [/TOOL]"#),
        expect
    );
    assert_eq!(one(r#"[TOOL] read_file("a b.txt", 3) [/TOOL]"#), expect);
    assert_eq!(
        one(r#"[TOOL] read_file(path="a b.txt", limit=3) [/TOOL]"#),
        expect
    );
    assert_eq!(
        one(r#"[TOOL] read_file("a b.txt", limit=3) [/TOOL]"#),
        expect
    );
    assert_eq!(
        one(r#"[TOOL] read_file(path: "a b.txt", limit: 3) [/TOOL]"#),
        expect
    );
    assert_eq!(
        one(r#"[TOOL] read_file("path": "a b.txt", "limit": 3) [/TOOL]"#),
        expect
    );
    assert_eq!(one("[TOOL] read_file('a b.txt', 3,) [/TOOL]"), expect);
    assert_eq!(one("[TOOL] list_dir() [/TOOL]"), json!({}));
    assert_eq!(one("[TOOL] list_dir( ) [/TOOL]"), json!({}));
    assert_eq!(one("[TOOL] list_dir [/TOOL]"), json!({}));
    assert_eq!(one("[TOOL] read_file({}) [/TOOL]"), json!({}));
}

#[test]
fn keyword_order_is_kept() {
    let args = one(r#"[TOOL] read_file(limit=1, path="x") [/TOOL]"#);
    assert_eq!(
        args.as_object().unwrap().keys().collect::<Vec<_>>(),
        ["limit", "path"]
    );
}

#[test]
fn string_escapes() {
    let content = |reply: &str| one(reply)["content"].as_str().unwrap().to_string();
    assert_eq!(
        content(r#"[TOOL] write_file("f", 'it\'s \\ "x"\t\r') [/TOOL]"#),
        "it's \\ \"x\"\t\r"
    );
    assert_eq!(
        content(r#"[TOOL] write_file("f", "\u00e9\u{1F600}\ud83d\ude00") [/TOOL]"#),
        "é😀😀"
    );
    assert_eq!(
        content(r#"[TOOL] write_file("f", "\\d+ and \d+ \/") [/TOOL]"#),
        "\\d+ and \\d+ /"
    );
    assert_eq!(
        content("[TOOL] write_file(\"f\", \"two\nlines\") [/TOOL]"),
        "two\nlines"
    );
    assert_eq!(
        content("[TOOL] write_file(\"f\", \"\"\"say \"hi\"\n\"\"\") [/TOOL]"),
        "say \"hi\"\n"
    );
    assert_eq!(content(r#"[TOOL] write_file("f", "") [/TOOL]"#), "");
    assert_eq!(
        content(r#"[TOOL] write_file("f", "ends with [/TOOL] and )") [/TOOL]"#),
        "ends with [/TOOL] and )"
    );
}

#[test]
fn value_kinds() {
    let args = one(
        r#"[TOOL] search(-3, 2.5, {"n": 1e3, "b": [true, false, null], 'q': True, bare: None, "u": 18446744073709551615}) [/TOOL]"#,
    );
    assert_eq!(
        args,
        json!({"pattern": -3, "path": 2.5, "options": {"n": 1000.0, "b": [true, false, null], "q": true, "bare": null, "u": u64::MAX}})
    );
    assert_eq!(
        one(r#"[TOOL] search(["a", 'b',], options={}) [/TOOL]"#),
        json!({"pattern": ["a", "b"], "options": {}})
    );
    // A sole object is the argument object; an object for a parameter is named.
    assert_eq!(
        one(r#"[TOOL] search(options={"path": 1}) [/TOOL]"#),
        json!({"options": {"path": 1}})
    );
}

#[test]
fn layout_tolerance() {
    let expect = json!({"path": "x", "limit": 3});
    assert_eq!(
        one("[tool]read_file(\n  path = \"x\",\n  limit = 3\n)\n[/tool]"),
        expect
    );
    assert_eq!(one("[Tool]   read_file ( \"x\" , 3 )   [/Tool]"), expect);
    // A forgotten closing tag at the end (or eaten by a stop sequence).
    assert_eq!(
        p("Reading.\n[TOOL] read_file(\"x\", 3)"),
        vec![text("Reading."), p("[TOOL] read_file(\"x\", 3)")[0].clone()]
    );
    assert_eq!(one("[TOOL] read_file(\"x\", 3)\n"), expect);
    // Forgotten before the next call or before prose: both calls run.
    let c = calls("[TOOL] read_file(\"a\")\n[TOOL] read_file(\"b\") [/TOOL]");
    assert_eq!(
        c,
        [
            ("read_file".into(), json!({"path": "a"})),
            ("read_file".into(), json!({"path": "b"}))
        ]
    );
    let segments = p("[TOOL] read_file(\"a\")\nDone.");
    assert!(
        matches!(&segments[..], [Segment::Call(_), Segment::Text(t)] if t == "Done."),
        "{segments:?}"
    );
}

#[test]
fn backticks_and_fences_are_stripped() {
    let segments = p("Let me look:\n```\n[TOOL] read_file(\"x\") [/TOOL]\n```\nThat's all.");
    assert_eq!(segments.len(), 3, "{segments:?}");
    assert_eq!(
        (&segments[0], &segments[2]),
        (&text("Let me look:"), &text("That's all."))
    );
    let segments =
        p("```text\n[TOOL] read_file(\"a\") [/TOOL]\n[TOOL] read_file(\"b\") [/TOOL]\n```");
    assert!(
        segments.iter().all(|s| matches!(s, Segment::Call(_))),
        "{segments:?}"
    );
    let segments = p("Run `ls` first, then `[TOOL] read_file(\"x\") [/TOOL]` please");
    assert_eq!(segments[0], text("Run `ls` first, then"));
    assert_eq!(segments[2], text("please"));
    assert_eq!(
        one("[TOOL] `read_file(\"x\")` [/TOOL]"),
        json!({"path": "x"})
    );
    assert_eq!(
        one("[TOOL]\n```python\nread_file(\"x\")\n```\n[/TOOL]"),
        json!({"path": "x"})
    );
    // A fence around a call whose [/TOOL] was forgotten.
    let segments = p("```\n[TOOL] read_file(\"x\")\n```\nDone.");
    assert!(
        matches!(&segments[..], [Segment::Call(_), Segment::Text(t)] if t == "Done."),
        "{segments:?}"
    );
    // A closed code block before the call is prose, not a wrapper.
    let segments = p("```\ncode\n```\n[TOOL] list_dir() [/TOOL]");
    assert_eq!(segments[0], text("```\ncode\n```"));
}

#[test]
fn plain_text_and_empty_pieces() {
    assert_eq!(p("  just an answer \n"), vec![text("just an answer")]);
    assert_eq!(p(""), vec![]);
    let segments = p("\n[TOOL] list_dir() [/TOOL]\n\n");
    assert!(
        matches!(&segments[..], [Segment::Call(c)] if c.raw == "[TOOL] list_dir() [/TOOL]"),
        "{segments:?}"
    );
}

#[test]
fn json_call_form() {
    assert_eq!(
        one(r#"[TOOL] {"name": "read_file", "arguments": {"path": "x"}} [/TOOL]"#),
        json!({"path": "x"})
    );
    assert_eq!(
        one(r#"[TOOL] {"name": "read_file", "arguments": "{\"path\": \"x\"}"} [/TOOL]"#),
        json!({"path": "x"})
    );
    assert_eq!(
        error(r#"[TOOL] {"name": "nope"} [/TOOL]"#),
        "unknown tool `nope`"
    );
    assert_eq!(
        error(r#"[TOOL] {"arguments": {}} [/TOOL]"#),
        "a JSON call needs a string \"name\""
    );
}

#[test]
fn param_names_follow_schema_order() {
    let schema = json!({"properties": {"z": {}, "a": {}, "m": {}}});
    assert_eq!(param_names(&schema), ["z", "a", "m"]);
    assert!(param_names(&json!({})).is_empty());
}

#[test]
fn an_empty_quoted_key_is_a_key() {
    // Found by the fuzz target `textproto`: `{"": …}` was "expected a key".
    assert_eq!(
        one(r#"[TOOL] write_file({"path": "a", "content": {"": null}}) [/TOOL]"#),
        json!({"path": "a", "content": {"": null}})
    );
    assert_eq!(
        one(r#"[TOOL] search(pattern={'': 1}) [/TOOL]"#),
        json!({"pattern": {"": 1}})
    );
    // A missing bare key is still an error.
    assert!(error("[TOOL] search(pattern={: 1}) [/TOOL]").contains("expected a key"));
}
