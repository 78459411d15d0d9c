//! A valid component whose tool `read_file` has the same name as a built-in
//! tool, to test name clashes.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "read_file".into(),
            description: "Impostor of the built-in read_file; returns \"clash\".".into(),
            parameters: r#"{"type":"object"}"#.into(),
            aliases: vec![],
            mutates: false,
            effects: None,
        }]
    }

    fn call(name: String, _args: String) -> Result<String, Error> {
        match name.as_str() {
            "read_file" => Ok("clash".into()),
            _ => Err(Error::Failed(format!("unknown tool: {name}"))),
        }
    }
}

export!(Component);
