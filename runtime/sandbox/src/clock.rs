//! Sleeps that end by the call's deadline.
//!
//! The epoch deadline stops a guest only while wasm runs; a guest blocked in
//! the host (a sleep of an hour) would hold the call past its time limit.
//! warden replaces `wasi:clocks/monotonic-clock`'s two `subscribe` functions
//! with ones whose timers never outlast the call: the guest wakes at the
//! deadline, runs wasm again, and the epoch trap stops it as a timeout.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::HostMonotonicClock;
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use crate::wasi::CallState;

/// The version of `wasi:clocks` that wasmtime-wasi defines; guests importing
/// any 0.2.x version are linked to it.
const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.12";

/// A little past the deadline, so the epoch trap (not the wake-up) decides.
const GRACE: Duration = Duration::from_millis(20);

/// The monotonic clock of one call: nanoseconds since the call began.
/// Copies share one span, so [`CallClock::restart`] moves every copy's
/// origin and deadline (an instance made ahead of its call starts its time
/// when the call does).
#[derive(Clone)]
pub(crate) struct CallClock {
    span: Arc<Mutex<Span>>,
}

#[derive(Clone, Copy)]
struct Span {
    origin: Instant,
    deadline: Instant,
}

impl Span {
    fn starting_now(timeout: Duration) -> Span {
        let origin = Instant::now();
        Span {
            origin,
            deadline: origin + timeout,
        }
    }
}

impl CallClock {
    pub(crate) fn new(timeout: Duration) -> CallClock {
        CallClock {
            span: Arc::new(Mutex::new(Span::starting_now(timeout))),
        }
    }

    /// Starts the call's time (and its deadline) anew, now.
    pub(crate) fn restart(&self, timeout: Duration) {
        *self.lock() = Span::starting_now(timeout);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Span> {
        // A panic cannot leave a `Span` half-written: keep using it.
        self.span.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When the call's time is up.
    pub(crate) fn deadline(&self) -> Instant {
        self.lock().deadline
    }

    fn now_ns(&self) -> u64 {
        let origin = self.lock().origin;
        u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// When a timer of `after` set now should fire: never after the deadline.
    fn wake_at(&self, after: Duration) -> Instant {
        let cap = self.deadline() + GRACE;
        Instant::now()
            .checked_add(after)
            .map_or(cap, |t| t.min(cap))
    }
}

impl HostMonotonicClock for CallClock {
    fn resolution(&self) -> u64 {
        1
    }
    fn now(&self) -> u64 {
        self.now_ns()
    }
}

struct Timer(tokio::time::Instant);

#[wasmtime_wasi::async_trait]
impl Pollable for Timer {
    async fn ready(&mut self) {
        tokio::time::sleep_until(self.0).await;
    }
}

fn timer(state: &mut CallState, after: Duration) -> wasmtime::Result<Resource<DynPollable>> {
    let at = tokio::time::Instant::from_std(state.clock.wake_at(after));
    let timer = state.table.push(Timer(at))?;
    subscribe(&mut state.table, timer)
}

/// Shadows the linker's `subscribe-duration` and `subscribe-instant`.
pub(crate) fn add_bounded_timers(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut clock = linker.instance(MONOTONIC_CLOCK)?;
    clock.func_wrap("subscribe-duration", |mut cx, (ns,): (u64,)| {
        Ok((timer(cx.data_mut(), Duration::from_nanos(ns))?,))
    })?;
    clock.func_wrap("subscribe-instant", |mut cx, (when,): (u64,)| {
        let state: &mut CallState = cx.data_mut();
        let after = Duration::from_nanos(when.saturating_sub(state.clock.now_ns()));
        Ok((timer(state, after)?,))
    })?;
    linker.allow_shadowing(false);
    Ok(())
}
