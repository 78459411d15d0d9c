//! The tool loop: model → tool calls in the sandbox → results → model, until
//! the model answers without calls or the turn limit is reached.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::client::{Client, ClientError, ClientEvent, Completion, Request};
use crate::session::{Record, Session, now};
use crate::settings::{Protocol, Settings};
use crate::textproto::{self, Segment};
use crate::{AgentTool, Message, ToolCall, ToolResult, ToolRunner, Usage, prompt};

/// What happens during a turn, for rendering.
#[derive(Debug)]
pub enum Event<'a> {
    /// Answer text as it streams.
    Text(&'a str),
    /// A failed request is retried after `wait`.
    Retry {
        attempt: u32,
        wait: Duration,
        reason: &'a str,
    },
    /// The endpoint rejected native tools; the text protocol is used from now on.
    SwitchedToText { reason: &'a str },
    /// Waiting for the model (for a spinner).
    Thinking,
    /// A tool call starts.
    ToolStart {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
    },
    /// A tool call finished.
    ToolEnd {
        id: &'a str,
        name: &'a str,
        arguments: &'a str,
        result: &'a ToolResult,
    },
    /// Token usage of one model call.
    Usage(Usage),
}

/// Why a task stopped without a final answer.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The model API failed (after retries).
    #[error(transparent)]
    Client(#[from] ClientError),
    /// The model kept calling tools.
    #[error(
        "stopped after {0} model turns without a final answer; raise `max_turns` in [model] \
         (or --max-turns), or split the task"
    )]
    MaxTurns(u32),
    /// The user cancelled.
    #[error("cancelled")]
    Cancelled,
    /// The transcript could not be written.
    #[error("cannot write the session transcript: {0}")]
    Session(#[from] std::io::Error),
}

/// One conversation with the model.
pub struct Agent {
    client: Client,
    settings: Settings,
    tools: Arc<dyn ToolRunner>,
    specs: Vec<AgentTool>,
    workspace: PathBuf,
    text_mode: bool,
    history: Vec<Message>,
    session: Option<Session>,
    next_text_id: u64,
}

impl Agent {
    /// A new agent; `history` continues a resumed session (its system message
    /// is replaced by a fresh one).
    pub fn new(
        settings: Settings,
        tools: Arc<dyn ToolRunner>,
        workspace: PathBuf,
        session: Option<Session>,
        history: Vec<Message>,
    ) -> Result<Agent, ClientError> {
        let client = Client::new(settings.client.clone())?;
        let specs = tools.tools();
        let text_mode = settings.protocol == Protocol::Text;
        let mut agent = Agent {
            client,
            settings,
            tools,
            specs,
            workspace,
            text_mode,
            history: Vec::new(),
            session,
            next_text_id: 1,
        };
        agent.history.push(agent.system_message());
        agent.history.extend(
            history
                .into_iter()
                .filter(|m| !matches!(m, Message::System { .. })),
        );
        Ok(agent)
    }

    fn system_message(&self) -> Message {
        Message::System {
            content: prompt::system_prompt(&self.workspace, &self.specs, self.text_mode),
        }
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

    /// Forgets the conversation (the transcript keeps it).
    pub fn clear(&mut self) {
        self.history.truncate(1);
    }

    fn record(&mut self, record: Record) -> Result<(), AgentError> {
        if let Some(s) = &mut self.session {
            s.append(&record)?;
        }
        Ok(())
    }

    fn push(&mut self, message: Message) -> Result<(), AgentError> {
        self.record(Record::Message {
            ts: now(),
            message: message.clone(),
        })?;
        self.history.push(message);
        Ok(())
    }

    /// Sends a user message and runs the loop until a final answer.
    pub async fn send(
        &mut self,
        user: &str,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<String, AgentError> {
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
        for _ in 0..self.settings.max_turns {
            let completion = self.ask_model(cancel, on).await?;
            if let Some(u) = completion.usage {
                self.record(Record::Usage {
                    ts: now(),
                    usage: u,
                })?;
                on(Event::Usage(u));
            }
            let done = if self.text_mode {
                self.text_step(completion, cancel, on).await?
            } else {
                self.native_step(completion, cancel, on).await?
            };
            if let Some(answer) = done {
                return Ok(answer);
            }
        }
        let e = AgentError::MaxTurns(self.settings.max_turns);
        self.record(Record::Error {
            ts: now(),
            message: e.to_string(),
        })?;
        Err(e)
    }

    async fn ask_model(
        &mut self,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Completion, AgentError> {
        loop {
            on(Event::Thinking);
            let defs: Vec<_> = if self.text_mode {
                Vec::new()
            } else {
                self.specs.iter().map(|t| t.def.clone()).collect()
            };
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
                    self.record(Record::Error {
                        ts: now(),
                        message: format!("switching to the text tool protocol: {reason}"),
                    })?;
                    on(Event::SwitchedToText { reason: &reason });
                }
                Err(e) => {
                    self.record(Record::Error {
                        ts: now(),
                        message: e.to_string(),
                    })?;
                    return Err(e.into());
                }
            }
        }
    }

    /// Native tool calls: returns the final answer when there are none.
    async fn native_step(
        &mut self,
        c: Completion,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Option<String>, AgentError> {
        let content = (!c.content.is_empty()).then(|| c.content.clone());
        self.push(Message::Assistant {
            content,
            tool_calls: c.tool_calls.clone(),
        })?;
        if c.tool_calls.is_empty() {
            return Ok(Some(c.content));
        }
        let results = self.run_calls(&c.tool_calls, cancel, on).await;
        for (call, result) in c.tool_calls.iter().zip(&results) {
            let content = match result {
                Some(r) => r.output.clone(),
                None => "error: the call was cancelled by the user".to_string(),
            };
            self.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            })?;
        }
        if results.iter().any(Option::is_none) {
            return Err(AgentError::Cancelled);
        }
        Ok(None)
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
                    calls.push(ToolCall::new(id, call.name, call.arguments.to_string()));
                }
                Segment::Malformed { raw, error } => malformed.push((raw, error)),
                Segment::Text(_) => {}
            }
        }
        if calls.is_empty() && malformed.is_empty() {
            return Ok(Some(c.content));
        }
        let results = self.run_calls(&calls, cancel, on).await;
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
                    (call.function.name.clone(), out)
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
        if results.iter().any(Option::is_none) {
            return Err(AgentError::Cancelled);
        }
        Ok(None)
    }

    /// Runs calls in order; consecutive calls to tools that don't mutate run
    /// concurrently. `None` for a call cut short by cancellation.
    async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Vec<Option<ToolResult>> {
        let mut results: Vec<Option<ToolResult>> = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() {
            let mut end = i + 1;
            if !self.mutates(&calls[i].function.name) {
                while end < calls.len() && !self.mutates(&calls[end].function.name) {
                    end += 1;
                }
            }
            let batch = &calls[i..end];
            for c in batch {
                on(Event::ToolStart {
                    id: &c.id,
                    name: &c.function.name,
                    arguments: &c.function.arguments,
                });
            }
            let handles: Vec<_> = batch
                .iter()
                .map(|c| {
                    let tools = self.tools.clone();
                    let (name, args) = (c.function.name.clone(), c.function.arguments.clone());
                    tokio::task::spawn_blocking(move || tools.call(&name, &args))
                })
                .collect();
            for (c, h) in batch.iter().zip(handles) {
                let r = tokio::select! {
                    r = h => r.unwrap_or_else(|e| ToolResult {
                        ok: false,
                        output: format!("error: the tool host failed: {e}"),
                        duration: Duration::ZERO,
                    }),
                    _ = cancel.cancelled() => {
                        results.resize(calls.len(), None);
                        return results;
                    }
                };
                on(Event::ToolEnd {
                    id: &c.id,
                    name: &c.function.name,
                    arguments: &c.function.arguments,
                    result: &r,
                });
                let _ = self.record(Record::ToolResult {
                    ts: now(),
                    id: c.id.clone(),
                    name: c.function.name.clone(),
                    ok: r.ok,
                    output: r.output.clone(),
                    duration_ms: r.duration.as_millis() as u64,
                });
                results.push(Some(r));
            }
            i = end;
        }
        results
    }

    fn mutates(&self, name: &str) -> bool {
        // Unknown tools count as mutating: they run alone, in order.
        self.specs
            .iter()
            .find(|t| t.def.name == name)
            .is_none_or(|t| t.mutates)
    }
}
