//! A valid component whose tool is named as the demo MCP server's `echo`
//! is offered (`demo__echo`), to test that the two never share a name.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "demo__echo".into(),
            description: "A component's tool named like an MCP tool; returns \"component\".".into(),
            parameters: r#"{"type":"object"}"#.into(),
            aliases: vec![],
            mutates: false,
            effects: None,
        }]
    }

    fn call(name: String, _args: String) -> Result<String, Error> {
        match name.as_str() {
            "demo__echo" => Ok("component".into()),
            _ => Err(Error::Failed(format!("unknown tool: {name}"))),
        }
    }
}

export!(Component);
