//! An OpenAI-compatible chat-completions server for tests.
//!
//! [`MockLlm::start`] serves scripted [`Reply`]s over real HTTP on
//! `127.0.0.1` (random port), from its own thread and tokio runtime, so that
//! synchronous tests, async tests and `warden` subprocesses can all talk to
//! it. Every request is recorded for later assertions; [`check_chat_body`]
//! tells whether a recorded body is a request a real server would accept.
//!
//! - `server`: the HTTP side.
//! - [`chunk`]: `chat.completion.chunk` builders.
//! - `check`: [`check_chat_body`].

mod check;
pub mod chunk;
mod llama;
mod server;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

pub use check::check_chat_body;
pub use llama::PEG_NATIVE;

/// One scripted answer to a `POST /v1/chat/completions`.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A `text/event-stream` sending each payload as `data: …\n\n`, each
    /// flushed separately about 1 ms apart. Nothing is added: end with
    /// [`chunk::done`] for a well-formed stream.
    Sse(Vec<String>),
    /// Sends those payloads, then drops the connection mid-body (no
    /// `[DONE]`, no end of the chunked encoding).
    SseCut(Vec<String>),
    /// `200 application/json`: a non-streamed answer.
    Json(Value),
    /// An error status with `body` (sent as JSON when it parses as JSON) and
    /// an optional `Retry-After` header.
    Status {
        status: u16,
        body: String,
        retry_after: Option<String>,
    },
    /// `200` (or any status) with a body and content type of the caller's
    /// choosing, e.g. an HTML page from a wrong base URL.
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
    /// A `text/event-stream` of pieces written as they are, each flushed
    /// on its own, 1 ms apart (after a pause, as long as it says).
    Stream(Vec<Piece>),
    /// What a model writes, served as llama-server serves it for the
    /// request (see `llama.rs`): native tool calls parsed from
    /// `<tool_call>` blocks after `silence`, its errors for an output it
    /// cannot parse, and a reply checked against the request's schema.
    Llama { text: String, silence: Duration },
    /// Reads the request and never answers.
    Hang,
    /// Waits, then sends the inner reply.
    Delay(Duration, Box<Reply>),
    /// Waits until the test opens the gate, then sends the inner reply: for
    /// a step that must happen while the model "thinks", whatever its length.
    Gated(Gate, Box<Reply>),
}

/// A piece of a [`Reply::Stream`].
#[derive(Debug, Clone)]
pub enum Piece {
    /// A payload, sent as `data: …\n\n`.
    Data(String),
    /// Bytes sent as they are (llama.cpp's `error: …` line).
    Raw(String),
    /// Nothing sent for this long.
    Pause(Duration),
}

/// What a model writes, served as llama-server would ([`Reply::Llama`]).
pub fn llama(text: &str) -> Reply {
    Reply::Llama {
        text: text.to_string(),
        silence: Duration::ZERO,
    }
}

/// Holds back a [`Reply::Gated`] until [`Gate::open`]; clones share one gate.
#[derive(Debug, Clone)]
pub struct Gate(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Gate {
        Gate(Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets every reply behind this gate go, now and later.
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    async fn opened(&self) {
        // The gate holds the sender, so the channel cannot close meanwhile.
        let _ = self.0.subscribe().wait_for(|open| *open).await;
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The request path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The `Authorization` header, verbatim.
    pub authorization: Option<String>,
    /// The body as JSON (a JSON string holding the raw text when it is not
    /// JSON; null when empty).
    pub body: Value,
    /// When the request arrived.
    pub at: Instant,
}

/// What the server thread shares with the handle.
#[derive(Debug, Default)]
struct Shared {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    /// The body of `GET /v1/models` (a list without context sizes unless set).
    models: Mutex<Option<Value>>,
    /// How many times `/v1/models` was asked for.
    model_lists: Mutex<u32>,
    /// Holds `/v1/models` answers back until it opens.
    models_gate: Mutex<Option<Gate>>,
    /// The body of `GET /props` (llama-server's settings); 404 when unset.
    props: Mutex<Option<Value>>,
    /// A request estimated above this many tokens gets the 400 a real
    /// server sends for a prompt that does not fit its context.
    context_window: Mutex<Option<u64>>,
}

/// The server-side token count of a request: the bytes of its `messages`
/// and `tools` as JSON over 4, which is what tokenizers average on English
/// and code. Used to enforce [`MockLlm::set_context_window`].
pub fn prompt_tokens(body: &Value) -> u64 {
    let len = |v: Option<&Value>| v.map_or(0, |v| v.to_string().len() as u64);
    (len(body.get("messages")) + len(body.get("tools"))).div_ceil(4)
}

/// Locks, ignoring poisoning: a panicking test thread must not hide the
/// recorded requests from the others.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running mock server; it stops when dropped.
#[derive(Debug)]
pub struct MockLlm {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl MockLlm {
    /// Starts a server answering chat-completions requests with `replies`, in
    /// order; once they are used up it answers
    /// `500 {"error":{"message":"mock: no more replies"}}`. Other paths get
    /// a 404 and use up no reply.
    pub fn start(replies: Vec<Reply>) -> MockLlm {
        let shared = Arc::new(Shared {
            replies: Mutex::new(replies.into()),
            ..Shared::default()
        });
        // Bound here, not in the thread, so that the port is known (and
        // accepting) before `start` returns.
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("mock-llm: bind");
        listener
            .set_nonblocking(true)
            .expect("mock-llm: nonblocking");
        let addr = listener.local_addr().expect("mock-llm: local addr");
        let (tx, rx) = tokio::sync::oneshot::channel();
        let thread = std::thread::Builder::new()
            .name(format!("mock-llm-{}", addr.port()))
            .spawn({
                let shared = shared.clone();
                move || server::run(listener, shared, rx)
            })
            .expect("mock-llm: spawn thread");
        MockLlm {
            addr,
            shared,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL to configure clients with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// The requests received so far, in arrival order.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// Queues one more reply after the remaining ones.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.replies).push_back(reply);
    }

    /// Answers `GET /v1/models` with `list` (by default a list of one
    /// model, `mock`, that reports no context size). These requests are
    /// counted by [`MockLlm::model_lists`], not recorded with the others.
    pub fn set_models(&self, list: Value) {
        *lock(&self.shared.models) = Some(list);
    }

    /// Holds back the answers to `GET /v1/models` until `gate` opens, as
    /// a server slow to list its models.
    pub fn gate_models(&self, gate: Gate) {
        *lock(&self.shared.models_gate) = Some(gate);
    }

    /// How many times `/v1/models` was asked for.
    pub fn model_lists(&self) -> u32 {
        *lock(&self.shared.model_lists)
    }

    /// Answers `GET /props` with `props`, as llama-server does (404 when
    /// unset). Not recorded with the chat requests.
    pub fn set_props(&self, props: Value) {
        *lock(&self.shared.props) = Some(props);
    }

    /// From now on, a chat request whose [`prompt_tokens`] exceed `tokens`
    /// is answered with a context-length 400 (using up no reply), as
    /// vLLM does.
    pub fn set_context_window(&self, tokens: u64) {
        *lock(&self.shared.context_window) = Some(tokens);
    }
}

impl Drop for MockLlm {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A streamed text answer: the text in one chunk, `finish("stop")`,
/// `usage(10, 5)`, `[DONE]`.
pub fn answer(text: &str) -> Reply {
    Reply::Sse(vec![
        chunk::text(text),
        chunk::finish("stop"),
        chunk::usage(10, 5),
        chunk::done(),
    ])
}

/// A streamed answer made of tool calls `(id, name, arguments json)`, call
/// `i` at index `i` with its arguments in 3 pieces, then
/// `finish("tool_calls")` and `[DONE]`.
pub fn calls(calls: &[(&str, &str, &str)]) -> Reply {
    let mut payloads = Vec::new();
    for (index, (id, name, args)) in (0u32..).zip(calls) {
        payloads.extend(chunk::tool_call(index, id, name, args, 3));
    }
    payloads.push(chunk::finish("tool_calls"));
    payloads.push(chunk::done());
    Reply::Sse(payloads)
}
