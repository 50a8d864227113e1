//! The Rust half of a C application: links the syn_* C API in and binds
//! its platform services (lock, clock, console) to Zephyr with
//! `synaptic_zephyr::capi::ZephyrPlatform`.
//!
//! Capacities: the Kconfig options `CONFIG_SYNAPTIC_MAX_*`,
//! `CONFIG_SYNAPTIC_ARENA_SIZE` and `CONFIG_SYNAPTIC_SCRATCH_SIZE`
//! (checked against `zephyr::kconfig` below).
#![no_std]

/// Every `syn_*` symbol, linked into the application.
pub use synaptic_capi::*;

// The C API's capacities are this build's Kconfig values (synaptic-capi's
// build script reads them from the build's .config): refuse to build when
// they disagree with what zephyr::kconfig says.
const _: () = {
    use zephyr::kconfig as k;
    assert!(MAX_MODELS == k::CONFIG_SYNAPTIC_MAX_MODELS as usize);
    assert!(MAX_PIPELINES == k::CONFIG_SYNAPTIC_MAX_PIPELINES as usize);
    assert!(MAX_STAGES == k::CONFIG_SYNAPTIC_MAX_PIPELINE_STAGES as usize);
    assert!(MAX_JOBS == k::CONFIG_SYNAPTIC_MAX_JOBS as usize);
    assert!(ARENA_SIZE == k::CONFIG_SYNAPTIC_ARENA_SIZE as usize);
    assert!(SCRATCH_SIZE == k::CONFIG_SYNAPTIC_SCRATCH_SIZE as usize);
};

synaptic_capi::platform!(synaptic_zephyr::capi::ZephyrPlatform);
