//! The text tool protocol, for models without native tool calling.
//!
//! The system prompt ([`instructions`]) teaches the model to write
//! `[TOOL] name(args) [/TOOL]` anywhere in its reply, as often as it likes,
//! with prose around. [`parse`] splits a reply into prose, calls and
//! malformed calls; the agent runs the calls and answers with one user
//! message built by [`results_message`] (and [`malformed_message`] for the
//! calls it could not understand, so the model can correct them).
//!
//! Parsing is deliberately forgiving about form (case of the tags, code
//! fences, a forgotten `[/TOOL]`, Python-style arguments) and precise about
//! errors, since the error text is all the model has to fix its call.

mod inline;
mod prompt;
mod syntax;
#[cfg(test)]
mod tests;
mod value;

use serde_json::{Map, Value};

pub use inline::{InlineCall, inline_calls};
pub use prompt::{
    instructions, is_results_message, malformed_message, results_message, shorten_results,
    tool_list,
};
use syntax::{Arg, Body, Parser};

/// A well-formed call to a known tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// Tool name.
    pub name: String,
    /// The arguments, always a JSON object (positional arguments already
    /// mapped onto the schema's parameter names).
    pub arguments: Value,
    /// The call as written, from `[TOOL]` to `[/TOOL]`.
    pub raw: String,
}

/// One piece of a reply, in reply order.
#[derive(Debug, Clone, PartialEq)]
pub enum Segment {
    /// Prose, trimmed, never empty.
    Text(String),
    /// A call to run.
    Call(ParsedCall),
    /// A call that could not be understood: `raw` as written, `error` saying
    /// what is wrong and where (line and column within `raw`).
    Malformed { raw: String, error: String },
}

const OPEN: &str = "[tool]";
const CLOSE: &str = "[/tool]";

/// Splits a reply into prose, calls and malformed calls.
///
/// `params(name)` returns the tool's parameter names in schema order (see
/// [`param_names`]), or `None` for an unknown tool; positional arguments are
/// mapped onto them. A call whose only argument is a JSON object takes that
/// object as its arguments.
pub fn parse(reply: &str, params: &dyn Fn(&str) -> Option<Vec<String>>) -> Vec<Segment> {
    let lower = reply.to_ascii_lowercase();
    let mut out = Vec::new();
    let mut fence = None;
    let mut pos = 0;
    while let Some(found) = lower[pos..].find(OPEN) {
        let start = pos + found;
        push_text(&mut out, &reply[pos..start], pos > 0, true, &mut fence);
        let (segment, end) = call(reply, &lower, start, params);
        out.push(segment);
        pos = end;
    }
    push_text(&mut out, &reply[pos..], pos > 0, false, &mut fence);
    out
}

/// Which wrapper around calls is open: a code fence or a single backtick.
#[derive(Clone, Copy, PartialEq)]
enum Fence {
    Block,
    Tick,
}

/// Pushes prose, minus the backticks or code fence that wrap the adjacent
/// calls (models often put calls in code blocks).
fn push_text(
    out: &mut Vec<Segment>,
    text: &str,
    after_call: bool,
    before_call: bool,
    fence: &mut Option<Fence>,
) {
    let mut text = text.trim();
    if after_call {
        let closer = match *fence {
            Some(Fence::Block) => "```",
            Some(Fence::Tick) => "`",
            None => "",
        };
        if !closer.is_empty()
            && let Some(rest) = text.strip_prefix(closer)
        {
            text = rest.trim_start();
            *fence = None;
        }
    }
    if before_call {
        // An odd number of fence lines means the last one opens a block
        // around the call; an odd number of backticks, an inline wrapper.
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        let last = text.lines().last().unwrap_or("").trim();
        if fences % 2 == 1 && last.starts_with("```") && !last[3..].contains('`') {
            text = text[..text.len() - last.len()].trim_end();
            *fence = Some(Fence::Block);
        } else if text.ends_with('`') && !text.ends_with("``") && text.matches('`').count() % 2 == 1
        {
            text = text[..text.len() - 1].trim_end();
            *fence = Some(Fence::Tick);
        }
    }
    if !text.is_empty() {
        out.push(Segment::Text(text.to_string()));
    }
}

/// Parses the call whose `[TOOL]` starts at `start`; returns the segment and
/// the byte where the text after it starts.
fn call(
    reply: &str,
    lower: &str,
    start: usize,
    params: &dyn Fn(&str) -> Option<Vec<String>>,
) -> (Segment, usize) {
    let mut p = Parser::new(reply, lower, start + OPEN.len());
    p.skip_ticks();
    let parsed = if p.peek() == Some('{') {
        match p.value() {
            Ok(Value::Object(o)) => Ok((String::new(), Body::Object(o))),
            Ok(_) => unreachable!("a value starting with `{{` is an object"),
            Err(e) => Err(e.render(reply, start)),
        }
    } else {
        let name = p.ident().to_string();
        if name.is_empty() {
            Err(format!("expected a tool name after [TOOL]{}", p.found()))
        } else if params(&name).is_none() {
            Err(format!("unknown tool `{name}`"))
        } else {
            p.arg_list(&name)
                .map(|args| (name, Body::Args(args)))
                .map_err(|e| e.render(reply, start))
        }
    };
    let parsed = parsed.and_then(|(name, body)| {
        let after = p.pos;
        p.skip_ticks();
        let end = if p.at_tag(CLOSE) {
            p.pos + CLOSE.len()
        } else if !lower[after..next_open(lower, after)].contains(CLOSE) {
            // A forgotten `[/TOOL]` (or a stop sequence that ate it): the
            // call is complete, so run it and leave what follows as prose.
            after
        } else {
            let found = p.found();
            return Err(format!("expected [/TOOL] after the closing `)`{found}"));
        };
        Ok((name, body, end))
    });
    match parsed.and_then(|(name, body, end)| resolve(name, body, params).map(|(n, a)| (n, a, end)))
    {
        Ok((name, arguments, end)) => {
            let raw = reply[start..end].trim_end().to_string();
            (
                Segment::Call(ParsedCall {
                    name,
                    arguments,
                    raw,
                }),
                end,
            )
        }
        Err(error) => {
            // Resynchronise on the next `[/TOOL]` before the next `[TOOL]`,
            // so one bad call does not swallow the calls after it.
            let next = next_open(lower, start + OPEN.len());
            let end = lower[start..next]
                .find(CLOSE)
                .map_or(next, |i| start + i + CLOSE.len());
            let raw = reply[start..end].trim_end().to_string();
            (Segment::Malformed { raw, error }, end)
        }
    }
}

/// Byte of the next `[TOOL]` at or after `from`, or the end of the reply.
fn next_open(lower: &str, from: usize) -> usize {
    lower[from..].find(OPEN).map_or(lower.len(), |i| from + i)
}

/// Maps the written arguments onto the tool's parameters.
fn resolve(
    name: String,
    body: Body,
    params: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Result<(String, Value), String> {
    let (name, args) = match body {
        Body::Object(mut object) => {
            let name = match object.remove("name") {
                Some(Value::String(name)) => name,
                _ => return Err("a JSON call needs a string \"name\"".into()),
            };
            let args = ["arguments", "parameters", "args"]
                .iter()
                .find_map(|k| object.remove(*k));
            let args = match args {
                None => Map::new(),
                Some(Value::Object(args)) => args,
                // OpenAI encodes arguments as a JSON string; accept that too.
                Some(Value::String(s)) => match serde_json::from_str(&s) {
                    Ok(Value::Object(args)) => args,
                    _ => return Err("\"arguments\" must be a JSON object".into()),
                },
                Some(_) => return Err("\"arguments\" must be a JSON object".into()),
            };
            params(&name).ok_or_else(|| format!("unknown tool `{name}`"))?;
            return Ok((name, Value::Object(args)));
        }
        Body::Args(args) => (name, args),
    };
    let names = params(&name).ok_or_else(|| format!("unknown tool `{name}`"))?;
    if let [Arg::Positional(Value::Object(object))] = args.as_slice() {
        return Ok((name, Value::Object(object.clone())));
    }
    let listed = if names.is_empty() {
        "no parameters".to_string()
    } else {
        format!("parameters: {}", names.join(", "))
    };
    let positional = args
        .iter()
        .filter(|a| matches!(a, Arg::Positional(_)))
        .count();
    if positional > names.len() {
        return Err(format!(
            "too many positional arguments: `{name}` takes {} ({listed}) but {positional} were given",
            names.len()
        ));
    }
    let mut object = Map::new();
    for (i, arg) in args.into_iter().enumerate() {
        let (key, value) = match arg {
            Arg::Positional(value) => (names[i].clone(), value),
            Arg::Keyword(key, value) => (key, value),
        };
        if !names.contains(&key) {
            return Err(format!("unknown parameter `{key}` for `{name}` ({listed})"));
        }
        if object.contains_key(&key) {
            return Err(format!("argument `{key}` is given twice"));
        }
        object.insert(key, value);
    }
    Ok((name, Value::Object(object)))
}

/// The parameter names of a JSON Schema, in `properties` order: what
/// [`parse`]'s `params` should return for the tool.
pub fn param_names(schema: &Value) -> Vec<String> {
    schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default()
}
