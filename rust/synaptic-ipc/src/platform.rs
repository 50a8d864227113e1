//! What the platform supplies: a doorbell to the peer core and a counting
//! semaphore with timeout.
//!
//! Invariants: [`Doorbell::ring`] may be called from thread context and must
//! not block; [`Semaphore::give`] must be callable from an ISR (the doorbell
//! interrupt gives the dispatch semaphore), [`Semaphore::take`] only from a
//! thread. On Zephyr these are the MHU/mbox drivers and `k_sem`; on the host,
//! the `host` module (feature `std`) provides Condvar-based ones.

/// How long a blocking call may wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timeout {
    /// Do not wait.
    NoWait,
    /// Wait at most this many milliseconds.
    Millis(u32),
    /// Wait until it happens.
    Forever,
}

impl Timeout {
    /// The C convention: negative means forever, 0 no wait, else milliseconds.
    pub const fn from_c_millis(timeout_ms: i32) -> Timeout {
        if timeout_ms < 0 {
            Timeout::Forever
        } else if timeout_ms == 0 {
            Timeout::NoWait
        } else {
            Timeout::Millis(timeout_ms as u32)
        }
    }
}

/// Interrupts the peer core to say "a ring has news for you".
pub trait Doorbell {
    /// Ring the peer. Must not block; a doorbell that is already pending may
    /// coalesce (the peer drains the ring completely on each wake-up).
    fn ring(&self);

    /// Signal the peer without an interrupt (Arm `sev`), for a peer that
    /// polls a ring and pauses with `wfe` between looks. Default: nothing
    /// (the poller then only spins or yields).
    fn event(&self) {}
}

/// A counting semaphore with timeout (Zephyr `k_sem`, host Condvar).
pub trait Semaphore {
    /// Add one count and wake one waiter. Callable from an ISR.
    fn give(&self);

    /// Take one count, waiting at most `timeout`. Returns `false` on timeout.
    /// Thread context only.
    fn take(&self, timeout: Timeout) -> bool;
}

impl<T: Doorbell + ?Sized> Doorbell for &T {
    fn ring(&self) {
        (**self).ring()
    }

    fn event(&self) {
        (**self).event()
    }
}

impl<T: Semaphore + ?Sized> Semaphore for &T {
    fn give(&self) {
        (**self).give()
    }

    fn take(&self, timeout: Timeout) -> bool {
        (**self).take(timeout)
    }
}
