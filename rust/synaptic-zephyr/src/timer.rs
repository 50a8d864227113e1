//! A periodic `k_timer` in a static, for the two cores' housekeeping
//! sweeps (CPU1's expiry of sleeping callers, CPU0's lost-doorbell drain).
//! zephyr-lang-rust's timers are allocated at run time (`alloc`); these
//! run for the whole program, so a static that the kernel owns once
//! started is the simpler fit.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

use zephyr::raw;

/// A `k_timer` started at most once, then touched only by the kernel.
pub struct PeriodicTimer {
    timer: UnsafeCell<MaybeUninit<raw::k_timer>>,
    started: AtomicBool,
}

// SAFETY: the timer is reached only through `start`, which the `started`
// flag lets run its body once; afterwards only the kernel touches it.
unsafe impl Sync for PeriodicTimer {}

impl PeriodicTimer {
    /// A timer not yet started.
    pub const fn new() -> Self {
        PeriodicTimer {
            timer: UnsafeCell::new(MaybeUninit::uninit()),
            started: AtomicBool::new(false),
        }
    }

    /// Call `expiry` every `period_ms` (from the timer interrupt) from now
    /// on; `false` when this timer was started already.
    pub fn start(&'static self, period_ms: u32, expiry: extern "C" fn(*mut raw::k_timer)) -> bool {
        if self.started.swap(true, Ordering::AcqRel) {
            return false;
        }
        let period: zephyr::time::Timeout =
            zephyr::time::Duration::millis_at_least(u64::from(period_ms)).into();
        let timer = self.timer.get().cast::<raw::k_timer>();
        // SAFETY: the flag makes this the one initialisation; the timer is
        // a static, so it lives for the program as a running k_timer must.
        // What `expiry` does from the interrupt is its owner's contract.
        unsafe {
            raw::k_timer_init(timer, Some(expiry), None);
            raw::k_timer_start(timer, period.0, period.0);
        }
        true
    }
}

impl Default for PeriodicTimer {
    fn default() -> Self {
        PeriodicTimer::new()
    }
}
