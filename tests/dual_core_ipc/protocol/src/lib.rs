//! What the two images of the dual-core IPC test agree on: the message each
//! sequence number stands for, the two phases, and where CPU1 reports.
//!
//! # The exchange
//!
//! CPU1 sends requests `seq = 0, 1, 2, ...` on ring CPU1→CPU0; CPU0 answers
//! each with its response on ring CPU0→CPU1, in order. Sequence numbers
//! `0..PING_PONG_MESSAGES` are the ping-pong phase (one request in flight);
//! the rest are the burst phase (CPU1 pushes [`burst_size`] requests, 1, 2,
//! ..., up to the ring's capacity, then collects as many responses). Every
//! field of every [`request`] and [`response`] is a function of `seq`, and
//! the receiver compares each field ([`mismatched_fields`]): a lost,
//! duplicated, reordered or torn message shows up as field errors.
//!
//! # CPU1's report
//!
//! CPU1 has no console. It writes its counts into a [`Cpu1Report`] in the
//! payload pool, right after the exchange slots ([`report_offset`]), and its
//! ping-pong round-trip times into the control block's four `rtt_*` words,
//! as the ABI intends. CPU0 zeroes both before it releases CPU1 and reads
//! them once [`Cpu1Report::done`] says [`REPORT_DONE`].
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

use core::mem::{offset_of, size_of};
use core::ops::Range;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::{
    payload_pool_range, region_size, ring_offset, ControlBlock, Direction, LayoutError,
    MessageType, Priority, ValidMessage,
};
use synaptic_ring::Ring;

/// Requests exchanged one at a time.
pub const PING_PONG_MESSAGES: u32 = 5_000;
/// Requests exchanged in bursts.
pub const BURST_MESSAGES: u32 = 5_000;
/// Requests in the whole test (each answered: twice as many messages move).
pub const TOTAL_MESSAGES: u32 = PING_PONG_MESSAGES + BURST_MESSAGES;

/// Type of every request.
pub const REQUEST_TYPE: MessageType = MessageType::StatusReq;
/// Type of every response.
pub const RESPONSE_TYPE: MessageType = MessageType::StatusResp;

/// Payload offsets fall in this many bytes at the start of the payload pool.
const PAYLOAD_WINDOW: usize = 16 * 1024;
/// Longest payload a message names.
const MAX_PAYLOAD: usize = 256;

/// [`Cpu1Report::magic`] once CPU1 has attached ("DCI1").
pub const REPORT_MAGIC: u32 = 0x4443_4931;
/// [`Cpu1Report::done`] once CPU1 has finished, successfully or not.
pub const REPORT_DONE: u32 = 0x444F_4E45;

/// Which phase a sequence number belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// One request in flight.
    PingPong,
    /// Up to a ring's capacity in flight.
    Burst,
}

impl Phase {
    /// The phase of request `seq`.
    pub const fn of(seq: u32) -> Phase {
        if seq < PING_PONG_MESSAGES {
            Phase::PingPong
        } else {
            Phase::Burst
        }
    }
}

/// The id synaptic-ipc's `Sender` gives request `seq` (its ids start at 1).
pub const fn message_id(seq: u32) -> u32 {
    seq.wrapping_add(1)
}

fn priority(seq: u32) -> Priority {
    Priority::ALL[seq as usize % Priority::COUNT]
}

/// `pool.start + delta` as a wire offset (the pool lies below 4 GiB:
/// [`Region::new`] checks it).
fn pool_offset(pool: &Range<usize>, delta: usize) -> u32 {
    (pool.start + delta) as u32
}

/// The request CPU1 sends as number `seq`. Its payload range lies inside
/// `pool` (the payload pool) by construction; no payload bytes are written.
pub fn request(seq: u32, pool: &Range<usize>) -> ValidMessage {
    let s = seq as usize;
    ValidMessage {
        msg_id: message_id(seq),
        msg_type: REQUEST_TYPE,
        priority: priority(seq),
        payload_len: (1 + s % MAX_PAYLOAD) as u16,
        payload_offset: pool_offset(pool, (s * 8) % PAYLOAD_WINDOW),
        timestamp_us: seq.wrapping_mul(0x9E37_79B9),
        status: seq as i32,
    }
}

/// CPU0's answer to request `seq`: same id and priority, every other field
/// different from the request's.
pub fn response(seq: u32, pool: &Range<usize>) -> ValidMessage {
    let s = seq as usize;
    ValidMessage {
        msg_id: message_id(seq),
        msg_type: RESPONSE_TYPE,
        priority: priority(seq),
        payload_len: (s % 200) as u16,
        payload_offset: pool_offset(pool, (s * 12 + 4) % PAYLOAD_WINDOW),
        timestamp_us: !seq.wrapping_mul(0x9E37_79B9),
        status: !(seq as i32),
    }
}

/// How many of the seven fields differ.
pub fn mismatched_fields(expected: &ValidMessage, got: &ValidMessage) -> u32 {
    let same = [
        expected.msg_id == got.msg_id,
        expected.msg_type == got.msg_type,
        expected.priority == got.priority,
        expected.payload_len == got.payload_len,
        expected.payload_offset == got.payload_offset,
        expected.timestamp_us == got.timestamp_us,
        expected.status == got.status,
    ];
    same.iter().filter(|&&same| !same).count() as u32
}

/// Size of burst number `burst` (0-based): 1, 2, ..., `capacity`, 1, 2, ...,
/// never more than the `left` requests still to send.
pub const fn burst_size(burst: u32, capacity: u32, left: u32) -> u32 {
    let size = burst % capacity + 1;
    if size < left {
        size
    } else {
        left
    }
}

/// Why CPU1 stopped early; [`Cpu1Report::failure`] holds the wire value.
#[repr(u32)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Failure {
    /// CPU0 had not set `cpu0_ready` when CPU1 looked.
    NotPublished = 1,
    /// The control block's magic is wrong.
    BadMagic = 2,
    /// The control block's layout version is wrong.
    Version = 3,
    /// The control block's ring size differs from this image's.
    RingEntries = 4,
    /// The control block's region size differs from this image's.
    SharedSize = 5,
    /// This image's devicetree and build disagree (ring size, region size).
    Geometry = 6,
    /// The doorbell did not start.
    Doorbell = 7,
    /// A response did not arrive in time; CPU1 gave up.
    Stalled = 8,
    /// A request could not be pushed; CPU1 gave up.
    SendFailed = 9,
}

impl Failure {
    /// Every failure, for decoding.
    pub const ALL: [Failure; 9] = [
        Failure::NotPublished,
        Failure::BadMagic,
        Failure::Version,
        Failure::RingEntries,
        Failure::SharedSize,
        Failure::Geometry,
        Failure::Doorbell,
        Failure::Stalled,
        Failure::SendFailed,
    ];

    /// Decode a report word: `None` for 0 and for values naming no failure.
    pub fn from_wire(word: u32) -> Option<Failure> {
        Failure::ALL.iter().copied().find(|f| *f as u32 == word)
    }
}

impl From<LayoutError> for Failure {
    fn from(e: LayoutError) -> Self {
        match e {
            LayoutError::BadMagic(_) => Failure::BadMagic,
            LayoutError::Version(_) => Failure::Version,
            LayoutError::RingEntries { .. } => Failure::RingEntries,
            LayoutError::SharedSize { .. } => Failure::SharedSize,
            _ => Failure::Geometry,
        }
    }
}

/// CPU1's counts, in shared memory. CPU1 alone writes it (after CPU0 zeroed
/// it); CPU0 reads it once `done` is [`REPORT_DONE`].
#[repr(C)]
pub struct Cpu1Report {
    /// [`REPORT_MAGIC`] once CPU1 has attached.
    pub magic: AtomicU32,
    /// 0, or the [`Failure`] that made CPU1 stop early.
    pub failure: AtomicU32,
    /// Ping-pong responses whose every field matched.
    pub ping_pong_checked: AtomicU32,
    /// Burst responses whose every field matched.
    pub burst_checked: AtomicU32,
    /// Response fields that differed from what their sequence number implies.
    pub field_errors: AtomicU32,
    /// Responses that did not arrive in time.
    pub timeouts: AtomicU32,
    /// Requests the ring refused (full or corrupt), and doorbells the driver refused.
    pub send_errors: AtomicU32,
    /// Messages CPU1's dispatcher dropped: undecodable, corrupt index, inbox full.
    pub dispatch_errors: AtomicU32,
    /// Dispatch-thread wake-ups by the doorbell (CPU0 rang).
    pub doorbell_wakeups: AtomicU32,
    /// Dispatch-thread wake-ups by time-out that found messages waiting: a
    /// doorbell CPU0 rang did not arrive.
    pub missed_doorbells: AtomicU32,
    /// [`REPORT_DONE`], stored last.
    pub done: AtomicU32,
}

/// A plain copy of a finished [`Cpu1Report`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cpu1Counts {
    /// See [`Cpu1Report::failure`].
    pub failure: u32,
    /// See [`Cpu1Report::ping_pong_checked`].
    pub ping_pong_checked: u32,
    /// See [`Cpu1Report::burst_checked`].
    pub burst_checked: u32,
    /// See [`Cpu1Report::field_errors`].
    pub field_errors: u32,
    /// See [`Cpu1Report::timeouts`].
    pub timeouts: u32,
    /// See [`Cpu1Report::send_errors`].
    pub send_errors: u32,
    /// See [`Cpu1Report::dispatch_errors`].
    pub dispatch_errors: u32,
    /// See [`Cpu1Report::doorbell_wakeups`].
    pub doorbell_wakeups: u32,
    /// See [`Cpu1Report::missed_doorbells`].
    pub missed_doorbells: u32,
}

impl Cpu1Counts {
    /// Errors other than field mismatches (a failure counts as one).
    pub fn transport_errors(&self) -> u32 {
        u32::from(self.failure != 0)
            + self.timeouts
            + self.send_errors
            + self.dispatch_errors
            + self.missed_doorbells
    }
}

impl Cpu1Report {
    fn words(&self) -> [&AtomicU32; 11] {
        [
            &self.magic,
            &self.failure,
            &self.ping_pong_checked,
            &self.burst_checked,
            &self.field_errors,
            &self.timeouts,
            &self.send_errors,
            &self.dispatch_errors,
            &self.doorbell_wakeups,
            &self.missed_doorbells,
            &self.done,
        ]
    }

    /// Zero every word (CPU0, before it releases CPU1).
    pub fn reset(&self) {
        for word in self.words() {
            // Ordering: Relaxed; CPU1 is not running yet, and the release of
            // cpu0_ready publishes these zeros with the rest of the region.
            word.store(0, Ordering::Relaxed);
        }
    }

    /// Record why CPU1 stopped (CPU1).
    pub fn fail(&self, failure: Failure) {
        // Ordering: Relaxed; published by the Release store of `done`.
        self.failure.store(failure as u32, Ordering::Relaxed);
    }

    /// Mark the report complete (CPU1, last).
    pub fn finish(&self) {
        // Ordering: Release pairs with CPU0's Acquire load in `counts`:
        // every count stored before is visible once `done` is.
        self.done.store(REPORT_DONE, Ordering::Release);
    }

    /// The counts, once CPU1 has finished (`None` before).
    pub fn counts(&self) -> Option<Cpu1Counts> {
        // Ordering: Acquire pairs with CPU1's Release store in `finish`.
        if self.done.load(Ordering::Acquire) != REPORT_DONE {
            return None;
        }
        // Ordering (all below): Relaxed, ordered after the Acquire above.
        let read = |word: &AtomicU32| word.load(Ordering::Relaxed);
        Some(Cpu1Counts {
            failure: read(&self.failure),
            ping_pong_checked: read(&self.ping_pong_checked),
            burst_checked: read(&self.burst_checked),
            field_errors: read(&self.field_errors),
            timeouts: read(&self.timeouts),
            send_errors: read(&self.send_errors),
            dispatch_errors: read(&self.dispatch_errors),
            doorbell_wakeups: read(&self.doorbell_wakeups),
            missed_doorbells: read(&self.missed_doorbells),
        })
    }
}

/// Add `n` to a counter that only this core writes: a load and a store, no
/// read-modify-write instruction on shared memory.
pub fn bump(word: &AtomicU32, n: u32) {
    // Ordering: Relaxed; the single writer's own value, published later by
    // a Release store.
    word.store(
        word.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

/// How a dispatch thread's wake-ups went, counted by that thread alone.
///
/// A wake-up by the doorbell is the normal path. A wake-up by time-out that
/// finds messages, while the semaphore holds no late give, means a doorbell
/// the peer rang never arrived: the message was delivered by polling.
pub struct WakeTally {
    doorbell: AtomicU32,
    missed: AtomicU32,
}

impl WakeTally {
    /// No wake-ups yet.
    pub const fn new() -> Self {
        WakeTally {
            doorbell: AtomicU32::new(0),
            missed: AtomicU32::new(0),
        }
    }

    /// Record one wake-up (dispatch thread): `rung` when the semaphore was
    /// taken, `popped` messages drained, `late_give` when the semaphore holds
    /// a count again after draining (the doorbell came after the time-out).
    pub fn record(&self, rung: bool, popped: usize, late_give: bool) {
        if rung {
            bump(&self.doorbell, 1);
        } else if popped > 0 && !late_give {
            bump(&self.missed, 1);
        }
    }

    /// Wake-ups by the doorbell so far.
    pub fn doorbell(&self) -> u32 {
        // Ordering: a statistic of this core, read after the exchange.
        self.doorbell.load(Ordering::Relaxed)
    }

    /// Time-outs that found messages so far.
    pub fn missed(&self) -> u32 {
        // Ordering: a statistic of this core, read after the exchange.
        self.missed.load(Ordering::Relaxed)
    }
}

impl Default for WakeTally {
    fn default() -> Self {
        Self::new()
    }
}

/// Offset of the [`Cpu1Report`]: the first 64-byte boundary after the
/// default exchange slots, inside the payload pool.
pub const fn report_offset<const N: usize>() -> usize {
    (region_size::<N>(synaptic_abi::SlotGeometry::DEFAULT) + 63) & !63
}

/// One of the control block's words that the cores write at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ControlWord {
    /// `cpu0_ready`.
    Cpu0Ready,
    /// `cpu1_ready`.
    Cpu1Ready,
    /// `rtt_last_us` (CPU1).
    RttLast,
    /// `rtt_min_us` (CPU1).
    RttMin,
    /// `rtt_max_us` (CPU1).
    RttMax,
    /// `rtt_count` (CPU1).
    RttCount,
}

impl ControlWord {
    const fn offset(self) -> usize {
        match self {
            ControlWord::Cpu0Ready => offset_of!(ControlBlock, cpu0_ready),
            ControlWord::Cpu1Ready => offset_of!(ControlBlock, cpu1_ready),
            ControlWord::RttLast => offset_of!(ControlBlock, rtt_last_us),
            ControlWord::RttMin => offset_of!(ControlBlock, rtt_min_us),
            ControlWord::RttMax => offset_of!(ControlBlock, rtt_max_us),
            ControlWord::RttCount => offset_of!(ControlBlock, rtt_count),
        }
    }
}

/// The shared region with rings of `N` entries, as this core sees it.
#[derive(Clone, Copy, Debug)]
pub struct Region<const N: usize> {
    base: NonNull<u8>,
    size: u32,
}

impl<const N: usize> Region<N> {
    /// The region at `base` (this core's lens) of `size` bytes.
    ///
    /// # Errors
    ///
    /// [`Failure::Geometry`] when `base` is null or not 64-byte aligned, or
    /// the region cannot hold the contract, the payload window and the report.
    ///
    /// # Safety
    ///
    /// `base..base + size` is the shared region: mapped on this core, valid
    /// for reads and writes for the rest of the program, and accessed by both
    /// cores only through this type, `synaptic-ring` and the ABI's rules.
    pub unsafe fn new(base: usize, size: u32) -> Result<Self, Failure> {
        let size_bytes = size as usize;
        let fits = report_offset::<N>() + size_of::<Cpu1Report>() <= size_bytes
            && payload_pool_range::<N>(size_bytes).len() >= PAYLOAD_WINDOW + MAX_PAYLOAD;
        let Some(base) = NonNull::new(base as *mut u8) else {
            return Err(Failure::Geometry);
        };
        if !(base.as_ptr() as usize).is_multiple_of(64) || !fits {
            return Err(Failure::Geometry);
        }
        if (base.as_ptr() as usize).checked_add(size_bytes).is_none() {
            return Err(Failure::Geometry);
        }
        Ok(Region { base, size })
    }

    /// Size in bytes.
    pub fn size(&self) -> u32 {
        self.size
    }

    fn at<T>(&self, offset: usize) -> NonNull<T> {
        // SAFETY: every caller passes an offset inside the region, which
        // `new` checked does not wrap the address space.
        unsafe { self.base.add(offset) }.cast()
    }

    /// The payload pool, as offsets from the region base.
    pub fn pool(&self) -> Range<usize> {
        payload_pool_range::<N>(self.size as usize)
    }

    /// Publish a fresh region: the control block (ready flags and round-trip
    /// statistics zero), both rings empty, the report zeroed. Not yet
    /// `cpu0_ready`: store that afterwards with Release.
    ///
    /// # Safety
    ///
    /// CPU1 is not running and no ring handle exists on this core.
    pub unsafe fn initialise(&self) {
        let block = ControlBlock::published::<N>(self.size, synaptic_abi::SlotGeometry::DEFAULT);
        // SAFETY: `new` checked that the region holds the control block at
        // its (64-byte aligned) base; CPU1 is not running, so nothing else
        // reads or writes it now.
        unsafe { self.at::<ControlBlock>(0).write_volatile(block) };
        for direction in [Direction::Cpu0ToCpu1, Direction::Cpu1ToCpu0] {
            // SAFETY: the ring lies inside the region at a 4-byte aligned
            // offset, and no handle to it exists (the caller's promise).
            unsafe { Ring::<N>::init(self.ring_pointer(direction)) };
        }
        self.report().reset();
    }

    /// The control block as it is now, copied once.
    pub fn control_block(&self) -> ControlBlock {
        // SAFETY: `new` checked that the control block lies in the region at
        // an aligned base; any bytes are a valid `ControlBlock`. One volatile
        // read: the copy is what gets checked.
        unsafe { self.at::<ControlBlock>(0).read_volatile() }
    }

    /// A control-block word that a core writes at run time.
    pub fn control_word(&self, word: ControlWord) -> &'static AtomicU32 {
        // SAFETY: a 4-byte aligned u32 field of the control block inside the
        // region, valid for the program's lifetime; both cores access these
        // words only atomically.
        unsafe { self.at::<AtomicU32>(word.offset()).as_ref() }
    }

    fn ring_pointer(&self, direction: Direction) -> NonNull<Ring<N>> {
        self.at(ring_offset::<N>(direction))
    }

    /// The ring in `direction`.
    pub fn ring(&self, direction: Direction) -> &'static Ring<N> {
        // SAFETY: the ring lies inside the region at a 4-byte aligned offset
        // and lives as long as the program; both cores use it only through
        // synaptic-ring; its size is N, which CPU1 checks against the control
        // block before it attaches.
        unsafe { Ring::from_raw(self.ring_pointer(direction)) }
    }

    /// CPU1's report.
    pub fn report(&self) -> &'static Cpu1Report {
        // SAFETY: `new` checked the report fits in the region; the offset is
        // 64-byte aligned; every field is an atomic, so any bytes are valid.
        unsafe { self.at::<Cpu1Report>(report_offset::<N>()).as_ref() }
    }
}

const _: () = {
    assert!(report_offset::<16>() == 48_448);
    assert!(size_of::<Cpu1Report>() == 44);
    assert!(PING_PONG_MESSAGES + BURST_MESSAGES >= 10_000);
    assert!(burst_size(15, 16, 100) == 16);
    assert!(burst_size(16, 16, 100) == 1);
    assert!(burst_size(3, 16, 2) == 2);
};

#[cfg(test)]
mod tests {
    use super::*;

    const POOL: Range<usize> = 960..98_304;

    #[test]
    fn every_field_depends_on_the_sequence_number() {
        for seq in 0..TOTAL_MESSAGES {
            let (req, resp) = (request(seq, &POOL), response(seq, &POOL));
            // Type, timestamp and status always tell them apart.
            assert!(mismatched_fields(&req, &resp) >= 3);
            assert_eq!((req.msg_id, req.priority), (resp.msg_id, resp.priority));
            // A neighbour differs in id, payload offset, timestamp, status at least.
            assert!(mismatched_fields(&req, &request(seq + 1, &POOL)) >= 4);
            assert!(mismatched_fields(&resp, &response(seq + 1, &POOL)) >= 4);
            assert_eq!(req.msg_id, seq + 1);
            assert!(req.payload_range(POOL).is_ok());
            assert!(resp.payload_range(POOL).is_ok());
        }
    }

    #[test]
    fn bursts_cover_the_burst_phase_up_to_capacity() {
        let (mut sent, mut burst, mut largest) = (0, 0, 0);
        while sent < BURST_MESSAGES {
            let size = burst_size(burst, 16, BURST_MESSAGES - sent);
            assert!((1..=16).contains(&size));
            largest = largest.max(size);
            sent += size;
            burst += 1;
        }
        assert_eq!(sent, BURST_MESSAGES);
        assert_eq!(largest, 16);
    }

    #[test]
    fn failures_round_trip_and_zero_is_none() {
        for failure in Failure::ALL {
            assert_eq!(Failure::from_wire(failure as u32), Some(failure));
        }
        assert_eq!(Failure::from_wire(0), None);
        assert_eq!(Failure::from_wire(99), None);
    }
}
