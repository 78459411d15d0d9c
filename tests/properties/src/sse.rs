//! The SSE reader and the tool-call delta assembly: any body gives the
//! same answer however it is cut into pieces, the text shown as it
//! arrives is the answer's text, and a stream written the way servers
//! write one (OpenAI, vLLM, sglang and LiteLLM's shared index, llama.cpp
//! without an index, names in pieces or repeated) assembles to the calls
//! it was written from.

use arbitrary::{Result, Unstructured};
use serde_json::{Value, json};
use warden_agent::ToolCall;
use warden_agent::client::{ClientEvent, Completion, read_sse_body};

/// `data` read as a body, and as the script of a stream.
pub fn check(data: &[u8]) {
    body(data);
    if let Ok(script) = Script::new(&mut Unstructured::new(data)) {
        script.check();
    }
}

/// Reads `pieces` as one body; the text reported must be the answer's.
fn read(pieces: &[&[u8]]) -> Result<Completion, String> {
    let mut shown = String::new();
    let read = read_sse_body(pieces, &mut |e| {
        if let ClientEvent::Text(t) = e {
            shown.push_str(t);
        }
    });
    if let Ok(answer) = &read {
        assert_eq!(shown, answer.content, "the text shown is not the answer's");
    }
    read
}

/// `data` as a body: whole, a byte at a time, and cut where its own bytes
/// say.
fn body(data: &[u8]) {
    let whole = read(&[data]);
    let bytes: Vec<&[u8]> = data.chunks(1).collect();
    assert_eq!(read(&bytes), whole, "read a byte at a time");
    let mut pieces = Vec::new();
    let mut rest = data;
    let mut i = 0;
    while !rest.is_empty() {
        let n = (1 + usize::from(data[i % data.len()]) % 13).min(rest.len());
        pieces.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
    }
    assert_eq!(read(&pieces), whole, "read in pieces of {pieces:?}");
}

/// How the server numbers and names the calls of its deltas.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    /// OpenAI: each call its own `index`, the id and name in its first
    /// delta; deltas of parallel calls may interleave.
    Indexed,
    /// The name in pieces before the arguments start.
    NamePieces,
    /// Every call at index 0, told apart by id (sglang, LiteLLM).
    SharedIndex,
    /// No `index` at all.
    NoIndex,
    /// The id and whole name repeated in every delta.
    Repeated,
}

/// One call the script's stream carries.
#[derive(Debug)]
struct Call {
    name: String,
    /// The arguments, in the pieces they are sent in.
    args: Vec<String>,
}

/// A stream to write: text pieces and calls, in one style.
#[derive(Debug)]
struct Script {
    style: Style,
    text: Vec<String>,
    calls: Vec<Call>,
    usage: bool,
    done: bool,
    /// The line end written after each field.
    eol: &'static str,
    /// The sizes of the pieces the body is delivered in.
    cuts: Vec<u8>,
}

impl Script {
    fn new(u: &mut Unstructured) -> Result<Script> {
        let style = *u.choose(&[
            Style::Indexed,
            Style::NamePieces,
            Style::SharedIndex,
            Style::NoIndex,
            Style::Repeated,
        ])?;
        let mut calls = Vec::new();
        for _ in 0..u.int_in_range(0..=4)? {
            calls.push(Call {
                name: u.arbitrary()?,
                args: u.arbitrary()?,
            });
        }
        Ok(Script {
            style,
            text: u.arbitrary()?,
            calls,
            usage: u.arbitrary()?,
            done: u.arbitrary()?,
            eol: u.choose(&["\n", "\r\n", "\r"])?,
            cuts: u.arbitrary()?,
        })
    }

    fn id(i: usize) -> String {
        format!("call_s{i}")
    }

    /// The `tool_calls[]` deltas of call `i`, in order.
    fn deltas(&self, i: usize) -> Vec<Value> {
        let call = &self.calls[i];
        let id = Self::id(i);
        let delta = |first: bool, name: &str, args: &str| {
            let mut d = json!({ "function": { "arguments": args } });
            match self.style {
                Style::Indexed | Style::NamePieces => d["index"] = i.into(),
                Style::SharedIndex | Style::Repeated => d["index"] = 0.into(),
                Style::NoIndex => {}
            }
            if first || self.style == Style::Repeated {
                d["id"] = id.as_str().into();
                d["type"] = "function".into();
            }
            if first || self.style == Style::Repeated || !name.is_empty() {
                d["function"]["name"] = name.into();
            }
            d
        };
        let mut out = Vec::new();
        if self.style == Style::NamePieces {
            // The name in two pieces, then the arguments.
            let cut = call
                .name
                .char_indices()
                .nth(1)
                .map_or(call.name.len(), |(i, _)| i);
            out.push(delta(true, &call.name[..cut], ""));
            if cut < call.name.len() {
                out.push(delta(false, &call.name[cut..], ""));
            }
        } else {
            out.push(delta(true, &call.name, ""));
        }
        for piece in &call.args {
            let name = if self.style == Style::Repeated {
                call.name.as_str()
            } else {
                ""
            };
            out.push(delta(false, name, piece));
        }
        out
    }

    /// The chunks of the stream, as the server writes them.
    fn chunks(&self) -> Vec<Value> {
        let choice = |delta: Value, finish: Option<&str>| json!({ "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
        let mut out: Vec<Value> = self
            .text
            .iter()
            .map(|t| choice(json!({ "content": t }), None))
            .collect();
        let mut calls: Vec<Vec<Value>> = (0..self.calls.len()).map(|i| self.deltas(i)).collect();
        if self.style == Style::Indexed {
            // Parallel calls interleaved: a delta of each in turn.
            let mut k = 0;
            while calls.iter().any(|c| k < c.len()) {
                for c in &calls {
                    if let Some(d) = c.get(k) {
                        out.push(choice(json!({ "tool_calls": [d] }), None));
                    }
                }
                k += 1;
            }
        } else {
            for d in calls.iter_mut().flat_map(|c| c.drain(..)) {
                out.push(choice(json!({ "tool_calls": [d] }), None));
            }
        }
        let reason = if self.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        out.push(choice(json!({}), Some(reason)));
        if self.usage {
            out.push(
                json!({ "choices": [], "usage": { "prompt_tokens": 3, "completion_tokens": 4 } }),
            );
        }
        out
    }

    /// The body, and the answer it must give.
    fn check(&self) {
        let mut body = String::new();
        for chunk in self.chunks() {
            body.push_str(&format!("data: {chunk}{eol}{eol}", eol = self.eol));
        }
        if self.done {
            body.push_str(&format!("data: [DONE]{eol}{eol}", eol = self.eol));
        }
        let bytes = body.as_bytes();
        let mut pieces = Vec::new();
        let mut rest = bytes;
        for &n in self.cuts.iter().chain(std::iter::repeat(&64)) {
            if rest.is_empty() {
                break;
            }
            let n = (usize::from(n) + 1).min(rest.len());
            pieces.push(&rest[..n]);
            rest = &rest[n..];
        }
        let answer = read(&pieces).unwrap_or_else(|e| panic!("{e}\n{body}"));
        let calls: Vec<ToolCall> = self
            .calls
            .iter()
            .enumerate()
            .map(|(i, c)| ToolCall::new(Self::id(i), c.name.clone(), c.args.concat()))
            .collect();
        assert_eq!(answer.content, self.text.concat(), "{body}");
        assert_eq!(answer.tool_calls, calls, "{:?}\n{body}", self.style);
        assert_eq!(answer.usage.is_some(), self.usage);
        let reason = if self.calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        };
        assert_eq!(answer.finish_reason.as_deref(), Some(reason));
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use crate::drive;

    #[test]
    fn seeds() {
        drive::replay("sse", super::check);
    }

    proptest! {
        #![proptest_config(drive::config(1_000))]

        #[test]
        fn edited_seeds(data in drive::mutated("sse")) {
            super::check(&data);
        }

        #[test]
        fn scripts(data in prop::collection::vec(any::<u8>(), 0..1_500)) {
            super::check(&data);
        }
    }
}
