//! The local lock the platform supplies: callers on one core serialised
//! around a value (`std::sync::Mutex` with feature `std`, a kernel mutex or
//! an interrupt lock on Zephyr). Never a cross-core lock: both cores have
//! their own, over their own RAM.

use core::ops::DerefMut;

/// A mutual-exclusion lock for one core's threads (and, for an interrupt
/// lock, its ISRs).
pub trait LocalLock<T> {
    /// Proof of holding the lock; dropping it unlocks.
    type Guard<'g>: DerefMut<Target = T>
    where
        Self: 'g;

    /// A lock around `value`.
    fn new(value: T) -> Self;

    /// Block until the lock is held.
    fn lock(&self) -> Self::Guard<'_>;

    /// The lock if it is free now, `None` if someone holds it.
    fn try_lock(&self) -> Option<Self::Guard<'_>>;
}
