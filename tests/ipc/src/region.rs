//! The shared region of the single-core test map, as a static buffer.
//!
//! `qemu_cortex_m3` has one core, so the "shared window" of
//! [`QEMU_CORTEX_M3`] is a 64-byte aligned static of exactly its size, used
//! only through offsets from its base, as the map's documentation allows.
//! The ring crate does not own this memory: a [`RegionLease`] publishes the
//! control block at offset 0 the way CPU0 does, writes a ring with
//! `Ring::init` at its ABI offset and views it with `Ring::from_raw`.
//!
//! Invariants: at most one lease exists at a time (an atomic flag), and a
//! lease hands out one ring at a time (it is borrowed mutably for as long as
//! the ring and its handles live), so re-initialising a ring never happens
//! under live handles. A case whose peer thread may still touch the region
//! keeps it claimed for good ([`RegionLease::keep_claimed`]).

use core::cell::UnsafeCell;
use core::mem::size_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use synaptic_abi::region::{RING_HEAD_OFFSET, RING_TAIL_OFFSET};
use synaptic_abi::{
    region_fits, ring_offset, ControlBlock, Direction, SlotGeometry, QEMU_CORTEX_M3,
};
use synaptic_ring::{Consumer, Producer, Ring};
use synaptic_zephyr::ztest::Failure;

use crate::N;

/// The ring type of this build.
pub type TestRing = Ring<N>;

/// Size of the region: the test map's whole shared window.
pub const REGION_SIZE: usize = QEMU_CORTEX_M3.shared_size as usize;

/// The single-core map's window holds the frame slot alone.
pub const SLOTS: SlotGeometry = SlotGeometry::SINGLE;

const _: () = assert!(region_fits::<N>(REGION_SIZE, SLOTS));

#[repr(C, align(64))]
struct SharedRegion(UnsafeCell<[u8; REGION_SIZE]>);

// SAFETY: the bytes are reached only through a `RegionLease`, and
// `REGION_CLAIMED` lets at most one lease exist at a time.
unsafe impl Sync for SharedRegion {}

static REGION: SharedRegion = SharedRegion(UnsafeCell::new([0; REGION_SIZE]));
static REGION_CLAIMED: AtomicBool = AtomicBool::new(false);

/// Exclusive use of the static region by one case.
pub struct RegionLease {
    base: NonNull<u8>,
}

impl RegionLease {
    /// Claim the region and publish a fresh control block at offset 0.
    ///
    /// # Errors
    ///
    /// A failed check when another lease is alive (or was kept claimed by a
    /// case whose peer thread did not finish).
    pub fn claim() -> Result<Self, Failure> {
        // Ordering: Acquire pairs with the Release in `drop`, so the previous
        // lease's accesses are done before ours start.
        if REGION_CLAIMED
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return Err(Failure::Check {
                file: file!(),
                line: line!(),
                what: "the shared region is still claimed by an earlier case",
            });
        }
        let base = NonNull::new(REGION.0.get().cast::<u8>()).ok_or(Failure::Check {
            file: file!(),
            line: line!(),
            what: "static region at address 0",
        })?;
        let lease = RegionLease { base };
        let block = ControlBlock::published::<N>(QEMU_CORTEX_M3.shared_size, SLOTS);
        // SAFETY: the lease is exclusive; offset 0 of the 64-byte aligned
        // region holds the 64-byte control block.
        unsafe {
            lease
                .base
                .cast::<ControlBlock>()
                .as_ptr()
                .write_volatile(block)
        };
        Ok(lease)
    }

    /// The region base address (for offset checks).
    pub fn base_address(&self) -> usize {
        self.base.as_ptr() as usize
    }

    /// The control block as it lies at offset 0, copied once.
    pub fn control_block(&self) -> ControlBlock {
        // SAFETY: the lease is exclusive and no ring is borrowed from it
        // (`ring` borrows the lease mutably); offset 0 holds the block.
        unsafe { self.base.cast::<ControlBlock>().as_ptr().read_volatile() }
    }

    /// Initialise the ring of `direction` at its ABI offset with both
    /// indices at `start`, and view it.
    ///
    /// `Ring::init` writes an empty ring with indices at 0; a nonzero start
    /// is then stored into the index words, as a core that attaches finds
    /// the live indices of an earlier life.
    pub fn ring(&mut self, direction: Direction, start: u32) -> FreshRing<'_> {
        let ptr = self.ring_pointer(direction);
        // SAFETY: the ring lies inside the region (`region_fits` is asserted
        // at compile time), 4-byte aligned (its offset is a multiple of 4);
        // `&mut self` is held for the ring's lifetime, so no handle of it or
        // of the other ring exists, and nothing else touches the region.
        let ring = unsafe {
            TestRing::init(ptr);
            TestRing::from_raw(ptr)
        };
        if start != 0 {
            store_index(ring, IndexWord::Head, start);
            store_index(ring, IndexWord::Tail, start);
        }
        FreshRing { ring, ptr }
    }

    fn ring_pointer(&self, direction: Direction) -> NonNull<TestRing> {
        let offset = ring_offset::<N>(direction);
        // SAFETY: `offset` is below the region size (asserted by
        // `region_fits`), so the result stays inside the static.
        unsafe { self.base.add(offset) }.cast()
    }

    /// Never release the region: a peer thread that did not finish may
    /// still write into it.
    pub fn keep_claimed(self) {
        core::mem::forget(self);
    }
}

impl Drop for RegionLease {
    fn drop(&mut self) {
        // Ordering: pairs with the Acquire in `claim`.
        REGION_CLAIMED.store(false, Ordering::Release);
    }
}

/// A ring just written by [`RegionLease::ring`], before any handle attached.
pub struct FreshRing<'a> {
    ring: &'a TestRing,
    ptr: NonNull<TestRing>,
}

impl<'a> FreshRing<'a> {
    /// The ring itself (for raw word checks and a hostile peer's stores).
    pub fn ring(&self) -> &'a TestRing {
        self.ring
    }

    /// Attach the one producer and the one consumer.
    pub fn attach(self) -> (Producer<'a, N>, Consumer<'a, N>) {
        // SAFETY: the ring was just initialised under an exclusive borrow of
        // the lease and `self` is consumed: these are its only handles.
        unsafe { (Producer::attach(self.ring), Consumer::attach(self.ring)) }
    }

    /// Attach only the consumer; the producer attaches elsewhere through
    /// the returned address, as the peer core does.
    pub fn consumer(self) -> (Consumer<'a, N>, RingAddress) {
        // SAFETY: as in `attach`: the ring is fresh and `self` is consumed,
        // so this is its only consumer.
        let consumer = unsafe { Consumer::attach(self.ring) };
        (consumer, RingAddress(self.ptr))
    }
}

/// Where a ring lies, handed to a peer thread that attaches to it itself.
pub struct RingAddress(NonNull<TestRing>);

// SAFETY: an address only; dereferencing it needs `Ring::from_raw`, whose
// contract the receiving thread takes on.
unsafe impl Send for RingAddress {}

impl RingAddress {
    /// The ring at this address, as the peer sees it.
    ///
    /// # Safety
    ///
    /// The lease the address came from must stay claimed for `'a` (the case
    /// joins the thread first, or keeps the region claimed).
    pub unsafe fn ring<'a>(&self) -> &'a TestRing {
        // SAFETY: the address names a ring written by `RegionLease::ring`,
        // aligned and inside the static; the caller keeps it alive.
        unsafe { TestRing::from_raw(self.0) }
    }
}

/// One of a ring's two index words.
#[derive(Clone, Copy)]
pub enum IndexWord {
    /// `head` at +0, written by the producer.
    Head,
    /// `tail` at +64, written by the consumer.
    Tail,
}

/// Store `value` into an index word from outside the ring crate, as the
/// other core (or a hostile one) does through the ABI layout.
pub fn store_index(ring: &TestRing, which: IndexWord, value: u32) {
    let offset = match which {
        IndexWord::Head => RING_HEAD_OFFSET,
        IndexWord::Tail => RING_TAIL_OFFSET,
    };
    let word = (ring as *const TestRing)
        .cast::<u8>()
        .wrapping_add(offset)
        .cast::<u32>()
        .cast_mut();
    // SAFETY: the ring crate asserts that its atomic `head` and `tail` lie at
    // these ABI offsets; they are `AtomicU32`s (interior mutability), 4-byte
    // aligned, valid for as long as `ring` is borrowed.
    let index = unsafe { AtomicU32::from_ptr(word) };
    // Ordering: Release, like the owner's own index stores (a peer publishing).
    index.store(value, Ordering::Release);
}

/// The 32-bit word at byte `offset` of the ring, read once; `None` when the
/// offset is unaligned or outside the ring.
pub fn ring_word(ring: &TestRing, offset: usize) -> Option<u32> {
    if !offset.is_multiple_of(4) || offset + 4 > size_of::<TestRing>() {
        return None;
    }
    let word = (ring as *const TestRing)
        .cast::<u8>()
        .wrapping_add(offset)
        .cast::<u32>();
    // SAFETY: checked above to be an aligned word inside the ring, which is
    // plain integers and atomics; no other thread writes it meanwhile in the
    // cases that call this.
    Some(unsafe { word.read_volatile() })
}
