//! The C API as a host static library, for C programs on the build machine
//! (`tests/capi_c/host_test.c`, run by `scripts/check-capi.sh`).
//!
//! Binds the platform to `std`: a mutex that records its owner (so re-entry
//! is refused), a monotonic clock, a sleeping delay, and stdout.

use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

pub use synaptic_capi::*;

static OWNER: Mutex<Option<ThreadId>> = Mutex::new(None);
static RELEASED: Condvar = Condvar::new();
static ORIGIN: OnceLock<Instant> = OnceLock::new();

fn owner() -> MutexGuard<'static, Option<ThreadId>> {
    OWNER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `std` as the C API's platform.
pub struct StdPlatform;

// SAFETY: `lock` blocks while another thread is recorded as owner and
// refuses the owner itself; `unlock` clears the owner. The owner record is
// guarded by a std mutex.
unsafe impl Platform for StdPlatform {
    fn lock() -> Result<(), Reentered> {
        let me = thread::current().id();
        let mut guard = owner();
        if *guard == Some(me) {
            return Err(Reentered);
        }
        while guard.is_some() {
            guard = RELEASED.wait(guard).unwrap_or_else(PoisonError::into_inner);
        }
        *guard = Some(me);
        Ok(())
    }

    unsafe fn unlock() {
        *owner() = None;
        RELEASED.notify_one();
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
