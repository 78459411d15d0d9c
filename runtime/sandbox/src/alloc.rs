//! Host memory a guest makes the host hold counts against its call's
//! memory limit.
//!
//! A guest can make the host allocate without growing its own memory:
//! resources kept in the call's table (headers, requests, pollables),
//! buffered bodies, strings copied out of guest memory. [`HostAlloc`], the
//! binary's global allocator, counts the bytes allocated (net of those
//! freed) on a thread while a call runs there, into that call's
//! [`Budget`], together with the instance's linear memory. Past the limit
//! the budget marks itself spent and advances the engine epoch: the guest
//! traps at its next check and the call ends with a memory-limit error,
//! whatever it was piling up. (Allocation itself never fails because of
//! this: a failed allocation would abort the process.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use wasmtime::Engine;

/// The global allocator of any binary that runs tools: the system allocator,
/// plus per-call accounting of host memory. Install it with
/// `#[global_allocator] static ALLOC: warden_sandbox::HostAlloc = warden_sandbox::HostAlloc;`.
#[derive(Debug, Default, Clone, Copy)]
pub struct HostAlloc;

/// Whether [`HostAlloc`] is the global allocator of this process.
static ACTIVE: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// The budget of the call running on this thread, if any.
    static CURRENT: Cell<*const Budget> = const { Cell::new(std::ptr::null()) };
}

/// What one call may hold: its linear memory plus host memory.
pub(crate) struct Budget {
    limit: usize,
    linear: AtomicUsize,
    host: AtomicUsize,
    spent: AtomicBool,
    engine: Engine,
}

impl Budget {
    pub(crate) fn new(limit: u64, engine: &Engine) -> Budget {
        Budget {
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
            linear: AtomicUsize::new(0),
            host: AtomicUsize::new(0),
            spent: AtomicBool::new(false),
            engine: engine.clone(),
        }
    }

    /// Whether the call went past its limit (and must stop).
    pub(crate) fn spent(&self) -> bool {
        self.spent.load(Ordering::Relaxed)
    }

    /// Linear memory is about to grow from `current` to `desired` bytes:
    /// allowed while the total stays within the limit.
    pub(crate) fn grow_linear(&self, current: usize, desired: usize) -> bool {
        let host = self.host.load(Ordering::Relaxed);
        let linear = self.linear.load(Ordering::Relaxed);
        let after = (linear - current.min(linear)).saturating_add(desired);
        if after.saturating_add(host) > self.limit {
            self.spent.store(true, Ordering::Relaxed);
            return false;
        }
        self.linear.store(after, Ordering::Relaxed);
        true
    }

    /// Host memory held for the call, in bytes.
    pub(crate) fn host_bytes(&self) -> usize {
        self.host.load(Ordering::Relaxed)
    }

    fn allocated(&self, n: usize) {
        let host = self.host.load(Ordering::Relaxed).saturating_add(n);
        self.host.store(host, Ordering::Relaxed);
        if host.saturating_add(self.linear.load(Ordering::Relaxed)) > self.limit
            && !self.spent.swap(true, Ordering::Relaxed)
        {
            // An atomic increment: no allocation, safe in here.
            self.engine.increment_epoch();
        }
    }

    fn freed(&self, n: usize) {
        let host = self.host.load(Ordering::Relaxed).saturating_sub(n);
        self.host.store(host, Ordering::Relaxed);
    }
}

/// Counts this thread's allocations into `budget` until dropped.
pub(crate) struct Charging<'a> {
    _budget: &'a Budget,
    previous: *const Budget,
}

impl Budget {
    /// Starts charging this thread's allocations to the budget.
    pub(crate) fn charge(&self) -> Charging<'_> {
        let previous = CURRENT.with(|c| c.replace(self));
        Charging {
            _budget: self,
            previous,
        }
    }
}

impl Drop for Charging<'_> {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.previous));
    }
}

/// Whether host memory is being counted in this process (the binary
/// installed [`HostAlloc`]).
pub fn host_memory_counted() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

fn with_budget(f: impl FnOnce(&Budget)) {
    // `try_with`: the thread-local may be gone while the thread exits.
    let _ = CURRENT.try_with(|c| {
        let b = c.get();
        if !b.is_null() {
            // SAFETY: set only by `Budget::charge` from a reference that
            // outlives the `Charging` guard, which resets it before the
            // budget can go away; read only on this thread.
            #[allow(unsafe_code)]
            f(unsafe { &*b });
        }
    });
}

// SAFETY: every method forwards to `System` with the same arguments; the
// bookkeeping around it never allocates.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for HostAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ACTIVE.store(true, Ordering::Relaxed);
        with_budget(|b| b.allocated(layout.size()));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ACTIVE.store(true, Ordering::Relaxed);
        with_budget(|b| b.allocated(layout.size()));
        // SAFETY: same contract as ours.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        with_budget(|b| b.freed(layout.size()));
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        with_budget(|b| {
            if new_size > layout.size() {
                b.allocated(new_size - layout.size());
            } else {
                b.freed(layout.size() - new_size);
            }
        });
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}
