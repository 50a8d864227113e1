//! Lock-free single-producer/single-consumer ring over shared memory the
//! crate does not own, safe against a hostile peer.
//!
//! The layout is the ABI v1 ring of [`synaptic_abi::region`]: `head` at +0,
//! `tail` at +64, `slots[N]` at +128, `N` a power of two (checked at compile
//! time). A [`Ring`] is split into one [`Producer`] and one [`Consumer`]
//! (`Send`, not `Sync`); on the target each core attaches its own handle to
//! the ring in the shared region with [`Ring::from_raw`] and
//! [`Producer::attach`] / [`Consumer::attach`].
//!
//! # Invariants
//!
//! * Indices are free-running `u32`s; the slot of index `i` is `i % N`; the
//!   ring holds `head.wrapping_sub(tail)` messages and is full at `N`.
//!   Because `N` divides 2^32, crossing `u32::MAX` needs no special case.
//! * The producer alone writes `head`, the consumer alone writes `tail`. Each
//!   handle keeps its own index in local memory and never re-reads it from the
//!   shared region to learn it: the local copy is authoritative, so a peer
//!   scribbling on it changes nothing this handle does.
//! * **Self-healing**: a handle makes the shared copy of its own index true
//!   again whenever it may differ ([`Producer::repair`],
//!   [`Consumer::repair`]; counted in `repair_count`): the consumer on every
//!   poll that finds the ring empty, the producer on every push that sees an
//!   impossible tail, and both whenever their owner calls `repair` (CPU0's
//!   periodic maintenance). A peer that overwrote our index, then rebooted,
//!   finds it true again instead of a ring that looks full or empty forever.
//! * Synchronisation is `AtomicU32` loads with `Acquire` and stores with
//!   `Release`, nothing else: no read-modify-write (`ldrex`/`strex`), which
//!   the cross-core bus does not offer. `scripts/check-no-rmw.sh` checks the
//!   thumb code.
//! * Each handle caches the peer's index and re-reads it only when the ring
//!   looks full (producer) or empty (consumer).
//!
//! # A hostile peer
//!
//! Every index read from the peer is checked before it is used: a consumer
//! that sees `head - tail > N`, or a producer that sees the tail ahead of its
//! head, returns [`RingError::Corrupt`] and counts it; a slot is always
//! `index % N`, so no index value can reach outside the ring. The consumer
//! resynchronises by discarding everything it cannot trust: it sets
//! `tail = head` (the head it just read), counts it, and carries on from
//! there. The producer cannot repair the peer's `tail`; it republishes its
//! own `head` (so a consumer that resynchronised to a scribbled head comes
//! back to the true one) and reports `Corrupt` on every push that needs the
//! tail until the consumer publishes a sane one.
//! A slot is copied out exactly once (one volatile read) before anything
//! looks at it, so the peer cannot change a message between check and use.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(test)]
extern crate std;

#[cfg(synaptic_probe)]
pub mod probe;
mod sync;

use core::cell::Cell;
use core::marker::PhantomData;
use core::ptr::NonNull;

use synaptic_abi::region::RING_INDEX_PAD;
use synaptic_abi::{ring_entries_u32, Errno, Message};

use crate::sync::{AtomicU32, Ordering, UnsafeCell};

/// What went wrong on a push or pop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RingError {
    /// The ring holds `N` messages; try again later. Maps to `-EAGAIN`
    /// ([`Errno::Again`]).
    Full,
    /// The peer published an index that cannot be right (`head - tail > N`).
    /// Maps to `-EBADMSG` ([`Errno::BadMsg`]). The indices are as seen by
    /// this handle: its own, and the peer's as read.
    Corrupt {
        /// The head index involved.
        head: u32,
        /// The tail index involved.
        tail: u32,
    },
}

impl RingError {
    /// The errno at the C and wire boundary.
    pub const fn errno(self) -> Errno {
        match self {
            RingError::Full => Errno::Again,
            RingError::Corrupt { .. } => Errno::BadMsg,
        }
    }
}

impl From<RingError> for Errno {
    fn from(e: RingError) -> Errno {
        e.errno()
    }
}

#[repr(transparent)]
struct Slot(UnsafeCell<Message>);

const EMPTY_MESSAGE: Message = Message {
    msg_id: 0,
    msg_type: 0,
    priority: 0,
    payload_len: 0,
    payload_offset: 0,
    timestamp_us: 0,
    status: 0,
};

/// The ring as it lies in memory: the ABI v1 layout with atomic indices.
///
/// Own one (for tests and single-core use) with [`Ring::new`] and
/// [`Ring::split`], or overlay one on the shared region with
/// [`Ring::from_raw`].
///
/// A size that is not a power of two does not compile:
///
/// ```compile_fail
/// let ring = synaptic_ring::Ring::<3>::new();
/// ```
#[repr(C)]
pub struct Ring<const N: usize> {
    head: AtomicU32,
    head_pad: [u8; RING_INDEX_PAD],
    tail: AtomicU32,
    tail_pad: [u8; RING_INDEX_PAD],
    slots: [Slot; N],
}

// The overlay must be byte-for-byte the ABI ring (loom's atomics are larger,
// so the check is for the real build only).
#[cfg(not(loom))]
const _: () = {
    use core::mem::{align_of, offset_of, size_of};
    use synaptic_abi::region::{ring_size, RING_HEAD_OFFSET, RING_SLOTS_OFFSET, RING_TAIL_OFFSET};
    use synaptic_abi::{DefaultRing, RING_ENTRIES_DEFAULT};
    assert!(offset_of!(Ring<RING_ENTRIES_DEFAULT>, head) == RING_HEAD_OFFSET);
    assert!(offset_of!(Ring<RING_ENTRIES_DEFAULT>, tail) == RING_TAIL_OFFSET);
    assert!(offset_of!(Ring<RING_ENTRIES_DEFAULT>, slots) == RING_SLOTS_OFFSET);
    assert!(size_of::<Ring<RING_ENTRIES_DEFAULT>>() == size_of::<DefaultRing>());
    assert!(size_of::<Ring<2>>() == ring_size::<2>());
    assert!(align_of::<Ring<RING_ENTRIES_DEFAULT>>() == align_of::<DefaultRing>());
};

// SAFETY: the only shared mutable state is the two atomics and the slots. A
// slot is written only through the one `Producer` and read only through the
// one `Consumer` (`split` takes `&mut self`; `attach` makes the caller
// promise uniqueness), and the head/tail Release/Acquire pairs order every
// slot write before the read of it and every read before the next write.
unsafe impl<const N: usize> Sync for Ring<N> {}

impl<const N: usize> Ring<N> {
    /// Entries in the ring.
    pub const CAPACITY: usize = N;

    /// Power-of-two check (compile time) and `N` as a `u32`.
    const ENTRIES: u32 = ring_entries_u32::<N>();

    /// An empty ring with both indices at 0.
    #[cfg(not(loom))]
    pub const fn new() -> Self {
        Self::with_start_index(0)
    }

    /// An empty ring with both indices at `start`, e.g. near `u32::MAX` to
    /// exercise the wrap.
    #[cfg(not(loom))]
    pub const fn with_start_index(start: u32) -> Self {
        let _ = Self::ENTRIES;
        Ring {
            head: AtomicU32::new(start),
            head_pad: [0; RING_INDEX_PAD],
            tail: AtomicU32::new(start),
            tail_pad: [0; RING_INDEX_PAD],
            slots: [const { Slot(UnsafeCell::new(EMPTY_MESSAGE)) }; N],
        }
    }

    /// An empty ring with both indices at 0 (loom build).
    #[cfg(loom)]
    pub fn new() -> Self {
        Self::with_start_index(0)
    }

    /// An empty ring with both indices at `start` (loom build).
    #[cfg(loom)]
    pub fn with_start_index(start: u32) -> Self {
        let _ = Self::ENTRIES;
        Ring {
            head: AtomicU32::new(start),
            head_pad: [0; RING_INDEX_PAD],
            tail: AtomicU32::new(start),
            tail_pad: [0; RING_INDEX_PAD],
            slots: core::array::from_fn(|_| Slot(UnsafeCell::new(EMPTY_MESSAGE))),
        }
    }

    /// Split an owned ring into its two handles. The borrow guarantees they
    /// are the only ones for as long as they live.
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_abi::Message;
    /// use synaptic_ring::{Ring, RingError};
    ///
    /// let mut ring = Ring::<2>::new();
    /// let (mut tx, mut rx) = ring.split();
    /// tx.push(Message { msg_id: 1, ..Message::default() })?;
    /// tx.push(Message { msg_id: 2, ..Message::default() })?;
    /// assert_eq!(tx.push(Message::default()), Err(RingError::Full));
    /// assert_eq!(rx.pop()?.map(|m| m.msg_id), Some(1));
    /// assert_eq!(rx.pop()?.map(|m| m.msg_id), Some(2));
    /// assert_eq!(rx.pop()?, None);
    /// # Ok::<(), RingError>(())
    /// ```
    pub fn split(&mut self) -> (Producer<'_, N>, Consumer<'_, N>) {
        let ring: &Ring<N> = self;
        // SAFETY: `&mut self` is borrowed for the handles' lifetime, so no
        // other handle of this ring can exist meanwhile.
        unsafe { (Producer::attach(ring), Consumer::attach(ring)) }
    }

    /// Write an empty ring (indices at 0, slots zeroed) over `ptr`: what
    /// CPU0 does once, before it publishes the region and releases CPU1.
    ///
    /// # Safety
    ///
    /// `ptr` must be valid for writes of `size_of::<Ring<N>>()` bytes,
    /// 4-byte aligned, and no handle of this ring may be in use on either
    /// core (the peer must still be held in reset or not yet attached).
    #[cfg(not(loom))]
    pub unsafe fn init(ptr: NonNull<Ring<N>>) {
        // SAFETY: the caller guarantees the pointer is valid and aligned and
        // that nothing else reads or writes the ring meanwhile.
        unsafe { ptr.as_ptr().write(Self::new()) }
    }

    /// View the ring at `ptr` in the shared region, with whatever indices it
    /// holds (a rebooting peer keeps the live ones).
    ///
    /// # Safety
    ///
    /// * `ptr` points to `size_of::<Ring<N>>()` bytes, 4-byte aligned, valid
    ///   for reads and writes for all of `'a` (the shared region is never
    ///   unmapped);
    /// * those bytes are accessed, on both cores, only through this crate's
    ///   API or its C equivalent (atomic index loads/stores with
    ///   Acquire/Release, slots written only by the producer below `head`
    ///   and read only by the consumer);
    /// * the bytes hold a ring of exactly `N` entries (check the control
    ///   block's `ring_entries` first).
    ///
    /// The index values need not be sane: the handles check them.
    pub unsafe fn from_raw<'a>(ptr: NonNull<Ring<N>>) -> &'a Ring<N> {
        let _ = Self::ENTRIES;
        // SAFETY: validity, alignment, lifetime and access discipline are the
        // caller's obligations above; every field is plain integers or
        // atomics, so any bit pattern is a valid `Ring<N>`.
        unsafe { ptr.as_ref() }
    }

    /// The producer's published head, read without ordering: a cheap hint
    /// for a consumer deciding whether to take its lock and pop (a pop
    /// reads the head again, with Acquire, and checks it).
    pub fn head_hint(&self) -> u32 {
        // Ordering: a hint only; nothing is read on its strength.
        self.head.load(Ordering::Relaxed)
    }

    /// The consumer's published tail, read with Acquire: the consumer has
    /// taken every message below it, and whatever its core wrote before
    /// publishing it is visible to the caller's later reads (a barrier for
    /// a producer waiting until the peer has taken a given message). Not
    /// checked: it is whatever the consumer (or a peer scribbling) wrote.
    pub fn consumed(&self) -> u32 {
        // Ordering: pairs with the consumer's Release store of tail.
        self.tail.load(Ordering::Acquire)
    }

    /// Slot of free-running index `index`; always in bounds.
    fn slot(&self, index: u32) -> &Slot {
        // `N` is a power of two, so this is a mask and can never exceed N-1.
        &self.slots[index as usize % N]
    }
}

#[cfg(not(loom))]
impl<const N: usize> Default for Ring<N> {
    fn default() -> Self {
        Self::new()
    }
}

/// The writing end of a ring: `Send`, not `Sync`, one per ring.
///
/// ```compile_fail
/// fn sync<T: Sync>() {}
/// sync::<synaptic_ring::Producer<'static, 4>>();
/// ```
pub struct Producer<'a, const N: usize> {
    ring: &'a Ring<N>,
    /// Own index: authoritative, never re-read from shared memory.
    head: u32,
    /// Last tail read from the peer.
    cached_tail: u32,
    corrupt: u32,
    repairs: u32,
    not_sync: PhantomData<Cell<()>>,
}

impl<'a, const N: usize> Producer<'a, N> {
    /// Attach as the producer of `ring`, keeping its live indices (a
    /// rebooting core resumes where its previous life stopped).
    ///
    /// If the shared indices are corrupt (`head - tail > N`), the producer
    /// repairs its own index, `head = tail` (the ring reads as empty),
    /// and counts it in [`corrupt_count`](Self::corrupt_count).
    ///
    /// # Safety
    ///
    /// No other `Producer` of this ring may exist, on either core, while this
    /// one lives.
    pub unsafe fn attach(ring: &'a Ring<N>) -> Self {
        let _ = Ring::<N>::ENTRIES;
        // Ordering: the previous producer (this core's earlier life) wrote
        // head; nothing of the peer's is published through head, so Relaxed
        // would do; Acquire is kept for symmetry and costs one dmb at attach.
        let head = ring.head.load(Ordering::Acquire);
        // Ordering: pairs with the consumer's Release store of tail, so its
        // reads of slots below tail are done before we overwrite them.
        let tail = ring.tail.load(Ordering::Acquire);
        let mut producer = Producer {
            ring,
            head,
            cached_tail: tail,
            corrupt: 0,
            repairs: 0,
            not_sync: PhantomData,
        };
        if head.wrapping_sub(tail) > Ring::<N>::ENTRIES {
            producer.corrupt = 1;
            producer.head = tail;
            // Ordering: pairs with the consumer's Acquire load of head; there
            // are no slot writes to publish, only the repaired index.
            ring.head.store(tail, Ordering::Release);
        }
        producer
    }

    /// Append `msg`.
    ///
    /// # Errors
    ///
    /// * [`RingError::Full`] when `N` messages are waiting (`-EAGAIN`);
    /// * [`RingError::Corrupt`] when the consumer's tail is not within `N`
    ///   behind our head (counted; the push did not happen).
    pub fn push(&mut self, msg: Message) -> Result<(), RingError> {
        let head = self.head;
        if head.wrapping_sub(self.cached_tail) >= Ring::<N>::ENTRIES {
            // Looks full: refresh the tail.
            // Ordering: pairs with the consumer's Release store of tail, so
            // its read of the slot we are about to reuse happened before.
            let tail = self.ring.tail.load(Ordering::Acquire);
            let used = head.wrapping_sub(tail);
            if used > Ring::<N>::ENTRIES {
                self.corrupt = self.corrupt.wrapping_add(1);
                // The consumer may have resynchronised to a scribbled head.
                self.repair();
                return Err(RingError::Corrupt { head, tail });
            }
            self.cached_tail = tail;
            if used == Ring::<N>::ENTRIES {
                return Err(RingError::Full);
            }
        }
        self.ring.slot(head).0.with_mut(|slot| {
            // SAFETY: `head - tail < N`, so the consumer has released this
            // slot (its tail store is ordered after its read of it) and will
            // not read it until we publish head + 1 below; the pointer comes
            // from a live `UnsafeCell` in the ring. Volatile: one store per
            // field, the bytes are read by the other core.
            unsafe { slot.write_volatile(msg) }
        });
        // Ordering: pairs with the consumer's Acquire load of head; the slot
        // write above becomes visible no later than the new head.
        self.ring
            .head
            .store(head.wrapping_add(1), Ordering::Release);
        self.head = head.wrapping_add(1);
        Ok(())
    }

    /// Free slots, refreshing the cached tail.
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] as for [`push`](Self::push).
    pub fn free(&mut self) -> Result<usize, RingError> {
        // Ordering: pairs with the consumer's Release store of tail.
        let tail = self.ring.tail.load(Ordering::Acquire);
        let used = self.head.wrapping_sub(tail);
        if used > Ring::<N>::ENTRIES {
            self.corrupt = self.corrupt.wrapping_add(1);
            self.repair();
            return Err(RingError::Corrupt {
                head: self.head,
                tail,
            });
        }
        self.cached_tail = tail;
        Ok(N - used as usize)
    }

    /// Make the shared `head` this handle's again if it differs (a peer
    /// wrote it); returns whether it did (counted in
    /// [`repair_count`](Self::repair_count)).
    pub fn repair(&mut self) -> bool {
        // Release pairs with the consumer's Acquire load of head: every
        // slot below our head was published before (by earlier Releases).
        restore(&self.ring.head, self.head, &mut self.repairs)
    }

    /// Corrupt tails seen (and attach-time repairs) so far.
    pub fn corrupt_count(&self) -> u32 {
        self.corrupt
    }

    /// Times [`repair`](Self::repair) found the shared head altered.
    pub fn repair_count(&self) -> u32 {
        self.repairs
    }

    /// This handle's head index.
    pub fn head(&self) -> u32 {
        self.head
    }
}

/// Make `word`, a handle's own index, read `own` again if a peer changed
/// it (stored with Release, counted in `repairs`); returns whether it did.
fn restore(word: &AtomicU32, own: u32, repairs: &mut u32) -> bool {
    // Ordering: our own word; Relaxed shows what the peer may have left.
    if word.load(Ordering::Relaxed) == own {
        return false;
    }
    word.store(own, Ordering::Release);
    *repairs = repairs.wrapping_add(1);
    true
}

/// The reading end of a ring: `Send`, not `Sync`, one per ring.
///
/// ```compile_fail
/// fn sync<T: Sync>() {}
/// sync::<synaptic_ring::Consumer<'static, 4>>();
/// ```
pub struct Consumer<'a, const N: usize> {
    ring: &'a Ring<N>,
    /// Own index: authoritative, never re-read from shared memory.
    tail: u32,
    /// Last head read from the peer, checked: `cached_head - tail <= N`.
    cached_head: u32,
    corrupt: u32,
    repairs: u32,
    not_sync: PhantomData<Cell<()>>,
}

impl<'a, const N: usize> Consumer<'a, N> {
    /// Attach as the consumer of `ring`, keeping its live indices.
    ///
    /// If the shared indices are corrupt (`head - tail > N`), the consumer
    /// resynchronises (`tail = head`, everything in flight discarded) and
    /// counts it in [`corrupt_count`](Self::corrupt_count).
    ///
    /// # Safety
    ///
    /// No other `Consumer` of this ring may exist, on either core, while this
    /// one lives.
    pub unsafe fn attach(ring: &'a Ring<N>) -> Self {
        let _ = Ring::<N>::ENTRIES;
        // Ordering: tail is our own index (an earlier life of this core wrote
        // it); Acquire for symmetry only.
        let tail = ring.tail.load(Ordering::Acquire);
        // Ordering: pairs with the producer's Release store of head, so the
        // slots below it are visible.
        let head = ring.head.load(Ordering::Acquire);
        let mut consumer = Consumer {
            ring,
            tail,
            cached_head: tail,
            corrupt: 0,
            repairs: 0,
            not_sync: PhantomData,
        };
        if head.wrapping_sub(tail) > Ring::<N>::ENTRIES {
            consumer.resync(head);
        } else {
            consumer.cached_head = head;
        }
        consumer
    }

    /// Discard everything up to `head` (which failed the check): the
    /// consumer's resynchronisation.
    fn resync(&mut self, head: u32) {
        self.corrupt = self.corrupt.wrapping_add(1);
        self.tail = head;
        self.cached_head = head;
        // Ordering: pairs with the producer's Acquire load of tail; we read
        // no slot, so this only hands the (now untrusted) slots back.
        self.ring.tail.store(head, Ordering::Release);
    }

    /// Take the oldest message, copied out of its slot exactly once.
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] when the producer's head is more than `N` ahead
    /// of our tail (or behind it). The consumer has then resynchronised:
    /// `tail = head`, the messages in between are dropped, the event is
    /// counted, and the next pop starts from that head.
    pub fn pop(&mut self) -> Result<Option<Message>, RingError> {
        let tail = self.tail;
        if self.cached_head == tail {
            // Looks empty: refresh the head.
            // Ordering: pairs with the producer's Release store of head, so
            // the slot writes before it are visible to the read below.
            let head = self.ring.head.load(Ordering::Acquire);
            let available = head.wrapping_sub(tail);
            if available > Ring::<N>::ENTRIES {
                self.resync(head);
                return Err(RingError::Corrupt { head, tail });
            }
            self.cached_head = head;
            if available == 0 {
                // An empty poll: the moment to make our tail true again.
                self.repair();
                return Ok(None);
            }
        }
        let msg = self.ring.slot(tail).0.with(|slot| {
            // SAFETY: `tail` is below a head we loaded with Acquire and
            // checked, so the producer's write of this slot is visible and it
            // will not write it again until we publish tail + 1 below; the
            // pointer comes from a live `UnsafeCell`. Volatile: exactly one
            // read of the peer's bytes, into a local copy.
            unsafe { slot.read_volatile() }
        });
        // Ordering: pairs with the producer's Acquire load of tail; our read
        // of the slot is complete before the producer may reuse it.
        self.ring
            .tail
            .store(tail.wrapping_add(1), Ordering::Release);
        self.tail = tail.wrapping_add(1);
        Ok(Some(msg))
    }

    /// Messages waiting, refreshing the cached head.
    ///
    /// # Errors
    ///
    /// [`RingError::Corrupt`] as for [`pop`](Self::pop) (and the same
    /// resynchronisation).
    pub fn available(&mut self) -> Result<usize, RingError> {
        // Ordering: pairs with the producer's Release store of head.
        let head = self.ring.head.load(Ordering::Acquire);
        let available = head.wrapping_sub(self.tail);
        if available > Ring::<N>::ENTRIES {
            let tail = self.tail;
            self.resync(head);
            return Err(RingError::Corrupt { head, tail });
        }
        self.cached_head = head;
        Ok(available as usize)
    }

    /// Make the shared `tail` this handle's again if it differs (a peer
    /// wrote it); returns whether it did (counted in
    /// [`repair_count`](Self::repair_count)).
    pub fn repair(&mut self) -> bool {
        // Release pairs with the producer's Acquire load of tail: our reads
        // of every slot below it are done.
        restore(&self.ring.tail, self.tail, &mut self.repairs)
    }

    /// Corrupt heads seen (each one a resynchronisation) so far.
    pub fn corrupt_count(&self) -> u32 {
        self.corrupt
    }

    /// Times [`repair`](Self::repair) found the shared tail altered.
    pub fn repair_count(&self) -> u32 {
        self.repairs
    }

    /// This handle's tail index.
    pub fn tail(&self) -> u32 {
        self.tail
    }
}

#[cfg(all(test, not(loom)))]
// `drop(handle)` marks where a handle's life ends (a core rebooting).
#[allow(clippy::drop_non_drop)]
mod tests {
    use super::*;

    fn msg(seq: u32) -> Message {
        Message {
            msg_id: seq,
            status: !(seq as i32),
            ..Message::default()
        }
    }

    #[test]
    fn handles_are_send() {
        fn send<T: Send>() {}
        send::<Producer<'static, 4>>();
        send::<Consumer<'static, 4>>();
    }

    #[test]
    fn consumer_resyncs_on_head_too_far_ahead() {
        let mut ring = Ring::<4>::new();
        let (mut tx, mut rx) = ring.split();
        tx.push(msg(0)).unwrap();
        // Hostile producer: head 5 ahead of tail with N = 4.
        rx.ring.head.store(5, Ordering::Release);
        assert_eq!(rx.pop(), Err(RingError::Corrupt { head: 5, tail: 0 }));
        assert_eq!(rx.corrupt_count(), 1);
        assert_eq!(rx.tail(), 5);
        assert_eq!(rx.ring.tail.load(Ordering::Acquire), 5);
        assert_eq!(rx.pop(), Ok(None));
        // A head behind the tail is corrupt too (it would read as ~2^32 available).
        rx.ring.head.store(3, Ordering::Release);
        assert!(matches!(rx.pop(), Err(RingError::Corrupt { head: 3, .. })));
        assert_eq!(rx.corrupt_count(), 2);
        assert_eq!(rx.available(), Ok(0));
    }

    #[test]
    fn producer_reports_tail_ahead_of_head() {
        let mut ring = Ring::<4>::new();
        let (mut tx, rx) = ring.split();
        for seq in 0..4 {
            tx.push(msg(seq)).unwrap();
        }
        // Hostile consumer: tail beyond head.
        rx.ring.tail.store(9, Ordering::Release);
        assert_eq!(
            tx.push(msg(4)),
            Err(RingError::Corrupt { head: 4, tail: 9 })
        );
        assert_eq!(tx.free(), Err(RingError::Corrupt { head: 4, tail: 9 }));
        assert_eq!(tx.corrupt_count(), 2);
        assert_eq!(tx.head(), 4, "a corrupt tail must not move the head");
        // Once the consumer publishes a sane tail, pushing resumes.
        rx.ring.tail.store(2, Ordering::Release);
        assert_eq!(tx.push(msg(4)), Ok(()));
        assert_eq!(tx.free(), Ok(1));
        assert_eq!(RingError::Full.errno(), Errno::Again);
        assert_eq!(
            Errno::from(RingError::Corrupt { head: 0, tail: 0 }),
            Errno::BadMsg
        );
    }

    #[test]
    fn each_handle_makes_its_own_shared_index_true_again() {
        let mut ring = Ring::<4>::new();
        let (mut tx, mut rx) = ring.split();
        tx.push(msg(0)).unwrap();
        assert_eq!(rx.pop().unwrap().unwrap().msg_id, 0);
        // The peer scribbles the consumer's tail: an empty poll restores it.
        tx.ring.tail.store(0xDEAD, Ordering::Relaxed);
        assert_eq!(rx.pop(), Ok(None));
        assert_eq!(rx.ring.tail.load(Ordering::Relaxed), 1);
        assert_eq!(rx.repair_count(), 1);
        assert_eq!(tx.free(), Ok(4));
        assert!(!rx.repair(), "nothing to repair");
        // The peer scribbles the producer's head: the consumer resyncs to
        // it, the producer sees an impossible tail and restores its head,
        // the consumer then resyncs to the true head and the ring works.
        rx.ring.head.store(0x7000, Ordering::Relaxed);
        assert!(rx.pop().is_err());
        assert_eq!(rx.tail(), 0x7000);
        assert!(matches!(tx.free(), Err(RingError::Corrupt { .. })));
        assert_eq!(tx.repair_count(), 1);
        assert_eq!(tx.ring.head.load(Ordering::Relaxed), 1);
        assert!(rx.pop().is_err(), "resync back to the true head");
        assert_eq!(rx.tail(), 1);
        assert_eq!(tx.free(), Ok(4));
        tx.push(msg(1)).unwrap();
        assert_eq!(rx.pop().unwrap().unwrap().msg_id, 1);
        // An owner's periodic repair restores a scribble at once.
        tx.ring.head.store(3, Ordering::Relaxed);
        assert!(tx.repair());
        assert_eq!(tx.ring.head.load(Ordering::Relaxed), 2);
        assert_eq!(tx.repair_count(), 2);
    }

    #[test]
    fn attach_keeps_live_indices_and_repairs_corrupt_ones() {
        let ring = Ring::<8>::with_start_index(100);
        // SAFETY: only one producer and one consumer exist at a time below.
        unsafe {
            let mut tx = Producer::attach(&ring);
            for seq in 0..3 {
                tx.push(msg(seq)).unwrap();
            }
        }
        // A "rebooted" consumer finds the three live messages.
        // SAFETY: the previous handles are gone.
        let mut rx = unsafe { Consumer::attach(&ring) };
        assert_eq!(rx.pop().unwrap().unwrap().msg_id, 0);
        drop(rx);
        // SAFETY: the previous handles are gone.
        let mut rx = unsafe { Consumer::attach(&ring) };
        assert_eq!(rx.tail(), 101);
        assert_eq!(rx.available(), Ok(2));
        drop(rx);

        ring.head.store(100 + 50, Ordering::Release);
        // SAFETY: the previous handles are gone.
        let tx = unsafe { Producer::attach(&ring) };
        assert_eq!(tx.corrupt_count(), 1);
        assert_eq!(tx.head(), 101, "producer repairs head = tail");
        drop(tx);
        ring.head.store(7, Ordering::Release);
        // SAFETY: the previous handles are gone.
        let mut rx = unsafe { Consumer::attach(&ring) };
        assert_eq!(rx.corrupt_count(), 1);
        assert_eq!(rx.tail(), 7, "consumer resyncs tail = head");
        assert_eq!(rx.pop(), Ok(None));
    }

    #[test]
    fn raw_overlay_matches_the_abi_bytes() {
        use synaptic_abi::region::ring_size;
        // A stand-in for the shared region: u32 words give 4-byte alignment.
        let mut words = [0xDEAD_BEEFu32; ring_size::<4>() / 4];
        let ptr = NonNull::new(words.as_mut_ptr().cast::<Ring<4>>()).unwrap();
        // SAFETY: `words` is large enough, aligned, and outlives the handles;
        // nothing else touches it meanwhile.
        let ring = unsafe {
            Ring::init(ptr);
            Ring::from_raw(ptr)
        };
        // SAFETY: one producer and one consumer.
        let (mut tx, mut rx) = unsafe { (Producer::attach(ring), Consumer::attach(ring)) };
        let m = Message {
            msg_id: 0x1122_3344,
            msg_type: 5,
            priority: 2,
            payload_len: 0xABCD,
            payload_offset: 960,
            timestamp_us: 77,
            status: -11,
        };
        tx.push(m).unwrap();
        tx.push(m).unwrap();
        assert_eq!(rx.pop(), Ok(Some(m)));
        drop((tx, rx));
        assert_eq!(words[0], 2, "head at +0");
        assert_eq!(words[16], 1, "tail at +64");
        assert_eq!(words[32], 0x1122_3344, "slot 0 msg_id at +128");
        assert_eq!(words[33], 0xABCD_0205, "type, priority, payload_len");
        assert_eq!(words[36] as i32, -11, "status at +16 in the slot");
        assert_eq!(words[37], 0x1122_3344, "slot 1 at +148");
    }
}
