//! The platform services of the `syn_*` C API (`synaptic-capi`) on Zephyr,
//! for applications that use the C API (cargo feature `capi`).
//!
//! * Lock: a `k_mutex` (callers are threads). Zephyr's mutex is recursive,
//!   so re-entry by the holding thread is detected from the recorded owner
//!   and refused, as `synaptic_capi::Platform` requires.
//! * Clock: [`crate::clock::ZephyrClock`] (64-bit cycle counter, or the
//!   kernel tick without one). Delay: `k_busy_wait`.
//! * Console: `printk`.
//!
//! Bind it once, in the application crate:
//! `synaptic_capi::platform!(synaptic_zephyr::capi::ZephyrPlatform);`

use core::fmt;
use core::sync::atomic::{AtomicUsize, Ordering};

use synaptic_capi::{Platform, Reentered, Scheduling};
use synaptic_runtime::time::{Clock, Delay};
use zephyr::raw;
use zephyr::sys::sync::Mutex;
use zephyr::time::Forever;

use crate::clock::ZephyrClock;

static LOCK: Mutex = Mutex::new();
/// The thread holding `LOCK` (0: none). Written only by the holder.
static OWNER: AtomicUsize = AtomicUsize::new(0);

fn current_thread() -> usize {
    // SAFETY: k_current_get only reads the scheduler's current-thread
    // pointer; it is callable from any thread.
    unsafe { raw::k_current_get() as usize }
}

/// The C API's platform on Zephyr.
pub struct ZephyrPlatform;

// SAFETY: `lock` takes a k_mutex, which excludes other threads; the holder
// is recorded in OWNER (only the holder writes it, so reading our own id
// there means we hold the lock) and a second `lock` by the holder returns
// `Reentered` before touching the mutex. `unlock` clears OWNER first, then
// releases the mutex it holds.
unsafe impl Platform for ZephyrPlatform {
    fn lock() -> Result<(), Reentered> {
        let me = current_thread();
        // Ordering: Relaxed: a thread only ever finds its own id here after
        // storing it itself; other threads' values never equal it.
        if OWNER.load(Ordering::Relaxed) == me {
            return Err(Reentered);
        }
        // K_FOREVER only fails from an ISR, where the C API is not callable;
        // refuse rather than proceed without the lock.
        LOCK.lock(Forever).map_err(|_| Reentered)?;
        // Ordering: Relaxed: the mutex orders everything the holder does.
        OWNER.store(me, Ordering::Relaxed);
        Ok(())
    }

    unsafe fn unlock() {
        // Ordering: Relaxed: cleared before the mutex (a release) is given back.
        OWNER.store(0, Ordering::Relaxed);
        let _ = LOCK.unlock();
    }

    fn now_us() -> u64 {
        Clock::now_us(&ZephyrClock)
    }

    fn delay_us(us: u64) {
        ZephyrClock.delay_us(us);
    }

    fn print(args: fmt::Arguments<'_>) {
        zephyr::printk::printkln(args);
    }

    fn scheduling() -> Scheduling {
        Scheduling {
            policy: crate::sched_config::DEFAULT_POLICY,
            weights: crate::sched_config::WEIGHTS,
        }
    }
}
