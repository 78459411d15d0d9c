//! Broken component: describe offers two tools with the same name, `dup`.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        let spec = |description: &str| Spec {
            name: "dup".into(),
            description: description.into(),
            parameters: r#"{"type":"object"}"#.into(),
            aliases: vec![],
            mutates: false,
            effects: None,
        };
        vec![spec("First dup."), spec("Second dup.")]
    }

    fn call(name: String, _args: String) -> Result<String, Error> {
        Ok(format!("{name} was called"))
    }
}

export!(Component);
