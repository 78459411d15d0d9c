//! Running a turn's tool calls: in order, with consecutive calls to tools
//! that don't mutate run concurrently on the blocking pool. Cancellation
//! reaches the calls: one not started never runs, a running one is stopped.
//! A call refused beforehand (unusable arguments, a repeat, a tool not
//! offered) does not run and answers with its refusal.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError, Event};
use crate::session::{Record, now};
use crate::{CallCancel, ToolCall, ToolResult, spawn_call};

/// A call of a batch: answered at once, or running on the blocking pool.
enum Run {
    Refused(ToolResult),
    Started(CallCancel, tokio::sync::oneshot::Receiver<ToolResult>),
}

impl Agent {
    /// Runs calls in order; consecutive calls to tools that don't mutate run
    /// concurrently. `refused[i]`, when set, is the error call `i` answers
    /// with instead of running. `None` for a call that never ran because the
    /// turn was cancelled; a call stopped while running comes back as a
    /// `cancelled` error. A transcript that cannot be written stops the turn.
    pub(super) async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        mut refused: Vec<Option<String>>,
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Vec<Option<ToolResult>>, AgentError> {
        refused.resize(calls.len(), None);
        for (c, r) in calls.iter().zip(refused.iter_mut()) {
            if r.is_none() {
                *r = self.refusal(c);
            }
        }
        let mut results: Vec<Option<ToolResult>> = Vec::with_capacity(calls.len());
        let mut i = 0;
        while i < calls.len() && !cancel.is_cancelled() {
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
            let running: Vec<_> = batch
                .iter()
                .zip(&refused[i..end])
                .map(|(c, refusal)| {
                    if let Some(text) = refusal {
                        return Run::Refused(ToolResult {
                            ok: false,
                            output: text.clone(),
                            error_kind: Some("refused".into()),
                            ..ToolResult::default()
                        });
                    }
                    let stop = CallCancel::default();
                    let rx = spawn_call(
                        self.tools.clone(),
                        c.function.name.clone(),
                        c.function.arguments.clone(),
                        stop.clone(),
                    );
                    Run::Started(stop, rx)
                })
                .collect();
            let stops: Vec<CallCancel> = running
                .iter()
                .filter_map(|r| match r {
                    Run::Started(stop, _) => Some(stop.clone()),
                    Run::Refused(_) => None,
                })
                .collect();
            for (c, run) in batch.iter().zip(running) {
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
                        let mutated = r.ok && self.mutates(&c.function.name);
                        self.repeats
                            .ran(&c.function.name, &c.function.arguments, mutated);
                        r
                    }
                };
                on(Event::ToolEnd {
                    id: &c.id,
                    name: &c.function.name,
                    arguments: &c.function.arguments,
                    result: &r,
                });
                self.record(Record::ToolResult {
                    ts: now(),
                    id: c.id.clone(),
                    name: c.function.name.clone(),
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

    /// Why `call` must not run: a tool left out of the offered ones, or a
    /// repeat of a call that already ran twice.
    fn refusal(&mut self, call: &ToolCall) -> Option<String> {
        let name = &call.function.name;
        if self.settings.tools.is_some() && !self.specs.iter().any(|t| t.def.name == *name) {
            let offered: Vec<&str> = self.specs.iter().map(|t| t.def.name.as_str()).collect();
            return Some(format!(
                "error: no tool `{name}` is offered in this session; the tools are: {}",
                offered.join(", ")
            ));
        }
        self.repeats.refuse(name, &call.function.arguments)
    }

    fn mutates(&self, name: &str) -> bool {
        // Unknown tools count as mutating: they run alone, in order.
        self.specs
            .iter()
            .find(|t| t.def.name == name)
            .is_none_or(|t| t.mutates)
    }
}
