//! Host (std) implementations of the platform traits, for tests and the
//! two-core simulator: a Mutex/Condvar counting semaphore, and a doorbell
//! that gives the peer's semaphore (what the doorbell ISR does on target).
//!
//! Invariant: `take` honours its timeout against a monotonic clock, across
//! spurious wake-ups.

extern crate std;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::platform::{Doorbell, Semaphore, Timeout};

/// Counting semaphore on a `Mutex<u32>` and a `Condvar`.
#[derive(Debug, Default)]
pub struct HostSemaphore {
    count: Mutex<u32>,
    wake: Condvar,
}

impl HostSemaphore {
    /// A semaphore with no count.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Semaphore for HostSemaphore {
    fn give(&self) {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        *count = count.saturating_add(1);
        self.wake.notify_one();
    }

    fn take(&self, timeout: Timeout) -> bool {
        let mut count = self.count.lock().unwrap_or_else(|e| e.into_inner());
        let deadline = match timeout {
            Timeout::NoWait => None,
            Timeout::Millis(ms) => Some(Instant::now() + Duration::from_millis(u64::from(ms))),
            Timeout::Forever => None,
        };
        loop {
            if *count > 0 {
                *count -= 1;
                return true;
            }
            match (timeout, deadline) {
                (Timeout::NoWait, _) => return false,
                (Timeout::Forever, _) => {
                    count = self.wake.wait(count).unwrap_or_else(|e| e.into_inner());
                }
                (_, Some(deadline)) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return false;
                    }
                    count = self
                        .wake
                        .wait_timeout(count, deadline - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                }
                (Timeout::Millis(_), None) => return false,
            }
        }
    }
}

/// A doorbell that gives the peer's dispatch semaphore and counts rings.
#[derive(Debug)]
pub struct SemaphoreDoorbell<'a> {
    peer: &'a HostSemaphore,
    rung: AtomicU32,
}

impl<'a> SemaphoreDoorbell<'a> {
    /// A doorbell that wakes `peer`.
    pub fn new(peer: &'a HostSemaphore) -> Self {
        SemaphoreDoorbell {
            peer,
            rung: AtomicU32::new(0),
        }
    }

    /// Times rung.
    pub fn rung(&self) -> u32 {
        self.rung.load(Ordering::Relaxed)
    }
}

impl Doorbell for SemaphoreDoorbell<'_> {
    fn ring(&self) {
        self.rung.fetch_add(1, Ordering::Relaxed);
        self.peer.give();
    }
}
