//! Host (std) implementations of what the platform supplies to this crate:
//! `std::sync::Mutex` as the client's [`LocalLock`], and a monotonic
//! microsecond clock over `std::time::Instant`.
//!
//! Invariant: a poisoned mutex is still a mutex (the guard is recovered), so
//! a panicking test thread does not wedge the other callers.

extern crate std;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use synaptic_runtime::time::{Clock, Delay};

use crate::lock::LocalLock;

impl<T> LocalLock<T> for Mutex<T> {
    type Guard<'g>
        = MutexGuard<'g, T>
    where
        Self: 'g;

    fn new(value: T) -> Self {
        Mutex::new(value)
    }

    fn lock(&self) -> MutexGuard<'_, T> {
        Mutex::lock(self).unwrap_or_else(PoisonError::into_inner)
    }

    fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        match Mutex::try_lock(self) {
            Ok(guard) => Some(guard),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }
}

/// Microseconds since the clock was made, from `Instant` (monotonic).
#[derive(Clone, Copy, Debug)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    /// A clock reading 0 now.
    pub fn new() -> Self {
        MonotonicClock {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_us(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }
}

impl Delay for MonotonicClock {
    fn delay_us(&self, us: u64) {
        std::thread::sleep(Duration::from_micros(us));
    }
}
