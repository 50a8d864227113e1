//! The shared region as one typed view: rings, control-block words, the
//! service-time table and the exchange slots, handed out from a single base
//! address.
//!
//! All of this crate's `unsafe` lives here. [`SharedRegion::from_raw`] is the
//! one promise the platform makes (the bytes exist for `'r`, and both cores
//! touch them only through this view, the ring crate, or their C
//! equivalents); every accessor after that is safe, except the four that
//! hand out an exchange slot's tensor bytes as slices, whose callers must
//! own the slot under the serving protocol (see [`Exchange`]).
//!
//! # Invariants
//!
//! * The region is at least [`region_size`]`::<N>(slots)` bytes, starts on a
//!   16-byte boundary (so every slot's input is 16-byte aligned, as
//!   the tensor arena promises its tensors), and its size fits the control
//!   block's `u32` word. Checked by [`SharedRegion::from_raw`].
//! * Words the two cores share outside the rings (control block, exchange
//!   header) are read and written as `AtomicU32`, one word at a time: on
//!   ARMv7-M/ARMv8-M a relaxed atomic load or store is a plain `ldr`/`str`, so
//!   a C peer using plain word accesses is compatible, and a peer writing
//!   while we read can only change values, never the soundness of the read.
//!   Ordering between cores comes from the rings' Release/Acquire indices: a
//!   header written before a push is visible to the core that pops.
//! * A header is copied out whole ([`Exchange::read_header`]), each word
//!   read exactly once, before anything looks at it.
//!
//! # Who owns which word, and when it is made true again
//!
//! Every shared word ([`SharedRegion::shared_words`]) has one owner, the
//! only core that writes it. The owner keeps the authoritative value in its
//! own RAM (or derives it from its build) and rewrites the shared copy
//! whenever a peer may have changed it, so a buggy peer that scribbles on
//! it and reboots finds the link whole again:
//!
//! | words | owner | rewritten |
//! |---|---|---|
//! | control block: magic, versions, geometry, `cpu0_ready` (every [`Owner::Cpu0`] word of the ABI's list, `synaptic_abi::CONTROL_WORDS`) | CPU0 | CPU0's maintenance ([`SharedRegion::repair_cpu0_words`], `Intake::maintain`), every 50 ms on the firmware |
//! | control block: `park_request` | CPU0 | at every park and release ([`crate::park`]), and by CPU0's maintenance from its [`ParkRecord`] |
//! | control block: `cpu1_ready`, CPU1's layout version, `park_ack` | CPU1 | CPU1's maintenance (`Client::maintain`, its sweep; CPU1 is never parked while it runs), and every attach |
//! | control block: round-trip statistics | CPU1 | at its next ping (statistics: nobody checks them) |
//! | ring CPU1→CPU0: `head` / `tail` | CPU1 / CPU0 | by the ring handles: the consumer on every empty poll, the producer on every push that sees an impossible tail, both at maintenance ([`synaptic_ring`]'s self-healing) |
//! | ring CPU0→CPU1: `head` / `tail` | CPU0 / CPU1 | the same |
//! | service-time table | CPU0 | CPU0's maintenance (`Server::repair_estimates`) |
//! | exchange slot header | whoever holds the slot (CPU1 until its request, CPU0 until its reply) | not needed: each request's header is read once and checked, each reply's result words are written before the reply |
//!
//! Repairs are counted (`ServeStats::repairs`, `ClientStats::repairs`) and
//! shown by `syn ipc status`. A word a peer changes between two repairs
//! costs at most the messages in flight on that ring (a resynchronised
//! consumer drops what it cannot trust), never the link.

use core::marker::PhantomData;
use core::ops::Range;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::region::{RING_HEAD_OFFSET, RING_TAIL_OFFSET};
use synaptic_abi::{
    payload_pool_offset, payload_pool_range, region_size, ring_offset, service_times_offset,
    ControlBlock, Direction, Errno, ExchangeHeader, GeometryError, LayoutError, Owner,
    SlotGeometry, CONTROL_BLOCK_SIZE, CONTROL_WORDS as CONTROL_OWNERS, EXCHANGE_HEADER_SIZE,
    EXCHANGE_INPUT_OFFSET, LAYOUT_VERSION, MAX_EXCHANGE_SLOTS, MODEL_NAME_SIZE, READY,
    SERVICE_TIME_ENTRIES,
};
use synaptic_ring::Ring;

use crate::park::ParkRecord;

/// Alignment the region's base address must have.
pub const REGION_ALIGN: usize = 16;

/// Words of [`ControlBlock`] and of [`ExchangeHeader`].
const CONTROL_WORDS: usize = CONTROL_BLOCK_SIZE / 4;
const HEADER_WORDS: usize = EXCHANGE_HEADER_SIZE / 4;

/// Word indices in the control block (ABI v1, see `synaptic_abi::control`).
mod control_word {
    pub const MAGIC: usize = 0;
    pub const LAYOUT_VERSION: usize = 1;
    pub const RING_ENTRIES: usize = 2;
    pub const SHARED_SIZE: usize = 3;
    pub const CPU0_READY: usize = 4;
    pub const CPU1_READY: usize = 5;
    pub const RTT_LAST: usize = 6;
    pub const RTT_MIN: usize = 7;
    pub const RTT_MAX: usize = 8;
    pub const RTT_COUNT: usize = 9;
    pub const EXCHANGE_SLOTS: usize = 10;
    pub const SMALL_INPUT: usize = 11;
    pub const SMALL_OUTPUT: usize = 12;
    pub const CPU1_LAYOUT_VERSION: usize = 13;
    pub const PARK_REQUEST: usize = 14;
    pub const PARK_ACK: usize = 15;
}

/// Every [`Owner::Cpu0`] word of the ABI's [`CONTROL_OWNERS`] list but the
/// park request (CPU0's [`ParkRecord`] holds it), the magic and
/// `cpu0_ready` last: a core trusts the block once it sees them. Worked
/// out at build time, so a CPU0-owned word added to the ABI is published
/// and repaired without a change here.
const CPU0_WORDS: [usize; cpu0_word_count()] = cpu0_words_in_order();

const fn is_cpu0_republished(i: usize) -> bool {
    matches!(CONTROL_OWNERS[i].owner, Owner::Cpu0) && i != control_word::PARK_REQUEST
}

const fn cpu0_word_count() -> usize {
    let (mut i, mut n) = (0, 0);
    while i < CONTROL_WORDS {
        if is_cpu0_republished(i) {
            n += 1;
        }
        i += 1;
    }
    n
}

const fn cpu0_words_in_order() -> [usize; cpu0_word_count()] {
    let mut out = [0; cpu0_word_count()];
    let mut n = 0;
    // Two passes: every other word, then the magic and `cpu0_ready`.
    let mut pass = 0;
    while pass < 2 {
        let mut i = 0;
        while i < CONTROL_WORDS {
            let last = i == control_word::MAGIC || i == control_word::CPU0_READY;
            if is_cpu0_republished(i) && last == (pass == 1) {
                out[n] = i;
                n += 1;
            }
            i += 1;
        }
        pass += 1;
    }
    out
}

/// Word indices in the exchange header (ABI v1, see `synaptic_abi::exchange`).
mod header_word {
    pub const MODEL: usize = 0;
    pub const NAME: usize = 1;
    pub const INPUT_LEN: usize = 9;
    pub const OUTPUT_LEN: usize = 10;
    pub const INFER_STATUS: usize = 11;
    pub const UPDATE_OP: usize = 12;
    pub const UPDATE_ARG: usize = 13;
    pub const RESERVED: usize = 14;
}

const _: () = {
    use core::mem::offset_of;
    assert!(offset_of!(ControlBlock, magic) == 4 * control_word::MAGIC);
    assert!(offset_of!(ControlBlock, layout_version) == 4 * control_word::LAYOUT_VERSION);
    assert!(offset_of!(ControlBlock, ring_entries) == 4 * control_word::RING_ENTRIES);
    assert!(offset_of!(ControlBlock, shared_size) == 4 * control_word::SHARED_SIZE);
    assert!(offset_of!(ControlBlock, cpu0_ready) == 4 * control_word::CPU0_READY);
    assert!(offset_of!(ControlBlock, cpu1_ready) == 4 * control_word::CPU1_READY);
    assert!(offset_of!(ControlBlock, rtt_last_us) == 4 * control_word::RTT_LAST);
    assert!(offset_of!(ControlBlock, rtt_min_us) == 4 * control_word::RTT_MIN);
    assert!(offset_of!(ControlBlock, rtt_max_us) == 4 * control_word::RTT_MAX);
    assert!(offset_of!(ControlBlock, rtt_count) == 4 * control_word::RTT_COUNT);
    assert!(offset_of!(ControlBlock, exchange_slots) == 4 * control_word::EXCHANGE_SLOTS);
    assert!(offset_of!(ControlBlock, small_input_size) == 4 * control_word::SMALL_INPUT);
    assert!(offset_of!(ControlBlock, small_output_size) == 4 * control_word::SMALL_OUTPUT);
    assert!(offset_of!(ControlBlock, cpu1_layout_version) == 4 * control_word::CPU1_LAYOUT_VERSION);
    assert!(offset_of!(ControlBlock, park_request) == 4 * control_word::PARK_REQUEST);
    assert!(offset_of!(ControlBlock, park_ack) == 4 * control_word::PARK_ACK);
    assert!(CONTROL_WORDS == control_word::PARK_ACK + 1);
    assert!(offset_of!(ExchangeHeader, model) == 4 * header_word::MODEL);
    assert!(offset_of!(ExchangeHeader, model_name) == 4 * header_word::NAME);
    assert!(MODEL_NAME_SIZE == 4 * (header_word::INPUT_LEN - header_word::NAME));
    assert!(offset_of!(ExchangeHeader, input_len) == 4 * header_word::INPUT_LEN);
    assert!(offset_of!(ExchangeHeader, output_len) == 4 * header_word::OUTPUT_LEN);
    assert!(offset_of!(ExchangeHeader, infer_status) == 4 * header_word::INFER_STATUS);
    assert!(offset_of!(ExchangeHeader, update_op) == 4 * header_word::UPDATE_OP);
    assert!(offset_of!(ExchangeHeader, update_arg) == 4 * header_word::UPDATE_ARG);
    assert!(offset_of!(ExchangeHeader, reserved) == 4 * header_word::RESERVED);
    assert!(HEADER_WORDS == header_word::RESERVED + 2);
};

/// Why a memory window cannot be used as the shared region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegionError {
    /// The window is smaller than the contract needs.
    TooSmall {
        /// Bytes the layout needs.
        needed: usize,
        /// Bytes the window has.
        actual: usize,
    },
    /// The window's size does not fit the control block's `u32` word.
    TooLarge(usize),
    /// The base address is not [`REGION_ALIGN`]-aligned.
    Misaligned(usize),
    /// The slot geometry breaks its own rules.
    Geometry(GeometryError),
    /// The control block does not describe this layout.
    Layout(LayoutError),
}

impl RegionError {
    /// The errno at the C boundary.
    pub const fn to_errno(self) -> Errno {
        match self {
            RegionError::TooSmall { .. } | RegionError::TooLarge(_) | RegionError::Geometry(_) => {
                Errno::Inval
            }
            RegionError::Misaligned(_) => Errno::Fault,
            RegionError::Layout(e) => e.errno(),
        }
    }
}

/// CPU1's round-trip statistics as published in the control block.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RttWords {
    /// Last round trip, microseconds.
    pub last_us: u32,
    /// Smallest round trip, microseconds.
    pub min_us: u32,
    /// Largest round trip, microseconds.
    pub max_us: u32,
    /// Round trips measured.
    pub count: u32,
}

/// The shared region of rings with `N` entries: a base address and a size,
/// checked once, from which every other view is derived.
///
/// `Copy`, `Send` and `Sync`: it is an address, and every access through it
/// is either atomic, through the ring crate, or an `unsafe` slice accessor
/// whose caller owns the bytes under the protocol.
#[derive(Clone, Copy, Debug)]
pub struct SharedRegion<'r, const N: usize> {
    base: NonNull<u8>,
    size: usize,
    slots: SlotGeometry,
    region: PhantomData<&'r [AtomicU32]>,
}

// SAFETY: a `SharedRegion` is an address plus a size. Every access it offers
// is an atomic word access, a ring handle (the ring crate's own discipline),
// or an `unsafe fn` whose caller takes on exclusive ownership of the slice;
// none depends on which thread performs it.
unsafe impl<const N: usize> Send for SharedRegion<'_, N> {}
// SAFETY: as for `Send`: shared use from several threads only ever performs
// atomic accesses or the ring crate's synchronised ones.
unsafe impl<const N: usize> Sync for SharedRegion<'_, N> {}

impl<'r, const N: usize> SharedRegion<'r, N> {
    /// The view of the region at `base`, `size` bytes, holding the exchange
    /// slots of `slots`.
    ///
    /// # Errors
    ///
    /// [`RegionError::Misaligned`], [`RegionError::Geometry`],
    /// [`RegionError::TooSmall`], [`RegionError::TooLarge`].
    ///
    /// # Safety
    ///
    /// * `base..base + size` is memory valid for reads and writes for all of
    ///   `'r` (on the target: the shared SRAM window, never unmapped);
    /// * on this core, those bytes are accessed only through views derived
    ///   from this region (and on the peer only through the same crates or
    ///   their C equivalents), so the rings see only ring accesses and the
    ///   control and header words only word accesses.
    pub unsafe fn from_raw(
        base: NonNull<u8>,
        size: usize,
        slots: SlotGeometry,
    ) -> Result<Self, RegionError> {
        let address = base.as_ptr() as usize;
        if address % REGION_ALIGN != 0 {
            return Err(RegionError::Misaligned(address));
        }
        slots.check().map_err(RegionError::Geometry)?;
        let needed = region_size::<N>(slots);
        if size < needed {
            return Err(RegionError::TooSmall {
                needed,
                actual: size,
            });
        }
        if u32::try_from(size).is_err() {
            return Err(RegionError::TooLarge(size));
        }
        Ok(SharedRegion {
            base,
            size,
            slots,
            region: PhantomData,
        })
    }

    /// Size of the region in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The exchange-slot geometry.
    pub fn slots(&self) -> SlotGeometry {
        self.slots
    }

    /// Number of exchange slots.
    pub fn slot_count(&self) -> usize {
        self.slots.count as usize
    }

    /// The word at `offset` from the base.
    fn word(&self, offset: usize) -> &'r AtomicU32 {
        assert!(offset % 4 == 0 && offset + 4 <= self.size);
        // SAFETY: `offset + 4 <= size` (asserted) keeps the word inside the
        // region, which `from_raw`'s caller guarantees valid for `'r`; base
        // is 16-aligned and `offset` a multiple of 4, so the pointer is
        // aligned for `AtomicU32` (same size and alignment as `u32`). Words
        // reached this way are only ever accessed atomically on this core
        // (`from_raw`'s access discipline), so no non-atomic access races
        // with them.
        unsafe { AtomicU32::from_ptr(self.base.as_ptr().add(offset).cast::<u32>()) }
    }

    /// Offsets of every word the two cores access as an atomic word: the
    /// control block, both rings' `head` and `tail`, the service-time table
    /// and every exchange slot's header. Each has one owner (see the
    /// module docs' ownership table).
    pub fn shared_words(&self) -> impl Iterator<Item = usize> + '_ {
        let rings = [Direction::Cpu0ToCpu1, Direction::Cpu1ToCpu0].into_iter();
        let indices = rings.flat_map(|d| {
            let ring = ring_offset::<N>(d);
            [ring + RING_HEAD_OFFSET, ring + RING_TAIL_OFFSET]
        });
        let service = service_times_offset::<N>();
        let headers = (0..self.slot_count()).flat_map(move |k| {
            let slot = self.slot_offset(k).unwrap_or(0);
            (0..HEADER_WORDS).map(move |w| slot + 4 * w)
        });
        (0..CONTROL_WORDS)
            .map(|w| 4 * w)
            .chain(indices)
            .chain((0..2 * SERVICE_TIME_ENTRIES).map(move |w| service + 4 * w))
            .chain(headers)
    }

    /// The shared word at `offset` ([`shared_words`](Self::shared_words)),
    /// for diagnostics and for tests that play a peer writing it; `None`
    /// for any other offset (tensor bytes and ring slots are not words).
    pub fn shared_word(&self, offset: usize) -> Option<&'r AtomicU32> {
        self.shared_words()
            .any(|o| o == offset)
            .then(|| self.word(offset))
    }

    /// The `K` words from `offset` on (one bounds check for all of them).
    fn words<const K: usize>(&self, offset: usize) -> &'r [AtomicU32; K] {
        assert!(offset % 4 == 0 && offset + 4 * K <= self.size);
        // SAFETY: as for `word`, for `4 K` bytes inside the region (asserted);
        // `[AtomicU32; K]` has the layout of `K` consecutive `u32`s.
        unsafe { &*self.base.as_ptr().add(offset).cast::<[AtomicU32; K]>() }
    }

    /// The control block's words. No run-time check: `from_raw` refused a
    /// region smaller than [`region_size`], which starts with the control
    /// block, so every word a caller indexes with a `control_word`
    /// constant is a load or store with no bounds test on the hot path
    /// (CPU1 publishes its round-trip words on every answered ping).
    fn control_words(&self) -> &'r [AtomicU32; CONTROL_WORDS] {
        const { assert!(CONTROL_BLOCK_SIZE == 4 * CONTROL_WORDS) };
        // SAFETY: offset 0 is the control block, whose `CONTROL_BLOCK_SIZE`
        // bytes lie inside the region (`from_raw` checked `size >=
        // region_size`); the base is 16-aligned, so the words are aligned
        // for `AtomicU32`; as for `word`, they are only ever accessed
        // atomically on this core.
        unsafe { &*self.base.as_ptr().cast::<[AtomicU32; CONTROL_WORDS]>() }
    }

    fn control_word(&self, index: usize) -> &'r AtomicU32 {
        &self.control_words()[index]
    }

    /// Write an empty region: control block published with `cpu0_ready` set,
    /// both rings empty at index 0, service-time table empty, every exchange
    /// slot zeroed. What CPU0 does once at boot, before it releases CPU1.
    ///
    /// # Safety
    ///
    /// No handle of either ring may be in use on either core, and the peer
    /// must not be running yet (held in reset, or not yet attached).
    pub unsafe fn publish(&self) {
        for direction in [Direction::Cpu0ToCpu1, Direction::Cpu1ToCpu0] {
            let ring = self.ring_ptr(direction);
            // SAFETY: the pointer lies inside the region and is 4-aligned
            // (`ring_ptr`); no ring handle is in use (this function's
            // contract).
            unsafe { Ring::<N>::init(ring) };
        }
        for index in 0..self.slot_count() {
            let Some(exchange) = self.exchange(index) else {
                continue;
            };
            // SAFETY: nothing accesses the slots while the peer is not
            // running (this function's contract), so this is the only
            // slice of the slot's tensor bytes.
            unsafe {
                exchange.input_mut().fill(0);
                exchange.output_mut().fill(0);
            }
            exchange.write_header(&ExchangeHeader::default());
        }
        for entry in 0..SERVICE_TIME_ENTRIES {
            self.publish_service_time(entry, 0, 0);
        }
        // CPU1's words start cleared; CPU0's follow, magic and ready last.
        let cpu1_words = [
            control_word::CPU1_READY,
            control_word::RTT_LAST,
            control_word::RTT_MIN,
            control_word::RTT_MAX,
            control_word::RTT_COUNT,
            control_word::CPU1_LAYOUT_VERSION,
            control_word::PARK_ACK,
        ];
        for index in cpu1_words.into_iter().chain([control_word::PARK_REQUEST]) {
            self.control_word(index).store(0, Ordering::Relaxed);
        }
        for (index, value) in self.cpu0_words() {
            // Ordering: Release, so that a core that sees the magic (and
            // then `cpu0_ready`) sees every word stored before it.
            self.control_word(index).store(value, Ordering::Release);
        }
    }

    /// The control-block words CPU0 owns with their published values
    /// ([`CPU0_WORDS`]), the magic and `cpu0_ready` last. Computed from
    /// this view's geometry: CPU0's authoritative copy.
    fn cpu0_words(&self) -> impl Iterator<Item = (usize, u32)> {
        let published = ControlBlock {
            cpu0_ready: READY,
            ..ControlBlock::published::<N>(self.size as u32, self.slots)
        }
        .to_words();
        CPU0_WORDS.into_iter().map(move |i| (i, published[i]))
    }

    /// Make every control-block word CPU0 owns true again (CPU0's periodic
    /// maintenance; a peer may have written them), the park request from
    /// `park`. Returns the words that differed.
    pub fn repair_cpu0_words(&self, park: &ParkRecord) -> u32 {
        let mut repaired = 0;
        for (index, value) in self.cpu0_words() {
            repaired += self.repair_word(index, value);
        }
        // The park request last, and only if CPU0 did not change it since
        // it was read: a park that starts or ends meanwhile (in a thread
        // this one may preempt, or that preempts it) wrote the record
        // before the word, so the exchange fails rather than undo it.
        let word = self.control_word(control_word::PARK_REQUEST);
        // Ordering: the word first, then the record (see above).
        let seen = word.load(Ordering::Relaxed);
        let value = park.get();
        if seen != value
            && word
                .compare_exchange(seen, value, Ordering::Release, Ordering::Relaxed)
                .is_ok()
        {
            repaired += 1;
        }
        repaired
    }

    /// Make the words an attached CPU1 owns true again: `cpu1_ready`, the
    /// layout version it announced and `park_ack` (zero: maintenance never
    /// runs while CPU1 is parked). CPU1's periodic maintenance. Returns the
    /// words that differed.
    pub fn repair_cpu1_words(&self) -> u32 {
        [
            (control_word::CPU1_LAYOUT_VERSION, LAYOUT_VERSION),
            (control_word::PARK_ACK, 0),
            (control_word::CPU1_READY, READY),
        ]
        .into_iter()
        .map(|(index, value)| self.repair_word(index, value))
        .sum()
    }

    /// Make control word `index` read `value` again; 1 if it did not.
    fn repair_word(&self, index: usize, value: u32) -> u32 {
        let word = self.control_word(index);
        // Ordering: our own word; Relaxed shows what a peer left.
        if word.load(Ordering::Relaxed) == value {
            return 0;
        }
        // Ordering: as in `publish`.
        word.store(value, Ordering::Release);
        1
    }

    /// A copy of the control block, each word read once.
    pub fn control_block(&self) -> ControlBlock {
        // Ordering: pairs with the Release store of the magic in `publish`.
        let magic = self
            .control_word(control_word::MAGIC)
            .load(Ordering::Acquire);
        let w = |i| self.control_word(i).load(Ordering::Relaxed);
        ControlBlock {
            magic,
            layout_version: w(control_word::LAYOUT_VERSION),
            ring_entries: w(control_word::RING_ENTRIES),
            shared_size: w(control_word::SHARED_SIZE),
            cpu0_ready: w(control_word::CPU0_READY),
            cpu1_ready: w(control_word::CPU1_READY),
            rtt_last_us: w(control_word::RTT_LAST),
            rtt_min_us: w(control_word::RTT_MIN),
            rtt_max_us: w(control_word::RTT_MAX),
            rtt_count: w(control_word::RTT_COUNT),
            exchange_slots: w(control_word::EXCHANGE_SLOTS),
            small_input_size: w(control_word::SMALL_INPUT),
            small_output_size: w(control_word::SMALL_OUTPUT),
            cpu1_layout_version: w(control_word::CPU1_LAYOUT_VERSION),
            park_request: w(control_word::PARK_REQUEST),
            park_ack: w(control_word::PARK_ACK),
        }
    }

    /// CPU1 says which layout version it was built for (before it checks
    /// the block), so CPU0 can report a version mismatch.
    pub fn announce_cpu1_version(&self) {
        // Ordering: a diagnostic word; nothing else is published with it.
        self.control_word(control_word::CPU1_LAYOUT_VERSION)
            .store(LAYOUT_VERSION, Ordering::Relaxed);
    }

    /// Check the control block against this image's layout (magic, version,
    /// ring entries, shared size, slot geometry): what a core does before
    /// attaching.
    ///
    /// # Errors
    ///
    /// [`RegionError::Layout`] with the first mismatch.
    pub fn check(&self) -> Result<(), RegionError> {
        self.control_block()
            .check::<N>(self.size as u32, self.slots)
            .map_err(RegionError::Layout)
    }

    /// Mark `core` attached (each core writes only its own word).
    pub fn set_ready(&self, core: synaptic_abi::Core) {
        let index = match core {
            synaptic_abi::Core::Cpu0 => control_word::CPU0_READY,
            synaptic_abi::Core::Cpu1 => control_word::CPU1_READY,
        };
        // Ordering: pairs with the Acquire load in `is_ready`; what the core
        // wrote before declaring itself ready is visible to the peer.
        self.control_word(index).store(READY, Ordering::Release);
    }

    /// Whether `core` has marked itself attached.
    pub fn is_ready(&self, core: synaptic_abi::Core) -> bool {
        let index = match core {
            synaptic_abi::Core::Cpu0 => control_word::CPU0_READY,
            synaptic_abi::Core::Cpu1 => control_word::CPU1_READY,
        };
        // Ordering: pairs with the Release store in `set_ready`.
        self.control_word(index).load(Ordering::Acquire) == READY
    }

    /// The park handshake's words (`park_request`, `park_ack`, and
    /// `cpu1_ready`, which says whether anything would answer).
    pub fn park_words(&self) -> crate::park::ParkWords<'r> {
        crate::park::ParkWords::new(
            self.control_word(control_word::PARK_REQUEST),
            self.control_word(control_word::PARK_ACK),
            self.control_word(control_word::CPU1_READY),
        )
    }

    /// Publish CPU1's round-trip statistics (CPU1 alone writes these words).
    pub fn publish_rtt(&self, rtt: RttWords) {
        let block = self.control_words();
        // Ordering: statistics only; a reader may see a set that is one
        // update apart, never a torn word.
        block[control_word::RTT_LAST].store(rtt.last_us, Ordering::Relaxed);
        block[control_word::RTT_MIN].store(rtt.min_us, Ordering::Relaxed);
        block[control_word::RTT_MAX].store(rtt.max_us, Ordering::Relaxed);
        block[control_word::RTT_COUNT].store(rtt.count, Ordering::Relaxed);
    }

    /// CPU1's round-trip statistics as published.
    pub fn rtt(&self) -> RttWords {
        let w = |i| self.control_word(i).load(Ordering::Relaxed);
        RttWords {
            last_us: w(control_word::RTT_LAST),
            min_us: w(control_word::RTT_MIN),
            max_us: w(control_word::RTT_MAX),
            count: w(control_word::RTT_COUNT),
        }
    }

    fn ring_ptr(&self, direction: Direction) -> NonNull<Ring<N>> {
        let offset = ring_offset::<N>(direction);
        debug_assert!(offset % 4 == 0);
        // SAFETY: `offset + size_of::<Ring<N>>() <= region_size::<N>() <=
        // size` (the layout puts both rings before the payload pool), so the
        // pointer stays inside the region and is non-null.
        unsafe { self.base.add(offset).cast::<Ring<N>>() }
    }

    /// The ring of `direction`, with whatever indices it holds (attach a
    /// `Producer` or `Consumer` to it).
    pub fn ring(&self, direction: Direction) -> &'r Ring<N> {
        // SAFETY: the ring's bytes lie inside the region, 4-aligned (ring
        // offsets are multiples of 4 and the base is 16-aligned), valid for
        // `'r`; `from_raw`'s caller promised they are accessed only through
        // the ring crate on both cores; the layout of `N` entries is this
        // type's, and the control block's `ring_entries` is checked by
        // `check` before a core attaches.
        unsafe { Ring::from_raw(self.ring_ptr(direction)) }
    }

    /// The payload pool, as offsets from the region base.
    pub fn payload_pool(&self) -> Range<usize> {
        payload_pool_range::<N>(self.size)
    }

    /// Offset of exchange slot `index` from the region base (`None` past
    /// the last slot).
    pub fn slot_offset(&self, index: usize) -> Option<usize> {
        Some(payload_pool_offset::<N>() + self.slots.slot_offset(index)?)
    }

    /// Which exchange slot starts at `offset` from the region base.
    pub fn slot_at(&self, offset: usize) -> Option<usize> {
        self.slots
            .slot_at(offset.checked_sub(payload_pool_offset::<N>())?)
    }

    /// Exchange slot `index` (`None` past the last slot).
    pub fn exchange(&self, index: usize) -> Option<Exchange<'r>> {
        let offset = self.slot_offset(index)?;
        let input_capacity = self.slots.input_capacity(index)?;
        let output_capacity = self.slots.output_capacity(index)?;
        let header = self.words::<HEADER_WORDS>(offset);
        // SAFETY: the slot lies inside the region (`from_raw` checked `size
        // >= region_size(slots)`, and `slot_offset` is one of `slots`'), so
        // the offset stays in bounds and the pointer is non-null.
        let slot = unsafe { self.base.add(offset) };
        Some(Exchange {
            index,
            offset,
            input_capacity,
            output_capacity,
            header,
            slot,
            region: PhantomData,
        })
    }

    /// The two words of service-time entry `entry`: model, estimate.
    fn service_time_words(&self, entry: usize) -> Option<[&'r AtomicU32; 2]> {
        if entry >= SERVICE_TIME_ENTRIES {
            return None;
        }
        let offset = service_times_offset::<N>() + 8 * entry;
        Some([self.word(offset), self.word(offset + 4)])
    }

    /// Publish CPU0's estimate for `model` in entry `entry` (CPU0 only).
    /// The estimate is written before the model word (Release), so a
    /// reader that matches the model reads an estimate made for it or, for
    /// a re-keyed entry, a stale hint.
    pub fn publish_service_time(&self, entry: usize, model: u32, service_us: u32) {
        if let Some([model_word, estimate]) = self.service_time_words(entry) {
            estimate.store(service_us, Ordering::Relaxed);
            // Ordering: pairs with the Acquire load in `service_time`.
            model_word.store(model, Ordering::Release);
        }
    }

    /// Make service-time entry `entry` read `(model, service_us)` again if
    /// it differs (CPU0's maintenance); returns whether it did.
    pub fn repair_service_time(&self, entry: usize, model: u32, service_us: u32) -> bool {
        let Some([model_word, estimate]) = self.service_time_words(entry) else {
            return false;
        };
        // Ordering: CPU0's own words; Relaxed shows what a peer left.
        let same = model_word.load(Ordering::Relaxed) == model
            && estimate.load(Ordering::Relaxed) == service_us;
        if !same {
            self.publish_service_time(entry, model, service_us);
        }
        !same
    }

    /// CPU0's published estimate for `model` (raw handle), if it has one.
    pub fn service_time(&self, model: u32) -> Option<u32> {
        if model == 0 {
            return None;
        }
        (0..SERVICE_TIME_ENTRIES).find_map(|entry| {
            let [model_word, estimate] = self.service_time_words(entry)?;
            // Ordering: pairs with the Release store in `publish_service_time`.
            (model_word.load(Ordering::Acquire) == model).then(|| estimate.load(Ordering::Relaxed))
        })
    }
}

const _: () = assert!(MAX_EXCHANGE_SLOTS <= 32);

/// One exchange slot: its header as words, its tensors as bytes.
///
/// Ownership of a slot alternates under the serving protocol: CPU1 owns it
/// until it pushes a request that names it (`INFER_REQ`, `MODEL_LOAD`); CPU0
/// owns it from then until it pushes the reply that names it. Header words may be accessed at any time (they are atomic);
/// the tensor slices only by the owner, which is what the `unsafe`
/// accessors ask of their callers.
#[derive(Clone, Copy, Debug)]
pub struct Exchange<'r> {
    index: usize,
    offset: usize,
    input_capacity: usize,
    output_capacity: usize,
    header: &'r [AtomicU32; HEADER_WORDS],
    slot: NonNull<u8>,
    region: PhantomData<&'r [AtomicU32]>,
}

// SAFETY: the header words are `&AtomicU32` (Sync); the tensor bytes are
// reachable only through the `unsafe` accessors, whose callers guarantee
// exclusive ownership whichever thread they run on.
unsafe impl Send for Exchange<'_> {}
// SAFETY: as for `Send`.
unsafe impl Sync for Exchange<'_> {}

impl<'r> Exchange<'r> {
    /// The slot's index in the pool (0: the frame slot).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The slot's offset from the region base (what messages name).
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Input capacity in bytes.
    pub fn input_capacity(&self) -> usize {
        self.input_capacity
    }

    /// Output capacity in bytes.
    pub fn output_capacity(&self) -> usize {
        self.output_capacity
    }

    /// Offset of the output area from the region base.
    pub fn output_offset(&self) -> usize {
        self.offset + EXCHANGE_HEADER_SIZE + self.input_capacity
    }

    /// The two words an `INFER_REQ` needs, read once each: the model
    /// handle and `input_len` (the serving path reads no more of the
    /// header than it uses).
    pub fn read_request(&self) -> (u32, u32) {
        // Ordering: as in `read_header`.
        (
            self.header[header_word::MODEL].load(Ordering::Relaxed),
            self.header[header_word::INPUT_LEN].load(Ordering::Relaxed),
        )
    }

    /// The header, each word read exactly once into a local copy: check
    /// and use the copy, never the shared words again.
    pub fn read_header(&self) -> ExchangeHeader {
        let mut w = [0u32; HEADER_WORDS];
        for (word, shared) in w.iter_mut().zip(self.header.iter()) {
            // Ordering: the ring pop that delivered the request was an
            // Acquire, which makes the peer's header writes visible.
            *word = shared.load(Ordering::Relaxed);
        }
        let mut model_name = [0u8; MODEL_NAME_SIZE];
        for (chunk, word) in model_name
            .chunks_exact_mut(4)
            .zip(&w[header_word::NAME..header_word::INPUT_LEN])
        {
            chunk.copy_from_slice(&word.to_ne_bytes());
        }
        let mut reserved = [0u32; 2];
        reserved.copy_from_slice(&w[header_word::RESERVED..]);
        ExchangeHeader {
            model: w[header_word::MODEL],
            model_name,
            input_len: w[header_word::INPUT_LEN],
            output_len: w[header_word::OUTPUT_LEN],
            infer_status: w[header_word::INFER_STATUS] as i32,
            update_op: w[header_word::UPDATE_OP],
            update_arg: w[header_word::UPDATE_ARG],
            reserved,
        }
    }

    fn store(&self, index: usize, value: u32) {
        // Ordering: published to the peer by the Release of the ring push
        // that follows.
        self.header[index].store(value, Ordering::Relaxed);
    }

    /// Write the whole header.
    pub fn write_header(&self, header: &ExchangeHeader) {
        self.store(header_word::MODEL, header.model);
        self.set_model_name(&header.model_name);
        self.store(header_word::INPUT_LEN, header.input_len);
        self.store(header_word::OUTPUT_LEN, header.output_len);
        self.store(header_word::INFER_STATUS, header.infer_status as u32);
        self.store(header_word::UPDATE_OP, header.update_op);
        self.store(header_word::UPDATE_ARG, header.update_arg);
        for (k, &r) in header.reserved.iter().enumerate() {
            self.store(header_word::RESERVED + k, r);
        }
    }

    /// Write the 32 name bytes (the caller NUL-terminates them).
    pub fn set_model_name(&self, name: &[u8; MODEL_NAME_SIZE]) {
        for (k, chunk) in name.chunks_exact(4).enumerate() {
            let word = u32::from_ne_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            self.store(header_word::NAME + k, word);
        }
    }

    /// Write the request words CPU1 fills before `INFER_REQ`: the model, the
    /// input length, and zero output length and status.
    pub fn set_request(&self, model: u32, input_len: u32) {
        self.store(header_word::MODEL, model);
        self.store(header_word::INPUT_LEN, input_len);
        self.store(header_word::OUTPUT_LEN, 0);
        self.store(header_word::INFER_STATUS, 0);
    }

    /// Write the words of a `MODEL_UPDATE` step CPU1 fills: the step, its
    /// argument and the chunk length (`input_len`).
    pub fn set_update(&self, op: u32, arg: u32, input_len: u32) {
        self.store(header_word::UPDATE_OP, op);
        self.store(header_word::UPDATE_ARG, arg);
        self.store(header_word::INPUT_LEN, input_len);
    }

    /// The words of a `MODEL_UPDATE` step, each read once: step, argument,
    /// chunk length.
    pub fn read_update(&self) -> (u32, u32, u32) {
        // Ordering: as in `read_header`.
        (
            self.header[header_word::UPDATE_OP].load(Ordering::Relaxed),
            self.header[header_word::UPDATE_ARG].load(Ordering::Relaxed),
            self.header[header_word::INPUT_LEN].load(Ordering::Relaxed),
        )
    }

    /// Write the result words CPU0 fills before `INFER_RESP`.
    pub fn set_result(&self, output_len: u32, infer_status: i32) {
        self.store(header_word::OUTPUT_LEN, output_len);
        self.store(header_word::INFER_STATUS, infer_status as u32);
    }

    /// Raw write of the `input_len` word (tests and fault injection).
    pub fn set_input_len(&self, input_len: u32) {
        self.store(header_word::INPUT_LEN, input_len);
    }

    /// Raw write of the `model` word (tests and fault injection).
    pub fn set_model(&self, model: u32) {
        self.store(header_word::MODEL, model);
    }

    fn bytes(&self, offset: usize) -> *mut u8 {
        // SAFETY: `offset` is the input or the output offset of this slot,
        // both inside the slot, which lies inside the region.
        unsafe { self.slot.as_ptr().add(offset) }
    }

    /// The input tensor bytes (the slot's input capacity), read-only.
    ///
    /// # Safety
    ///
    /// The calling core owns the slot for as long as the slice is used (CPU0
    /// between accepting a request and pushing its reply), and no
    /// `input_mut` slice is alive on this core. A peer that breaks the
    /// protocol and writes meanwhile can change the bytes read, as a DMA
    /// engine could; no invariant of this crate rests on their values.
    pub unsafe fn input(&self) -> &'r [u8] {
        // SAFETY: the input area is `input_capacity` bytes inside the
        // region, valid for `'r`; exclusive use is the caller's obligation.
        unsafe {
            core::slice::from_raw_parts(self.bytes(EXCHANGE_INPUT_OFFSET), self.input_capacity)
        }
    }

    /// The input tensor bytes, writable: where CPU1 renders a tensor in
    /// place.
    ///
    /// # Safety
    ///
    /// The calling core owns the slot for as long as the slice is used, and
    /// no other slice of the input is alive on this core.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn input_mut(&self) -> &'r mut [u8] {
        // SAFETY: as for `input`; uniqueness is the caller's obligation.
        unsafe {
            core::slice::from_raw_parts_mut(self.bytes(EXCHANGE_INPUT_OFFSET), self.input_capacity)
        }
    }

    /// The output tensor bytes (the slot's output capacity), read-only.
    ///
    /// # Safety
    ///
    /// As for [`input`](Self::input), for the output area.
    pub unsafe fn output(&self) -> &'r [u8] {
        // SAFETY: the output area is `output_capacity` bytes inside the
        // region, valid for `'r`; exclusive use is the caller's obligation.
        unsafe {
            core::slice::from_raw_parts(
                self.bytes(EXCHANGE_HEADER_SIZE + self.input_capacity),
                self.output_capacity,
            )
        }
    }

    /// The output tensor bytes, writable: where CPU0 puts a result.
    ///
    /// # Safety
    ///
    /// As for [`input_mut`](Self::input_mut), for the output area.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn output_mut(&self) -> &'r mut [u8] {
        // SAFETY: as for `output`; uniqueness is the caller's obligation.
        unsafe {
            core::slice::from_raw_parts_mut(
                self.bytes(EXCHANGE_HEADER_SIZE + self.input_capacity),
                self.output_capacity,
            )
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use std::vec;
    use std::vec::Vec;

    use synaptic_abi::{Core, Message};
    use synaptic_ring::{Consumer, Producer};

    use super::*;

    const N: usize = 16;
    const SLOTS: SlotGeometry = SlotGeometry::DEFAULT;

    /// A heap stand-in for the shared window: exactly the bytes the layout
    /// needs (rounded up to the 16-byte alignment a `u128` gives), so an
    /// accessor reaching past the region's end runs off the allocation.
    fn window() -> Vec<u128> {
        vec![0; region_size::<N>(SLOTS).div_ceil(16)]
    }

    fn pattern(slot: usize, output: bool) -> u8 {
        0x10 + 2 * slot as u8 + u8::from(output)
    }

    #[test]
    fn from_raw_refuses_misaligned_short_and_inconsistent_windows() {
        let mut buffer = window();
        let size = buffer.len() * 16;
        let base = NonNull::new(buffer.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: `base + 4` stays inside the buffer; the buffer is `size`
        // bytes and outlives every view made here, of which only the last
        // is used to access it.
        let misaligned = unsafe { SharedRegion::<N>::from_raw(base.add(4), size - 16, SLOTS) };
        let address = base.as_ptr() as usize + 4;
        assert_eq!(misaligned.unwrap_err(), RegionError::Misaligned(address));
        let needed = region_size::<N>(SLOTS);
        // SAFETY: as above.
        let short = unsafe { SharedRegion::<N>::from_raw(base, needed - 1, SLOTS) };
        assert_eq!(
            short.unwrap_err(),
            RegionError::TooSmall {
                needed,
                actual: needed - 1
            }
        );
        let none = SlotGeometry { count: 0, ..SLOTS };
        // SAFETY: as above.
        let bad = unsafe { SharedRegion::<N>::from_raw(base, size, none) };
        assert_eq!(
            bad.unwrap_err(),
            RegionError::Geometry(GeometryError::Count(0))
        );
        // SAFETY: as above.
        let region = unsafe { SharedRegion::<N>::from_raw(base, size, SLOTS) }.unwrap();
        assert_eq!((region.size(), region.slot_count()), (size, 4));
        assert_eq!(RegionError::Misaligned(4).to_errno(), Errno::Fault);
        assert_eq!(RegionError::TooLarge(0).to_errno(), Errno::Inval);
    }

    /// Every view over one published region: rings, control words,
    /// service times, each slot's header and both tensors. Every slot is
    /// filled whole, then read back whole, so overlapping views would show;
    /// afterwards the raw bytes are where the ABI says.
    #[test]
    fn views_tile_the_region_at_the_abi_offsets() {
        let mut buffer = window();
        let size = buffer.len() * 16;
        let base = NonNull::new(buffer.as_mut_ptr().cast::<u8>()).unwrap();
        // SAFETY: the buffer is `size` bytes, 16-aligned, outlives the
        // region, and is touched only through it until the region is gone.
        let region = unsafe { SharedRegion::<N>::from_raw(base, size, SLOTS) }.unwrap();
        // SAFETY: no ring handle exists yet.
        unsafe { region.publish() };
        assert_eq!(region.check(), Ok(()));
        assert!(region.is_ready(Core::Cpu0) && !region.is_ready(Core::Cpu1));
        region.set_ready(Core::Cpu1);
        region.announce_cpu1_version();
        assert_eq!(region.control_block().cpu1_layout_version, LAYOUT_VERSION);

        let rtt = RttWords {
            last_us: 5,
            min_us: 3,
            max_us: 9,
            count: 2,
        };
        region.publish_rtt(rtt);
        assert_eq!(region.rtt(), rtt);
        region.publish_service_time(SERVICE_TIME_ENTRIES - 1, 42, 700);
        region.publish_service_time(SERVICE_TIME_ENTRIES, 43, 800);
        assert_eq!(region.service_time(42), Some(700));
        assert_eq!(region.service_time(43), None, "past the table: dropped");

        for (k, direction) in [Direction::Cpu0ToCpu1, Direction::Cpu1ToCpu0]
            .into_iter()
            .enumerate()
        {
            let ring = region.ring(direction);
            // SAFETY: the only producer and consumer of this ring.
            let (mut tx, mut rx) = unsafe { (Producer::attach(ring), Consumer::attach(ring)) };
            let msg = Message {
                msg_id: 100 + k as u32,
                ..Message::default()
            };
            tx.push(msg).unwrap();
            tx.push(msg).unwrap();
            assert_eq!(rx.pop(), Ok(Some(msg)));
        }

        let exchanges: Vec<Exchange<'_>> = (0..region.slot_count())
            .map(|k| region.exchange(k).unwrap())
            .collect();
        assert!(region.exchange(region.slot_count()).is_none());
        for (k, exchange) in exchanges.iter().enumerate() {
            assert_eq!(region.slot_at(exchange.offset()), Some(k));
            let mut header = ExchangeHeader {
                model: 0x100 + k as u32,
                input_len: k as u32,
                output_len: 2 * k as u32,
                infer_status: -(k as i32),
                update_op: 7 + k as u32,
                update_arg: 9 + k as u32,
                reserved: [k as u32; 2],
                ..ExchangeHeader::default()
            };
            header.model_name[..4].copy_from_slice(b"slot");
            header.model_name[4] = b'0' + k as u8;
            exchange.write_header(&header);
            assert_eq!(exchange.read_header(), header);
            assert_eq!(exchange.read_request(), (0x100 + k as u32, k as u32));
            assert_eq!(
                exchange.read_update(),
                (7 + k as u32, 9 + k as u32, k as u32)
            );
            // SAFETY: this test is the slot's only user; each slice is
            // dropped before the next is made.
            unsafe {
                exchange.input_mut().fill(pattern(k, false));
                exchange.output_mut().fill(pattern(k, true));
            }
        }
        for (k, exchange) in exchanges.iter().enumerate() {
            // SAFETY: as above, and no mutable slice is alive.
            let (input, output) = unsafe { (exchange.input(), exchange.output()) };
            assert_eq!(input.len(), SLOTS.input_capacity(k).unwrap());
            assert_eq!(output.len(), SLOTS.output_capacity(k).unwrap());
            assert!(
                input.iter().all(|&b| b == pattern(k, false)),
                "slot {k} input"
            );
            assert!(
                output.iter().all(|&b| b == pattern(k, true)),
                "slot {k} output"
            );
            assert_eq!(
                exchange.read_header().model,
                0x100 + k as u32,
                "slot {k} header"
            );
        }
        let offsets: Vec<(usize, usize, usize)> = exchanges
            .iter()
            .map(|e| (e.offset(), e.output_offset(), e.output_capacity()))
            .collect();
        drop(exchanges);

        // The region is gone: read the window as the peer's bytes.
        let bytes: Vec<u8> = buffer.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let word =
            |offset: usize| u32::from_ne_bytes(bytes[offset..offset + 4].try_into().unwrap());
        assert_eq!(word(0), synaptic_abi::MAGIC);
        assert_eq!(word(4 * control_word::CPU1_READY), READY);
        for (k, direction) in [Direction::Cpu0ToCpu1, Direction::Cpu1ToCpu0]
            .into_iter()
            .enumerate()
        {
            let ring = ring_offset::<N>(direction);
            assert_eq!((word(ring), word(ring + 64)), (2, 1), "head, tail");
            assert_eq!(word(ring + 128), 100 + k as u32, "slot 0's msg_id");
        }
        let last = service_times_offset::<N>() + 8 * (SERVICE_TIME_ENTRIES - 1);
        assert_eq!((word(last), word(last + 4)), (42, 700));
        for (k, &(offset, output_offset, output_capacity)) in offsets.iter().enumerate() {
            assert_eq!(word(offset), 0x100 + k as u32);
            assert_eq!(
                &bytes[offset + 4..offset + 9],
                &[b's', b'l', b'o', b't', b'0' + k as u8]
            );
            assert_eq!(bytes[offset + EXCHANGE_INPUT_OFFSET], pattern(k, false));
            assert_eq!(bytes[output_offset - 1], pattern(k, false));
            assert_eq!(bytes[output_offset], pattern(k, true));
            assert_eq!(bytes[output_offset + output_capacity - 1], pattern(k, true));
        }
    }
}
