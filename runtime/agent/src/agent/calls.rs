//! Running a turn's tool calls: in order, with consecutive calls to tools
//! that don't mutate run concurrently on the blocking pool.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{Agent, Event};
use crate::session::{Record, now};
use crate::{ToolCall, ToolResult};

impl Agent {
    /// Runs calls in order; consecutive calls to tools that don't mutate run
    /// concurrently. `None` for a call cut short by cancellation.
    pub(super) async fn run_calls(
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
