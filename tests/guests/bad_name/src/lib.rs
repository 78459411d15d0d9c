//! Broken component: its only tool is named `Bad-Name!`, which is not snake_case.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "Bad-Name!".into(),
            description: "A tool whose name is not snake_case.".into(),
            parameters: r#"{"type":"object"}"#.into(),
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
