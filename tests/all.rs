//! The one integration test binary: see `suite/` for the areas.

mod suite;

// Host allocations made for a call count against its memory limit, as in
// the `warden` binary.
#[global_allocator]
static ALLOC: warden_sandbox::HostAlloc = warden_sandbox::HostAlloc;
