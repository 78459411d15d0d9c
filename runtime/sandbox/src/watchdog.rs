//! Every call ends by its deadline, whatever it waits on, and nothing ticks
//! while no call runs.
//!
//! One thread watches the calls in flight. It sleeps on a condition
//! variable with no timeout while there are none (idle means idle), and
//! otherwise until the earliest deadline. When a call's deadline passes, or
//! the call is cancelled, the watchdog:
//! - marks it expired and wakes its future, which then stops waiting on
//!   anything in the host (a silent server, a body never sent, a pollable
//!   that never fires) and drops the instance;
//! - advances the engine epoch, so a guest running wasm traps at its next
//!   check (the store's epoch callback sees the mark);
//! - sends the call's thread a signal whose handler does nothing and does
//!   not restart system calls, so a blocking one (opening a named pipe,
//!   reading from it) returns `EINTR` to the host code that made it, and
//!   again every [`RESIGNAL`] until the call has ended.
//!
//! A call leaves the watch list before its thread goes on to other work, and
//! signals are sent only under the list's lock: no signal reaches a thread
//! after its call.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use wasmtime::Engine;

/// How often a call past its deadline is signalled again while it has not
/// ended (a host loop that retried after `EINTR`).
const RESIGNAL: Duration = Duration::from_millis(20);

/// Cancels one call, before or while it runs; shared by the caller and the
/// sandbox.
#[derive(Clone, Default)]
pub struct CallControl(Arc<Slot>);

impl std::fmt::Debug for CallControl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallControl")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

#[derive(Default)]
pub(crate) struct Slot {
    cancelled: AtomicBool,
    expired: AtomicBool,
    /// Wakes the call's future when it expires.
    pub(crate) wake: tokio::sync::Notify,
    /// The watchdog watching the call while it runs.
    watcher: Mutex<Option<Weak<Shared>>>,
    /// Stops the command the call is running, if any, when it expires.
    command: Mutex<Option<warden_confine::Stop>>,
}

impl CallControl {
    /// A control for one call.
    pub fn new() -> CallControl {
        CallControl::default()
    }

    /// Cancels the call: if it has not started it never runs; if it is
    /// running it is stopped at once, the way its deadline would stop it.
    pub fn cancel(&self) {
        self.0.cancelled.store(true, Ordering::SeqCst);
        let watcher = self
            .0
            .watcher
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(shared) = watcher.and_then(|w| w.upgrade()) {
            shared.poke();
        }
    }

    /// Whether [`CallControl::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }

    pub(crate) fn slot(&self) -> &Arc<Slot> {
        &self.0
    }
}

impl Slot {
    /// Whether the call must stop now (deadline passed or cancelled).
    pub(crate) fn expired(&self) -> bool {
        self.expired.load(Ordering::SeqCst)
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Has the command the call runs stopped when the call expires (at
    /// once if it already has), so that the run waits on nothing else.
    pub(crate) fn stop_on_expiry(&self, stop: warden_confine::Stop) {
        let mut command = self.command.lock().unwrap_or_else(|e| e.into_inner());
        // `expire` sets the flag before it takes this lock: one of the two
        // sees the other.
        if self.expired() {
            stop.stop();
        }
        *command = Some(stop);
    }

    /// The command has ended.
    pub(crate) fn stop_on_expiry_done(&self) {
        *self.command.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }

    /// Marks the call expired; true the first time. Stops its command.
    fn expire(&self) -> bool {
        if self.expired.swap(true, Ordering::SeqCst) {
            return false;
        }
        if let Some(stop) = &*self.command.lock().unwrap_or_else(|e| e.into_inner()) {
            stop.stop();
        }
        true
    }
}

struct Entry {
    id: u64,
    slot: Arc<Slot>,
    deadline: Instant,
    thread: signal::Thread,
    /// When to signal again, once expired.
    resignal: Option<Instant>,
}

/// What the watchdog thread is doing while a caller holds the lock.
#[derive(Default, Clone, Copy)]
enum Sleep {
    /// Not waiting yet (starting).
    #[default]
    Awake,
    /// Waiting for a call to start.
    Forever,
    /// Waiting until this instant (the nearest deadline it knew of).
    Until(Instant),
}

#[derive(Default)]
struct State {
    calls: Vec<Entry>,
    sleep: Sleep,
    next_id: u64,
    started: bool,
    /// The host is gone: the thread ends.
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
    engine: Engine,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // Every update is a push or a remove: usable after a panic.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn poke(&self) {
        let _state = self.lock();
        self.changed.notify_one();
    }
}

/// The watchdog of one engine.
pub(crate) struct Watchdog {
    shared: Arc<Shared>,
}

/// A call being watched; dropping it ends the watch.
pub(crate) struct Watch<'a> {
    shared: &'a Arc<Shared>,
    id: u64,
}

impl Watchdog {
    pub(crate) fn new(engine: &Engine) -> Watchdog {
        Watchdog {
            shared: Arc::new(Shared {
                state: Mutex::default(),
                changed: Condvar::new(),
                engine: engine.clone(),
            }),
        }
    }

    /// Watches the call of `control` on the current thread until the
    /// returned guard is dropped: it expires at `deadline` or when
    /// cancelled.
    pub(crate) fn watch(&self, control: &CallControl, deadline: Instant) -> Watch<'_> {
        signal::install();
        *control.0.watcher.lock().unwrap_or_else(|e| e.into_inner()) =
            Some(Arc::downgrade(&self.shared));
        let mut state = self.shared.lock();
        if !state.started {
            state.started = true;
            let shared = self.shared.clone();
            // Without the thread, deadlines could not be enforced: better
            // to stop than to run unbounded.
            std::thread::Builder::new()
                .name("warden-watchdog".into())
                .spawn(move || run(shared))
                .expect("cannot start the watchdog thread");
        }
        let id = state.next_id;
        state.next_id += 1;
        state.calls.push(Entry {
            id,
            slot: control.0.clone(),
            deadline,
            thread: signal::Thread::current(),
            resignal: None,
        });
        // Waking a sleeping thread costs the caller tens of microseconds on
        // a virtual machine: only when the watchdog would otherwise wake
        // after this deadline. A stale earlier wake-up (a finished call's
        // deadline) finds the new call then.
        if !matches!(state.sleep, Sleep::Until(at) if at <= deadline) {
            self.shared.changed.notify_one();
        }
        Watch {
            shared: &self.shared,
            id,
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_one();
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.calls.retain(|e| e.id != self.id);
    }
}

fn run(shared: Arc<Shared>) {
    let mut state = shared.lock();
    loop {
        if state.closed {
            return;
        }
        let now = Instant::now();
        let mut advance = false;
        let mut next: Option<Instant> = None;
        for e in &mut state.calls {
            if now >= e.deadline || e.slot.cancelled() {
                if e.slot.expire() {
                    advance = true;
                    e.slot.wake.notify_one();
                }
                if e.resignal.is_none_or(|at| now >= at) {
                    e.thread.interrupt();
                    e.resignal = Some(now + RESIGNAL);
                }
            }
            let wake_at = e.resignal.unwrap_or(e.deadline);
            next = Some(next.map_or(wake_at, |n| n.min(wake_at)));
        }
        if advance {
            shared.engine.increment_epoch();
        }
        state.sleep = next.map_or(Sleep::Forever, Sleep::Until);
        state = match next {
            // Nothing in flight: sleep until a call starts. No timeout.
            None => shared
                .changed
                .wait(state)
                .unwrap_or_else(|e| e.into_inner()),
            Some(at) => {
                let left = at.saturating_duration_since(Instant::now());
                match shared.changed.wait_timeout(state, left) {
                    Ok((s, _)) => s,
                    Err(e) => e.into_inner().0,
                }
            }
        };
        state.sleep = Sleep::Awake;
    }
}

/// Interrupting a thread blocked in a system call.
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod signal {
    use std::sync::Once;

    /// A real-time signal no library of warden's uses.
    fn number() -> libc::c_int {
        libc::SIGRTMIN() + 4
    }

    extern "C" fn nothing(_: libc::c_int) {}

    /// Installs the do-nothing handler, without `SA_RESTART`, once.
    pub(super) fn install() {
        static ONCE: Once = Once::new();
        ONCE.call_once(|| {
            // SAFETY: a zeroed `sigaction` is a valid empty one; the handler
            // is an `extern "C"` function that touches nothing, so it is
            // async-signal-safe.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                action.sa_flags = 0;
                libc::sigaction(number(), &action, std::ptr::null_mut());
            }
        });
    }

    /// A thread to interrupt.
    #[derive(Clone, Copy)]
    pub(super) struct Thread(libc::pthread_t);

    impl Thread {
        pub(super) fn current() -> Thread {
            // SAFETY: always safe to call.
            Thread(unsafe { libc::pthread_self() })
        }

        /// Sends the signal. Called only while the thread is known to be
        /// inside its call (under the watch list's lock), so the handle is
        /// that of a live thread.
        pub(super) fn interrupt(self) {
            // SAFETY: the thread is alive (see above); the handler installed
            // for this signal does nothing.
            unsafe {
                libc::pthread_kill(self.0, number());
            }
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod signal {
    pub(super) fn install() {}

    #[derive(Clone, Copy)]
    pub(super) struct Thread;

    impl Thread {
        pub(super) fn current() -> Thread {
            Thread
        }
        pub(super) fn interrupt(self) {}
    }
}
