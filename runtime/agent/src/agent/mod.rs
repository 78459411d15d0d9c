//! The tool loop: model → tool calls in the sandbox → results → model, until
//! the model answers without calls or the turn limit is reached.
//!
//! - `steps`: one model reply under each protocol (native, json, text).
//! - `protocol`: leaving native tool calls when the server fails them.
//! - `calls`: running a reply's calls; `sanitize`: each parsed once.
//! - `repeat`, `progress`: repeated calls, and what the task did.
//! - `context`: fitting the context window.

mod calls;
mod context;
mod event;
mod progress;
mod protocol;
mod repeat;
mod sanitize;
mod steps;

pub use event::{AgentError, Event};

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use warden_state::StateDir;

use crate::client::{Client, ClientError, ClientEvent, Completion, Request, Structured};
use crate::session::{Record, Session, now};
use crate::settings::{Protocol, Settings};
use crate::{AgentTool, Message, ToolDef, ToolRunner, prompt};

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
    /// The protocol in use: native, json or text (never auto).
    mode: Protocol,
    /// Under the json protocol, the field the server constrains replies
    /// by, once known.
    structured: Option<Structured>,
    /// The json protocol's reply schema, made once when first needed.
    step_schema: Option<Value>,
    /// Where the endpoint's structured-output support is remembered.
    endpoint_cache: Option<StateDir>,
    history: Vec<Message>,
    session: Option<Session>,
    next_text_id: u64,
    instructions: Vec<(String, String)>,
    /// Identical calls made in the current task.
    repeats: repeat::Repeats,
    /// What the current task's calls did.
    progress: progress::Progress,
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
        let mode = match settings.protocol {
            Protocol::Auto => Protocol::Native,
            other => other,
        };
        let window = settings.context_window;
        let mut agent = Agent {
            client,
            settings,
            tools,
            specs,
            defs,
            workspace,
            mode,
            structured: None,
            step_schema: None,
            endpoint_cache: None,
            history: Vec::new(),
            session,
            next_text_id: 1,
            instructions: Vec::new(),
            repeats: repeat::Repeats::default(),
            progress: progress::Progress::default(),
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

    /// Remembers in `dir` (a cache folder of warden's own) whether the
    /// endpoint honours a reply schema, so that it is asked once per
    /// endpoint and model, not once per session.
    pub fn with_endpoint_cache(mut self, dir: StateDir) -> Agent {
        self.endpoint_cache = Some(dir);
        self
    }

    /// The tool-call protocol in use: `native`, `json` or `text`.
    pub fn protocol(&self) -> Protocol {
        self.mode
    }

    fn system_message(&self) -> Message {
        let mut content = prompt::system_prompt(&self.workspace, &self.specs, self.mode);
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

    /// The tool definitions to send: only under native tool calling.
    fn offered(&self) -> Arc<[ToolDef]> {
        if self.mode == Protocol::Native {
            self.defs.clone()
        } else {
            Arc::new([])
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
        self.progress.reset();
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
            let done = match self.mode {
                Protocol::Text => self.text_step(completion, cancel, on).await?,
                Protocol::Json => self.json_step(completion, cancel, on).await?,
                _ => self.native_step(completion, cancel, on).await?,
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
                return self.stuck(on);
            }
        }
        self.fail(AgentError::MaxTurns(self.settings.max_turns))
    }

    /// The task stops: the model kept repeating calls that already ran. A
    /// task whose calls changed something is not a failure for it: the
    /// outcome is what it changed. One that changed nothing failed.
    fn stuck(&mut self, on: &mut (dyn FnMut(Event<'_>) + Send)) -> Result<String, AgentError> {
        let changed = self.progress.changed().to_vec();
        if changed.is_empty() {
            return self.fail(AgentError::Repeating);
        }
        self.note(&AgentError::Repeating.to_string())?;
        on(Event::Stopped { changed: &changed });
        Ok(format!(
            "The model stopped making progress (it kept repeating calls that had already run), \
             so warden ended the task. What its calls changed: {}.",
            changed.join(", ")
        ))
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
            let used = self.fit(&defs, cancel, on).await?;
            if self.mode == Protocol::Json {
                self.ready_json(cancel, on).await?;
            }
            on(Event::Thinking);
            // The rest of the window bounds what the server generates: a
            // runaway generation ends there, not at a timeout.
            let max_tokens = match self.window {
                Some(w) if !self.specs.is_empty() => Some(w.saturating_sub(used).max(256)),
                _ => None,
            };
            let format = match (self.mode, &self.step_schema) {
                (Protocol::Json, Some(schema)) => Some((
                    self.structured.unwrap_or(Structured::ResponseFormat),
                    schema,
                )),
                _ => None,
            };
            let request = Request {
                format,
                max_tokens,
                tools_optional: self.settings.protocol == Protocol::Auto,
                ..Request::new(&self.history, &defs)
            };
            // Under the json protocol the reply is an object, not prose: the
            // answer in it is shown once read.
            let prose = self.mode != Protocol::Json;
            let mut forward = |e: ClientEvent<'_>| match e {
                ClientEvent::Text(t) if prose => on(Event::Text(t)),
                ClientEvent::Restart if prose => on(Event::Restart),
                ClientEvent::Text(_) | ClientEvent::Restart => {}
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
            let auto_native =
                self.settings.protocol == Protocol::Auto && self.mode == Protocol::Native;
            match result {
                Ok(c) => return Ok(c),
                Err(ClientError::ToolsRejected { body, .. }) if auto_native => {
                    let why = format!("the endpoint rejected native tool calling ({body})");
                    self.leave_native(&why, cancel, on).await?;
                }
                Err(ClientError::ToolsFailing { causes, .. }) if auto_native => {
                    let why = format!(
                        "the server failed twice with native tools offered ({})",
                        causes.join("; ")
                    );
                    self.leave_native(&why, cancel, on).await?;
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
}
