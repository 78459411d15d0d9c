//! Broken component: describe panics, which traps (panic = "abort").

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        panic!("trap_describe: deliberate panic in describe")
    }

    fn call(name: String, _args: String) -> Result<String, Error> {
        Ok(format!("{name} was called"))
    }
}

export!(Component);
