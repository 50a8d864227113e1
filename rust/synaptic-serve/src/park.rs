//! Parking CPU1 while CPU0 writes the flash bank CPU1 executes from: the
//! park handshake (ABI v4, bounded in v5) (`park_request`, `park_ack`; the steps are in
//! `synaptic_abi::control`).
//!
//! A flash controller that programs or erases a bank cannot serve
//! instruction fetches from it at the same time; on the MCXN947 CPU1
//! executes in place from flash bank 1, so CPU0 writing a model store there
//! would stall or fault CPU1 mid-instruction. CPU0 therefore writes such a
//! bank only inside [`Parker::with_cpu1_parked`], and CPU1's doorbell
//! interrupt, on seeing the request, runs [`ParkHold::hold`] from RAM
//! with its interrupts masked until CPU0 lets it go.
//!
//! # Invariants
//!
//! * CPU0 writes the flash only after it read its own generation in
//!   `park_ack`, and writes zero into `park_request` on every way out
//!   (success, refusal, or a panic in the write: a drop guard does it).
//! * `park_request` is CPU0's word like any other: CPU0 keeps the value it
//!   stands by in its own RAM ([`ParkRecord`]), writes the record before
//!   the shared word, and its maintenance republishes the record
//!   ([`crate::SharedRegion::repair_cpu0_words`]), so a request a CPU1
//!   scribbled is withdrawn within one maintenance period.
//! * Generations are nonzero and never repeat within 2^32 - 1 parks, so an
//!   acknowledgement that arrives after CPU0 gave up is never taken for the
//!   next request's.
//! * No wait of CPU1's on CPU0 is unbounded: [`ParkHold::hold`] gives up
//!   after [`ParkHold::max_reads`] reads of the request (each read takes at
//!   least one core cycle, so the hold lasts at least `max_reads` cycles)
//!   and then ignores that generation. CPU0 starts a write only within the
//!   first half of that bound after its request ([`ParkLimits`]), and a
//!   write must take less than the other half (the bound's Kconfig says
//!   so), so CPU1 never leaves a hold while CPU0 writes; a write that ends
//!   late is counted ([`ParkStats::overruns`]).
//! * A request already in `park_request` when CPU1 attaches is not CPU0's
//!   to this CPU1 (a previous life's, or a scribble): [`ParkHold`] ignores
//!   it until a different generation arrives.
//! * [`ParkHold::hold`] acknowledges every new generation it sees while it
//!   holds (CPU0 may release and request again before CPU1 saw the gap)
//!   and calls nothing but `relax`, so a caller in RAM stays in RAM.

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

    /// The generation CPU0 asks CPU1 to park for, zero when none.
    #[inline(always)]
    fn requested(&self) -> u32 {
        // Ordering: Acquire pairs with CPU0's Release store of the request.
        self.request.load(Ordering::Acquire)
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

/// CPU1's side of the handshake, made at its attach: what its doorbell
/// interrupt runs.
#[derive(Debug)]
pub struct ParkHold<'r> {
    words: ParkWords<'r>,
    /// A generation not to park for: the request found at attach, or one
    /// CPU0 never released. Zero: none.
    ignored: AtomicU32,
    max_reads: u32,
}

/// How a [`ParkHold::hold`] ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Generations acknowledged.
    pub acknowledged: u32,
    /// The hold reached its bound before CPU0 released it; that generation
    /// is ignored from now on.
    pub abandoned: bool,
}

impl<'r> ParkHold<'r> {
    /// CPU1's hold over `words`, giving up after `max_reads` reads of the
    /// request. A request already there is a previous life's: ignored.
    pub fn new(words: ParkWords<'r>, max_reads: u32) -> Self {
        ParkHold {
            ignored: AtomicU32::new(words.requested()),
            words,
            max_reads: max_reads.max(1),
        }
    }

    /// The bound on one hold, in reads of the request word.
    pub fn max_reads(&self) -> u32 {
        self.max_reads
    }

    /// Whether a park is asked for, without a barrier: what every doorbell
    /// interrupt reads first, so that one that only announces replies costs
    /// no `dmb`. [`hold`](Self::hold) reads the request again with Acquire.
    #[inline(always)]
    pub fn asked(&self) -> bool {
        // Ordering: a hint; see above. `ignored` is this core's own word.
        let request = self.words.request.load(Ordering::Relaxed);
        request != 0 && request != self.ignored.load(Ordering::Relaxed)
    }

    /// Acknowledge and hold until CPU0 writes zero, or for at most
    /// [`max_reads`](Self::max_reads) reads; `relax` runs between reads (a
    /// `yield` hint on the target). Inlined, so that a caller placed in RAM
    /// runs all of it from RAM.
    #[inline(always)]
    pub fn hold(&self, mut relax: impl FnMut()) -> Held {
        let mut held = Held::default();
        let mut acked = 0;
        let mut reads = 0;
        loop {
            let request = self.words.requested();
            if request == 0 {
                break;
            }
            // Ordering: this core's own word (the interrupt and the attach
            // that set it run on CPU1).
            let ignored = self.ignored.load(Ordering::Relaxed);
            if request == ignored {
                // A stale request: not ours to hold for (nothing acked), or
                // CPU0 withdrew ours and a scribble brought back a value.
                break;
            }
            if ignored != 0 {
                // A new generation: the stale value is gone.
                self.ignored.store(0, Ordering::Relaxed);
            }
            if request != acked {
                // Ordering: Release, after everything CPU1 did before it
                // parked; CPU0 reads it with Acquire.
                self.words.ack.store(request, Ordering::Release);
                acked = request;
                held.acknowledged += 1;
            }
            reads += 1;
            if reads >= self.max_reads {
                // CPU0 never released it: CPU1 runs again and no longer
                // parks for this generation.
                self.ignored.store(request, Ordering::Relaxed);
                held.abandoned = true;
                break;
            }
            relax();
        }
        // Ordering: a statement that CPU1 runs again; nothing rides on it.
        self.words.ack.store(0, Ordering::Release);
        held
    }
}

/// CPU0's private record of the request it stands by: zero outside a park,
/// the generation during one. The value its maintenance republishes in
/// `park_request`.
#[derive(Debug, Default)]
pub struct ParkRecord(AtomicU32);

impl ParkRecord {
    /// No park.
    pub const fn new() -> Self {
        ParkRecord(AtomicU32::new(0))
    }

    /// The request CPU0 stands by.
    pub fn get(&self) -> u32 {
        // Ordering: Acquire pairs with the Release stores in `set`, so the
        // maintenance that republishes a value reads the latest one its
        // core wrote.
        self.0.load(Ordering::Acquire)
    }

    fn set(&self, request: u32) {
        // Ordering: Release; see `get`.
        self.0.store(request, Ordering::Release);
    }
}

/// CPU0's two bounds of a park.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ParkLimits {
    ack_timeout_us: u64,
    hold_us: u64,
}

impl ParkLimits {
    /// Wait at most `ack_timeout_us` for the acknowledgement, for a CPU1
    /// whose hold lasts at least `hold_us`. `None` unless the wait fits the
    /// first half of the hold (the write needs the second).
    pub const fn new(ack_timeout_us: u64, hold_us: u64) -> Option<Self> {
        if ack_timeout_us == 0 || 2 * ack_timeout_us > hold_us {
            return None;
        }
        Some(ParkLimits {
            ack_timeout_us,
            hold_us,
        })
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
    /// Writes that ended after CPU1's hold may have given up (a write
    /// longer than half the hold bound: the configuration is wrong).
    pub overruns: u32,
}

/// CPU0's side of the handshake: its generation counter, the doorbell to
/// wake CPU1's interrupt, and statistics.
#[derive(Debug)]
pub struct Parker<'r, D> {
    words: ParkWords<'r>,
    record: &'r ParkRecord,
    doorbell: D,
    generation: u32,
    stats: ParkStats,
}

/// Writes zero into the record, then into `park_request`, when dropped:
/// on every way out.
struct Release<'a> {
    record: &'a ParkRecord,
    request: &'a AtomicU32,
}

impl Drop for Release<'_> {
    fn drop(&mut self) {
        self.record.set(0);
        // Ordering: Release, after the flash operation (its completion is
        // what CPU1 waits for).
        self.request.store(0, Ordering::Release);
    }
}

impl<'r, D: Doorbell> Parker<'r, D> {
    /// CPU0's parker over `words` (from [`crate::SharedRegion::park_words`]),
    /// keeping its requests in `record` (the one CPU0's maintenance
    /// republishes: `Intake::with_park_record`).
    pub fn new(words: ParkWords<'r>, record: &'r ParkRecord, doorbell: D) -> Self {
        Parker {
            words,
            record,
            doorbell,
            generation: 0,
            stats: ParkStats::default(),
        }
    }

    /// Statistics so far.
    pub fn stats(&self) -> ParkStats {
        self.stats
    }

    /// Run `write` with CPU1 parked: request, ring, wait up to the
    /// limits' acknowledgement timeout on `clock` (calling `relax` between
    /// reads), run `write`, release.
    ///
    /// # Errors
    ///
    /// [`ParkError`], and then `write` did not run.
    pub fn with_cpu1_parked<T>(
        &mut self,
        clock: &impl Clock,
        limits: ParkLimits,
        mut relax: impl FnMut(),
        write: impl FnOnce() -> T,
    ) -> Result<T, ParkError> {
        if !self.words.cpu1_attached() {
            self.stats.refused = self.stats.refused.saturating_add(1);
            return Err(ParkError::NotAttached);
        }
        self.generation = self.generation.wrapping_add(1).max(1);
        let generation = self.generation;
        // The record first: maintenance republishes it from now on.
        self.record.set(generation);
        let release = Release {
            record: self.record,
            request: self.words.request,
        };
        // Ordering: Release pairs with CPU1's Acquire in `requested`.
        self.words.request.store(generation, Ordering::Release);
        self.doorbell.ring();
        let asked = clock.now_us();
        let refuse = |stats: &mut ParkStats| {
            stats.refused = stats.refused.saturating_add(1);
            Err(ParkError::Timeout { generation })
        };
        while self.words.acknowledged() != generation {
            if clock.now_us().saturating_sub(asked) >= limits.ack_timeout_us {
                drop(release);
                return refuse(&mut self.stats);
            }
            relax();
        }
        let held = clock.now_us();
        // Too late to start (a long interruption since the acknowledgement
        // was read): CPU1 might give up before the write ends.
        if held.saturating_sub(asked) > limits.hold_us / 2 {
            drop(release);
            return refuse(&mut self.stats);
        }
        let out = write();
        drop(release);
        let done = clock.now_us();
        let us = |d: u64| u32::try_from(d).unwrap_or(u32::MAX);
        self.stats.parks = self.stats.parks.saturating_add(1);
        if done.saturating_sub(asked) >= limits.hold_us {
            self.stats.overruns = self.stats.overruns.saturating_add(1);
        }
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
