use serde_json::{Value, json};

use super::*;
use crate::textproto::{Segment, parse};

fn tool(name: &str, description: &str, parameters: Value) -> ToolDef {
    ToolDef {
        name: name.into(),
        description: description.into(),
        parameters,
    }
}

#[test]
fn instructions_show_syntax_example_and_tools() {
    let tools = [
        tool(
            "read_file",
            "Read a text file.\nLonger details.",
            json!({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["path"]}),
        ),
        tool(
            "open",
            "",
            json!({"properties": {"mode": {"enum": ["r", "w"]}, "tags": {"type": "array", "items": {"type": "string"}}, "n": {"type": ["integer", "null"]}}}),
        ),
    ];
    let s = instructions(&tools);
    assert!(s.contains("[TOOL] tool_name(arguments) [/TOOL]"), "{s}");
    assert!(s.contains("[TOOL] read_file(path=\"...\") [/TOOL]"), "{s}");
    assert!(
        s.contains("[TOOL] read_file({\"path\": \"...\"}) [/TOOL]"),
        "{s}"
    );
    assert!(
        s.contains("- read_file(path: string, limit?: integer) — Read a text file.\n"),
        "{s}"
    );
    assert!(
        s.contains("- open(mode?: \"r\"|\"w\", tags?: array of string, n?: integer|null)\n"),
        "{s}"
    );
    assert!(!s.contains("Longer details"));
    assert_eq!(instructions(&[]), "");
    // Every example it teaches parses into the same call.
    let params = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name)?;
        Some(crate::textproto::param_names(&tool.parameters))
    };
    let segments = parse(&s, &params);
    let calls: Vec<&Value> = segments
        .iter()
        .filter_map(|seg| match seg {
            Segment::Call(c) if c.name == "read_file" => Some(&c.arguments),
            _ => None,
        })
        .collect();
    assert_eq!(calls, [&json!({"path": "..."}), &json!({"path": "..."})]);
}

#[test]
fn results_are_blocks_in_order_with_errors_marked() {
    let s = results_message(&[
        ("read_file".into(), Ok("line 1\nline 2\n".into())),
        ("write_file".into(), Err("permission denied".into())),
        ("list_dir".into(), Ok(String::new())),
    ]);
    assert_eq!(
        s,
        "[RESULT read_file]\nline 1\nline 2\n[/RESULT]\n\n\
         [RESULT write_file ERROR]\npermission denied\n[/RESULT]\n\n\
         [RESULT list_dir]\n(no output)\n[/RESULT]"
    );
}

#[test]
fn malformed_message_explains_and_shows_the_form() {
    let long = format!("[TOOL] write_file(\"f\", \"{}", "x".repeat(1000));
    let s = malformed_message(&[
        (
            "[TOOL] read_file(\"x) [/TOOL]".into(),
            "unterminated string".into(),
        ),
        (long, "unterminated string".into()),
    ]);
    assert!(
        s.contains("1. [TOOL] read_file(\"x) [/TOOL]\n   Error: unterminated string\n"),
        "{s}"
    );
    assert!(
        s.contains("2. [TOOL] write_file(") && s.contains(" …\n"),
        "{s}"
    );
    assert!(s.len() < 1500, "the long call is cut: {}", s.len());
    assert!(
        s.contains("[TOOL] tool_name(name=\"value\", count=3) [/TOOL]"),
        "{s}"
    );
    assert!(s.contains("were not run"));
}

#[test]
fn results_blocks_are_found_and_shortened_and_nothing_else() {
    let results = results_message(&[
        ("read_file".into(), Ok("a".repeat(50))),
        ("grep".into(), Err("no such file".into())),
    ]);
    assert!(is_results_message(&results));
    assert!(is_results_message(&malformed_message(&[(
        "[TOOL] x(".into(),
        "unterminated".into()
    )])));
    assert!(!is_results_message("please read [RESULT x] for me"));
    // A pasted line that only begins like a header, or a header never
    // closed, is the user's text.
    for pasted in [
        "the log says:\n[RESULT pending] for job 4\n[/RESULT]",
        "the log says:\n[RESULT of the build]\nfailed\n[/RESULT]",
        "the log says:\n[RESULT build]\nfailed, see above",
        "[RESULT ]\nx\n[/RESULT]",
    ] {
        assert!(!is_results_message(pasted), "{pasted}");
        assert_eq!(shorten_results(pasted, &|_| "-".into()), pasted);
    }
    let short = shorten_results(&results, &|out| format!("<{}>", out.len()));
    assert_eq!(
        short,
        "[RESULT read_file]\n<50>\n[/RESULT]\n\n[RESULT grep ERROR]\n<12>\n[/RESULT]"
    );
    // After a summary put in front of it, the blocks are still found.
    let prefixed = format!("[summary]\n\n{results}");
    assert!(is_results_message(&prefixed));
    assert!(
        shorten_results(&prefixed, &|_| "-".into())
            .starts_with("[summary]\n\n[RESULT read_file]\n-\n")
    );
}
