//! The local lock the platform supplies: callers on one core serialised
//! around a value (`std::sync::Mutex` with feature `std`, a kernel mutex,
//! [`SemLock`] or an interrupt lock on Zephyr). Never a cross-core lock:
//! both cores have their own, over their own RAM.

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};
use core::sync::atomic::{AtomicU8, Ordering};

use synaptic_ipc::{Semaphore, Timeout};

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

const UNLOCKED: u8 = 0;
const LOCKED: u8 = 1;
/// Held, and a caller may be asleep on the semaphore.
const CONTENDED: u8 = 2;

/// A lock for threads of one core that costs one compare-and-swap to take
/// and one swap to release while nobody else wants it, and sleeps on a
/// semaphore `S` (`Default`: a fresh one with no count) when somebody does
/// (the futex mutex's three states, with the semaphore as the futex).
///
/// A kernel mutex costs a system call each way even when free, which is
/// most of what a short critical section (one ring push) costs. What this
/// lock gives up is priority inheritance: a waiter outranking the holder
/// waits while middle-priority threads run, so hold it only for bounded,
/// short work. Not for ISRs (it may sleep).
pub struct SemLock<T, S> {
    state: AtomicU8,
    wake: S,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and a guard exists only
// while `state` is not UNLOCKED after this thread's successful acquire,
// which excludes every other thread; `T: Send` because whichever thread
// holds the lock uses it.
unsafe impl<T: Send, S: Sync> Sync for SemLock<T, S> {}

impl<T, S: Semaphore> SemLock<T, S> {
    /// A lock around `value`, sleeping on `wake` (which must have no count).
    pub const fn with_semaphore(value: T, wake: S) -> Self {
        SemLock {
            state: AtomicU8::new(UNLOCKED),
            wake,
            value: UnsafeCell::new(value),
        }
    }

    fn acquire_contended(&self) {
        // Ordering: Acquire pairs with the Release of `unlock`, so what the
        // previous holder wrote is visible to this one.
        while self.state.swap(CONTENDED, Ordering::Acquire) != UNLOCKED {
            // Every unlock that finds CONTENDED gives once; a count left
            // over from an earlier give only costs one more look.
            let _ = self.wake.take(Timeout::Forever);
        }
    }

    fn unlock(&self) {
        // Ordering: Release publishes the holder's writes to the next one.
        if self.state.swap(UNLOCKED, Ordering::Release) == CONTENDED {
            self.wake.give();
        }
    }
}

impl<T, S: Semaphore + Default> LocalLock<T> for SemLock<T, S> {
    type Guard<'g>
        = SemLockGuard<'g, T, S>
    where
        Self: 'g;

    fn new(value: T) -> Self {
        SemLock::with_semaphore(value, S::default())
    }

    fn lock(&self) -> SemLockGuard<'_, T, S> {
        if self
            .state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.acquire_contended();
        }
        SemLockGuard { lock: self }
    }

    fn try_lock(&self) -> Option<SemLockGuard<'_, T, S>> {
        self.state
            .compare_exchange(UNLOCKED, LOCKED, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| SemLockGuard { lock: self })
    }
}

/// Proof of holding a [`SemLock`].
pub struct SemLockGuard<'l, T, S: Semaphore> {
    lock: &'l SemLock<T, S>,
}

impl<T, S: Semaphore> Deref for SemLockGuard<'_, T, S> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other thread has a
        // reference to the value; `&self` lends it no longer than the guard.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T, S: Semaphore> DerefMut for SemLockGuard<'_, T, S> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`; `&mut self` makes this the only reference.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T, S: Semaphore> Drop for SemLockGuard<'_, T, S> {
    fn drop(&mut self) {
        self.lock.unlock();
    }
}
