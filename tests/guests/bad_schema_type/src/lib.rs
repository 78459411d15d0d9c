//! Broken component: its only tool has parameters that are JSON but not a
//! valid JSON Schema (`"type": 42`).

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "bad_schema_type".into(),
            description: "Parameters are JSON but not a valid JSON Schema.".into(),
            parameters: r#"{"type": 42}"#.into(),
            aliases: vec![],
            mutates: false,
            effects: None,
        }]
    }

    fn call(name: String, _args: String) -> Result<String, Error> {
        Ok(format!("{name} was called"))
    }
}

export!(Component);
