//! The Rust half of the C API compatibility tests: links the syn_* C API in
//! and binds its lock, clock and console to Zephyr.
#![no_std]

/// Every `syn_*` symbol, linked into the application.
pub use synaptic_capi::*;

// The reference's option names are set in prj.conf: the C API's runtime
// must have taken their values (the alias wins).
const _: () = {
    use zephyr::kconfig as k;
    assert!(SCRATCH_SIZE == k::CONFIG_SYNAPTIC_SCRATCH_POOL_SIZE as usize);
    assert!(ARENA_SIZE == k::CONFIG_SYNAPTIC_TENSOR_ARENA_SIZE as usize);
    assert!(MAX_JOBS == k::CONFIG_SYNAPTIC_MAX_CONCURRENT_JOBS as usize);
};

synaptic_capi::platform!(synaptic_zephyr::capi::ZephyrPlatform);
