//! The C API's lock on a host (`std`, feature `std`): a `std` mutex that
//! records its owner, so re-entry by the holding thread is refused as
//! [`Platform`](crate::Platform) requires. The host platforms (the tests',
//! the host static library's) differ only in clock and console.

extern crate std;

use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::{self, ThreadId};

use crate::Reentered;

static OWNER: Mutex<Option<ThreadId>> = Mutex::new(None);
static RELEASED: Condvar = Condvar::new();

fn owner() -> MutexGuard<'static, Option<ThreadId>> {
    OWNER.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Takes the lock for the calling thread: blocks while another thread is
/// recorded as owner, refuses the owner itself (for `Platform::lock`).
///
/// # Errors
///
/// [`Reentered`] when the calling thread already holds it.
pub fn lock() -> Result<(), Reentered> {
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

/// Releases the lock (for `Platform::unlock`).
///
/// # Safety
///
/// Only the holding thread may call it, once per successful [`lock`].
pub unsafe fn unlock() {
    *owner() = None;
    RELEASED.notify_one();
}
