//! Ring geometry and the layout of the shared region, as `const fn`s of the
//! ring size `N`.
//!
//! The region is, from offset 0: the [`ControlBlock`](crate::ControlBlock),
//! the ring CPU0→CPU1, the ring CPU1→CPU0, the service-time table
//! ([`ServiceTime`] entries, CPU0-written), then the payload pool, which
//! holds the exchange slots ([`SlotGeometry`]). Each ring is a
//! [`RingHeader`] (`head` at +0, `tail` at +64, 60 pad bytes after each so the
//! two indices never share a 64-byte line) followed by `N` [`Message`] slots
//! at +128.
//!
//! Invariants, checked at compile time wherever `N` is known:
//! * `N` is a power of two (with free-running `u32` indices, `index % N` is
//!   continuous across the 2^32 wrap only when `N` divides 2^32);
//! * the payload pool starts right after the second ring;
//! * for the default `N` = 16, both rings and the pool start on a 64-byte
//!   boundary (other sizes keep 4-byte alignment, which is all correctness
//!   needs).
//!
//! Offsets are from the region base: the cores see the same bytes at
//! different addresses, so nothing in the region is ever a pointer.

use core::mem::{offset_of, size_of};

use crate::control::CONTROL_BLOCK_SIZE;
use crate::exchange::{SlotGeometry, EXCHANGE_SLOT_SIZE};
use crate::message::{Message, MSG_SIZE};

/// Offset of `head` in a ring.
pub const RING_HEAD_OFFSET: usize = 0;
/// Offset of `tail` in a ring.
pub const RING_TAIL_OFFSET: usize = 64;
/// Offset of `slots[0]` in a ring; also the size of [`RingHeader`].
pub const RING_SLOTS_OFFSET: usize = 128;
/// Padding after each index.
pub const RING_INDEX_PAD: usize = 60;
/// Default entries per ring (Kconfig default).
pub const RING_ENTRIES_DEFAULT: usize = 16;

/// Size of a default ring (`128 + 16 * 20`).
pub const RING_SIZE_DEFAULT: usize = 448;
/// Offset of the default ring CPU0→CPU1.
pub const RING_CPU0_TO_CPU1_OFFSET_DEFAULT: usize = 64;
/// Offset of the default ring CPU1→CPU0.
pub const RING_CPU1_TO_CPU0_OFFSET_DEFAULT: usize = 512;
/// Offset of the service-time table with default rings.
pub const SERVICE_TIMES_OFFSET_DEFAULT: usize = 960;
/// Offset of the payload pool (and of the frame slot) with default rings.
pub const PAYLOAD_POOL_OFFSET_DEFAULT: usize = 1_088;
/// Bytes the contract needs with default rings and the default slots:
/// control block, two rings, service-time table, four exchange slots.
pub const REGION_SIZE_DEFAULT: usize = 48_448;
/// Entries of the service-time table.
pub const SERVICE_TIME_ENTRIES: usize = 16;
/// Size of the service-time table.
pub const SERVICE_TIME_TABLE_SIZE: usize = 128;

/// CPU0's running estimate of one model's service time, raw wire form.
///
/// CPU0 alone writes the table: `service_us` first, then `model` (Release),
/// so a reader that sees a model also sees an estimate made for it (or for
/// the model the entry held just before, a harmless stale hint). CPU1 uses
/// it only to choose between polling and sleeping for a reply, never for
/// correctness. `model` 0 marks an unused entry.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceTime {
    /// Raw model handle (0: unused entry).
    pub model: u32,
    /// Estimated request-to-reply time on CPU0, microseconds.
    pub service_us: u32,
}

/// The service-time table, raw wire form (for C and for layout checks).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServiceTimeTable {
    /// Entries, in no particular order.
    pub entries: [ServiceTime; SERVICE_TIME_ENTRIES],
}

/// The two index words of a ring, raw wire form. `slots[N]` follow at +128.
///
/// The producer writes only `head`, the consumer only `tail`; both are
/// free-running. The ring crate overlays its atomic view on these bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RingHeader {
    /// Next index the producer will write (free-running).
    pub head: u32,
    /// Keeps `tail` off `head`'s 64-byte line.
    pub head_pad: [u8; RING_INDEX_PAD],
    /// Next index the consumer will read (free-running).
    pub tail: u32,
    /// Keeps `slots` off `tail`'s 64-byte line.
    pub tail_pad: [u8; RING_INDEX_PAD],
}

/// A ring of the default size, raw wire form (for C and for layout checks).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct DefaultRing {
    /// Indices.
    pub header: RingHeader,
    /// Slots; slot of index `i` is `slots[i % RING_ENTRIES_DEFAULT]`.
    pub slots: [Message; RING_ENTRIES_DEFAULT],
}

/// Which ring of the region.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Requests from CPU0, responses to CPU1's requests.
    Cpu0ToCpu1,
    /// Requests from CPU1, responses to CPU0's requests.
    Cpu1ToCpu0,
}

/// `N` as the control block's `ring_entries` word; fails to compile unless
/// `N` is a power of two that fits.
pub const fn ring_entries_u32<const N: usize>() -> u32 {
    const {
        assert!(
            N.is_power_of_two() && N <= 1 << 16,
            "ring entries must be a power of two"
        )
    };
    N as u32
}

/// Size of a ring of `N` entries: header plus slots. Fails to compile unless
/// `N` is a power of two.
pub const fn ring_size<const N: usize>() -> usize {
    ring_entries_u32::<N>();
    RING_SLOTS_OFFSET + N * MSG_SIZE
}

/// Offset of a ring from the region base.
pub const fn ring_offset<const N: usize>(direction: Direction) -> usize {
    match direction {
        Direction::Cpu0ToCpu1 => CONTROL_BLOCK_SIZE,
        Direction::Cpu1ToCpu0 => CONTROL_BLOCK_SIZE + ring_size::<N>(),
    }
}

/// Offset of the service-time table: right after the second ring.
pub const fn service_times_offset<const N: usize>() -> usize {
    CONTROL_BLOCK_SIZE + 2 * ring_size::<N>()
}

/// Offset of the payload pool: right after the service-time table.
pub const fn payload_pool_offset<const N: usize>() -> usize {
    service_times_offset::<N>() + SERVICE_TIME_TABLE_SIZE
}

/// Offset of the frame slot (slot 0): the start of the payload pool.
pub const fn exchange_slot_offset<const N: usize>() -> usize {
    payload_pool_offset::<N>()
}

/// Bytes the contract needs: control block, two rings, service-time table,
/// and the exchange slots of `slots`.
pub const fn region_size<const N: usize>(slots: SlotGeometry) -> usize {
    payload_pool_offset::<N>() + slots.pool_bytes()
}

/// Whether a shared window of `shared_size` bytes holds the region.
pub const fn region_fits<const N: usize>(shared_size: usize, slots: SlotGeometry) -> bool {
    region_size::<N>(slots) <= shared_size
}

/// The payload pool as offsets from the region base, for a shared window of
/// `shared_size` bytes (empty if the window is too small).
pub const fn payload_pool_range<const N: usize>(shared_size: usize) -> core::ops::Range<usize> {
    let start = payload_pool_offset::<N>();
    if shared_size < start {
        start..start
    } else {
        start..shared_size
    }
}

const _: () = {
    assert!(size_of::<ServiceTime>() == 8);
    assert!(offset_of!(ServiceTime, service_us) == 4);
    assert!(size_of::<ServiceTimeTable>() == SERVICE_TIME_TABLE_SIZE);
    assert!(size_of::<RingHeader>() == RING_SLOTS_OFFSET);
    assert!(offset_of!(RingHeader, head) == RING_HEAD_OFFSET);
    assert!(offset_of!(RingHeader, tail) == RING_TAIL_OFFSET);
    assert!(offset_of!(DefaultRing, slots) == RING_SLOTS_OFFSET);
    assert!(size_of::<DefaultRing>() == RING_SIZE_DEFAULT);
    assert!(RING_ENTRIES_DEFAULT.is_power_of_two());
    assert!(ring_size::<RING_ENTRIES_DEFAULT>() == RING_SIZE_DEFAULT);
    assert!(
        ring_offset::<RING_ENTRIES_DEFAULT>(Direction::Cpu0ToCpu1)
            == RING_CPU0_TO_CPU1_OFFSET_DEFAULT
    );
    assert!(
        ring_offset::<RING_ENTRIES_DEFAULT>(Direction::Cpu1ToCpu0)
            == RING_CPU1_TO_CPU0_OFFSET_DEFAULT
    );
    assert!(payload_pool_offset::<RING_ENTRIES_DEFAULT>() == PAYLOAD_POOL_OFFSET_DEFAULT);
    // The table follows the second ring, the pool follows the table.
    assert!(
        service_times_offset::<RING_ENTRIES_DEFAULT>()
            == ring_offset::<RING_ENTRIES_DEFAULT>(Direction::Cpu1ToCpu0) + RING_SIZE_DEFAULT
    );
    assert!(service_times_offset::<RING_ENTRIES_DEFAULT>() == SERVICE_TIMES_OFFSET_DEFAULT);
    assert!(region_size::<RING_ENTRIES_DEFAULT>(SlotGeometry::DEFAULT) == REGION_SIZE_DEFAULT);
    assert!(REGION_SIZE_DEFAULT == PAYLOAD_POOL_OFFSET_DEFAULT + EXCHANGE_SLOT_SIZE + 3 * 5_184);
    // Cache-line placement of the default layout.
    assert!(RING_CPU0_TO_CPU1_OFFSET_DEFAULT % 64 == 0);
    assert!(RING_CPU1_TO_CPU0_OFFSET_DEFAULT % 64 == 0);
    assert!(PAYLOAD_POOL_OFFSET_DEFAULT % 64 == 0);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_for_small_rings() {
        let one = SlotGeometry {
            count: 1,
            ..SlotGeometry::DEFAULT
        };
        assert_eq!(ring_size::<2>(), 168);
        assert_eq!(ring_offset::<2>(Direction::Cpu0ToCpu1), 64);
        assert_eq!(ring_offset::<2>(Direction::Cpu1ToCpu0), 232);
        assert_eq!(service_times_offset::<2>(), 400);
        assert_eq!(payload_pool_offset::<2>(), 528);
        assert_eq!(region_size::<2>(one), 528 + EXCHANGE_SLOT_SIZE);
        assert!(region_fits::<16>(96 * 1024, SlotGeometry::DEFAULT));
        assert!(!region_fits::<16>(
            REGION_SIZE_DEFAULT - 1,
            SlotGeometry::DEFAULT
        ));
        let eight = SlotGeometry {
            count: 8,
            ..SlotGeometry::DEFAULT
        };
        assert!(region_fits::<64>(96 * 1024, eight));
        assert_eq!(payload_pool_range::<16>(98_304), 1_088..98_304);
        assert_eq!(payload_pool_range::<16>(10), 1_088..1_088);
    }
}
