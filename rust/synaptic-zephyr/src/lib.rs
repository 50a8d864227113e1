//! synaptic on Zephyr: the one crate that sees the kernel, the devicetree and the SoC.
//!
//! Everything portable lives in the other `synaptic-*` crates; this crate
//! binds them to Zephyr: devicetree facts ([`platform`]), time
//! ([`clock`]), kernel objects behind the portable traits ([`sync`]), the
//! doorbell ([`doorbell`]), booting the second core ([`an521`], and the
//! MCXN947's in `mcxn947`), CPU0's inference service ([`service`],
//! [`status`], the shell's half in `shell`), CPU1's client ([`client`]),
//! the `syn_ipc.h` C API on either core (`ipc_capi`, cargo feature
//! `ipc-capi`), and Rust test cases that run as real ztest units ([`ztest`]).
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![allow(unexpected_cfgs)]

/// `zephyr::printkln!` where the build has printk; where it has none
/// (`CONFIG_PRINTK=n`, as on a CPU1 without a console, where it saves the
/// formatter and `cbvprintf`) nothing is printed, and the arguments are still
/// type-checked.
macro_rules! printkln {
    ($($arg:tt)*) => {{
        #[cfg(CONFIG_PRINTK)]
        zephyr::printkln!($($arg)*);
        #[cfg(not(CONFIG_PRINTK))]
        let _ = format_args!($($arg)*);
    }};
}

pub mod an521;
#[cfg(feature = "capi")]
pub mod capi;
#[cfg(CONFIG_SYNAPTIC_DOORBELL)]
pub mod client;
pub mod clock;
pub mod doorbell;
#[cfg(all(feature = "ipc-capi", CONFIG_SYNAPTIC_DOORBELL))]
pub mod ipc_capi;
pub mod mcxn947;
mod park;
pub mod platform;
pub mod sched_config;
#[cfg(CONFIG_SYNAPTIC_DOORBELL)]
pub mod service;
#[cfg(all(CONFIG_SYNAPTIC_DOORBELL, CONFIG_SYNAPTIC_SHELL))]
pub mod shell;
#[cfg(CONFIG_SYNAPTIC_DOORBELL)]
pub mod status;
#[cfg(feature = "store")]
pub mod store;
pub mod sync;
pub mod thread;
pub mod timer;
pub mod ztest;

pub use synaptic_abi as abi;

/// How this SoC boots CPU1, for `service::start`: `None` when the build has
/// no CPU1 image in devicetree or the SoC has no boot platform here.
#[cfg(CONFIG_SOC_MPS2_AN521_CPU0)]
pub fn boot_platform() -> Option<an521::An521Boot> {
    an521::from_devicetree()
}

/// How this SoC boots CPU1, for `service::start`: `None` when the build has
/// no CPU1 image in devicetree or it is inconsistent (see
/// `mcxn947::Mcxn947Boot::from_devicetree`). Not run on hardware yet.
#[cfg(all(CONFIG_SOC_MCXN947_CPU0, not(CONFIG_TRUSTED_EXECUTION_NONSECURE)))]
pub fn boot_platform() -> Option<mcxn947::Mcxn947Boot> {
    // SAFETY: the service's boot sequence is the only user of CPU1's release
    // and of the flash controller while it runs, and it releases CPU1 only
    // after the vector table passed its checks.
    unsafe { mcxn947::Mcxn947Boot::from_devicetree() }.ok()
}

/// How this SoC boots CPU1, for `service::start`: `None` when the build has
/// no CPU1 image in devicetree or the SoC has no boot platform here.
#[cfg(not(any(
    CONFIG_SOC_MPS2_AN521_CPU0,
    all(CONFIG_SOC_MCXN947_CPU0, not(CONFIG_TRUSTED_EXECUTION_NONSECURE))
)))]
pub fn boot_platform() -> Option<an521::An521Boot> {
    None
}
/// Checks for test cases, shared with host tests (see [`ztest`]).
pub use synaptic_check::{check as zassert, check_eq as zassert_eq, skip as zskip};
