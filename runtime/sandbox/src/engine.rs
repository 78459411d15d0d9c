//! The one wasmtime engine and its instance pool.

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

use crate::{Error, Result};

/// Largest memory any tool may be granted (wasm32 cannot address more).
pub(crate) const MAX_MEMORY: u64 = 4 << 30;

/// Pool slots for instances made ahead of a tool's next call, beyond
/// [`PoolConfig::instances`]: the tools called most recently each keep one.
pub(crate) const AHEAD: u32 = 16;

/// The most native stack a guest's wasm may use (wasmtime traps past it).
const MAX_WASM_STACK: usize = 1 << 20;

/// The stack of a thread that calls tools: a direct call runs the guest's
/// wasm on it ([`MAX_WASM_STACK`] at most, plus the host's frames). Threads
/// warden makes for calls get this much, whatever `RUST_MIN_STACK` says.
pub const CALL_THREAD_STACK: usize = 8 << 20;

/// Dirty linear-memory bytes reset in place (instead of unmapped) when an
/// instance ends, and likewise for tables; see [`new_engine`].
const MEMORY_KEEP_RESIDENT: usize = 1 << 20;
const TABLE_KEEP_RESIDENT: usize = 64 << 10;

/// Sizes of the instance pool. The defaults fit components made by
/// `cargo` (a few core modules), componentize-py (a CPython runtime:
/// tens of MB, large tables) and jco (a JS engine); raise them for
/// bigger ones. Address space is reserved per slot, memory is used only
/// as touched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolConfig {
    /// Instances that may run at once; more calls queue for a slot.
    pub instances: u32,
    /// Core module instances inside one component instance.
    pub core_instances_per_component: u32,
    /// Size of one component instance's host-side state, in bytes.
    pub component_instance_size: usize,
    /// Size of one core instance's host-side state (its VM context: globals,
    /// function references), in bytes.
    pub core_instance_size: usize,
    /// Elements of one table (function references of a large program).
    pub table_elements: usize,
}

impl Default for PoolConfig {
    fn default() -> Self {
        PoolConfig {
            instances: 64,
            core_instances_per_component: 64,
            component_instance_size: 1 << 20,
            core_instance_size: 4 << 20,
            table_elements: 1 << 20,
        }
    }
}

/// Builds the engine every component is compiled for and run in.
pub(crate) fn new_engine(pool_config: &PoolConfig) -> Result<Engine> {
    let n = pool_config.instances + AHEAD;
    let mut pool = PoolingAllocationConfig::default();
    pool.total_component_instances(n)
        .max_core_instances_per_component(pool_config.core_instances_per_component)
        .total_core_instances(n * 8)
        .max_memories_per_component(8)
        .total_memories(n * 2)
        .max_tables_per_component(8)
        .total_tables(n * 8)
        // Each call runs on a fiber: one stack per instance.
        .total_stacks(n)
        .max_memory_size(MAX_MEMORY as usize)
        .max_component_instance_size(pool_config.component_instance_size)
        .max_core_instance_size(pool_config.core_instance_size)
        .table_elements(pool_config.table_elements);
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
        // Checked only when the watchdog advances the epoch (a deadline, a
        // cancellation, a host memory budget): nothing ticks while idle.
        .epoch_interruption(true)
        // Deep recursion traps cleanly instead of taking the host stack.
        .max_wasm_stack(MAX_WASM_STACK)
        .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    Engine::new(&config).map_err(|e| Error::Engine(format!("{e:#}")))
}
