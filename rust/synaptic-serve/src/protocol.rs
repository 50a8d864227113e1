//! The serving protocol on top of ABI v1: which messages name the exchange
//! slot, what their payload fields say, what a `STATUS_RESP` reports, and
//! how message ids are ordered.
//!
//! # Conversation
//!
//! | CPU1 → CPU0 | payload | CPU0 → CPU1 reply (same `msg_id`) | reply `status` |
//! |---|---|---|---|
//! | `MODEL_LOAD` (name in the slot header) | slot, [`LOOKUP_PAYLOAD_LEN`] | `MODEL_LOAD` | raw model handle (> 0) or `-errno` |
//! | `INFER_REQ` (model, `input_len`, input in the slot) | slot, [`infer_payload_len`] | `INFER_RESP` (output in the slot) | output length or `-errno` |
//! | `STATUS_REQ` (timestamp) | none | `STATUS_RESP` (timestamp echoed) | [`STATUS_SLOT_FREE`] or [`STATUS_SLOT_HELD`] |
//!
//! # Invariants
//!
//! * **Slot ownership.** A request that names the slot hands it to CPU0;
//!   the reply carrying that request's `msg_id` hands it back. CPU1 never
//!   writes the slot in between, CPU0 never touches it outside.
//! * **One slot request at a time.** CPU1 sends a slot request only while
//!   it owns the slot, so at most one is ever outstanding.
//! * **FIFO answers.** CPU0 handles requests in ring order on one thread
//!   and answers a slot request before it reports the slot free: a
//!   `STATUS_RESP` saying [`STATUS_SLOT_FREE`] to a `STATUS_REQ` sent after
//!   a slot request proves CPU0 is done with that request's slot (answered,
//!   or never accepted).
//! * **Ids never repeat across a CPU1 restart.** CPU1 numbers its messages
//!   from the live head of its outgoing ring ([`first_id_after_restart`]), so
//!   a reply to a pre-restart request can never carry the id of a request
//!   made after it.

use synaptic_abi::{EXCHANGE_HEADER_SIZE, EXCHANGE_INPUT_OFFSET, EXCHANGE_INPUT_SIZE};

/// `STATUS_RESP` status: CPU0 holds no request that names the slot.
pub const STATUS_SLOT_FREE: i32 = 0;
/// `STATUS_RESP` status: CPU0 is serving a request that names the slot.
pub const STATUS_SLOT_HELD: i32 = 1;

/// `payload_len` of a `MODEL_LOAD`: the slot header, which holds the name.
pub const LOOKUP_PAYLOAD_LEN: u16 = EXCHANGE_HEADER_SIZE as u16;

const _: () = assert!(EXCHANGE_INPUT_OFFSET + EXCHANGE_INPUT_SIZE <= u16::MAX as usize);

/// `payload_len` of an `INFER_REQ` with `input_len` input bytes: the header
/// plus the input, the bytes CPU0 reads. `None` when `input_len` exceeds
/// the slot's input capacity.
pub const fn infer_payload_len(input_len: usize) -> Option<u16> {
    if input_len > EXCHANGE_INPUT_SIZE {
        None
    } else {
        Some((EXCHANGE_INPUT_OFFSET + input_len) as u16)
    }
}

/// Whether id `a` was issued after id `b` (free-running `u32` ids,
/// compared within half the id space, like TCP sequence numbers).
///
/// ```
/// use synaptic_serve::protocol::is_after;
/// assert!(is_after(5, 4));
/// assert!(!is_after(4, 4));
/// assert!(is_after(2, u32::MAX)); // across the wrap
/// ```
pub const fn is_after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// The first message id a (re)starting CPU1 uses, from the live head of its
/// outgoing ring: every id it issued before is at most `head`, so the new
/// life's ids are all after them.
pub const fn first_id_after_restart(head: u32) -> u32 {
    match head.wrapping_add(1) {
        0 => 1,
        id => id,
    }
}
