//! What the cases share: static buffers with one user at a time, a fake clock
//! that can live in a static, the platform hooks, and small numeric helpers.
//!
//! Cases run on a thread with a small stack (a ztest thread on the target),
//! so buffers of more than a few hundred bytes are `static`
//! [`Exclusive`]s that a case claims for its duration. Each static belongs to
//! one suite module, whose cases run one after another, so a claim never
//! finds its static busy unless a previous case was killed while holding it
//! (then [`claim!`](crate::claim) fails the case instead of touching shared
//! bytes).

use core::cell::UnsafeCell;
use core::fmt;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use synaptic_runtime::time::{Clock, Delay};

/// A value in a `static` that one user at a time may borrow mutably.
///
/// [`Exclusive::claim`] sets a busy flag with one atomic swap and returns a
/// guard; dropping the guard clears the flag. There is no waiting: a second
/// claim while the first is held returns `None`.
pub struct Exclusive<T> {
    busy: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a `Claim`, and at most one
// `Claim` exists at a time (the busy flag, set by an atomic swap, admits one
// owner), so sharing the `Exclusive` between threads moves `&mut T` from one
// thread to another but never aliases it: `T: Send` is what that needs.
unsafe impl<T: Send> Sync for Exclusive<T> {}

impl<T> Exclusive<T> {
    /// A free cell holding `value`.
    pub const fn new(value: T) -> Self {
        Exclusive {
            busy: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// The value, until the guard is dropped; `None` while another guard lives.
    pub fn claim(&self) -> Option<Claim<'_, T>> {
        // Ordering: Acquire pairs with the Release store in `Claim::drop`, so
        // the previous owner's writes are visible to the new one.
        if self.busy.swap(true, Ordering::Acquire) {
            None
        } else {
            Some(Claim { owner: self })
        }
    }
}

/// Exclusive access to the value of an [`Exclusive`].
pub struct Claim<'a, T> {
    owner: &'a Exclusive<T>,
}

impl<T> Deref for Claim<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: this guard won the busy flag in `claim` and keeps it until
        // it is dropped, so no other reference to the value exists.
        unsafe { &*self.owner.value.get() }
    }
}

impl<T> DerefMut for Claim<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow
        // through this guard.
        unsafe { &mut *self.owner.value.get() }
    }
}

impl<T> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        // Ordering: Release publishes this owner's writes to the next claim.
        self.owner.busy.store(false, Ordering::Release);
    }
}

/// A fake microsecond clock that can be a `static`, so plain `fn` pipeline
/// stages can advance it (a [`synaptic_runtime::time::FakeClock`] is a
/// `Cell` and cannot). Time moves only through [`Delay::delay_us`],
/// [`SharedClock::advance`] and [`SharedClock::set`].
///
/// The two halves are separate atomics: correct for one thread at a time,
/// which is how the cases use it (the target has no 64-bit atomics).
pub struct SharedClock {
    high: AtomicU32,
    low: AtomicU32,
}

impl SharedClock {
    /// A clock reading 0.
    pub const fn new() -> Self {
        SharedClock {
            high: AtomicU32::new(0),
            low: AtomicU32::new(0),
        }
    }

    /// Sets the time.
    pub fn set(&self, us: u64) {
        // Ordering: Relaxed; one thread at a time reads and writes the clock.
        self.high.store((us >> 32) as u32, Ordering::Relaxed);
        self.low.store(us as u32, Ordering::Relaxed);
    }

    /// Moves time forward by `us` (saturating).
    pub fn advance(&self, us: u64) {
        self.set(self.now_us().saturating_add(us));
    }
}

impl Default for SharedClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SharedClock {
    fn now_us(&self) -> u64 {
        // Ordering: Relaxed, as in `set`.
        (u64::from(self.high.load(Ordering::Relaxed)) << 32)
            | u64::from(self.low.load(Ordering::Relaxed))
    }
}

impl Delay for SharedClock {
    fn delay_us(&self, us: u64) {
        self.advance(us);
    }
}

/// What the platform lends the cases: a free-running counter for the
/// benchmarks and a console.
#[derive(Clone, Copy)]
pub struct Hooks {
    /// A free-running 32-bit counter (cycles on the target), read twice
    /// around the measured work; differences wrap correctly.
    pub counter: fn() -> u32,
    /// Unit of the counter, for the printed figures ("cycles", "ns").
    pub unit: &'static str,
    /// Prints one line.
    pub print: fn(fmt::Arguments<'_>),
}

fn no_counter() -> u32 {
    0
}

fn no_print(_: fmt::Arguments<'_>) {}

/// Hooks before [`install_hooks`]: a counter that reads 0 and no console.
pub const NO_HOOKS: Hooks = Hooks {
    counter: no_counter,
    unit: "(no counter)",
    print: no_print,
};

static HOOKS: Exclusive<Hooks> = Exclusive::new(NO_HOOKS);

/// Installs the platform's hooks; returns `false` (and installs nothing)
/// if they are being read at this moment.
pub fn install_hooks(hooks: Hooks) -> bool {
    match HOOKS.claim() {
        Some(mut h) => {
            *h = hooks;
            true
        }
        None => false,
    }
}

/// The installed hooks ([`NO_HOOKS`] before [`install_hooks`]).
pub fn hooks() -> Hooks {
    HOOKS.claim().map_or(NO_HOOKS, |h| *h)
}

/// `|a - b| <= tolerance`; false for NaN.
pub fn close(a: f32, b: f32, tolerance: f32) -> bool {
    (a - b).abs() <= tolerance
}

/// Deterministic pseudo-random numbers (xorshift32), so known-answer and
/// reference checks are reproducible everywhere.
pub fn xorshift(state: &mut u32) -> u32 {
    *state ^= *state << 13;
    *state ^= *state >> 17;
    *state ^= *state << 5;
    *state
}

/// Little-endian `f32` number `index` of a byte buffer (0.0 past the end).
pub fn f32_at(bytes: &[u8], index: usize) -> f32 {
    match bytes.get(index * 4..index * 4 + 4) {
        Some(b) => f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
        None => 0.0,
    }
}

/// Writes `values` as little-endian `f32`s at the start of `bytes`;
/// returns how many fit.
pub fn put_f32s(bytes: &mut [u8], values: &[f32]) -> usize {
    let mut n = 0;
    for (chunk, v) in bytes.chunks_exact_mut(4).zip(values) {
        chunk.copy_from_slice(&v.to_le_bytes());
        n += 1;
    }
    n
}
