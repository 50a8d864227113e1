//! Zephyr kernel objects behind the portable crates' platform traits.
//!
//! `synaptic-ipc` blocks through its `Semaphore` trait; here that is a
//! Zephyr `k_sem` (zephyr-lang-rust's `Semaphore`), whose `give` is callable
//! from an ISR, as the doorbell interrupt needs. `synaptic-serve` serialises
//! callers through `LocalLock`: between threads with a `k_mutex`
//! ([`KernelMutex`]), between threads and the doorbell ISR with a
//! `k_spinlock` ([`IsrLock`], zephyr-lang-rust's `SpinMutex`).

use core::cell::UnsafeCell;
use core::ops::{Deref, DerefMut};

use synaptic_ipc::platform::{Semaphore, Timeout};
use synaptic_serve::LocalLock;
use zephyr::sync::{SpinMutex, SpinMutexGuard};
use zephyr::time::{Duration, Forever, NoWait};

/// A counting semaphore for `synaptic-ipc`, usable as a `static`.
pub struct KernelSemaphore(zephyr::sys::sync::Semaphore);

impl KernelSemaphore {
    /// A semaphore with `initial` counts and at most `limit`.
    pub const fn new(initial: u32, limit: u32) -> Self {
        KernelSemaphore(zephyr::sys::sync::Semaphore::new(initial, limit))
    }

    /// The underlying Zephyr semaphore.
    pub fn kernel(&self) -> &zephyr::sys::sync::Semaphore {
        &self.0
    }
}

/// A binary semaphore with no count (what `SemLock` sleeps on).
impl Default for KernelSemaphore {
    fn default() -> Self {
        KernelSemaphore::new(0, 1)
    }
}

impl Semaphore for KernelSemaphore {
    fn give(&self) {
        self.0.give();
    }

    fn take(&self, timeout: Timeout) -> bool {
        match timeout {
            Timeout::NoWait => self.0.take(NoWait).is_ok(),
            Timeout::Forever => self.0.take(Forever).is_ok(),
            Timeout::Millis(ms) => self.0.take(Duration::millis_at_least(ms.into())).is_ok(),
        }
    }
}

/// A value behind a Zephyr `k_mutex`: the CPU1 client's local lock
/// (callers on CPU1 are serialised by it, as `synaptic_serve::LocalLock`
/// requires) and the lock around the shell's snapshot on CPU0.
///
/// The kernel object is initialised on first use, so the value may be
/// moved until it is first locked (e.g. built, then placed in a static),
/// never after.
pub struct KernelMutex<T> {
    lock: zephyr::sys::sync::Mutex,
    value: UnsafeCell<T>,
}

// SAFETY: the value is reached only through a guard, and a guard exists only
// while the k_mutex is held, which excludes every other thread; T: Send
// because the value is used from whichever thread holds the lock.
unsafe impl<T: Send> Sync for KernelMutex<T> {}

impl<T> KernelMutex<T> {
    /// A mutex holding `value`.
    pub const fn new(value: T) -> Self {
        KernelMutex {
            lock: zephyr::sys::sync::Mutex::new(),
            value: UnsafeCell::new(value),
        }
    }

    /// Lock, waiting as long as it takes.
    ///
    /// # Panics
    ///
    /// When called from an interrupt handler (where `k_mutex_lock` fails);
    /// threads only.
    pub fn lock(&self) -> KernelMutexGuard<'_, T> {
        // K_FOREVER fails only in an ISR, which no caller is.
        self.lock
            .lock(Forever)
            .expect("KernelMutex locked from an interrupt handler");
        KernelMutexGuard { mutex: self }
    }

    /// Lock if no other thread holds the mutex now.
    pub fn try_lock(&self) -> Option<KernelMutexGuard<'_, T>> {
        self.lock
            .lock(NoWait)
            .ok()
            .map(|()| KernelMutexGuard { mutex: self })
    }
}

/// Access to a [`KernelMutex`]'s value; unlocks when dropped.
pub struct KernelMutexGuard<'m, T> {
    mutex: &'m KernelMutex<T>,
}

impl<T> Deref for KernelMutexGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the k_mutex, so no other reference to the
        // value is live on another thread; `&self` lends it no longer than
        // the guard lives.
        unsafe { &*self.mutex.value.get() }
    }
}

impl<T> DerefMut for KernelMutexGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as for `deref`, and `&mut self` makes this the only
        // reference through the guard.
        unsafe { &mut *self.mutex.value.get() }
    }
}

impl<T> Drop for KernelMutexGuard<'_, T> {
    fn drop(&mut self) {
        // Unlocking a mutex this thread holds cannot fail.
        let _ = self.mutex.lock.unlock();
    }
}

impl<T> LocalLock<T> for KernelMutex<T> {
    type Guard<'g>
        = KernelMutexGuard<'g, T>
    where
        Self: 'g;

    fn new(value: T) -> Self {
        KernelMutex::new(value)
    }

    fn lock(&self) -> KernelMutexGuard<'_, T> {
        KernelMutex::lock(self)
    }

    fn try_lock(&self) -> Option<KernelMutexGuard<'_, T>> {
        KernelMutex::try_lock(self)
    }
}

/// A value shared between threads and interrupt handlers of one core,
/// behind a `k_spinlock` (interrupts masked while held). Hold it briefly:
/// for one ring push, one drain of a ring.
pub struct IsrLock<T>(SpinMutex<T>);

impl<T> IsrLock<T> {
    /// A lock around `value`.
    pub const fn new(value: T) -> Self {
        IsrLock(SpinMutex::new(value))
    }
}

impl<T> LocalLock<T> for IsrLock<T> {
    type Guard<'g>
        = SpinMutexGuard<'g, T>
    where
        Self: 'g;

    fn new(value: T) -> Self {
        IsrLock::new(value)
    }

    fn lock(&self) -> SpinMutexGuard<'_, T> {
        // `SpinMutex::lock` spins and never fails (its error is `Infallible`).
        match self.0.lock() {
            Ok(guard) => guard,
            Err(never) => match never {},
        }
    }

    fn try_lock(&self) -> Option<SpinMutexGuard<'_, T>> {
        self.0.try_lock().ok()
    }
}

/// Hand the core's time to another emulated core: `yield`. QEMU's
/// round-robin vCPUs (`-icount`) switch on it; on silicon, where both cores
/// run at once, it is a one-cycle hint.
#[cfg(CONFIG_QEMU_TARGET)]
pub fn yield_to_peer() {
    // SAFETY: `yield` is a hint: it touches no memory, stack or flags.
    unsafe { core::arch::asm!("yield", options(nomem, nostack, preserves_flags)) };
}

/// Pause a polling loop until an event (the peer core's `sev`) or an
/// interrupt: `wfe`. QEMU treats it as a yield, which lets the other
/// emulated core run.
pub fn wait_for_event() {
    // SAFETY: `wfe` waits for an event or interrupt and touches no memory,
    // stack or flags; a pending event makes it return at once.
    unsafe { core::arch::asm!("wfe", options(nomem, nostack, preserves_flags)) };
}
