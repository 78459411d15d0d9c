//! Running a turn's tool calls: in order, with consecutive calls to tools
//! that don't mutate run concurrently on the blocking pool. Cancellation
//! reaches the calls: one not started never runs, a running one is stopped.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Agent, AgentError, Event};
use crate::session::{Record, now};
use crate::{CallCancel, ToolCall, ToolResult};

impl Agent {
    /// Runs calls in order; consecutive calls to tools that don't mutate run
    /// concurrently. `None` for a call that never ran because the turn was
    /// cancelled; a call stopped while running comes back as a `cancelled`
    /// error. A transcript that cannot be written stops the turn.
    pub(super) async fn run_calls(
        &mut self,
        calls: &[ToolCall],
        cancel: &CancellationToken,
        on: &mut (dyn FnMut(Event<'_>) + Send),
    ) -> Result<Vec<Option<ToolResult>>, AgentError> {
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
                .map(|c| {
                    let tools = self.tools.clone();
                    let stop = CallCancel::default();
                    let (name, args) = (c.function.name.clone(), c.function.arguments.clone());
                    let call = stop.clone();
                    let handle =
                        tokio::task::spawn_blocking(move || tools.call(&name, &args, &call));
                    (stop, handle)
                })
                .collect();
            let (stops, handles): (Vec<_>, Vec<_>) = running.into_iter().unzip();
            for (c, h) in batch.iter().zip(handles) {
                let mut h = h;
                let joined = tokio::select! {
                    r = &mut h => r,
                    () = cancel.cancelled() => {
                        // Stop every call of the batch, then wait for this
                        // one: it ends promptly, and its files are settled
                        // before the turn reports.
                        for s in &stops {
                            s.cancel();
                        }
                        h.await
                    }
                };
                let r = joined.unwrap_or_else(|e| ToolResult {
                    ok: false,
                    output: format!("error: the tool host failed: {e}"),
                    duration: Duration::ZERO,
                    error_kind: Some("failed".into()),
                    ..ToolResult::default()
                });
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

    fn mutates(&self, name: &str) -> bool {
        // Unknown tools count as mutating: they run alone, in order.
        self.specs
            .iter()
            .find(|t| t.def.name == name)
            .is_none_or(|t| t.mutates)
    }
}
