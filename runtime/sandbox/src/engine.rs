//! The one wasmtime engine: configuration and the epoch ticker.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::{Error, Result};

/// How often the epoch advances; the granularity of every timeout.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Largest memory any tool may be granted (wasm32 cannot address more).
pub(crate) const MAX_MEMORY: u64 = 4 << 30;

/// Dirty linear-memory bytes reset in place (instead of unmapped) when an
/// instance ends, and likewise for tables; see [`new_engine`].
const MEMORY_KEEP_RESIDENT: usize = 1 << 20;
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Instances that may run at the same time (calls that don't mutate run concurrently).
const POOL_INSTANCES: u32 = 64;

/// Builds the engine every component is compiled for and run in.
pub(crate) fn new_engine() -> Result<Engine> {
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(POOL_INSTANCES)
        // wasi-libc programs link a few core modules (adapter, libc, app).
        .max_core_instances_per_component(32)
        .total_core_instances(POOL_INSTANCES * 8)
        .max_memories_per_component(8)
        .total_memories(POOL_INSTANCES * 2)
        .max_tables_per_component(8)
        .total_tables(POOL_INSTANCES * 8)
        .total_stacks(POOL_INSTANCES)
        .max_memory_size(MAX_MEMORY as usize)
        .max_component_instance_size(1 << 20)
        .max_core_instance_size(1 << 20)
        .table_elements(100_000);
    // Every call gets a fresh instance in a recycled pool slot. By default the
    // slot's memory and tables are unmapped with `madvise` at the end of the
    // call, so the next call page-faults every page it touches again (about
    // 15 faults per read_file call, the largest single cost). With the Linux
    // PAGEMAP_SCAN ioctl, wasmtime finds exactly the pages the call dirtied
    // and restores them in place (zero or the initial image) up to the
    // `keep_resident` sizes; the next instance sees the same pristine state.
    // Without the ioctl, `keep_resident` would `memset` the lowest bytes of
    // memory whether touched or not (the unused bottom of a Rust guest's
    // stack): slower, so it stays off.
    if PoolingAllocationConfig::is_pagemap_scan_available() {
        pool.pagemap_scan(Enabled::Yes)
            .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
            .table_keep_resident(TABLE_KEEP_RESIDENT);
    }

    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        // Deep recursion traps cleanly instead of taking the host stack.
        .max_wasm_stack(1 << 20)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).map_err(|e| Error::Engine(format!("{e:#}")))
}

/// Advances the engine epoch every [`EPOCH_TICK`] until dropped.
pub(crate) struct Ticker {
    stop: Arc<AtomicBool>,
}

impl Ticker {
    pub(crate) fn start(engine: &Engine) -> Ticker {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let engine = engine.clone();
        std::thread::Builder::new()
            .name("warden-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .expect("spawning the epoch thread");
        Ticker { stop }
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}
