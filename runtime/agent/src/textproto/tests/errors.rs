//! Malformed calls: the error must say what is wrong and where, and one bad
//! call must not take the rest of the reply down with it.

use serde_json::json;

use super::{error, p, text};
use crate::textproto::Segment;

#[test]
fn errors_say_what_and_where() {
    let cases = [
        (
            r#"[TOOL] read_file("a", 1, 2) [/TOOL]"#,
            "too many positional arguments: `read_file` takes 2 (parameters: path, limit) but 3 were given",
        ),
        (
            "[TOOL] fetch_url(\"x\") [/TOOL]",
            "unknown tool `fetch_url`",
        ),
        (
            r#"[TOOL] read_file("x) [/TOOL]"#,
            "unterminated string: the quote at line 1, column 18 of the call is never closed",
        ),
        (
            "[TOOL] read_file(\"x\"\n[/TOOL]",
            "unbalanced parentheses: the `(` at line 1, column 17 of the call is never closed",
        ),
        (
            r#"[TOOL] read_file("x")) [/TOOL]"#,
            "expected [/TOOL] after the closing `)`, found `)`",
        ),
        (
            "[TOOL] read_file(path=src/main.rs) [/TOOL]",
            "unquoted value `src/main.rs` at line 1, column 23 of the call: strings must be quoted, e.g. \"src/main.rs\"",
        ),
        (
            "[TOOL] read_file('it's.txt') [/TOOL]",
            "expected `,` or `)` after argument 1 at line 1, column 22 of the call, found `s.txt')` \
         (a quote inside a string must be escaped with a backslash)",
        ),
        (
            r#"[TOOL] read_file(path="x", 3) [/TOOL]"#,
            "positional argument after a keyword argument at line 1, column 28 of the call (put positional arguments first)",
        ),
        (
            r#"[TOOL] read_file("x", path="y") [/TOOL]"#,
            "argument `path` is given twice",
        ),
        (
            r#"[TOOL] read_file(pth="x") [/TOOL]"#,
            "unknown parameter `pth` for `read_file` (parameters: path, limit)",
        ),
        (
            r#"[TOOL] list_dir("x") [/TOOL]"#,
            "too many positional arguments: `list_dir` takes 0 (no parameters) but 1 were given",
        ),
        (
            "[TOOL] read_file \"x\" [/TOOL]",
            "expected `(` after the tool name `read_file` at line 1, column 18 of the call, found `\"x\"`",
        ),
        (
            "[TOOL] (\"x\") [/TOOL]",
            "expected a tool name after [TOOL], found `(\"x\")`",
        ),
        (
            r#"[TOOL] write_file("f", "\u{zz}") [/TOOL]"#,
            "invalid unicode escape at line 1, column 25 of the call (use \\uXXXX or \\u{X..})",
        ),
        (
            "[TOOL] search([1, 2) [/TOOL]",
            "expected `,` or `]` in the array at line 1, column 20 of the call, found `)`",
        ),
        (
            "[TOOL] search(--1) [/TOOL]",
            "invalid number `--1` at line 1, column 15 of the call",
        ),
    ];
    for (reply, want) in cases {
        assert_eq!(error(reply), want, "{reply}");
    }
}

#[test]
fn positions_are_relative_to_the_call_and_count_characters() {
    let e = error("Ünïcødé prose\n[TOOL] write_file(\n  \"é.txt\",\n  \"oops)\n[/TOOL]");
    assert_eq!(
        e,
        "unterminated string: the quote at line 3, column 3 of the call is never closed"
    );
}

#[test]
fn a_bad_call_does_not_swallow_the_next() {
    let segments = p("[TOOL] read_file(\"x) [/TOOL] between [TOOL] read_file(\"y\") [/TOOL]");
    assert!(
        matches!(&segments[0], Segment::Malformed { raw, .. } if raw == "[TOOL] read_file(\"x) [/TOOL]"),
        "{segments:?}"
    );
    assert_eq!(segments[1], text("between"));
    assert!(matches!(&segments[2], Segment::Call(c) if c.arguments == json!({"path": "y"})));
    // No closing tag at all: the malformed call ends where the next begins.
    let segments = p("[TOOL] read_file(\"x)\n[TOOL] list_dir()");
    assert!(
        matches!(&segments[0], Segment::Malformed { raw, .. } if raw == "[TOOL] read_file(\"x)"),
        "{segments:?}"
    );
    assert!(matches!(&segments[1], Segment::Call(c) if c.name == "list_dir"));
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let reply = format!("[TOOL] search({}) [/TOOL]", "[".repeat(10_000));
    assert!(error(&reply).starts_with("values nested too deeply"));
}
