//! What the model writes as text: the `[TOOL] name(args) [/TOOL]` protocol
//! and the calls models write inline although native calls were offered
//! (bare JSON, fences, `<tool_call>` tags). No reply panics either parser;
//! every call found is to a known tool, as written in the reply; and a
//! call written in any of the taught forms, among prose, is found with
//! exactly its arguments.

use arbitrary::{Result, Unstructured};
use serde_json::{Map, Number, Value, json};
use warden_agent::textproto::{Segment, inline_calls, parse};

/// The tools the replies are parsed against, with their parameters in
/// schema order (as in the agent's own tests).
const TOOLS: &[(&str, &[&str])] = &[
    ("read_file", &["path", "limit"]),
    ("write_file", &["path", "content"]),
    ("search", &["pattern", "path", "options"]),
    ("list_dir", &[]),
];

fn params(name: &str) -> Option<Vec<String>> {
    let (_, p) = TOOLS.iter().find(|(n, _)| *n == name)?;
    Some(p.iter().map(|s| s.to_string()).collect())
}

fn known(name: &str) -> bool {
    params(name).is_some()
}

/// `data` as a reply, and as a reply written from a script of calls.
pub fn check(data: &[u8]) {
    any_reply(&crate::text(data));
    let mut u = Unstructured::new(data);
    if let Ok(calls) = Calls::new(&mut u) {
        calls.protocol(&mut u).ok();
        calls.inline(&mut u).ok();
    }
}

/// Whatever the reply, the segments are in reply order, each call's `raw`
/// is where the reply has it, and inline calls name known tools.
fn any_reply(reply: &str) {
    let lower = reply.to_ascii_lowercase();
    let mut at = 0;
    for segment in parse(reply, &params) {
        let raw = match &segment {
            Segment::Text(t) => {
                assert!(!t.is_empty() && t.trim() == t, "prose {t:?}");
                t
            }
            Segment::Call(c) => {
                assert!(known(&c.name), "a call to an unknown tool: {c:?}");
                assert!(c.arguments.is_object(), "{c:?}");
                &c.raw
            }
            Segment::Malformed { raw, error } => {
                assert!(!error.is_empty(), "{raw:?}");
                raw
            }
        };
        let found = reply[at..]
            .find(raw.as_str())
            .unwrap_or_else(|| panic!("{segment:?} is not in the reply after byte {at}"));
        if !matches!(segment, Segment::Text(_)) {
            assert!(lower[at + found..].starts_with("[tool]"), "{segment:?}");
        }
        at += found + raw.len();
    }
    if let Some((_, calls)) = inline_calls(reply, &known) {
        assert!(!calls.is_empty());
        assert!(calls.iter().all(|(name, _)| known(name)), "{calls:?}");
    }
}

/// A JSON value, at most `depth` levels deep.
fn value(u: &mut Unstructured, depth: u32) -> Result<Value> {
    let kinds = if depth == 0 { 5 } else { 7 };
    Ok(match u.int_in_range(0..=kinds - 1)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::Number(Number::from(u.arbitrary::<i64>()?)),
        3 => Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        4 => Value::String(u.arbitrary()?),
        5 => Value::Array(
            (0..u.int_in_range(0..=3)?)
                .map(|_| value(u, depth - 1))
                .collect::<Result<_>>()?,
        ),
        _ => {
            let mut m = Map::new();
            for _ in 0..u.int_in_range(0..=3)? {
                m.insert(u.arbitrary()?, value(u, depth - 1)?);
            }
            Value::Object(m)
        }
    })
}

/// Prose that mentions no tag, fence or bracket the parsers look for.
fn prose(u: &mut Unstructured) -> Result<String> {
    let s: String = u.arbitrary()?;
    Ok(s.chars().filter(|c| !"[]<>`{}".contains(*c)).collect())
}

/// Calls to the known tools, each with arguments for some of its
/// parameters.
#[derive(Debug)]
struct Calls(Vec<(&'static str, Map<String, Value>)>);

impl Calls {
    fn new(u: &mut Unstructured) -> Result<Calls> {
        let mut calls = Vec::new();
        for _ in 0..u.int_in_range(1..=3)? {
            let (name, params) = *u.choose(TOOLS)?;
            let mut args = Map::new();
            for p in params {
                if u.arbitrary()? {
                    args.insert(p.to_string(), value(u, 2)?);
                }
            }
            calls.push((name, args));
        }
        Ok(Calls(calls))
    }

    /// Writes the calls in the text protocol, each in a form the
    /// instructions teach or the parser accepts, with prose around; the
    /// reply must give back exactly these calls.
    fn protocol(&self, u: &mut Unstructured) -> Result<()> {
        let mut reply = prose(u)?;
        for (name, args) in &self.0 {
            let json = |v: &Value| v.to_string();
            let body = match u.int_in_range(0..=3)? {
                // name({"path": "a"})
                0 => format!("{name}({})", json(&Value::Object(args.clone()))),
                // name(path="a", limit=3)
                1 => {
                    let kw: Vec<String> = args
                        .iter()
                        .map(|(k, v)| format!("{k}={}", json(v)))
                        .collect();
                    format!("{name}({})", kw.join(", "))
                }
                // name("a", 3): the parameters in order, while all are given;
                // one object alone would be read as the arguments themselves.
                2 if !matches!(args.values().next(), Some(Value::Object(_))) || args.len() > 1 => {
                    let order = params(name).unwrap();
                    let given: Vec<&str> = order
                        .iter()
                        .map(String::as_str)
                        .take_while(|p| args.contains_key(*p))
                        .collect();
                    if given.len() != args.len() {
                        format!("{name}({})", json(&Value::Object(args.clone())))
                    } else {
                        let pos: Vec<String> = given.iter().map(|p| json(&args[*p])).collect();
                        format!("{name}({})", pos.join(", "))
                    }
                }
                // {"name": ..., "arguments": {...}}
                _ => json(&json!({ "name": name, "arguments": args })),
            };
            let open = *u.choose(&["[TOOL]", "[tool]", "[Tool]"])?;
            reply.push_str(&format!("\n{open} {body} [/TOOL]\n"));
            reply.push_str(&prose(u)?);
        }
        let found: Vec<(String, Value)> = parse(&reply, &params)
            .into_iter()
            .filter_map(|s| match s {
                Segment::Call(c) => Some((c.name, c.arguments)),
                Segment::Malformed { raw, error } => {
                    panic!("{raw:?} is malformed ({error}) in {reply:?}")
                }
                Segment::Text(_) => None,
            })
            .collect();
        let want: Vec<(String, Value)> = self
            .0
            .iter()
            .map(|(n, a)| (n.to_string(), Value::Object(a.clone())))
            .collect();
        assert_eq!(found, want, "{reply:?}");
        Ok(())
    }

    /// Writes the calls as a model writes them inline: tags or fences
    /// ending the reply after prose, or bare JSON alone; the same calls
    /// and prose must come back.
    fn inline(&self, u: &mut Unstructured) -> Result<()> {
        let objects: Vec<Value> = self
            .0
            .iter()
            .map(|(name, args)| {
                let args = Value::Object(args.clone());
                Ok(match u.int_in_range(0..=3)? {
                    0 => json!({ "name": name, "arguments": args }),
                    1 => json!({ "name": name, "parameters": args }),
                    2 => json!({ "name": name, "arguments": args.to_string() }),
                    _ => json!({ "type": "function", "function": { "name": name, "arguments": args } }),
                })
            })
            .collect::<Result<_>>()?;
        let mut text = prose(u)?;
        let form = u.int_in_range(0..=2)?;
        match form {
            0 => {
                for o in &objects {
                    text.push_str(&format!("\n<tool_call>\n{o}\n</tool_call>"));
                }
            }
            1 => {
                let lang = *u.choose(&["json", "", "tool_call"])?;
                for o in &objects {
                    text.push_str(&format!("\n```{lang}\n{o}\n```\n"));
                }
            }
            _ => text = Value::Array(objects.clone()).to_string(),
        }
        let want: Vec<(String, Map<String, Value>)> = self
            .0
            .iter()
            .map(|(n, a)| (n.to_string(), a.clone()))
            .collect();
        let (found_prose, found) =
            inline_calls(&text, &known).unwrap_or_else(|| panic!("no call in {text:?}"));
        assert_eq!(found, want, "{text:?}");
        let before = match form {
            2 => "",
            _ => text.split(['<', '`']).next().unwrap_or_default().trim(),
        };
        assert_eq!(found_prose, before, "{text:?}");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::drive;

    #[test]
    fn seeds() {
        drive::replay("textproto", super::check);
    }

    proptest! {
        #![proptest_config(drive::config(1_500))]

        #[test]
        fn edited_seeds(data in drive::mutated("textproto")) {
            super::check(&data);
        }

        #[test]
        fn scripts(data in prop::collection::vec(any::<u8>(), 0..1_000)) {
            super::check(&data);
        }
    }
}
