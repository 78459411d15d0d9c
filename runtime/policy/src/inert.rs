//! Text from a workspace, a component or the model, made inert for a
//! terminal.
//!
//! A directory name, a tool description or a file the model writes can hold
//! carriage returns, ANSI escapes or bidirectional overrides that redraw
//! what the user reads ("no access" over "read-write /"). Every such string
//! passes through [`inert`] (one line) or [`inert_text`] (keeps line breaks
//! and tabs) before it is printed, so what is shown is what is there.

use std::borrow::Cow;
use std::fmt::Write as _;

/// `s` with every control character, escape, line break and bidirectional
/// or invisible formatting character spelled out (`\r`, `\x1b`,
/// `\u{202e}`), for a single line of output.
pub fn inert(s: &str) -> Cow<'_, str> {
    escape(s, false)
}

/// Like [`inert`], but line feeds and tabs are kept: for multi-line text
/// such as a file preview or a streamed answer.
pub fn inert_text(s: &str) -> Cow<'_, str> {
    escape(s, true)
}

fn escape(s: &str, keep_lines: bool) -> Cow<'_, str> {
    let keep = |c: char| keep_lines && (c == '\n' || c == '\t');
    if !s.chars().any(|c| needs_escape(c) && !keep(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !needs_escape(c) || keep(c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

/// Control characters (C0, DEL, C1) and the formatting characters that
/// reorder or hide text: bidi embeddings, overrides and isolates, marks,
/// zero-width characters, the line and paragraph separators.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// What kind of JSON value a foreign value is, in words for a message
/// ("a string", "an array"), never the value itself.
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        assert!(matches!(inert("read-write /home/u/ö"), Cow::Borrowed(_)));
        assert!(matches!(inert_text("a\n\tb"), Cow::Borrowed(_)));
    }

    #[test]
    fn controls_escapes_and_bidi_are_spelled_out() {
        assert_eq!(inert("a\rno access\x1b[2K"), "a\\rno access\\x1b[2K");
        assert_eq!(inert("x\u{202e}gpj.exe"), "x\\u{202e}gpj.exe");
        assert_eq!(inert("a\nb\tc\u{7f}\u{9b}"), "a\\nb\\tc\\x7f\\x9b");
        assert_eq!(
            inert("zero\u{200b}width\u{feff}"),
            "zero\\u{200b}width\\u{feff}"
        );
        assert_eq!(
            inert_text("l1\nl2\t\r\x1b]0;t\x07"),
            "l1\nl2\t\\r\\x1b]0;t\\x07"
        );
    }
}
