//! Running a turn's tool calls: in order, with consecutive calls to tools
//! that don't mutate run concurrently on the blocking pool. Cancellation
//! reaches the calls: one not started never runs, a running one is stopped.
//! A call refused beforehand (unusable arguments, a repeat, a tool not
//! offered) does not run and answers with its refusal. Each call's
//! arguments were parsed once ([`ParsedCall`]); that value goes to the
//! runner, the repeat check and the events.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::sanitize::{self, ParsedCall};
use super::{Agent, AgentError, Event};
use crate::session::{Record, now};
use crate::settings::Protocol;
use crate::{CallCancel, ToolResult, jsonproto, spawn_call};

/// A call of a batch: answered at once, or running on the blocking pool.
enum Run {
    Refused(ToolResult),
    Started(CallCancel, tokio::sync::oneshot::Receiver<ToolResult>),
}

/// Why a call does not run, and its kind (`refused`, `repeated`).
type Refusal = (String, &'static str);

/// The next step's choice, as the model is asked it after a repeat under
/// native calls and the text protocol.
const NEXT: &str = "Decide the next step: if the task is done, answer the user now with what \
                    you did; if not, call the tool for the next step.";

impl Agent {
    /// Runs calls in order; consecutive calls to tools that don't mutate run
    /// concurrently. A call that cannot run (unusable arguments, no name, a
    /// tool not offered, a repeat) answers with why instead. `None` for a
    /// call that never ran because the turn was cancelled; a call stopped
    /// while running comes back as a `cancelled` error. A transcript that
    /// cannot be written stops the turn. `cut`: the reply stopped at the
    /// output token limit.
    pub(super) async fn run_calls(
        &mut self,
        calls: &[ParsedCall],
        cut: bool,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Vec<Option<ToolResult>>, AgentError> {
        // What the agent knows of each call's tool, looked up once: whether
        // it is offered, and whether it mutates (an unknown tool counts as
        // mutating: it runs alone, in order).
        let known: Vec<Option<bool>> = calls
            .iter()
            .map(|c| {
                let name = &c.name;
                self.specs
                    .iter()
                    .find(|t| t.def.name == *name)
                    .map(|t| t.mutates)
            })
            .collect();
        let mutates: Vec<bool> = known.iter().map(|m| m.unwrap_or(true)).collect();
        let refused: Vec<Option<Refusal>> = calls
            .iter()
            .zip(&known)
            .map(|(c, known)| {
                sanitize::unusable(c, cut)
                    .map(|why| (why, "refused"))
                    .or_else(|| self.refusal(c, known.is_some()))
            })
            .collect();
        let mut results: Vec<Option<ToolResult>> = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() && !cancel.is_cancelled() {
            let mut end = i + 1;
            if !mutates[i] {
                while end < calls.len() && !mutates[end] {
                    end += 1;
                }
            }
            let batch = &calls[i..end];
            for c in batch {
                on(Event::ToolStart {
                    id: &c.id,
                    name: &c.name,
                    args: c
                        .args
                        .as_deref()
                        .map_err(|_| c.raw.as_deref().unwrap_or("")),
                });
            }
            let running: Vec<_> = batch
                .iter()
                .zip(&refused[i..end])
                .map(|(c, refusal)| match (refusal, &c.args) {
                    (None, Ok(args)) => {
                        let stop = CallCancel::default();
                        let rx = spawn_call(
                            self.tools.clone(),
                            c.name.clone(),
                            args.clone(),
                            stop.clone(),
                        );
                        Run::Started(stop, rx)
                    }
                    (refusal, _) => {
                        let (output, kind) = refusal.clone().unwrap_or_default();
                        Run::Refused(ToolResult {
                            ok: false,
                            output,
                            error_kind: Some(kind.into()),
                            ..ToolResult::default()
                        })
                    }
                })
                .collect();
            let stops: Vec<CallCancel> = running
                .iter()
                .filter_map(|r| match r {
                    Run::Started(stop, _) => Some(stop.clone()),
                    Run::Refused(_) => None,
                })
                .collect();
            for ((c, run), &mutating) in batch.iter().zip(running).zip(&mutates[i..end]) {
                let r = match run {
                    Run::Refused(refusal) => refusal,
                    Run::Started(_, mut h) => {
                        let joined = tokio::select! {
                            r = &mut h => r,
                            () = cancel.cancelled() => {
                                // Stop every call of the batch, then wait for
                                // this one: it ends promptly, and its files
                                // are settled before the turn reports.
                                for s in &stops {
                                    s.cancel();
                                }
                                h.await
                            }
                        };
                        // No result: the runner panicked before giving one.
                        let r = joined.unwrap_or_else(|_| ToolResult {
                            ok: false,
                            output: "error: the tool host failed while running this call".into(),
                            duration: Duration::ZERO,
                            error_kind: Some("failed".into()),
                            ..ToolResult::default()
                        });
                        if let Ok(args) = &c.args {
                            self.repeats.ran(&c.name, args, r.ok && mutating, &r.output);
                        }
                        r
                    }
                };
                let args = c.args.as_deref().ok();
                self.progress.record(&c.name, args, &r, mutating);
                on(Event::ToolEnd {
                    id: &c.id,
                    name: &c.name,
                    args: c
                        .args
                        .as_deref()
                        .map_err(|_| c.raw.as_deref().unwrap_or("")),
                    result: &r,
                });
                self.record(Record::ToolResult {
                    ts: now(),
                    id: c.id.clone(),
                    name: c.name.clone(),
                    ok: r.ok,
                    output: r.output.clone(),
                    duration_ms: r.duration.as_millis() as u64,
                })?;
                results.push(Some(r));
            }
            i = end;
        }
        results.resize(calls.len(), None);
        Ok(results)
    }

    /// Why `call` (of a tool that is `offered` or not) must not run: a tool
    /// left out of the offered ones; or a repeat of a call that already ran
    /// twice, answered with its earlier result and the task restated.
    fn refusal(&mut self, call: &ParsedCall, offered: bool) -> Option<Refusal> {
        let name = &call.name;
        if self.settings.tools.is_some() && !offered {
            let offered: Vec<&str> = self.specs.iter().map(|t| t.def.name.as_str()).collect();
            let why = format!(
                "error: no tool `{name}` is offered in this session; the tools are: {}",
                offered.join(", ")
            );
            return Some((why, "refused"));
        }
        let args = call.args.as_ref().ok()?;
        let repeat = self.repeats.repeat(name, args)?;
        let mut answer = format!(
            "This exact call already ran {} times in this task, with nothing changed since, so \
             it was not run again. Its result was:\n{}",
            repeat.runs,
            repeat.earlier.trim_end()
        );
        // The json protocol restates the task after every result anyway.
        if self.mode != Protocol::Json {
            answer.push_str("\n\n");
            answer.push_str(&self.progress.restate(self.request.as_deref()));
            answer.push_str(NEXT);
        }
        Some((answer, "repeated"))
    }

    /// The task restated after a result under the json protocol: the
    /// calls so far and the choice left.
    pub(super) fn restated(&self) -> String {
        format!(
            "{}{}",
            self.progress.restate(self.request.as_deref()),
            jsonproto::NEXT
        )
    }
}
