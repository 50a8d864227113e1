//! Parking CPU1 while CPU0 writes the flash bank CPU1 executes from: the
//! ABI v4 park handshake (`park_request`, `park_ack`; the steps are in
//! `synaptic_abi::control`).
//!
//! A flash controller that programs or erases a bank cannot serve
//! instruction fetches from it at the same time; on the MCXN947 CPU1
//! executes in place from flash bank 1, so CPU0 writing a model store there
//! would stall or fault CPU1 mid-instruction. CPU0 therefore writes such a
//! bank only inside [`Parker::with_cpu1_parked`], and CPU1's doorbell
//! interrupt, on seeing the request, runs [`ParkWords::hold`] from RAM
//! with its interrupts masked until CPU0 lets it go.
//!
//! # Invariants
//!
//! * CPU0 writes the flash only after it read its own generation in
//!   `park_ack`, and writes zero into `park_request` on every way out
//!   (success, refusal, or a panic in the write: a drop guard does it).
//! * Generations are nonzero and never repeat within 2^32 - 1 parks, so an
//!   acknowledgement that arrives after CPU0 gave up is never taken for the
//!   next request's.
//! * [`ParkWords::hold`] acknowledges every new generation it sees while it
//!   holds (CPU0 may release and request again before CPU1 saw the gap) and
//!   returns only after reading zero; it calls nothing but `relax`, so a
//!   caller in RAM stays in RAM.

use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::Errno;
use synaptic_ipc::platform::Doorbell;
use synaptic_runtime::time::Clock;

/// The two words of the handshake in the shared control block.
#[derive(Clone, Copy, Debug)]
pub struct ParkWords<'r> {
    request: &'r AtomicU32,
    ack: &'r AtomicU32,
    cpu1_ready: &'r AtomicU32,
}

impl<'r> ParkWords<'r> {
    pub(crate) fn new(
        request: &'r AtomicU32,
        ack: &'r AtomicU32,
        cpu1_ready: &'r AtomicU32,
    ) -> Self {
        ParkWords {
            request,
            ack,
            cpu1_ready,
        }
    }

    /// CPU1: the generation CPU0 asks it to park for, zero when none.
    #[inline(always)]
    pub fn requested(&self) -> u32 {
        // Ordering: Acquire pairs with CPU0's Release store of the request.
        self.request.load(Ordering::Acquire)
    }

    /// CPU1: whether a park is asked for, without a barrier: what every
    /// doorbell interrupt reads first, so that one that only announces
    /// replies costs no `dmb`. [`hold`](Self::hold) reads the request
    /// again with Acquire.
    #[inline(always)]
    pub fn asked(&self) -> bool {
        // Ordering: a hint; see above.
        self.request.load(Ordering::Relaxed) != 0
    }

    /// CPU1: acknowledge and hold until CPU0 writes zero; `relax` runs
    /// between reads (a `yield` hint on the target). Returns how many
    /// generations it acknowledged. Inlined, so that a caller placed in RAM
    /// runs all of it from RAM.
    #[inline(always)]
    pub fn hold(&self, mut relax: impl FnMut()) -> u32 {
        let mut acked = 0;
        let mut count = 0;
        loop {
            let request = self.requested();
            if request == 0 {
                break;
            }
            if request != acked {
                // Ordering: Release, after everything CPU1 did before it
                // parked; CPU0 reads it with Acquire.
                self.ack.store(request, Ordering::Release);
                acked = request;
                count += 1;
            }
            relax();
        }
        // Ordering: a statement that CPU1 runs again; nothing rides on it.
        self.ack.store(0, Ordering::Release);
        count
    }

    /// The acknowledged generation, zero when CPU1 runs.
    pub fn acknowledged(&self) -> u32 {
        // Ordering: Acquire pairs with CPU1's Release store in `hold`.
        self.ack.load(Ordering::Acquire)
    }

    fn cpu1_attached(&self) -> bool {
        // Ordering: pairs with CPU1's Release store of `cpu1_ready`.
        self.cpu1_ready.load(Ordering::Acquire) == synaptic_abi::READY
    }
}

/// Why CPU0 did not get CPU1 parked; it then did not touch the flash.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ParkError {
    /// CPU1 has not attached (`cpu1_ready`): nothing would answer.
    NotAttached,
    /// CPU1 did not acknowledge `generation` within the timeout.
    Timeout {
        /// The generation CPU0 asked for and withdrew.
        generation: u32,
    },
}

impl ParkError {
    /// The errno at the C boundary: the flash is busy with a peer.
    pub const fn errno(self) -> Errno {
        Errno::Busy
    }
}

/// What CPU0's parks cost and how they went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParkStats {
    /// Parks CPU1 acknowledged (one per flash write or erase).
    pub parks: u32,
    /// Parks refused ([`ParkError`]); those writes did not happen.
    pub refused: u32,
    /// Longest wait for an acknowledgement, microseconds.
    pub longest_ack_us: u32,
    /// Longest time CPU1 was held, microseconds.
    pub longest_hold_us: u32,
}

/// CPU0's side of the handshake: its generation counter, the doorbell to
/// wake CPU1's interrupt, and statistics.
#[derive(Debug)]
pub struct Parker<'r, D> {
    words: ParkWords<'r>,
    doorbell: D,
    generation: u32,
    stats: ParkStats,
}

/// Writes zero into `park_request` when dropped: on every way out.
struct Release<'a>(&'a AtomicU32);

impl Drop for Release<'_> {
    fn drop(&mut self) {
        // Ordering: Release, after the flash operation (its completion is
        // what CPU1 waits for).
        self.0.store(0, Ordering::Release);
    }
}

impl<'r, D: Doorbell> Parker<'r, D> {
    /// CPU0's parker over `words` (from [`crate::SharedRegion::park_words`]).
    pub fn new(words: ParkWords<'r>, doorbell: D) -> Self {
        Parker {
            words,
            doorbell,
            generation: 0,
            stats: ParkStats::default(),
        }
    }

    /// Statistics so far.
    pub fn stats(&self) -> ParkStats {
        self.stats
    }

    /// Run `write` with CPU1 parked: request, ring, wait up to `timeout_us`
    /// on `clock` for the acknowledgement (calling `relax` between reads),
    /// run `write`, release.
    ///
    /// # Errors
    ///
    /// [`ParkError`], and then `write` did not run.
    pub fn with_cpu1_parked<T>(
        &mut self,
        clock: &impl Clock,
        timeout_us: u64,
        mut relax: impl FnMut(),
        write: impl FnOnce() -> T,
    ) -> Result<T, ParkError> {
        if !self.words.cpu1_attached() {
            self.stats.refused = self.stats.refused.saturating_add(1);
            return Err(ParkError::NotAttached);
        }
        self.generation = self.generation.wrapping_add(1).max(1);
        let generation = self.generation;
        let release = Release(self.words.request);
        // Ordering: Release pairs with CPU1's Acquire in `requested`.
        self.words.request.store(generation, Ordering::Release);
        self.doorbell.ring();
        let asked = clock.now_us();
        while self.words.acknowledged() != generation {
            if clock.now_us().saturating_sub(asked) >= timeout_us {
                drop(release);
                self.stats.refused = self.stats.refused.saturating_add(1);
                return Err(ParkError::Timeout { generation });
            }
            relax();
        }
        let held = clock.now_us();
        let out = write();
        drop(release);
        let done = clock.now_us();
        let us = |d: u64| u32::try_from(d).unwrap_or(u32::MAX);
        self.stats.parks = self.stats.parks.saturating_add(1);
        self.stats.longest_ack_us = self
            .stats
            .longest_ack_us
            .max(us(held.saturating_sub(asked)));
        self.stats.longest_hold_us = self
            .stats
            .longest_hold_us
            .max(us(done.saturating_sub(held)));
        Ok(out)
    }
}
