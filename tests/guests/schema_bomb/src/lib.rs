//! Hostile component: an argument schema of 40 nested two-way `anyOf`
//! (small as text, through `$defs`), which makes a naive validator take
//! exponential time.

wit_bindgen::generate!({ path: "../../../wit", world: "warden:tool/component" });

use exports::warden::tool::tool::{Error, Guest, Spec};

struct Component;

fn bomb(depth: usize) -> String {
    let mut defs = vec![r#""d0":{"type":"integer"}"#.to_string()];
    for i in 1..=depth {
        let inner = format!(r##"{{"$ref":"#/$defs/d{}"}}"##, i - 1);
        defs.push(format!(
            r#""d{i}":{{"anyOf":[{inner},{{"type":"object","properties":{{"x":{inner}}}}},{inner}]}}"#
        ));
    }
    format!(
        r##"{{"type":"object","properties":{{"v":{{"$ref":"#/$defs/d{depth}"}}}},"$defs":{{{}}}}}"##,
        defs.join(",")
    )
}

impl Guest for Component {
    fn describe() -> Vec<Spec> {
        vec![Spec {
            name: "schema_bomb".into(),
            description: "Has a schema that is expensive to validate.".into(),
            parameters: bomb(40),
            aliases: vec![],
            mutates: false,
            effects: None,
        }]
    }

    fn call(_name: String, _args: String) -> Result<String, Error> {
        Ok("ran".into())
    }
}

export!(Component);
