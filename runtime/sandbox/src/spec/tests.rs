use super::*;

fn spec(name: &str, params: &str) -> GuestSpec {
    GuestSpec {
        name: name.into(),
        description: "d".into(),
        parameters: params.into(),
        aliases: vec![],
        mutates: false,
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

#[test]
fn args_are_validated_with_an_actionable_message() {
    let checked = check_specs(vec![spec("read_file", READ)])
        .unwrap()
        .remove(0);
    assert_eq!(
        checked.check_args(r#"{"path":"a"}"#).unwrap(),
        r#"{"path":"a"}"#
    );
    let e = checked.check_args("{path: a}").unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidArgs);
    assert!(e.message.contains("not valid JSON"), "{}", e.message);
    assert!(
        e.message.contains("{path: string, offset?: integer}"),
        "{}",
        e.message
    );
    let e = checked.check_args("[1]").unwrap_err();
    assert!(
        e.message.contains("must be a JSON object, not an array"),
        "{}",
        e.message
    );
    let e = checked
        .check_args(r#"{"path":"a","offset":0}"#)
        .unwrap_err();
    assert!(e.message.contains("at `/offset`"), "{}", e.message);
    let e = checked.check_args(r#"{"offset":2}"#).unwrap_err();
    assert!(
        e.message.contains("\"path\" is a required property"),
        "{}",
        e.message
    );
    // Empty arguments mean an empty object.
    assert!(
        checked
            .check_args("")
            .unwrap_err()
            .message
            .contains("required")
    );
}
