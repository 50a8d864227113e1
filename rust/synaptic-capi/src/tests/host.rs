//! The host platform of the tests: the host lock (`crate::host`), a fake clock that only the busy-wait and the tests move,
//! and a console that records lines.

use std::string::{String, ToString};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::vec::Vec;

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::{Platform, Reentered};

static NOW_US: AtomicU64 = AtomicU64::new(0);
static CONSOLE: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Serialises the tests: the C API has one global runtime.
static SERIAL: Mutex<()> = Mutex::new(());

/// The test platform.
pub struct HostPlatform;

// SAFETY: the host lock (`crate::host`) gives mutual exclusion between
// threads and refuses re-entry, as `Platform` requires.
unsafe impl Platform for HostPlatform {
    fn lock() -> Result<(), Reentered> {
        crate::host::lock()
    }

    unsafe fn unlock() {
        // SAFETY: forwarded: called by the holder, once per lock.
        unsafe { crate::host::unlock() }
    }

    fn now_us() -> u64 {
        NOW_US.load(Ordering::SeqCst)
    }

    fn delay_us(us: u64) {
        NOW_US.fetch_add(us, Ordering::SeqCst);
    }

    fn print(args: fmt::Arguments<'_>) {
        CONSOLE
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(args.to_string());
    }

    fn scheduling() -> crate::Scheduling {
        SCHEDULING
    }
}

/// Not the defaults, so a test can tell that `syn_init` applied them.
pub const SCHEDULING: crate::Scheduling = crate::Scheduling {
    policy: synaptic_runtime::device::Policy::EarliestFinish,
    weights: synaptic_runtime::arbiter::Weights {
        normal: 3,
        best_effort: 2,
    },
};

crate::platform!(HostPlatform);

/// Moves the fake clock.
pub fn advance_us(us: u64) {
    NOW_US.fetch_add(us, Ordering::SeqCst);
}

/// The fake clock.
pub fn now_us() -> u64 {
    NOW_US.load(Ordering::SeqCst)
}

/// Lines printed since the test started.
pub fn console() -> Vec<String> {
    CONSOLE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone()
}

/// Starts a test: waits for the other tests, then returns the runtime to
/// its power-on state and clears the console.
pub fn fresh() -> MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(PoisonError::into_inner);
    crate::state::reset().expect("no test holds the runtime lock between tests");
    CONSOLE
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clear();
    guard
}
