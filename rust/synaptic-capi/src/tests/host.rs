//! The host platform of the tests: a `std` mutex with an owner (so re-entry
//! is detected), a fake clock that only the busy-wait and the tests move,
//! and a console that records lines.

use std::string::{String, ToString};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, ThreadId};
use std::vec::Vec;

use core::fmt;
use core::sync::atomic::{AtomicU64, Ordering};

use crate::{Platform, Reentered};

static OWNER: Mutex<Option<ThreadId>> = Mutex::new(None);
static RELEASED: Condvar = Condvar::new();
static NOW_US: AtomicU64 = AtomicU64::new(0);
static CONSOLE: Mutex<Vec<String>> = Mutex::new(Vec::new());
/// Serialises the tests: the C API has one global runtime.
static SERIAL: Mutex<()> = Mutex::new(());

fn owner() -> MutexGuard<'static, Option<ThreadId>> {
    OWNER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The test platform.
pub struct HostPlatform;

// SAFETY: `lock` blocks while another thread is recorded as owner and
// refuses the owner itself; `unlock` clears the owner. The owner record is
// guarded by a std mutex.
unsafe impl Platform for HostPlatform {
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
}

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
