//! The Rust half of a C application: links the syn_* C API in and binds
//! its platform services to Zephyr.
//!
//! * Lock: a `k_mutex` (callers are threads). Zephyr's mutex is recursive,
//!   so re-entry by the holding thread is detected from the recorded owner
//!   and refused, as `synaptic_capi::Platform` requires.
//! * Clock: the 32-bit hardware cycle counter, extended to 64 bits. The C
//!   API reads the clock only with its lock held, so the extension state
//!   needs no further synchronisation; it must be read at least once per
//!   counter wrap (357 s at 12 MHz) to keep whole wraps, and never goes
//!   backwards either way.
//! * Console: `printk`.
//! * Capacities: the Kconfig options `CONFIG_SYNAPTIC_MAX_*`,
//!   `CONFIG_SYNAPTIC_ARENA_SIZE` and `CONFIG_SYNAPTIC_SCRATCH_SIZE`
//!   (checked against `zephyr::kconfig` below).
#![no_std]

use core::fmt;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

use zephyr::raw;
use zephyr::sys::sync::Mutex;
use zephyr::time::Forever;

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

static LOCK: Mutex = Mutex::new();
/// The thread holding `LOCK` (0: none). Written only by the holder.
static OWNER: AtomicUsize = AtomicUsize::new(0);
/// Last cycle count read, and how many times the counter wrapped before it.
/// Frequency of the cycle counter.
const CYCLES_PER_SECOND: isize = zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC;
static LAST_CYCLES: AtomicU32 = AtomicU32::new(0);
static WRAPS: AtomicU32 = AtomicU32::new(0);

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
        // SAFETY: reads the hardware cycle counter; no preconditions.
        let now = unsafe { raw::k_cycle_get_32() };
        // Ordering: Relaxed: only called with the runtime lock held, which
        // serialises every access to LAST_CYCLES and WRAPS.
        let mut wraps = WRAPS.load(Ordering::Relaxed);
        if now < LAST_CYCLES.load(Ordering::Relaxed) {
            wraps = wraps.wrapping_add(1);
            WRAPS.store(wraps, Ordering::Relaxed);
        }
        LAST_CYCLES.store(now, Ordering::Relaxed);
        let cycles = (u64::from(wraps) << 32) | u64::from(now);
        let hz = CYCLES_PER_SECOND.max(1) as u128;
        (u128::from(cycles) * 1_000_000 / hz) as u64
    }

    fn delay_us(us: u64) {
        let mut left = us;
        while left > 0 {
            let chunk = left.min(u64::from(u32::MAX));
            // SAFETY: a busy-wait; callable from any thread.
            unsafe { raw::k_busy_wait(chunk as u32) };
            left -= chunk;
        }
    }

    fn print(args: fmt::Arguments<'_>) {
        zephyr::printk::printkln(args);
    }
}

synaptic_capi::platform!(ZephyrPlatform);
