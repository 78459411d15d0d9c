use super::*;

fn spec(name: &str, params: &str) -> GuestSpec {
    GuestSpec {
        name: name.into(),
        description: "d".into(),
        parameters: params.into(),
        aliases: vec![],
        mutates: false,
        effects: None,
    }
}

const READ: &str = r#"{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1}},"required":["path"],"additionalProperties":false}"#;

#[test]
fn bad_specs_are_rejected_with_the_reason() {
    let e = |s: Vec<GuestSpec>| check_specs(s).unwrap_err();
    assert!(e(vec![]).contains("no tools"));
    assert!(e(vec![spec("Bad-Name", "{}")]).contains("not snake_case"));
    assert!(e(vec![spec("a", "{not json")]).contains("not valid JSON"));
    assert!(e(vec![spec("a", r#"{"type":42}"#)]).contains("must describe an object"));
    assert!(
        e(vec![spec("a", r#"{"properties":{"x":{"type":"nope"}}}"#)])
            .contains("not a valid JSON Schema")
    );
    assert!(e(vec![spec("a", "[]")]).contains("must be a JSON Schema object"));
    assert!(e(vec![spec("dup", "{}"), spec("dup", "{}")]).contains("two tools are named `dup`"));
}

fn check(checked: &CheckedSpec, args: &str) -> Result<String, ToolError> {
    let value = checked.parse_args(args)?;
    checked.check_args(&value)?;
    Ok(value.to_string())
}

#[test]
fn args_are_validated_with_an_actionable_message() {
    let checked = check_specs(vec![spec("read_file", READ)])
        .unwrap()
        .remove(0);
    assert_eq!(
        check(&checked, r#"{"path":"a"}"#).unwrap(),
        r#"{"path":"a"}"#
    );
    let e = check(&checked, "{path: a}").unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgs);
    assert!(e.message.contains("not valid JSON"), "{}", e.message);
    assert!(
        e.message.contains("{path: string, offset?: integer}"),
        "{}",
        e.message
    );
    let e = check(&checked, "[1]").unwrap_err();
    assert!(
        e.message.contains("must be a JSON object, not an array"),
        "{}",
        e.message
    );
    let e = check(&checked, r#"{"path":"a","offset":0}"#).unwrap_err();
    assert!(e.message.contains("at `/offset`"), "{}", e.message);
    let e = check(&checked, r#"{"offset":2}"#).unwrap_err();
    assert!(
        e.message.contains("\"path\" is a required property"),
        "{}",
        e.message
    );
    // Empty arguments mean an empty object.
    assert!(
        check(&checked, "")
            .unwrap_err()
            .message
            .contains("required")
    );
}

#[test]
fn a_schema_bomb_is_a_load_error() {
    let mut defs = serde_json::Map::new();
    for i in 0..40 {
        let next = format!("#/$defs/d{}", i + 1);
        defs.insert(
            format!("d{i}"),
            serde_json::json!({"anyOf": [{"$ref": next}, {"$ref": next}]}),
        );
    }
    defs.insert("d40".into(), serde_json::json!({"type": "string"}));
    let schema = serde_json::json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs});
    let e = check_specs(vec![spec("bomb", &schema.to_string())]).unwrap_err();
    assert!(
        e.contains("tool `bomb`") && e.contains("too complex"),
        "{e}"
    );
}

#[test]
fn effects_must_name_arguments_the_schema_has() {
    use crate::bindings::{Access, Content, Effect};
    let with = |effects: Vec<Effect>| {
        let mut s = spec("w", READ);
        s.effects = Some(effects);
        check_specs(vec![s])
    };
    let effect = |argument: &str, access: Access| Effect {
        argument: argument.into(),
        access,
        follow: false,
    };
    assert!(with(vec![effect("path", Access::Read)]).is_ok());
    let e = with(vec![effect("file", Access::Read)]).unwrap_err();
    assert_eq!(
        e,
        "tool `w`: its effect on `file` names argument `file`, which its parameters do not have"
    );
    let e = with(vec![effect(
        "path",
        Access::Write(Content::Whole("text".into())),
    )])
    .unwrap_err();
    assert!(e.contains("names argument `text`"), "{e}");
    let e = with(vec![effect("path", Access::Delete(Some("force".into())))]).unwrap_err();
    assert!(e.contains("names argument `force`"), "{e}");
}
