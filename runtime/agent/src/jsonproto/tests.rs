use serde_json::{Value, json};

use super::*;

fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: "read_file".into(),
            description: "Read a text file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
                "required": ["path"],
            }),
        },
        ToolDef {
            name: "tag".into(),
            description: "Tag a file.".into(),
            parameters: json!({
                "type": "object",
                "properties": {"tag": {"$ref": "#/$defs/Tag"}},
                "required": ["tag"],
                "$defs": {"Tag": {"type": "string", "enum": ["a", "b"]}},
            }),
        },
    ]
}

fn valid(schema: &Value, step: Value) -> bool {
    jsonschema::validator_for(schema).unwrap().is_valid(&step)
}

#[test]
fn the_schema_allows_a_call_of_one_offered_tool_with_valid_arguments_or_the_answer() {
    let schema = step_schema(&tools());
    assert!(valid(
        &schema,
        json!({"tool": "read_file", "arguments": {"path": "a"}})
    ));
    assert!(valid(&schema, json!({"answer": "done"})));
    assert!(valid(
        &schema,
        json!({"tool": "tag", "arguments": {"tag": "b"}})
    ));
    // A tool's own definitions still resolve once moved to the root.
    assert!(!valid(
        &schema,
        json!({"tool": "tag", "arguments": {"tag": "c"}})
    ));
    assert_eq!(schema["$defs"]["tag.Tag"]["enum"], json!(["a", "b"]));
    assert!(!valid(
        &schema,
        json!({"tool": "read_file", "arguments": {}})
    ));
    assert!(!valid(
        &schema,
        json!({"tool": "delete", "arguments": {"path": "a"}})
    ));
    assert!(!valid(&schema, json!({"tool": "read_file"})));
    assert!(!valid(&schema, json!({"answer": "x", "tool": "read_file"})));
    assert!(!valid(&schema, json!("prose")));
    assert_eq!(schema["oneOf"].as_array().unwrap().len(), 3);
}

#[test]
fn a_reply_is_read_once_into_a_call_an_answer_or_what_is_wrong() {
    assert_eq!(
        parse_step(r#" {"tool": "read_file", "arguments": {"path": "a"}} "#),
        Step::Call {
            name: "read_file".into(),
            arguments: json!({"path": "a"})
        }
    );
    assert_eq!(
        parse_step("```json\n{\"tool\": \"list_files\"}\n```"),
        Step::Call {
            name: "list_files".into(),
            arguments: json!({})
        }
    );
    assert_eq!(
        parse_step(r#"{"answer": "Wrote it."}"#),
        Step::Answer("Wrote it.".into())
    );
    assert_eq!(
        parse_step("I wrote the summary."),
        Step::Answer("I wrote the summary.".into())
    );
    let cut = parse_step(r#"{"tool": "write_file", "arguments": {"path": "a", "con"#);
    assert!(
        matches!(&cut, Step::Invalid(e) if e.contains("not valid JSON")),
        "{cut:?}"
    );
    let text = parse_step(r#"{"tool": "read_file", "arguments": "{\"path\": \"a\"}"}"#);
    assert_eq!(
        text,
        Step::Invalid("\"arguments\" is a string, not a JSON object".into())
    );
    assert!(matches!(parse_step("[1]"), Step::Invalid(e) if e.contains("an array")));
    assert!(matches!(parse_step("{}"), Step::Invalid(e) if e.contains("neither")));
}

#[test]
fn the_instructions_show_both_shapes_and_every_tool() {
    let s = instructions(&tools());
    assert!(
        s.contains(r#"{"tool": "read_file", "arguments": {...}}"#),
        "{s}"
    );
    assert!(s.contains(r#"{"answer": "what you did, briefly"}"#), "{s}");
    assert!(
        s.contains("- read_file(path: string, limit?: integer) — Read a text file.\n"),
        "{s}"
    );
    assert!(s.contains("- tag(tag: any) — Tag a file.\n"), "{s}");
}
