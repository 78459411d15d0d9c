//! One model reply under each protocol: native tool calls (with calls a
//! small model wrote in its text, under `auto`), the json protocol's one
//! object, and the text protocol's `[TOOL]` calls. Each returns the final
//! answer, or `None` once the calls ran and their results are in the
//! history.

use tokio_util::sync::CancellationToken;

use super::sanitize::{self, ParsedCall};
use super::{Agent, AgentError, Event};
use crate::client::Completion;
use crate::jsonproto::{self, Step};
use crate::settings::Protocol;
use crate::textproto::{self, Segment};
use crate::{Message, ToolCall};

impl Agent {
    /// Runs the tool calls of one model reply as a turn does, without asking
    /// the model: what `make bench` times as the agent's own cost per call.
    #[doc(hidden)]
    pub async fn run_reply(
        &mut self,
        reply: Completion,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Option<String>, AgentError> {
        self.native_step(reply, cancel, on).await
    }

    /// Native tool calls: returns the final answer when there are none.
    /// Calls are kept in the history with arguments a server accepts; those
    /// whose arguments were unusable do not run and tell the model why.
    pub(super) async fn native_step(
        &mut self,
        mut c: Completion,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Option<String>, AgentError> {
        let inline = if c.tool_calls.is_empty() && self.settings.protocol == Protocol::Auto {
            self.take_inline_calls(&mut c)
        } else {
            Vec::new()
        };
        let cut = c.finish_reason.as_deref() == Some("length");
        let content = (!c.content.is_empty()).then(|| c.content.clone());
        let (tool_calls, calls): (Vec<_>, Vec<ParsedCall>) = std::mem::take(&mut c.tool_calls)
            .into_iter()
            .map(sanitize::parse)
            .chain(inline)
            .unzip();
        self.push(Message::Assistant {
            content,
            tool_calls,
        })?;
        if calls.is_empty() {
            return Ok(Some(c.content));
        }
        let results = self.run_calls(&calls, cut, cancel, on).await?;
        for (call, result) in calls.iter().zip(&results) {
            let content = match result {
                Some(r) => r.output.clone(),
                None => "error: the call was cancelled by the user".to_string(),
            };
            self.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            })?;
        }
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        Ok(None)
    }

    /// Under `protocol = "auto"`, a reply whose text is a tool call (bare
    /// JSON, fences or `<tool_call>` tags ending it) becomes that call:
    /// small models write them so when the server's parser misses their
    /// format. A fence or tag with prose after it is an example, not a call.
    fn take_inline_calls(&mut self, c: &mut Completion) -> Vec<(ToolCall, ParsedCall)> {
        let known = |name: &str| self.specs.iter().any(|t| t.def.name == name);
        let Some((prose, found)) = textproto::inline_calls(&c.content, &known) else {
            return Vec::new();
        };
        c.content = prose;
        found
            .into_iter()
            .map(|(name, args)| {
                let id = format!("inline-{}", self.next_text_id);
                self.next_text_id += 1;
                let args = serde_json::Value::Object(args);
                // The history keeps it as a native call: its text, written
                // from the value.
                let call = ToolCall::new(id.clone(), name.clone(), args.to_string());
                (call, sanitize::made(id, name, args))
            })
            .collect()
    }

    /// Text protocol: calls are parsed from the reply; results go back as a
    /// user message.
    pub(super) async fn text_step(
        &mut self,
        c: Completion,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Option<String>, AgentError> {
        self.push(Message::Assistant {
            content: Some(c.content.clone()),
            tool_calls: Vec::new(),
        })?;
        let specs = self.specs.clone();
        let params = |name: &str| -> Option<Vec<String>> {
            let t = specs.iter().find(|t| t.def.name == name)?;
            Some(textproto::param_names(&t.def.parameters))
        };
        let mut calls = Vec::new();
        let mut malformed = Vec::new();
        for segment in textproto::parse(&c.content, &params) {
            match segment {
                Segment::Call(call) => {
                    let id = format!("text-{}", self.next_text_id);
                    self.next_text_id += 1;
                    calls.push(sanitize::made(id, call.name, call.arguments));
                }
                Segment::Malformed { raw, error } => malformed.push((raw, error)),
                Segment::Text(_) => {}
            }
        }
        if calls.is_empty() && malformed.is_empty() {
            return Ok(Some(c.content));
        }
        let results = self.run_calls(&calls, false, cancel, on).await?;
        let mut body = String::new();
        if !calls.is_empty() {
            let named: Vec<(String, Result<String, String>)> = calls
                .iter()
                .zip(&results)
                .map(|(call, r)| {
                    let out = match r {
                        Some(r) if r.ok => Ok(r.output.clone()),
                        Some(r) => Err(r.output.clone()),
                        None => Err("the call was cancelled by the user".into()),
                    };
                    (call.name.clone(), out)
                })
                .collect();
            body.push_str(&textproto::results_message(&named));
        }
        if !malformed.is_empty() {
            if !body.is_empty() {
                body.push_str("\n\n");
            }
            body.push_str(&textproto::malformed_message(&malformed));
        }
        self.push(Message::User { content: body })?;
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        Ok(None)
    }

    /// The json protocol: the reply is one object, read once: a call of one
    /// tool, run, whose result goes back with the task restated; or the
    /// answer. The reply is kept as the model wrote it.
    pub(super) async fn json_step(
        &mut self,
        c: Completion,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Option<String>, AgentError> {
        let cut = c.finish_reason.as_deref() == Some("length");
        let step = jsonproto::parse_step(&c.content);
        self.push(Message::Assistant {
            content: Some(c.content),
            tool_calls: Vec::new(),
        })?;
        let call = match step {
            Step::Answer(answer) => return Ok(Some(answer)),
            Step::Call { name, arguments } => {
                let id = format!("json-{}", self.next_text_id);
                self.next_text_id += 1;
                sanitize::made(id, name, arguments)
            }
            Step::Invalid(error) => {
                let error = if cut {
                    format!(
                        "{error}: the reply was cut off at the output token limit; make the \
                         call again with shorter arguments (split a large write into several \
                         edits)"
                    )
                } else {
                    error
                };
                let body = textproto::results_message(&[(
                    "reply".into(),
                    Err(jsonproto::invalid_message(&error)),
                )]);
                let body = format!("{body}\n\n{}", self.restated());
                self.push(Message::User { content: body })?;
                return Ok(None);
            }
        };
        let results = self
            .run_calls(std::slice::from_ref(&call), cut, cancel, on)
            .await?;
        let out = match results.into_iter().next().flatten() {
            Some(r) if r.ok => Ok(r.output),
            Some(r) => Err(r.output),
            None => Err("the call was cancelled by the user".into()),
        };
        let body = textproto::results_message(&[(call.name, out)]);
        let body = format!("{body}\n\n{}", self.restated());
        self.push(Message::User { content: body })?;
        if cancel.is_cancelled() {
            return Err(AgentError::Cancelled);
        }
        Ok(None)
    }
}
