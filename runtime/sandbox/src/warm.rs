//! Work kept off a call's path. Every instance still serves exactly one
//! call; what moves is when it is made and when it is torn down:
//! - after a call, a helper thread makes instances for the next calls of the
//!   same component with the same grants (store, WASI context,
//!   instantiation). Such a call only checks that its directories are
//!   unchanged, starts its clock and runs;
//! - a finished call's store is dropped on that thread (its pool slot reset,
//!   its handles closed) after the result is back; by the caller when the
//!   helper is behind or napping.
//!
//! A call never wakes the helper (that would cost the call more than the
//! helper saves it): the helper spins for its next job, then naps. When it
//! is behind or napping, or an instance cannot be made ahead, the call makes
//! its own, exactly as it would without this module.

use std::sync::mpsc::{Receiver, SyncSender, TryRecvError, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use warden_policy::Grants;
use wasmtime::Store;

use crate::bindings::Component;
use crate::dirs::DirCache;
use crate::net::Denials;
use crate::wasi::{CallState, CappedPipe};

/// Instances kept ready per key: two, so that a call finds one while the
/// helper replaces the one taken by the call before.
const PER_KEY: usize = 2;
/// Instances kept ready in all; each holds a pool slot.
const MAX_READY: usize = 8;
/// Jobs waiting for the helper. When it is full, the caller drops its own
/// stores and nothing more is made ahead.
const QUEUE: usize = 16;
/// How the helper waits for its next job, in turn: spinning (yielding to
/// any other thread that wants the CPU), for calls back to back or up to
/// 1 ms apart; short naps, for calls a few milliseconds apart; long naps
/// while the host is idle. It never sleeps until woken, because the waker
/// would be the call: waking a sleeping thread costs the waker tens of
/// microseconds on a virtual machine (an interrupt to a halted CPU), 45 µs
/// measured here. Woken by each call, the helper made calls 1 ms apart take
/// 80-110 µs instead of 50-70, and back to back one call in five found no
/// instance ready (one in thirty with the spin).
const SPIN: Duration = Duration::from_millis(1);
const SHORT_NAP: Duration = Duration::from_millis(1);
/// How long after its last job the helper keeps to short naps.
const SHORT_NAPS_FOR: Duration = Duration::from_millis(50);
const LONG_NAP: Duration = Duration::from_millis(10);

/// A fresh instance, ready for one call, with what the call reads back.
pub(crate) struct Ready {
    pub(crate) store: Store<CallState>,
    pub(crate) instance: Component,
    pub(crate) stderr: CappedPipe,
    pub(crate) denied: Denials,
}

/// Which calls an instance may serve: those of the same component with the
/// same grants. Made by [`Warm::key`], which hands out one shared key per
/// component and grants: keys compare by address, and a call clones no
/// grants.
#[derive(Clone)]
pub(crate) struct Key(Arc<(usize, Grants)>);

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Key {
    pub(crate) fn grants(&self) -> &Grants {
        &self.0.1
    }
}

/// Distinct keys (component and grants) that get instances made ahead;
/// calls with grants beyond these make their own.
const MAX_KEYS: usize = 64;

/// Makes an instance on the helper thread; `None` when that fails (the call
/// then makes its own, and reports why).
pub(crate) type Make = Box<dyn FnOnce() -> Option<Ready> + Send>;

enum Job {
    /// After a call: make instances for the next calls of `key`, then drop
    /// the used one. One job per call.
    After {
        key: Key,
        makes: Vec<Make>,
        used: Option<Box<Ready>>,
    },
    Drop(Box<Ready>),
}

#[derive(Default)]
struct Kept {
    ready: Vec<(Key, Ready)>,
    /// Keys whose instances cannot be made ahead (failed, or directories
    /// that cannot be checked): never tried again.
    cold: Vec<Key>,
}

impl Kept {
    fn wanted(&self, key: &Key) -> usize {
        if self.cold.contains(key) {
            return 0;
        }
        PER_KEY.saturating_sub(self.ready.iter().filter(|(k, _)| k == key).count())
    }
}

/// Instances made ahead, and the helper thread that makes and drops them.
pub(crate) struct Warm {
    enabled: bool,
    kept: Arc<Mutex<Kept>>,
    /// Every key handed out.
    keys: Mutex<Vec<Key>>,
    /// The helper's queue, started with the first job.
    jobs: OnceLock<Option<SyncSender<Job>>>,
}

impl Warm {
    /// Disabled, calls make and drop their own instances.
    pub(crate) fn new(enabled: bool) -> Warm {
        Warm {
            enabled,
            kept: Arc::default(),
            keys: Mutex::default(),
            jobs: OnceLock::new(),
        }
    }

    /// The helper's queue; `None` when disabled or the thread cannot start.
    fn jobs(&self) -> Option<&SyncSender<Job>> {
        if !self.enabled {
            return None;
        }
        let jobs = self.jobs.get_or_init(|| {
            let (tx, rx) = sync_channel::<Job>(QUEUE);
            let kept = self.kept.clone();
            std::thread::Builder::new()
                .name("warden-warm".into())
                .spawn(move || {
                    while let Some(job) = next_job(&rx) {
                        match job {
                            Job::Drop(ready) => drop(ready),
                            Job::After { key, makes, used } => {
                                for make in makes {
                                    make_for(&kept, &key, make);
                                }
                                drop(used);
                            }
                        }
                    }
                })
                .ok()
                .map(|_| tx)
        });
        jobs.as_ref()
    }

    /// The key of calls of `component` with `grants`; `None` when disabled
    /// or when [`MAX_KEYS`] other keys exist.
    pub(crate) fn key(&self, component: usize, grants: &Grants) -> Option<Key> {
        if !self.enabled {
            return None;
        }
        // Every update is a single push: usable after a panic.
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(key) = keys.iter().find(|k| k.0.0 == component && k.0.1 == *grants) {
            return Some(key.clone());
        }
        if keys.len() >= MAX_KEYS {
            return None;
        }
        let key = Key(Arc::new((component, grants.clone())));
        keys.push(key.clone());
        Some(key)
    }

    /// An instance made ahead for `key`, if one is kept and every directory
    /// it mounts is still the one its path leads to.
    pub(crate) fn take(&self, key: &Key) -> Option<Ready> {
        let ready = {
            let mut kept = lock(&self.kept);
            let i = kept.ready.iter().position(|(k, _)| k == key)?;
            kept.ready.swap_remove(i).1
        };
        let current = (ready.store.data().opened.as_ref()).is_some_and(DirCache::unchanged);
        if current {
            Some(ready)
        } else {
            self.drop_later(ready);
            None
        }
    }

    /// After a call of `key` in `used`: the helper makes instances for the
    /// next calls, then drops `used`. When the call found no instance made
    /// ahead (`made_ahead` false), the helper is behind or napping: the
    /// caller drops `used` itself, which leaves the helper time to catch up.
    pub(crate) fn after_call(
        &self,
        key: &Key,
        used: Ready,
        made_ahead: bool,
        make: impl Fn() -> Make,
    ) {
        let Some(jobs) = self.jobs() else { return };
        let makes = (0..lock(&self.kept).wanted(key)).map(|_| make()).collect();
        let (used, ours) = if made_ahead {
            (Some(Box::new(used)), None)
        } else {
            (None, Some(used))
        };
        send(
            jobs,
            Job::After {
                key: key.clone(),
                makes,
                used,
            },
        );
        drop(ours);
    }

    /// Drops a used (or stale) instance on the helper thread, or here when
    /// the helper is behind.
    pub(crate) fn drop_later(&self, ready: Ready) {
        let Some(jobs) = self.jobs() else { return };
        send(jobs, Job::Drop(Box::new(ready)));
    }
}

/// Queues `job` for the helper; when it is behind, the job's instances are
/// dropped here and nothing is made.
fn send(jobs: &SyncSender<Job>, job: Job) {
    if let Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) = jobs.try_send(job) {
        drop(job);
    }
}

/// Waits for the next job, spinning, then napping (see [`SPIN`]); never in
/// `recv`, so that sending a job never has to wake the helper. `None` once
/// the host is gone.
fn next_job<T>(jobs: &Receiver<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        match jobs.try_recv() {
            Ok(job) => return Some(job),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        match start.elapsed() {
            idle if idle < SPIN => std::thread::yield_now(),
            idle if idle < SHORT_NAPS_FOR => std::thread::sleep(SHORT_NAP),
            _ => std::thread::sleep(LONG_NAP),
        }
    }
}

/// Makes one instance for `key` unless enough are kept already.
fn make_for(kept: &Mutex<Kept>, key: &Key, make: Make) {
    if lock(kept).wanted(key) == 0 {
        return;
    }
    let made = make().filter(|r| r.store.data().opened.is_some());
    let mut kept = lock(kept);
    let Some(ready) = made else {
        kept.cold.push(key.clone());
        return;
    };
    let oldest = (kept.ready.len() >= MAX_READY).then(|| kept.ready.remove(0));
    kept.ready.push((key.clone(), ready));
    drop(kept);
    drop(oldest); // outside the lock: dropping takes a while
}

fn lock(kept: &Mutex<Kept>) -> MutexGuard<'_, Kept> {
    // Every update of `Kept` is a single push or remove: usable after a panic.
    kept.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_gets_jobs_while_it_spins_naps_and_idles() {
        let (tx, rx) = sync_channel::<u32>(QUEUE);
        let sender = std::thread::spawn(move || {
            tx.send(1).unwrap();
            // After the spin, during the short naps.
            std::thread::sleep(SPIN * 5);
            tx.send(2).unwrap();
            // In the long naps.
            std::thread::sleep(SHORT_NAPS_FOR * 2);
            tx.send(3).unwrap();
        });
        for job in 1..=3 {
            assert_eq!(next_job(&rx), Some(job));
        }
        sender.join().unwrap();
        // The host is gone: the helper ends.
        assert_eq!(next_job(&rx), None);
    }

    fn grants(env: &str) -> Grants {
        Grants {
            dirs: Vec::new(),
            env: vec![env.to_string()],
            network: Vec::new(),
            limits: Default::default(),
            from_policy: true,
        }
    }

    #[test]
    fn equal_grants_share_a_key_and_different_ones_do_not() {
        let warm = Warm::new(true);
        let a = warm.key(0, &grants("A")).unwrap();
        assert!(warm.key(0, &grants("A")).unwrap() == a);
        assert!(warm.key(0, &grants("B")).unwrap() != a);
        assert!(warm.key(1, &grants("A")).unwrap() != a);
        // Past the cap, new grants get no key (their calls make their own
        // instances); known ones still do.
        for i in 0..MAX_KEYS {
            warm.key(2, &grants(&i.to_string()));
        }
        assert!(warm.key(3, &grants("A")).is_none());
        assert!(warm.key(0, &grants("A")).unwrap() == a);
        assert!(Warm::new(false).key(0, &grants("A")).is_none());
    }

    #[test]
    fn the_helper_ends_soon_after_the_host_while_it_naps() {
        let (tx, rx) = sync_channel::<u32>(QUEUE);
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || done_tx.send(next_job(&rx)).unwrap());
        // Into the long naps, then the host goes.
        std::thread::sleep(SHORT_NAPS_FOR * 2);
        drop(tx);
        let ended = done.recv_timeout(Duration::from_secs(5));
        assert_eq!(ended, Ok(None), "the helper did not end with the host");
    }
}
