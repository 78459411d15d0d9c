//! The clock of one call, and sleeps that end by its deadline.
//!
//! A guest blocked in a host sleep is woken at the call's deadline (a
//! little after, so that the watchdog's stop, not the wake-up, decides);
//! the watchdog also wakes the call's future there, so no sleep outlasts
//! the call either way.

use std::time::{Duration, Instant};

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::p2::{DynPollable, Pollable, subscribe};

use crate::wasi::CallState;

/// The version of `wasi:clocks` that wasmtime-wasi defines; guests importing
/// any 0.2.x version are linked to it.
const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.12";

/// A little past the deadline, so the watchdog (not the wake-up) decides.
const GRACE: Duration = Duration::from_millis(20);

/// The monotonic clock of one call: nanoseconds since the call began, and
/// when its time is up. Fixed when the call starts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct CallClock {
    origin: Instant,
    deadline: Instant,
}

impl CallClock {
    pub(crate) fn starting_now(timeout: Duration) -> CallClock {
        let origin = Instant::now();
        CallClock {
            origin,
            deadline: origin + timeout,
        }
    }

    /// When the call's time is up.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// How long the call may run in all.
    pub(crate) fn timeout(&self) -> Duration {
        self.deadline - self.origin
    }

    fn now_ns(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// When a timer of `after` set now should fire: never after the deadline.
    fn wake_at(&self, after: Duration) -> Instant {
        let cap = self.deadline + GRACE;
        Instant::now()
            .checked_add(after)
            .map_or(cap, |t| t.min(cap))
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

/// Shadows the linker's `wasi:clocks/monotonic-clock`: it reads the call's
/// clock, and its timers end by the call's deadline.
pub(crate) fn add_bounded_timers(linker: &mut Linker<CallState>) -> wasmtime::Result<()> {
    linker.allow_shadowing(true);
    let mut clock = linker.instance(MONOTONIC_CLOCK)?;
    clock.func_wrap("now", |cx, (): ()| Ok((cx.data().clock.now_ns(),)))?;
    clock.func_wrap("resolution", |_, (): ()| Ok((1u64,)))?;
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
