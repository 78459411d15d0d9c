//! Limits on a tool's argument schema, checked when the component loads, so
//! that validating a call's arguments in the host is bounded.
//!
//! Validation applies every subschema that can apply; through `$ref`s a
//! small schema can name exponentially many (40 nested two-way `anyOf`s
//! over shared definitions is 2^40). The work of one validation is at most
//! the number of schema nodes reachable with refs followed (times the size
//! of the arguments), so that number is what is capped, along with the
//! schema's size and depth. Recursive refs are refused: a tool's arguments
//! never need them, and they make the count unbounded.

use std::collections::HashMap;

use serde_json::Value;

/// Largest schema text, in bytes.
const MAX_BYTES: usize = 256 << 10;
/// Deepest nesting of the schema document.
const MAX_DEPTH: usize = 64;
/// Most schema nodes one validation may visit, refs followed.
pub(crate) const MAX_NODES: u64 = 100_000;

/// Checks `schema` (whose text was `bytes` long); the error says what is
/// over which limit.
pub(crate) fn check(schema: &Value, bytes: usize) -> Result<(), String> {
    if bytes > MAX_BYTES {
        return Err(format!(
            "its argument schema is {} KiB, over the {} KiB limit",
            bytes >> 10,
            MAX_BYTES >> 10
        ));
    }
    let mut walk = Walk {
        root: schema,
        memo: HashMap::new(),
        active: Vec::new(),
    };
    let nodes = walk.cost(schema, "#", 0)?;
    if nodes > MAX_NODES {
        return Err(format!(
            "its argument schema is too complex to check (over {MAX_NODES} subschemas once its \
             $refs are followed, e.g. nested anyOf/oneOf/allOf over shared definitions); \
             simplify it"
        ));
    }
    Ok(())
}

struct Walk<'a> {
    root: &'a Value,
    /// Cost of each ref target already computed.
    memo: HashMap<String, u64>,
    /// Ref targets being computed: seeing one again is a cycle.
    active: Vec<String>,
}

impl<'a> Walk<'a> {
    /// Nodes reachable from `node`, with refs followed; saturating.
    fn cost(&mut self, node: &'a Value, at: &str, depth: usize) -> Result<u64, String> {
        if depth > MAX_DEPTH {
            return Err(format!(
                "its argument schema nests deeper than {MAX_DEPTH} levels (at {at})"
            ));
        }
        let mut total: u64 = 1;
        match node {
            Value::Object(map) => {
                if let Some(target) = map.get("$ref").and_then(Value::as_str) {
                    total = total.saturating_add(self.reference(target)?);
                }
                for (k, v) in map {
                    if matches!(v, Value::Object(_) | Value::Array(_)) {
                        total =
                            total.saturating_add(self.cost(v, &format!("{at}/{k}"), depth + 1)?);
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    if matches!(v, Value::Object(_) | Value::Array(_)) {
                        total =
                            total.saturating_add(self.cost(v, &format!("{at}/{i}"), depth + 1)?);
                    }
                }
            }
            _ => {}
        }
        // Past the cap the exact number does not matter: stop early.
        Ok(total.min(MAX_NODES + 1))
    }

    fn reference(&mut self, target: &str) -> Result<u64, String> {
        if let Some(&n) = self.memo.get(target) {
            return Ok(n);
        }
        let Some(pointer) = target.strip_prefix('#') else {
            return Err(format!(
                "its argument schema refers to `{target}` outside itself; only local refs \
                 (`#/$defs/...`) are allowed"
            ));
        };
        if self.active.iter().any(|t| t == target) {
            return Err(format!(
                "its argument schema is recursive (`{target}` refers back to itself); \
                 tool arguments must not need recursion"
            ));
        }
        let node = self.root.pointer(pointer).ok_or_else(|| {
            format!("its argument schema refers to `{target}`, which does not exist")
        })?;
        self.active.push(target.to_string());
        let n = self.cost(node, target, self.active.len());
        self.active.pop();
        let n = n?;
        self.memo.insert(target.to_string(), n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn bomb(levels: usize) -> Value {
        let mut defs = serde_json::Map::new();
        for i in 0..levels {
            let next = format!("#/$defs/d{}", i + 1);
            defs.insert(
                format!("d{i}"),
                json!({"anyOf": [{"$ref": next}, {"$ref": next, "minLength": 1}]}),
            );
        }
        defs.insert(format!("d{levels}"), json!({"type": "string"}));
        json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/d0"}}, "$defs": defs})
    }

    #[test]
    fn ordinary_schemas_pass() {
        let s = json!({"type": "object", "properties": {"path": {"type": "string"},
            "mode": {"anyOf": [{"const": "a"}, {"const": "b"}]}}, "required": ["path"]});
        assert_eq!(check(&s, 200), Ok(()));
        assert_eq!(check(&bomb(5), 500), Ok(()));
    }

    #[test]
    fn a_ref_bomb_is_refused_at_load() {
        let e = check(&bomb(40), 4000).unwrap_err();
        assert!(e.contains("too complex"), "{e}");
    }

    #[test]
    fn recursion_remote_refs_depth_and_size_are_refused() {
        let rec = json!({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"});
        assert!(check(&rec, 100).unwrap_err().contains("recursive"));
        let remote = json!({"$ref": "https://example.com/s.json"});
        assert!(check(&remote, 100).unwrap_err().contains("only local refs"));
        let missing = json!({"$ref": "#/$defs/nope"});
        assert!(check(&missing, 100).unwrap_err().contains("does not exist"));
        let mut deep = json!({"type": "string"});
        for _ in 0..100 {
            deep = json!({"items": deep});
        }
        assert!(check(&deep, 100).unwrap_err().contains("deeper"));
        assert!(
            check(&json!({}), MAX_BYTES + 1)
                .unwrap_err()
                .contains("KiB")
        );
    }
}
