//! The tool loop: model → tool calls in the sandbox → results → model, until
//! the model answers without calls or the turn limit is reached.

mod calls;
mod context;
mod event;
mod repeat;
mod sanitize;

pub use event::{AgentError, Event};

use std::path::PathBuf;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::client::{Client, ClientError, ClientEvent, Completion, Request};
use crate::session::{Record, Session, now};
use crate::settings::{Protocol, Settings};
use crate::textproto::{self, Segment};
use crate::{AgentTool, Message, ToolCall, ToolDef, ToolRunner, prompt};
use sanitize::ParsedCall;

/// One conversation with the model.
pub struct Agent {
    client: Client,
    settings: Settings,
    tools: Arc<dyn ToolRunner>,
    specs: Vec<AgentTool>,
    /// The definitions sent with each request (made once: the specs do
    /// not change).
    defs: Arc<[ToolDef]>,
    workspace: PathBuf,
    text_mode: bool,
    history: Vec<Message>,
    session: Option<Session>,
    next_text_id: u64,
    instructions: Vec<(String, String)>,
    /// Identical calls made in the current task.
    repeats: repeat::Repeats,
    /// What the user asked for the current task, kept verbatim when older
    /// turns are summarized (under the text protocol the last user message
    /// is usually tool results).
    request: Option<String>,
    /// The context window in tokens, once known.
    window: Option<u64>,
    /// Whether the server's `/models` was asked for the window.
    window_probed: bool,
}

impl Agent {
    /// A new agent; `history` continues a resumed session (its system message
    /// is replaced by a fresh one, and calls a server would refuse, written
    /// by an older version or cut by a crash, are repaired). Only the tools
    /// named in `settings.tools`, when set, are offered.
    pub fn new(
        settings: Settings,
        tools: Arc<dyn ToolRunner>,
        workspace: PathBuf,
        session: Option<Session>,
        history: Vec<Message>,
    ) -> Result<Agent, ClientError> {
        let client = Client::new(settings.client.clone())?;
        let mut specs = tools.tools();
        if let Some(offered) = &settings.tools {
            specs.retain(|t| offered.contains(&t.def.name));
        }
        for t in &mut specs {
            t.def.parameters = prompt::schema_for_model(&t.def.parameters);
        }
        let defs = specs.iter().map(|t| t.def.clone()).collect();
        let text_mode = settings.protocol == Protocol::Text;
        let window = settings.context_window;
        let mut agent = Agent {
            client,
            settings,
            tools,
            specs,
            defs,
            workspace,
            text_mode,
            history: Vec::new(),
            session,
            next_text_id: 1,
            instructions: Vec::new(),
            repeats: repeat::Repeats::default(),
            request: None,
            window,
            window_probed: false,
        };
        agent.history.push(agent.system_message());
        let resumed = history
            .into_iter()
            .filter(|m| !matches!(m, Message::System { .. }))
            .collect();
        agent.history.extend(sanitize::repair(resumed));
        Ok(agent)
    }

    /// Adds instructions to the system prompt: `(source, text)` pairs such
    /// as a project's `AGENTS.md`, in order.
    pub fn with_instructions(mut self, instructions: Vec<(String, String)>) -> Agent {
        self.instructions = instructions;
        self.history[0] = self.system_message();
        self
    }

    fn system_message(&self) -> Message {
        let mut content = prompt::system_prompt(&self.workspace, &self.specs, self.text_mode);
        prompt::add_instructions(&mut content, &self.instructions);
        Message::System { content }
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The transcript, if any.
    pub fn session(&self) -> Option<&Session> {
        self.session.as_ref()
    }

    /// The tools offered to the model.
    pub fn tools(&self) -> &[AgentTool] {
        &self.specs
    }

    /// Records the end of a run in the transcript.
    pub fn finish(&mut self, reason: &str) -> Result<(), AgentError> {
        self.record(Record::End {
            ts: now(),
            reason: reason.to_string(),
        })
    }

    /// Forgets the conversation. The transcript keeps it, with a
    /// [`Record::Clear`] so that a resumed session starts after it.
    pub fn clear(&mut self) -> Result<(), AgentError> {
        self.record(Record::Clear { ts: now() })?;
        self.history.truncate(1);
        self.request = None;
        Ok(())
    }

    fn record(&mut self, record: Record) -> Result<(), AgentError> {
        if let Some(s) = &mut self.session {
            s.append(&record)?;
        }
        Ok(())
    }

    fn push(&mut self, message: Message) -> Result<(), AgentError> {
        if let Some(s) = &mut self.session {
            s.append_message(&now(), &message)?;
        }
        self.history.push(message);
        Ok(())
    }

    /// The tool definitions to send: none under the text protocol.
    fn offered(&self) -> Arc<[ToolDef]> {
        if self.text_mode {
            Arc::new([])
        } else {
            self.defs.clone()
        }
    }

    /// Sends a user message and runs the loop until a final answer:
    /// [`Agent::post`], then [`Agent::answer`].
    pub async fn send(
        &mut self,
        user: &str,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<String, AgentError> {
        self.post(user)?;
        self.answer(cancel, on).await
    }

    /// Adds a user message to the conversation. Once this returns, the
    /// message is in the transcript (for a session), so whatever it
    /// carries reaches the model even if the turn fails later.
    pub fn post(&mut self, user: &str) -> Result<(), AgentError> {
        // A turn that failed partway (its transcript could not be written)
        // may have left calls without results: answered now, so that the
        // next request is one a server accepts.
        self.history = sanitize::repair(std::mem::take(&mut self.history));
        if self.history.len() == 1 {
            let system = self.history[0].clone();
            self.record(Record::Message {
                ts: now(),
                message: system,
            })?;
        }
        self.push(Message::User {
            content: user.to_string(),
        })?;
        self.request = Some(user.to_string());
        self.repeats.reset();
        Ok(())
    }

    /// Runs the loop on the message last posted until a final answer.
    pub async fn answer(
        &mut self,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<String, AgentError> {
        for _ in 0..self.settings.max_turns {
            let completion = self.ask_model(cancel, on).await?;
            if let Some(u) = completion.usage {
                self.record(Record::Usage {
                    ts: now(),
                    usage: u,
                })?;
            }
            on(Event::Usage(completion.usage));
            // An empty assistant message would be refused by strict servers
            // on the next request: it is not kept, and the user is told.
            if completion.content.trim().is_empty() && completion.tool_calls.is_empty() {
                return self.fail(AgentError::EmptyAnswer(completion.finish_reason));
            }
            let cut = completion.finish_reason.as_deref() == Some("length");
            let done = if self.text_mode {
                self.text_step(completion, cancel, on).await?
            } else {
                self.native_step(completion, cancel, on).await?
            };
            if let Some(answer) = done {
                if cut {
                    self.note(
                        "the answer was cut off at the model's output token limit \
                         (finish_reason \"length\")",
                    )?;
                    on(Event::Cut);
                }
                return Ok(answer);
            }
            if self.repeats.stuck() {
                return self.fail(AgentError::Repeating);
            }
        }
        self.fail(AgentError::MaxTurns(self.settings.max_turns))
    }

    /// Records `e` in the transcript and returns it.
    fn fail<T>(&mut self, e: AgentError) -> Result<T, AgentError> {
        self.note(&e.to_string())?;
        Err(e)
    }

    /// Records something worth keeping that is not a message.
    fn note(&mut self, message: &str) -> Result<(), AgentError> {
        self.record(Record::Error {
            ts: now(),
            message: message.to_string(),
        })
    }

    async fn ask_model(
        &mut self,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Completion, AgentError> {
        let mut overflowed = false;
        loop {
            let defs = self.offered();
            self.fit(&defs, cancel, on).await?;
            on(Event::Thinking);
            let request = Request {
                messages: &self.history,
                tools: &defs,
            };
            let mut forward = |e: ClientEvent<'_>| match e {
                ClientEvent::Text(t) => on(Event::Text(t)),
                ClientEvent::Retry {
                    attempt,
                    wait,
                    reason,
                } => on(Event::Retry {
                    attempt,
                    wait,
                    reason: &reason,
                }),
                ClientEvent::Restart => on(Event::Restart),
            };
            let result = tokio::select! {
                r = self.client.complete(request, &mut forward) => r,
                _ = cancel.cancelled() => return Err(AgentError::Cancelled),
            };
            match result {
                Ok(c) => return Ok(c),
                Err(ClientError::ToolsRejected { body, .. })
                    if self.settings.protocol == Protocol::Auto && !self.text_mode =>
                {
                    self.text_mode = true;
                    self.history[0] = self.system_message();
                    let reason = format!("the endpoint rejected native tool calling ({body})");
                    self.note(&format!("switching to the text tool protocol: {reason}"))?;
                    on(Event::SwitchedToText { reason: &reason });
                }
                Err(ClientError::ContextOverflow { body, .. }) if !overflowed => {
                    // The server's count is the truth: the window is at most
                    // what was just sent. Compact below it and try once more.
                    overflowed = true;
                    let sent = context::request_tokens(&self.history, &defs);
                    self.window = Some(self.window.map_or(sent, |w| w.min(sent)));
                    self.note(&format!(
                        "the request did not fit the context window ({body}); compacting"
                    ))?;
                    self.fit(&defs, cancel, on).await?;
                }
                Err(e) => return self.fail(e.into()),
            }
        }
    }

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
    async fn native_step(
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
    async fn text_step(
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
}
