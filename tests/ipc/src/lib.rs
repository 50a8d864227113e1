//! Transport suites on the target: the ring, its cost, and dispatch.
//!
//! `ipc` checks the ABI and the ring the way firmware uses it: the ring is
//! written over a static buffer that stands for the shared window of the
//! single-core test map ([`synaptic_abi::QEMU_CORTEX_M3`]) with
//! `Ring::init` and `Ring::from_raw`, at the offsets the region layout
//! gives, and the handles attach to it. `ipc_dispatch` runs `synaptic-ipc`'s
//! sender and dispatcher over that ring with Zephyr semaphores and a second
//! Zephyr thread as the peer. `ipc_bench_compare` sets the ring's cost next
//! to Zephyr's own `k_msgq`.
//!
//! Ring size: `CONFIG_SYNAPTIC_RING_ENTRIES`, as firmware builds it.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]

mod bench;
mod dispatch_cases;
mod region;
mod ring_cases;
mod traffic;

/// Entries per ring in this build (Kconfig, a power of two).
const N: usize = zephyr::kconfig::CONFIG_SYNAPTIC_RING_ENTRIES as usize;

/// The current cycle count (`k_cycle_get_32`, wraps).
fn cycles() -> u32 {
    // SAFETY: reading the cycle counter has no preconditions.
    unsafe { zephyr::raw::k_cycle_get_32() }
}
