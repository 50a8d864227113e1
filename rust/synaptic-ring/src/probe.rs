//! Non-generic instantiations of the push and pop paths, compiled only under
//! `--cfg synaptic_probe`, so `scripts/check-no-rmw.sh` can disassemble what
//! the thumb targets really execute.
//!
//! Invariant checked there: no exclusive (read-modify-write) instruction,
//! only plain loads/stores and barriers.

use synaptic_abi::{Message, RING_ENTRIES_DEFAULT};

use crate::{Consumer, Producer, RingError};

/// `Producer::push` on a default-size ring.
#[no_mangle]
pub extern "C" fn synaptic_probe_push(
    producer: &mut Producer<'static, RING_ENTRIES_DEFAULT>,
    msg: &Message,
) -> i32 {
    match producer.push(*msg) {
        Ok(()) => 0,
        Err(e) => e.errno().negative(),
    }
}

/// `Consumer::pop` on a default-size ring.
#[no_mangle]
pub extern "C" fn synaptic_probe_pop(
    consumer: &mut Consumer<'static, RING_ENTRIES_DEFAULT>,
    out: &mut Message,
) -> i32 {
    match consumer.pop() {
        Ok(Some(msg)) => {
            *out = msg;
            1
        }
        Ok(None) => 0,
        Err(e @ RingError::Corrupt { .. }) | Err(e @ RingError::Full) => e.errno().negative(),
    }
}
