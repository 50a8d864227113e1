//! The serving protocol on top of ABI v3: which messages name an exchange
//! slot, what their payload fields say, what a `STATUS_RESP` reports, how
//! a requester asks for polled completion, and how message ids are ordered.
//!
//! # Conversation
//!
//! | CPU1 → CPU0 | payload | CPU0 → CPU1 reply (same `msg_id`) | reply payload | reply `status` |
//! |---|---|---|---|---|
//! | `MODEL_LOAD` (name in a slot's header) | the slot, [`LOOKUP_PAYLOAD_LEN`] | `MODEL_LOAD` | the slot, 0 bytes | raw model handle (> 0) or `-errno` |
//! | `INFER_REQ` (model, `input_len`, input in a slot) | the slot, [`infer_payload_len`] | `INFER_RESP` (output in the slot) | the slot, output length | output length or `-errno` |
//! | `STATUS_REQ` (timestamp) | none | `STATUS_RESP` (timestamp echoed) | none | mask of the slots CPU0 holds (≥ 0) |
//! | `MODEL_UPDATE` begin, finish, activate, rollback (`update_op`; begin: name, `update_arg` = container size) | the slot, [`LOOKUP_PAYLOAD_LEN`] | `MODEL_UPDATE` | the slot, 0 bytes | 0, the version made active (activate, rollback) or `-errno` |
//! | `MODEL_UPDATE` data (`update_arg` = offset, `input_len` bytes in a slot) | the slot, [`infer_payload_len`] | `MODEL_UPDATE` | the slot, 0 bytes | the chunk's length or `-errno` |
//!
//! A request's `status` word carries its flags
//! ([`synaptic_abi::REQUEST_FLAG_POLLED`]: reply without a doorbell
//! interrupt); unknown flag bits are refused with `-EINVAL`.
//!
//! # Invariants
//!
//! * **Slot ownership moves only with messages.** A request that names slot
//!   `i` hands it to CPU0; the reply that names slot `i` hands it back. CPU1
//!   never writes the slot in between, CPU0 never touches it outside. No
//!   shared word ever has a second writer.
//! * **One request per slot.** CPU1 sends a slot request only for a slot it
//!   owns. CPU0's intake marks the slot held when it pops the request and
//!   refuses a second request for a held slot with `-EBUSY` without
//!   reading the slot; the serving layer clears the mark only after pushing
//!   the reply. (A request that arrives between that push and the clear,
//!   i.e. after CPU1 got the slot back, takes the slot over instead of
//!   being refused: see [`SlotLedger`](crate::SlotLedger).)
//! * **Status is a barrier per slot.** CPU0's intake pops the ring in order
//!   and answers a `STATUS_REQ` at once, with the mask of held slots as it
//!   stands after every earlier request was popped. A reply is pushed before
//!   its slot's mark is cleared, so a `STATUS_RESP` with bit `i` clear, to
//!   a `STATUS_REQ` sent after a request on slot `i`, proves CPU0 is done
//!   with that request's slot (answered, refused, or never accepted), and
//!   its reply, if any, precedes the `STATUS_RESP` in the ring.
//! * **Replies may overtake each other.** Requests on different slots are
//!   served by priority, so a REALTIME request may be answered before an
//!   earlier NORMAL one; replies are matched by slot and `msg_id`.
//! * **Answers naming no slot come in request order.** CPU0's intake
//!   answers every request that names no slot (a `STATUS_REQ`, a refusal)
//!   before it pops the next, and makes the reply ring's head its own again
//!   before it pops at all. So once CPU0's published tail of ring CPU1→CPU0
//!   has passed a request, the reply ring's head counts every such answer
//!   to the requests before it.
//! * **A restarted CPU1 synchronises before it trusts a reply.** A previous
//!   life may have numbered its requests as it liked and rewound its ring's
//!   head, so no id (and no slot) proves a reply belongs to the new life.
//!   The new life pushes a `STATUS_REQ` (the sync request), drops every
//!   reply below the reply ring's head once CPU0's tail has passed it, and
//!   from then on trusts every reply but those naming a slot CPU0 may still
//!   hold for the previous life; a `STATUS_RESP` mask frees those slots
//!   ([`Client::attach`](crate::Client::attach)).
//! * **Ids continue across a CPU1 restart.** CPU1 numbers its messages from
//!   the live head of its outgoing ring ([`first_id_after_restart`]), so a
//!   well-behaved life's ids are not reused by the next (the sync above,
//!   not the ids, is what keeps a previous life's replies out).

use synaptic_abi::{EXCHANGE_HEADER_SIZE, EXCHANGE_INPUT_OFFSET, MAX_EXCHANGE_SLOTS};

/// `payload_len` of a `MODEL_LOAD`: the slot header, which holds the name.
pub const LOOKUP_PAYLOAD_LEN: u16 = EXCHANGE_HEADER_SIZE as u16;

/// `payload_len` of an `INFER_REQ` with `input_len` input bytes in a slot of
/// `capacity` input bytes: the header plus the input, the bytes CPU0 reads.
/// `None` when `input_len` exceeds the capacity or the length a `u16`.
///
/// ```
/// use synaptic_serve::protocol::infer_payload_len;
/// assert_eq!(infer_payload_len(490, 4_096), Some(554));
/// assert_eq!(infer_payload_len(27_648, 27_648), Some(27_712));
/// assert_eq!(infer_payload_len(4_097, 4_096), None);
/// ```
pub const fn infer_payload_len(input_len: usize, capacity: usize) -> Option<u16> {
    if input_len > capacity || EXCHANGE_INPUT_OFFSET + input_len > u16::MAX as usize {
        None
    } else {
        Some((EXCHANGE_INPUT_OFFSET + input_len) as u16)
    }
}

/// Whether a `STATUS_RESP` mask says CPU0 holds slot `index`.
pub const fn mask_holds(mask: i32, index: usize) -> bool {
    index < MAX_EXCHANGE_SLOTS && mask & (1 << index) != 0
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
/// outgoing ring: every id a well-behaved life issued before is at most
/// `head`, so the new life's ids are all after them.
pub const fn first_id_after_restart(head: u32) -> u32 {
    match head.wrapping_add(1) {
        0 => 1,
        id => id,
    }
}
