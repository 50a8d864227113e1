//! The C API as a host static library, for C programs on the build machine
//! (`tests/capi_c/host_test.c`, run by `scripts/check-capi.sh`).
//!
//! Binds the platform to `std`: the host lock (`synaptic_capi::host`), a
//! monotonic clock, a sleeping delay, and stdout.

use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

pub use synaptic_capi::*;

static ORIGIN: OnceLock<Instant> = OnceLock::new();

/// `std` as the C API's platform.
pub struct StdPlatform;

// SAFETY: the host lock gives mutual exclusion between threads and refuses
// re-entry, as `Platform` requires.
unsafe impl Platform for StdPlatform {
    fn lock() -> Result<(), Reentered> {
        synaptic_capi::host::lock()
    }

    unsafe fn unlock() {
        // SAFETY: forwarded: called by the holder, once per lock.
        unsafe { synaptic_capi::host::unlock() }
    }

    fn now_us() -> u64 {
        let origin = ORIGIN.get_or_init(Instant::now);
        u64::try_from(origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    fn delay_us(us: u64) {
        thread::sleep(Duration::from_micros(us));
    }

    fn print(args: core::fmt::Arguments<'_>) {
        println!("{args}");
    }
}

synaptic_capi::platform!(StdPlatform);
