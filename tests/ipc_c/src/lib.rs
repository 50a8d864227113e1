//! The Rust half of the C IPC test (CPU0): links the `syn_ipc_*` calls in.
#![no_std]

/// Every `syn_ipc_*` symbol, linked into the application.
pub use synaptic_zephyr::ipc_capi::*;
