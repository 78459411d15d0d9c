//! How the agent sees tools: a small trait, so it never touches wasmtime.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;

use crate::ToolDef;

/// A tool the model may call.
#[derive(Debug, Clone)]
pub struct AgentTool {
    /// Name, description, argument schema.
    pub def: ToolDef,
    /// Whether a call can change state: such calls run alone, in order.
    pub mutates: bool,
    /// Programs it may run as confined processes (its `exec` grant), for
    /// the system prompt.
    pub programs: Vec<String>,
    /// Desktop apps it may start in the user's session (its `apps`
    /// grant), for the system prompt.
    pub apps: Vec<String>,
    /// Hosts whose pages it may open in the user's browser (its `browse`
    /// grant), for the system prompt.
    pub browse: Vec<String>,
}

/// What one call returned.
#[derive(Debug, Clone, Default)]
pub struct ToolResult {
    /// False when the text is an error for the model to act on.
    pub ok: bool,
    /// Output, or the error message.
    pub output: String,
    /// Wall time of the call.
    pub duration: Duration,
    /// For an error, its kind (`invalid_args`, `denied`, `timeout`,
    /// `cancelled`, ...).
    pub error_kind: Option<String>,
    /// True when the output was cut at the tool's output limit.
    pub truncated: bool,
    /// The paths the call named and what it does to each, as the runner
    /// resolved them for its approval and undo; `None` when its tool does
    /// not declare them.
    pub touched: Option<Vec<Touched>>,
}

/// A path a call named, as shown to the user, and what the call does to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    /// The path as the tool resolves it (normalized; relative when given so).
    pub path: String,
    /// What the call does to it: `read`, `write`, `create`, `delete`,
    /// `copy from`, `copy to`, `move from`, `move to`.
    pub access: &'static str,
    /// Why the call is refused there, if it is (`outside the grants`, `in
    /// a read-only grant`).
    pub refused: Option<&'static str>,
}

/// Cancellation of one tool call, shared by the agent (which cancels) and
/// the runner (which stops the call: before it starts, it never runs;
/// while it runs, it is interrupted).
#[derive(Clone, Default)]
pub struct CallCancel(Arc<CancelInner>);

#[derive(Default)]
struct CancelInner {
    cancelled: AtomicBool,
    hook: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
}

impl std::fmt::Debug for CallCancel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("CallCancel")
            .field(&self.is_cancelled())
            .finish()
    }
}

impl CallCancel {
    /// Cancels the call and runs the runner's hook, if any.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let hook = self.0.hook.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hook) = hook.as_ref() {
            hook();
        }
    }

    /// Whether the call was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    /// Runs `hook` when the call is cancelled (at once if it already was).
    pub fn on_cancel(&self, hook: impl Fn() + Send + Sync + 'static) {
        let mut slot = self.0.hook.lock().unwrap_or_else(|e| e.into_inner());
        if self.is_cancelled() {
            hook();
        }
        *slot = Some(Box::new(hook));
    }
}

/// Runs tool calls. Implemented by the workspace's bound toolset; tests may
/// implement it directly. Unknown names and bad arguments come back as a
/// failed [`ToolResult`], never as a panic.
pub trait ToolRunner: Send + Sync + 'static {
    /// The tools to offer.
    fn tools(&self) -> Vec<AgentTool>;
    /// Runs one call, blocking, until it answers or `cancel` stops it.
    /// `arguments` is the JSON object the model sent, parsed once by the
    /// agent.
    fn call(&self, name: &str, arguments: &Value, cancel: &CallCancel) -> ToolResult;
    /// Runs one call like [`ToolRunner::call`], handing its result to
    /// `deliver` as soon as it is known; whatever the runner does after a
    /// call (readying the tool for its next one) follows on this thread.
    fn call_then(
        &self,
        name: &str,
        arguments: &Value,
        cancel: &CallCancel,
        deliver: Box<dyn FnOnce(ToolResult) + Send>,
    ) {
        deliver(self.call(name, arguments, cancel));
    }
}

/// Runs one call on tokio's blocking pool with [`ToolRunner::call_then`]:
/// the receiver gets the result as soon as it is known, while what the
/// runner does after the call goes on there without holding up the caller.
/// It errs only when the runner panicked before giving a result. Call it
/// inside a tokio runtime.
pub fn spawn_call<R: ToolRunner + ?Sized>(
    runner: Arc<R>,
    name: String,
    arguments: Arc<Value>,
    cancel: CallCancel,
) -> tokio::sync::oneshot::Receiver<ToolResult> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let deliver = Box::new(move |r| {
        let _ = tx.send(r);
    });
    tokio::task::spawn_blocking(move || runner.call_then(&name, &arguments, &cancel, deliver));
    rx
}
