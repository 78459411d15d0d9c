//! One call: an instance no call has used, in a store of its own (made in
//! the call, or ahead of it at the end of the tool's previous call), run
//! until it answers, traps, or the watchdog stops it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use warden_policy::Limits;
use wasmtime::{Store, Trap, UpdateDeadline};

use crate::alloc::Budget;
use crate::bind::Prepared;
use wasmtime::component::Instance;

use crate::bindings::{GuestError, GuestSpec, Pre};
use crate::clock::CallClock;
use crate::engine::AHEAD;
use crate::host::ToolHost;
use crate::net::{Denials, Notes};
use crate::outcome::{ErrorKind, ToolError};
use crate::wasi::{CallState, CappedPipe, call_state};
use crate::watchdog::{CallControl, Slot};

/// What to run in the instance.
pub(crate) enum Op<'a> {
    Describe,
    Call {
        name: &'a str,
        args: &'a str,
        /// What the call was checked to do in the desktop session.
        desktop: &'a Arc<crate::desktop::DesktopCall>,
    },
}

/// What the guest answered.
pub(crate) enum Out {
    Specs(Vec<GuestSpec>),
    Called(Result<String, GuestError>),
}

/// Pool slots: at most this many instances at once; more calls wait their
/// turn instead of failing.
pub(crate) struct Permits {
    /// Free slots, and calls waiting for one.
    free: Mutex<(usize, usize)>,
    freed: Condvar,
}

/// How often a call waiting for a slot checks whether it was cancelled.
const QUEUE_CHECK: Duration = Duration::from_millis(50);

impl Permits {
    pub(crate) fn new(n: usize) -> Permits {
        Permits {
            free: Mutex::new((n, 0)),
            freed: Condvar::new(),
        }
    }

    /// Waits for a slot; `None` when cancelled while waiting.
    fn take(&self, control: &CallControl) -> Option<Permit<'_>> {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while free.0 == 0 {
            if control.is_cancelled() {
                return None;
            }
            free.1 += 1;
            free = self
                .freed
                .wait_timeout(free, QUEUE_CHECK)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            free.1 -= 1;
        }
        free.0 -= 1;
        Some(Permit(self))
    }
}

pub(crate) struct Permit<'a>(&'a Permits);

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut free = self.0.free.lock().unwrap_or_else(|e| e.into_inner());
        free.0 += 1;
        // A notification is a system call even with no one waiting: only
        // when a call waits for the slot.
        if free.1 > 0 {
            self.0.freed.notify_one();
        }
    }
}

/// What a call's store shares with the host: the guest's stderr, the
/// requests refused, the notes for the model, the memory budget.
struct Handles {
    stderr: CappedPipe,
    denied: Denials,
    notes: Notes,
    budget: Arc<Budget>,
}

impl Handles {
    fn new(limits: &Limits, engine: &wasmtime::Engine) -> Handles {
        Handles {
            stderr: CappedPipe::default(),
            denied: Denials::default(),
            notes: Notes::default(),
            budget: Arc::new(Budget::new(limits.memory, engine)),
        }
    }
}

/// An instance of a tool that no call has used yet, made ahead, at the end
/// of the tool's previous call, so that the next call starts in it. It
/// holds one of the pool's slots for instances made ahead.
pub(crate) struct Fresh {
    store: Store<CallState>,
    guest: Instance,
    handles: Handles,
    _ahead: AheadSlot,
}

/// The pool's slots for instances made ahead, beyond those of running
/// calls: a fixed number, so that waiting instances never take a running
/// call's place.
pub(crate) struct Ahead(Arc<AtomicUsize>);

impl Ahead {
    pub(crate) fn new() -> Ahead {
        Ahead(Arc::new(AtomicUsize::new(0)))
    }

    /// A slot, or `None` when every one holds an instance.
    fn take(&self) -> Option<AheadSlot> {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < AHEAD as usize).then_some(n + 1)
            })
            .ok()
            .map(|_| AheadSlot(self.0.clone()))
    }
}

struct AheadSlot(Arc<AtomicUsize>);

impl Drop for AheadSlot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What is left of a call once it answered: its store, whose pool slot is
/// reset and given back when this is dropped, and then its permit.
pub(crate) struct Spent<'a> {
    _store: Option<Store<CallState>>,
    _permit: Option<Permit<'a>>,
}

impl Spent<'_> {
    fn nothing() -> Self {
        Spent {
            _store: None,
            _permit: None,
        }
    }
}

/// A call's answer, what the guest wrote to stderr, and what is left to
/// tear down.
pub(crate) struct Ran<'a> {
    pub(crate) result: Result<Out, ToolError>,
    pub(crate) stderr: String,
    pub(crate) spent: Spent<'a>,
}

impl ToolHost {
    /// The store of one call, or of an instance made ahead.
    fn store(&self, prepared: &Prepared, clock: CallClock, h: &Handles) -> Store<CallState> {
        let state = call_state(
            prepared,
            clock,
            &h.stderr,
            &h.denied,
            &h.notes,
            h.budget.clone(),
        );
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limiter);
        store
    }

    /// Runs `op` in `made` (an instance made ahead) or in a new instance of
    /// `pre`, on this thread: the guest waits on nothing in the host but
    /// system calls, which the watchdog's signal interrupts, and its wasm
    /// stops at the next epoch check.
    fn call_direct(
        pre: &Pre,
        made: Option<Instance>,
        store: &mut Store<CallState>,
        op: Op<'_>,
    ) -> wasmtime::Result<Out> {
        let guest = match made {
            Some(guest) => guest,
            None => pre.instantiate(&mut *store)?,
        };
        Ok(match op {
            Op::Describe => Out::Specs(pre.describe(&mut *store, guest)?),
            Op::Call { name, args, .. } => Out::Called(pre.call(&mut *store, guest, name, args)?),
        })
    }

    /// Runs `op` in `made` (an instance made ahead) or in a new instance of
    /// `pre`, on a fiber. `None` when the watchdog woke it first: whatever
    /// the guest waited on in the host is dropped.
    fn call_on_fiber(
        pre: &Pre,
        made: Option<Instance>,
        store: &mut Store<CallState>,
        op: Op<'_>,
        slot: &Slot,
    ) -> Option<wasmtime::Result<Out>> {
        let run = async {
            let guest = match made {
                Some(guest) => guest,
                None => pre.instantiate_async(&mut *store).await?,
            };
            match op {
                Op::Describe => pre.describe_async(&mut *store, guest).await.map(Out::Specs),
                Op::Call { name, args, .. } => pre
                    .call_async(&mut *store, guest, name, args)
                    .await
                    .map(Out::Called),
            }
        };
        let expired = slot.wake.notified();
        // Boxed: the future (nearly 3 KB with the guest call in it) is then
        // not copied on its way into the runtime, each copy to cold stack.
        wasmtime_wasi::runtime::in_tokio(Box::pin(async {
            tokio::select! {
                biased;
                r = run => Some(r),
                () = expired => None,
            }
        }))
    }

    /// Stops the guest at its next epoch check, and a program it runs, once
    /// `slot` expires or the budget is spent.
    fn arm(store: &mut Store<CallState>, slot: &Arc<Slot>, budget: &Arc<Budget>) {
        store.data_mut().slot = slot.clone();
        let (stop, spent) = (slot.clone(), budget.clone());
        store.epoch_deadline_callback(move |_| {
            Ok(if stop.expired() || spent.spent() {
                UpdateDeadline::Interrupt
            } else {
                UpdateDeadline::Continue(1)
            })
        });
        store.set_epoch_deadline(1);
    }

    /// Makes an instance of `pre` from `prepared` for a later call, within
    /// `limits` and under the watchdog like a call. `None` when every slot
    /// for instances made ahead is taken, or the instance could not be made
    /// (the call that needs it then makes its own and reports why).
    pub(crate) fn make_ahead(
        &self,
        pre: &Pre,
        prepared: &Prepared,
        limits: &Limits,
    ) -> Option<Fresh> {
        let ahead = self.ahead.take()?;
        let clock = CallClock::starting_now(limits.timeout);
        let handles = Handles::new(limits, &self.engine);
        let control = CallControl::new();
        let mut store = self.store(prepared, clock, &handles);
        let guest = {
            let _charging = handles.budget.charge();
            let _watch = self.watchdog.watch(&control, clock.deadline());
            Self::arm(&mut store, control.slot(), &handles.budget);
            if pre.direct {
                pre.instantiate(&mut store).ok()?
            } else {
                let expired = control.slot().wake.notified();
                wasmtime_wasi::runtime::in_tokio(async {
                    tokio::select! {
                        biased;
                        made = pre.instantiate_async(&mut store) => made.ok(),
                        () = expired => None,
                    }
                })?
            }
        };
        Some(Fresh {
            store,
            guest,
            handles,
            _ahead: ahead,
        })
    }

    /// Runs `op` in `ready`, an instance made ahead, or else in a fresh
    /// instance of `pre` made from `prepared`, within `limits`.
    pub(crate) fn run(
        &self,
        pre: &Pre,
        prepared: &Prepared,
        limits: &Limits,
        control: &CallControl,
        op: Op<'_>,
        ready: Option<Fresh>,
    ) -> Ran<'_> {
        let tool = match op {
            Op::Call { name, .. } => name,
            Op::Describe => "describe",
        };
        let cancelled = || Ran {
            result: Err(ToolError::new(
                ErrorKind::Cancelled,
                "the user cancelled this call",
            )),
            stderr: String::new(),
            spent: Spent::nothing(),
        };
        if control.is_cancelled() {
            return cancelled();
        }
        let Some(permit) = self.permits.take(control) else {
            return cancelled();
        };
        // The clock reads zero and the time limit starts now, whenever the
        // instance was made.
        let clock = CallClock::starting_now(limits.timeout);
        let (mut store, made, h) = match ready {
            Some(Fresh {
                mut store,
                guest,
                handles,
                ..
            }) => {
                store.data_mut().start(clock);
                (store, Some(guest), handles)
            }
            None => {
                let handles = Handles::new(limits, &self.engine);
                (self.store(prepared, clock, &handles), None, handles)
            }
        };
        // From here, host memory allocated on this thread counts, and the
        // watchdog stops the call at its deadline or on cancellation.
        let charging = h.budget.charge();
        let watch = self.watchdog.watch(control, clock.deadline());
        let slot = control.slot().clone();
        Self::arm(&mut store, &slot, &h.budget);
        if let Op::Call { desktop, .. } = &op {
            store.data_mut().desktop.call = Arc::clone(desktop);
        }
        let answered = if pre.direct {
            Some(Self::call_direct(pre, made, &mut store, op))
        } else {
            Self::call_on_fiber(pre, made, &mut store, op, &slot)
        };
        let mut result = match answered {
            Some(Ok(out)) => Ok(out),
            Some(Err(e)) => {
                Err(stopped(&slot, &h.budget, limits).unwrap_or_else(|| crashed(&e, &h.stderr)))
            }
            None => Err(stopped(&slot, &h.budget, limits).unwrap_or_else(|| timed_out(limits))),
        };
        drop(watch);
        drop(charging);
        let denied = std::mem::take(&mut *h.denied.lock().unwrap_or_else(|e| e.into_inner()));
        let mut note = String::new();
        if !denied.is_empty() {
            note = denial_note(tool, &denied);
        }
        // What warden did to the call's requests (a secret held back) holds
        // whether or not the tool got an answer: a success without its
        // secret is no proof the request was made as the model thinks.
        let mut said = String::new();
        for n in std::mem::take(&mut *h.notes.lock().unwrap_or_else(|e| e.into_inner())) {
            said.push_str(&format!("\n[warden: {n}]"));
        }
        note.push_str(&said);
        if !note.is_empty() {
            match &mut result {
                Ok(Out::Called(Err(e))) => append(e, &note),
                Ok(Out::Called(Ok(out))) => out.push_str(&said),
                Err(e) => e.message.push_str(&note),
                _ => {}
            }
        }
        let spent = Spent {
            _store: Some(store),
            _permit: Some(permit),
        };
        // No secret leaves the call, whatever the tool managed to learn.
        let secrets = &prepared.secrets;
        let mut stderr = h.stderr.text();
        if !secrets.is_empty() {
            match &mut result {
                Ok(Out::Called(Ok(out))) => *out = secrets.scrub(out).into_owned(),
                Ok(Out::Called(Err(
                    GuestError::InvalidArgs(m)
                    | GuestError::NotFound(m)
                    | GuestError::Denied(m)
                    | GuestError::Failed(m),
                ))) => *m = secrets.scrub(m).into_owned(),
                Err(e) => e.message = secrets.scrub(&e.message).into_owned(),
                _ => {}
            }
            stderr = secrets.scrub(&stderr).into_owned();
        }
        Ran {
            result,
            stderr,
            spent,
        }
    }
}

/// Why the watchdog or the budget stopped the call, if they did.
fn stopped(slot: &Slot, budget: &Budget, limits: &Limits) -> Option<ToolError> {
    if budget.spent() {
        return Some(ToolError::new(
            ErrorKind::MemoryLimit,
            format!(
                "the call needed more than its memory limit of {} MiB (its own memory plus \
                 {} MiB the host held for it) and was stopped; ask for less data per call, or \
                 raise `memory` for this tool in warden.toml",
                limits.memory >> 20,
                budget.host_bytes() >> 20
            ),
        ));
    }
    if slot.cancelled() {
        return Some(ToolError::new(
            ErrorKind::Cancelled,
            "the user cancelled this call while it ran; it was stopped",
        ));
    }
    slot.expired().then(|| timed_out(limits))
}

fn timed_out(limits: &Limits) -> ToolError {
    ToolError::new(
        ErrorKind::Timeout,
        format!(
            "the call ran past its time limit of {} ms and was stopped; \
             ask for less work per call, or raise `timeout` for this tool in warden.toml",
            limits.timeout.as_millis()
        ),
    )
}

fn append(e: &mut GuestError, note: &str) {
    match e {
        GuestError::InvalidArgs(m)
        | GuestError::NotFound(m)
        | GuestError::Denied(m)
        | GuestError::Failed(m) => m.push_str(note),
    }
}

/// Tells the model (and the user reading along) which requests the host
/// refused, and how a user would grant them.
fn denial_note(tool: &str, denied: &[String]) -> String {
    format!(
        "\n[warden: network access to {} was denied: `{tool}` is not granted that host. \
         Only the user can grant it, with `network = [\"HOST\"]` under [tools.{tool}] in \
         warden.toml, then `warden trust`.]",
        denied.join(", ")
    )
}

/// A trap or host failure that was neither the deadline nor the budget.
fn crashed(e: &wasmtime::Error, stderr: &CappedPipe) -> ToolError {
    let trap = e.downcast_ref::<Trap>().copied();
    let detail = stderr_tail(&stderr.text());
    let what = match trap {
        Some(Trap::StackOverflow) => {
            "the tool overflowed its stack (runaway recursion?)".to_string()
        }
        // Rust guests keep their stack in linear memory: runaway recursion
        // runs off its bottom before wasmtime's own stack limit.
        Some(Trap::MemoryOutOfBounds) => {
            "the tool accessed memory out of bounds (a stack overflow from runaway recursion, \
             or a memory bug in the tool)"
                .to_string()
        }
        Some(Trap::UnreachableCodeReached) => {
            "the tool aborted (a panic or failed allocation inside it)".to_string()
        }
        Some(t) => format!("the tool trapped: {t}"),
        None => format!("the sandbox could not run the tool: {e:#}"),
    };
    let message = if detail.is_empty() {
        format!("{what}. This is a bug in the tool, not in your arguments; try another approach")
    } else {
        format!("{what}. Its last output: {detail}")
    };
    ToolError::new(ErrorKind::Crashed, message)
}

fn stderr_tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = &lines[lines.len().saturating_sub(3)..];
    tail.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::{AHEAD, Ahead};

    #[test]
    fn instances_made_ahead_never_take_more_than_their_slots() {
        let ahead = Ahead::new();
        let held: Vec<_> = (0..AHEAD).map_while(|_| ahead.take()).collect();
        assert_eq!(held.len(), AHEAD as usize);
        assert!(ahead.take().is_none(), "a slot past the last");
        drop(held);
        assert!(ahead.take().is_some(), "slots come back when freed");
    }
}
