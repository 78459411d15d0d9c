//! Hostile component: `describe()` never returns.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        let mut n = 0u64;
        loop {
            n = std::hint::black_box(n.wrapping_add(1));
        }
    }

    fn call(_name: String, _args: String) -> Result<String, Error> {
        Ok(String::new())
    }
}

export!(Component);
