//! Time sources: a monotonic microsecond [`Clock`], a [`Delay`], and a fake
//! clock for deterministic host tests.
//!
//! The runtime never reads hardware time itself: the platform crate
//! implements these traits over `k_cycle_get_32`/`k_busy_wait`, host tests
//! use [`FakeClock`], whose delay advances time instead of sleeping.
//! Timestamps are `u64` microseconds and never wrap in practice (584,000
//! years).

use core::cell::Cell;

/// A monotonic microsecond clock.
pub trait Clock {
    /// Microseconds since an arbitrary fixed origin; never decreases.
    fn now_us(&self) -> u64;
}

/// A way to let time pass (a busy-wait on the target).
pub trait Delay {
    /// Returns after at least `us` microseconds.
    fn delay_us(&self, us: u64);
}

impl<T: Clock + ?Sized> Clock for &T {
    fn now_us(&self) -> u64 {
        (**self).now_us()
    }
}

impl<T: Delay + ?Sized> Delay for &T {
    fn delay_us(&self, us: u64) {
        (**self).delay_us(us)
    }
}

/// A clock that moves only when told to: [`Delay::delay_us`] and
/// [`FakeClock::advance`] add to it. Not `Sync`; share it by reference
/// within one thread.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::time::{Clock, Delay, FakeClock};
/// let clock = FakeClock::new(100);
/// clock.delay_us(50);
/// assert_eq!(clock.now_us(), 150);
/// ```
#[derive(Debug, Default)]
pub struct FakeClock {
    now: Cell<u64>,
}

impl FakeClock {
    /// A clock reading `start_us`.
    pub const fn new(start_us: u64) -> FakeClock {
        FakeClock {
            now: Cell::new(start_us),
        }
    }

    /// Moves time forward by `us`.
    pub fn advance(&self, us: u64) {
        self.now.set(self.now.get().saturating_add(us));
    }
}

impl Clock for FakeClock {
    fn now_us(&self) -> u64 {
        self.now.get()
    }
}

impl Delay for FakeClock {
    fn delay_us(&self, us: u64) {
        self.advance(us);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_moves_only_when_told() {
        let c = FakeClock::new(7);
        assert_eq!(c.now_us(), 7);
        assert_eq!(c.now_us(), 7);
        c.advance(3);
        fn through_reference<T: Clock + Delay>(t: T) -> u64 {
            t.delay_us(10);
            t.now_us()
        }
        assert_eq!(through_reference(&c), 20);
        c.advance(u64::MAX);
        assert_eq!(c.now_us(), u64::MAX);
    }
}
