//! Broken component: its only tool has parameters that are not JSON.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "bad_schema".into(),
            description: "Parameters are not valid JSON.".into(),
            parameters: "{not json".into(),
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
