//! What the C API needs from the platform: one lock, a clock, a busy-wait
//! and a console, bound at link time.
//!
//! The C API keeps one runtime instance for the whole program (the C
//! functions take no context argument). Its state is reached only through
//! `state::with`, which holds the platform's lock for the duration.
//! The platform implements [`Platform`] once, in the final program, and
//! binds it with [`platform!`](crate::platform!), the way `critical-section`
//! binds its implementation: the macro defines the few `extern "Rust"`
//! symbols this crate calls. A program without a binding fails to link,
//! never runs unlocked.
//!
//! Callers of the C API are threads (on the dual-core part: threads on
//! CPU0); none of it is callable from an interrupt handler, so a sleeping
//! mutex (Zephyr's `k_mutex`) is the right lock. A callback the runtime
//! makes *while holding the lock* (a pipeline stage written in C) and that
//! calls back into the API is detected by the lock (the same thread asks
//! again) and gets `-EBUSY`; it never deadlocks and never aliases the state.

use core::fmt;

use synaptic_runtime::arbiter::{Weights, DEFAULT_WEIGHTS};
use synaptic_runtime::device::Policy;
use synaptic_runtime::time::{Clock, Delay};

/// The lock was requested again by the thread that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reentered;

/// The platform services behind the C API.
///
/// # Safety
///
/// [`Platform::lock`] must give mutual exclusion between threads: after it
/// returns `Ok(())` on one thread and until that thread calls
/// [`Platform::unlock`], `lock` on any other thread must block, and `lock`
/// on the holding thread itself must return `Err(Reentered)` at once
/// (without taking the lock again). The C API's state is accessed as
/// exclusively owned while the lock is held; a lock that lets two threads in
/// breaks memory safety.
pub unsafe trait Platform {
    /// Takes the runtime lock, blocking while another thread holds it.
    ///
    /// # Errors
    ///
    /// [`Reentered`] when the calling thread already holds it.
    fn lock() -> Result<(), Reentered>;

    /// Releases the runtime lock.
    ///
    /// # Safety
    ///
    /// Only the thread that holds the lock may call it, once per successful
    /// [`Platform::lock`].
    unsafe fn unlock();

    /// Microseconds since an arbitrary origin; never decreases. The C API
    /// calls it only while holding the lock, so an implementation may
    /// extend a narrow hardware counter without further synchronisation.
    fn now_us() -> u64;

    /// Returns after at least `us` microseconds (the stub NPU's latency);
    /// called with the lock held.
    fn delay_us(us: u64);

    /// Writes formatted text to the console (`syn_mem_print_stats()`,
    /// `syn_prof_print_summary()`); one call is one line, without the newline.
    fn print(args: fmt::Arguments<'_>);

    /// The scheduler's placement policy and WRR weights when the C API's
    /// runtime is built (`syn_init()`): a firmware returns its build
    /// configuration (Zephyr: `CONFIG_SYNAPTIC_PLACEMENT_*`,
    /// `CONFIG_SYNAPTIC_WRR_*_WEIGHT`). Weights of 0 are refused and the
    /// defaults kept.
    fn scheduling() -> Scheduling {
        Scheduling::default()
    }
}

/// How the C API's scheduler places and arbitrates ([`Platform::scheduling`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scheduling {
    /// Which device runs a model step that may run on more than one.
    pub policy: Policy,
    /// `Normal` / `BestEffort` weighted round robin.
    pub weights: Weights,
}

/// The runtime's defaults: NPU only, weights 4:1.
impl Default for Scheduling {
    fn default() -> Self {
        Scheduling {
            policy: Policy::NpuOnly,
            weights: DEFAULT_WEIGHTS,
        }
    }
}

/// Binds a [`Platform`] implementation to the C API. Use once, in the crate
/// that builds the final program (a Zephyr application's `rustapp`, a test
/// binary).
///
/// ```text
/// struct MyPlatform;
/// unsafe impl synaptic_capi::Platform for MyPlatform { /* ... */ }
/// synaptic_capi::platform!(MyPlatform);
/// ```
#[macro_export]
macro_rules! platform {
    ($platform:ty) => {
        #[no_mangle]
        fn __synaptic_capi_lock() -> bool {
            <$platform as $crate::Platform>::lock().is_ok()
        }

        #[no_mangle]
        fn __synaptic_capi_unlock() {
            // SAFETY: the C API calls this exactly once after each
            // successful __synaptic_capi_lock, on the same thread.
            unsafe { <$platform as $crate::Platform>::unlock() }
        }

        #[no_mangle]
        fn __synaptic_capi_now_us() -> u64 {
            <$platform as $crate::Platform>::now_us()
        }

        #[no_mangle]
        fn __synaptic_capi_delay_us(us: u64) {
            <$platform as $crate::Platform>::delay_us(us)
        }

        #[no_mangle]
        fn __synaptic_capi_print(args: ::core::fmt::Arguments<'_>) {
            <$platform as $crate::Platform>::print(args)
        }

        #[no_mangle]
        fn __synaptic_capi_scheduling() -> $crate::Scheduling {
            <$platform as $crate::Platform>::scheduling()
        }
    };
}

extern "Rust" {
    fn __synaptic_capi_lock() -> bool;
    fn __synaptic_capi_unlock();
    fn __synaptic_capi_now_us() -> u64;
    fn __synaptic_capi_delay_us(us: u64);
    fn __synaptic_capi_print(args: fmt::Arguments<'_>);
    fn __synaptic_capi_scheduling() -> Scheduling;
}

/// The platform's scheduling configuration.
pub(crate) fn scheduling() -> Scheduling {
    // SAFETY: platform! defines the symbol with exactly this signature.
    unsafe { __synaptic_capi_scheduling() }
}

/// Takes the platform lock.
pub(crate) fn lock() -> Result<(), Reentered> {
    // SAFETY: platform! defines the symbol with exactly this signature; the
    // double-underscore name is reserved for it.
    if unsafe { __synaptic_capi_lock() } {
        Ok(())
    } else {
        Err(Reentered)
    }
}

/// Releases the platform lock.
///
/// # Safety
///
/// Only after a successful [`lock`] on this thread, once.
pub(crate) unsafe fn unlock() {
    // SAFETY: the caller holds the lock (this function's contract), which is
    // what Platform::unlock requires; platform! defines the symbol.
    unsafe { __synaptic_capi_unlock() }
}

/// Writes one line to the platform console.
pub(crate) fn print(args: fmt::Arguments<'_>) {
    // SAFETY: platform! defines the symbol with exactly this signature.
    unsafe { __synaptic_capi_print(args) }
}

/// The platform clock as the runtime's [`Clock`] and [`Delay`].
#[derive(Clone, Copy, Debug, Default)]
pub struct PlatformClock;

impl Clock for PlatformClock {
    fn now_us(&self) -> u64 {
        // SAFETY: platform! defines the symbol with exactly this signature.
        unsafe { __synaptic_capi_now_us() }
    }
}

impl Delay for PlatformClock {
    fn delay_us(&self, us: u64) {
        // SAFETY: platform! defines the symbol with exactly this signature.
        unsafe { __synaptic_capi_delay_us(us) }
    }
}
