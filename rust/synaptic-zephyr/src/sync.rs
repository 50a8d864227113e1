//! Zephyr kernel objects behind the portable crates' platform traits.
//!
//! `synaptic-ipc` blocks through its `Semaphore` trait; here that is a
//! Zephyr `k_sem` (zephyr-lang-rust's `Semaphore`), whose `give` is callable
//! from an ISR, as the doorbell interrupt needs.

use synaptic_ipc::platform::{Semaphore, Timeout};
use zephyr::time::{Duration, Forever, NoWait};

/// A counting semaphore for `synaptic-ipc`, usable as a `static`.
pub struct KernelSemaphore(zephyr::sys::sync::Semaphore);

impl KernelSemaphore {
    /// A semaphore with `initial` counts and at most `limit`.
    pub const fn new(initial: u32, limit: u32) -> Self {
        KernelSemaphore(zephyr::sys::sync::Semaphore::new(initial, limit))
    }

    /// The underlying Zephyr semaphore.
    pub fn kernel(&self) -> &zephyr::sys::sync::Semaphore {
        &self.0
    }
}

impl Semaphore for KernelSemaphore {
    fn give(&self) {
        self.0.give();
    }

    fn take(&self, timeout: Timeout) -> bool {
        match timeout {
            Timeout::NoWait => self.0.take(NoWait).is_ok(),
            Timeout::Forever => self.0.take(Forever).is_ok(),
            Timeout::Millis(ms) => self.0.take(Duration::millis_at_least(ms.into())).is_ok(),
        }
    }
}
