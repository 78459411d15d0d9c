//! A tool bound to its grants: what a workspace calls.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::Value;
use warden_policy::{Grants, Limits};

use crate::bind::Prepared;
use crate::call::{Fresh, Op, Out};
use crate::desktop::DesktopCall;
use crate::effects::Effects;
use crate::granted::GrantedDirs;
use crate::host::{Tool, ToolHost, ToolInfo};
use crate::outcome::{CallOutcome, ErrorKind, ToolError, cap_output};
use crate::watchdog::CallControl;

/// A tool with its grants, prepared once: its directories are open, its
/// environment read, its network allow-list parsed. Cheap to clone.
#[derive(Clone)]
pub struct BoundTool {
    host: Arc<ToolHost>,
    tool: usize,
    grants: Arc<Grants>,
    prepared: Arc<Prepared>,
    /// The instance made ahead for the next call, if any.
    ready: Arc<Mutex<Option<Fresh>>>,
}

impl std::fmt::Debug for BoundTool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BoundTool")
            .field("name", &self.info().spec.name)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

impl BoundTool {
    pub(crate) fn new(
        host: Arc<ToolHost>,
        tool: usize,
        grants: Arc<Grants>,
        prepared: Arc<Prepared>,
    ) -> BoundTool {
        BoundTool {
            host,
            tool,
            grants,
            prepared,
            ready: Arc::default(),
        }
    }

    fn tool(&self) -> &Tool {
        &self.host.tools[self.tool]
    }

    /// Its spec, origin and component.
    pub fn info(&self) -> &ToolInfo {
        &self.tool().info
    }

    /// Whether its calls run directly on the calling thread (its component
    /// imports nothing that waits in the host) rather than on a fiber.
    /// Loads the component; `None` when it does not load.
    pub fn runs_directly(&self) -> Option<bool> {
        let pre = self.host.component(self.tool().component).ok()?;
        Some(pre.direct)
    }

    /// What it was granted.
    pub fn grants(&self) -> &Grants {
        &self.grants
    }

    /// Its granted directories, opened once: what its calls preopen, and
    /// what a preview of a call may look through.
    pub fn dirs(&self) -> &GrantedDirs {
        &self.prepared.dirs
    }

    /// The handle of the granted directory at `host` (a mount's host
    /// path), opened when the tool was bound: the host reaches the tool's
    /// files through it, never by path. `None` off Linux.
    pub fn dir_fd(&self, host: &std::path::Path) -> Option<std::os::fd::BorrowedFd<'_>> {
        self.prepared.dirs.fd(host)
    }

    /// Parses call arguments (one JSON object; empty means `{}`); the error
    /// says how to call correctly.
    pub fn parse_args(&self, args: &str) -> Result<Value, ToolError> {
        self.tool().checked.parse_args(args)
    }

    /// Validates parsed arguments against the tool's schema, once, and
    /// works out what the call will touch ([`Checked::effects`]): what
    /// comes back is the only way to run them.
    pub fn check<'a>(&'a self, args: &'a Value) -> Result<Checked<'a>, ToolError> {
        let checked = &self.tool().checked;
        checked.check_args(args)?;
        let declared = checked.spec.effects.as_deref();
        let desktop = &checked.spec.desktop;
        Ok(Checked {
            tool: self,
            args,
            effects: Effects::of(declared, args, self.dirs()),
            desktop: Arc::new(if desktop.is_empty() {
                DesktopCall::default()
            } else {
                DesktopCall::of(desktop, args, &self.prepared.desktop)
            }),
        })
    }

    /// A one-line description of its arguments, for messages.
    pub fn usage(&self) -> String {
        self.tool().checked.usage()
    }

    /// Runs one call with already parsed arguments: validated against the
    /// schema, then run in an instance no call has used. `control` cancels
    /// it. Every failure comes back in the outcome, never as a panic.
    pub fn call(&self, args: &Value, control: &CallControl) -> CallOutcome {
        match self.check(args) {
            Ok(checked) => checked.call(control),
            Err(e) => self.refused(e),
        }
    }

    /// The outcome of a call that never ran, failing with `e`.
    fn refused(&self, e: ToolError) -> CallOutcome {
        let (result, truncated) = capped(Err(e), &self.grants.limits);
        CallOutcome {
            tool: self.info().spec.name.clone(),
            result,
            truncated,
            duration: std::time::Duration::ZERO,
            stderr: String::new(),
        }
    }

    /// Runs a call of arguments already checked against the schema.
    fn run(
        &self,
        args: &Value,
        desktop: &Arc<DesktopCall>,
        control: &CallControl,
        ahead: bool,
        deliver: impl FnOnce(CallOutcome),
    ) {
        let start = Instant::now();
        let tool = self.tool();
        let name = &tool.info.spec.name;
        let limits = &self.grants.limits;
        let mut stderr = String::new();
        let mut spent = None;
        let mut component = None;
        // Whether the guest answered: only then is another instance made
        // ahead (one that trapped, ran out of time or memory, or was
        // cancelled could do so again, unwatched by anyone waiting).
        let mut answered = false;
        let result = (|| {
            let pre = self.host.component(tool.component).map_err(|why| {
                ToolError::new(
                    ErrorKind::Crashed,
                    format!("the sandbox could not load the tool's component: {why}"),
                )
            })?;
            component = Some(pre);
            let text = args.to_string();
            let ready = self.ready.lock().unwrap_or_else(|e| e.into_inner()).take();
            let ran = self.host.run(
                pre,
                &self.prepared,
                limits,
                control,
                Op::Call {
                    name,
                    args: &text,
                    desktop,
                },
                ready,
            );
            stderr = ran.stderr;
            spent = Some(ran.spent);
            match ran.result? {
                Out::Called(answer) => {
                    answered = true;
                    answer.map_err(ToolError::from)
                }
                Out::Specs(_) => unreachable!("a call answers a result"),
            }
        })();
        let (result, truncated) = capped(result, limits);
        deliver(CallOutcome {
            tool: name.clone(),
            result,
            truncated,
            duration: start.elapsed(),
            stderr,
        });
        drop(spent);
        let Some(pre) = component.filter(|_| ahead && answered) else {
            return;
        };
        if self
            .ready
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_some()
        {
            return;
        }
        if let Some(fresh) = self.host.make_ahead(pre, &self.prepared, limits) {
            let mut ready = self.ready.lock().unwrap_or_else(|e| e.into_inner());
            // A call running alongside may have made one meanwhile.
            if ready.is_none() {
                *ready = Some(fresh);
            }
        }
    }

    /// Parses `args` and runs the call (for callers holding raw text).
    pub fn call_text(&self, args: &str, control: &CallControl) -> CallOutcome {
        match self.parse_args(args) {
            Ok(value) => self.call(&value, control),
            Err(e) => self.refused(e),
        }
    }
}

/// A result cut to the tool's output limit, and whether it was cut.
fn capped(result: Result<String, ToolError>, limits: &Limits) -> (Result<String, ToolError>, bool) {
    match result {
        Ok(out) => {
            let (out, cut) = cap_output(out, limits.output);
            (Ok(out), cut)
        }
        Err(mut e) => {
            let (msg, cut) = cap_output(std::mem::take(&mut e.message), limits.output);
            e.message = msg;
            (Err(e), cut)
        }
    }
}

/// Arguments of one call, checked against its tool's schema by
/// [`BoundTool::check`]: a call made from them is checked exactly once,
/// whoever looked at them first (approval, the event line).
#[derive(Debug)]
pub struct Checked<'t> {
    tool: &'t BoundTool,
    args: &'t Value,
    effects: Effects,
    desktop: Arc<DesktopCall>,
}

impl Checked<'_> {
    /// The arguments.
    pub fn args(&self) -> &Value {
        self.args
    }

    /// What the call will touch, resolved once: the preview, undo and the
    /// event line all read this.
    pub fn effects(&self) -> &Effects {
        &self.effects
    }

    /// What the call will do in the desktop session, worked out once: the
    /// preview shows this, and the call does nothing else there.
    pub fn desktop(&self) -> &DesktopCall {
        &self.desktop
    }

    /// Runs the call in an instance no call has used. `control` cancels
    /// it. Every failure comes back in the outcome, never as a panic.
    pub fn call(&self, control: &CallControl) -> CallOutcome {
        let mut outcome = None;
        self.tool
            .run(self.args, &self.desktop, control, false, |o| {
                outcome = Some(o)
            });
        outcome.expect("every call delivers its outcome")
    }

    /// Runs the call like [`Checked::call`] and hands its outcome to
    /// `deliver` as soon as it is known. Then, on this thread, the call's
    /// instance is torn down and the next call's instance is made ahead,
    /// so that a call made later (after the model's next turn) starts at
    /// once. Nothing is left running: no thread waits for the next call.
    pub fn call_then(&self, control: &CallControl, deliver: impl FnOnce(CallOutcome)) {
        self.tool
            .run(self.args, &self.desktop, control, true, deliver);
    }
}
