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

    /// A new unit of work begins (a turn of a serving loop, the end of a
    /// wait): a clock that keeps one reading per turn ([`TurnClock`])
    /// reads afresh after this. Others ignore it.
    fn new_turn(&self) {}
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

    fn new_turn(&self) {
        (**self).new_turn()
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

/// A clock read at most once per turn: every [`Clock::now_us`] between
/// two [`Clock::new_turn`] calls returns the turn's first reading. A
/// serving turn stamps accept, start, finish and reply; on a core where a
/// hardware clock read costs tens of instructions, one read a turn instead
/// of one per stamp is a measurable share of a round trip, at the price of
/// stamps that are exact to the turn (its own work, microseconds). Not
/// `Sync`: one thread's loop owns it.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::time::{Clock, FakeClock, TurnClock};
/// let inner = FakeClock::new(10);
/// let clock = TurnClock::new(&inner);
/// assert_eq!(clock.now_us(), 10);
/// inner.advance(5);
/// assert_eq!(clock.now_us(), 10, "the same turn");
/// clock.new_turn();
/// assert_eq!(clock.now_us(), 15);
/// ```
#[derive(Debug)]
pub struct TurnClock<C> {
    inner: C,
    reading: Cell<Option<u64>>,
}

impl<C: Clock> TurnClock<C> {
    /// A turn clock over `inner`, with no reading yet.
    pub const fn new(inner: C) -> TurnClock<C> {
        TurnClock {
            inner,
            reading: Cell::new(None),
        }
    }
}

impl<C: Clock> Clock for TurnClock<C> {
    fn now_us(&self) -> u64 {
        match self.reading.get() {
            Some(t) => t,
            None => {
                let t = self.inner.now_us();
                self.reading.set(Some(t));
                t
            }
        }
    }

    fn new_turn(&self) {
        self.reading.set(None);
    }
}

/// Whole milliseconds in `us` microseconds, rounded down: `us / 1000`
/// without a 64-bit division. Thumb has no divide instruction for 64-bit
/// operands, so `/ 1000` on a `u64` links the compiler's `__aeabi_uldivmod`
/// and `__udivmoddi4` (about 800 bytes on the application core); this is the
/// multiply-high a 64-bit target's compiler emits for the same division
/// (`us / 8 * ceil(2^68 / 125) / 2^68`), exact for every `u64`.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::time::micros_to_millis;
/// assert_eq!(micros_to_millis(1_999), 1);
/// assert_eq!(micros_to_millis(u64::MAX), u64::MAX / 1000);
/// ```
pub const fn micros_to_millis(us: u64) -> u64 {
    (((us >> 3) as u128 * 0x20C4_9BA5_E353_F7CF) >> 68) as u64
}

/// Whole milliseconds in `us` microseconds, rounded up (`us.div_ceil(1000)`
/// without a 64-bit division, see [`micros_to_millis`]).
///
/// # Examples
///
/// ```
/// use synaptic_runtime::time::micros_to_millis_ceil;
/// assert_eq!(micros_to_millis_ceil(1_001), 2);
/// assert_eq!(micros_to_millis_ceil(2_000), 2);
/// ```
pub const fn micros_to_millis_ceil(us: u64) -> u64 {
    let ms = micros_to_millis(us);
    ms + (us - ms * 1000 != 0) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_match_the_division_everywhere() {
        let mut x: u64 = 0x5359_4E33;
        let edges = [
            0,
            1,
            7,
            8,
            999,
            1_000,
            1_001,
            1_999,
            2_000,
            u64::MAX / 1000 * 1000,
            u64::MAX - 1,
            u64::MAX,
            u64::from(u32::MAX) * 1000 + 999,
        ];
        let randoms = (0..100_000).map(|_| {
            // xorshift64: values across the whole range, every bit length.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x >> (x % 64)
        });
        for us in edges.into_iter().chain(randoms) {
            assert_eq!(micros_to_millis(us), us / 1000, "{us}");
            assert_eq!(micros_to_millis_ceil(us), us.div_ceil(1000), "{us}");
        }
    }

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

    #[test]
    fn turn_clock_reads_once_a_turn_and_stays_monotonic() {
        let inner = FakeClock::new(0);
        let clock = TurnClock::new(&inner);
        inner.advance(4);
        assert_eq!(clock.now_us(), 4);
        inner.advance(6);
        // Through a reference too, as the serving layer holds it.
        fn turn_through<C: Clock>(c: C) -> u64 {
            let before = c.now_us();
            c.new_turn();
            assert!(c.now_us() >= before);
            before
        }
        assert_eq!(turn_through(&clock), 4);
        assert_eq!(clock.now_us(), 10);
        clock.new_turn();
        clock.new_turn();
        assert_eq!(clock.now_us(), 10, "no time passed");
        inner.advance(1);
        assert_eq!(clock.now_us(), 10);
    }
}
