//! The shared-memory contract between CPU0 and CPU1 (ABI v5).
//!
//! Owned by exactly one crate so that both images agree by construction;
//! cbindgen exports it to C (`include/synaptic/syn_abi.h`). Every size and
//! offset is pinned by a compile-time assert: a mismatch is a build error,
//! never a runtime surprise.
//!
//! Invariants: the on-wire structs ([`Message`], [`ControlBlock`],
//! [`RingHeader`], [`ServiceTime`], [`ExchangeHeader`], [`ExchangeSlot`]) are `#[repr(C)]` and
//! hold plain integers only (no atomics, no enums, no pointers), so any bytes
//! are a valid value and C sees the same layout. They are never trusted:
//! decode them with `TryFrom` or the `check` methods into checked types.
//! Payloads are offsets from the region base, never pointers.
#![no_std]
#![forbid(unsafe_code)]

pub mod control;
pub mod errno;
pub mod exchange;
pub mod memory_map;
pub mod message;
pub mod priority;
pub mod region;

pub use control::{
    ControlBlock, ControlWord, LayoutError, Owner, CONTROL_BLOCK_SIZE, CONTROL_WORDS,
    LAYOUT_VERSION, MAGIC, READY,
};
pub use errno::Errno;
pub use exchange::{
    ExchangeError, ExchangeHeader, ExchangeSlot, GeometryError, SlotGeometry, EXCHANGE_HEADER_SIZE,
    EXCHANGE_INPUT_OFFSET, EXCHANGE_INPUT_SIZE, EXCHANGE_OUTPUT_OFFSET, EXCHANGE_OUTPUT_SIZE,
    EXCHANGE_SLOTS_DEFAULT, EXCHANGE_SLOT_SIZE, MAX_EXCHANGE_SLOTS, MODEL_NAME_SIZE, SLOT_ALIGN,
    SMALL_INPUT_SIZE_DEFAULT, SMALL_OUTPUT_SIZE_DEFAULT, TENSOR_ALIGN, UPDATE_OP_ACTIVATE,
    UPDATE_OP_BEGIN, UPDATE_OP_CONFIRM, UPDATE_OP_DATA, UPDATE_OP_FINISH, UPDATE_OP_ROLLBACK,
};
pub use memory_map::{Core, MemoryMap, AN521, MCXN947, QEMU_CORTEX_M3};
pub use message::{
    InvalidMessageType, Message, MessageError, MessageType, ValidMessage, MSG_SIZE, MSG_TYPE_COUNT,
    MSG_TYPE_INFER_REQ, MSG_TYPE_INFER_RESP, MSG_TYPE_MODEL_LOAD, MSG_TYPE_MODEL_UNLOAD,
    MSG_TYPE_MODEL_UPDATE, MSG_TYPE_STATUS_REQ, MSG_TYPE_STATUS_RESP,
};
pub use priority::{InvalidPriority, Priority};
pub use region::{
    exchange_slot_offset, payload_pool_offset, payload_pool_range, region_fits, region_size,
    ring_entries_u32, ring_offset, ring_size, service_times_offset, DefaultRing, Direction,
    RingHeader, ServiceTime, ServiceTimeTable, RING_ENTRIES_DEFAULT, RING_SLOTS_OFFSET,
    RING_TAIL_OFFSET, SERVICE_TIME_ENTRIES, SERVICE_TIME_TABLE_SIZE,
};

/// Request flag (ABI v2): the requester polls for the reply, so CPU0 pushes
/// it without ringing the doorbell (it still raises an event for a `wfe`).
///
/// In a request, the message's `status` word carries its flags; a reply's
/// `status` is its result. Bits other than these are reserved: a request
/// with one set is refused with `-EINVAL`.
pub const REQUEST_FLAG_POLLED: i32 = 1;
/// Every request flag this version defines.
pub const REQUEST_FLAGS_KNOWN: i32 = REQUEST_FLAG_POLLED;

/// Wire value of [`Priority::BestEffort`].
pub const PRIORITY_BEST_EFFORT: u8 = 0;
/// Wire value of [`Priority::Normal`].
pub const PRIORITY_NORMAL: u8 = 1;
/// Wire value of [`Priority::RealTime`].
pub const PRIORITY_REALTIME: u8 = 2;

const _: () = {
    assert!(PRIORITY_BEST_EFFORT == Priority::BestEffort as u8);
    assert!(PRIORITY_NORMAL == Priority::Normal as u8);
    assert!(PRIORITY_REALTIME == Priority::RealTime as u8);
    // The default region fits every platform's window, and so do eight
    // slots with the largest rings Kconfig offers.
    assert!(region_fits::<RING_ENTRIES_DEFAULT>(
        memory_map::SHARED_SIZE as usize,
        SlotGeometry::DEFAULT
    ));
    assert!(region_fits::<64>(
        memory_map::SHARED_SIZE as usize,
        SlotGeometry {
            count: MAX_EXCHANGE_SLOTS as u32,
            ..SlotGeometry::DEFAULT
        }
    ));
    assert!(exchange_slot_offset::<RING_ENTRIES_DEFAULT>() % 16 == 0);
    assert!((exchange_slot_offset::<RING_ENTRIES_DEFAULT>() + EXCHANGE_INPUT_OFFSET) % 16 == 0);
};
