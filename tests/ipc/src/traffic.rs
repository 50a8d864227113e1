//! Messages derived from a sequence number, and a producer/consumer pair
//! that checks every field of everything it pops.
//!
//! Every field of [`message_for`] depends on the sequence number, so a lost,
//! duplicated, reordered or torn message fails the field check that names it.

use synaptic_abi::{Message, MSG_TYPE_COUNT};
use synaptic_ring::{Consumer, Producer, RingError};
use synaptic_zephyr::ztest::Outcome;
use synaptic_zephyr::{zassert, zassert_eq};

use crate::N;

/// The message with sequence number `seq`: every field a different function
/// of it (valid type and priority, so the dispatcher accepts it too).
pub fn message_for(seq: u32) -> Message {
    Message {
        msg_id: seq,
        msg_type: (seq % MSG_TYPE_COUNT as u32) as u8,
        priority: (seq % 3) as u8,
        payload_len: (seq ^ 0xA5A5) as u16,
        payload_offset: seq.wrapping_mul(0x9E37_79B9),
        timestamp_us: !seq,
        status: (seq as i32).wrapping_neg() ^ 0x5A,
    }
}

/// Fail unless `got` is a message equal to `want`, field by field.
pub fn expect_message(got: Option<Message>, want: &Message) -> Outcome {
    zassert!(got.is_some(), "expected a message, the ring was empty");
    let got = got.unwrap_or_default();
    zassert_eq!(got.msg_id, want.msg_id);
    zassert_eq!(got.msg_type, want.msg_type);
    zassert_eq!(got.priority, want.priority);
    zassert_eq!(got.payload_len, want.payload_len);
    zassert_eq!(got.payload_offset, want.payload_offset);
    zassert_eq!(got.timestamp_us, want.timestamp_us);
    zassert_eq!(got.status, want.status);
    Ok(())
}

/// A ring's two handles plus the sequence numbers sent and received.
pub struct Traffic<'a> {
    /// The producer.
    pub tx: Producer<'a, N>,
    /// The consumer.
    pub rx: Consumer<'a, N>,
    /// Messages pushed so far (the next one's sequence number).
    pub sent: u32,
    /// Messages popped and checked so far.
    pub received: u32,
}

impl<'a> Traffic<'a> {
    /// Traffic over freshly attached handles.
    pub fn new((tx, rx): (Producer<'a, N>, Consumer<'a, N>)) -> Self {
        Traffic {
            tx,
            rx,
            sent: 0,
            received: 0,
        }
    }

    /// Push the next `count` messages; each must fit.
    pub fn push(&mut self, count: u32) -> Outcome {
        for _ in 0..count {
            let pushed = self.tx.push(message_for(self.sent));
            zassert!(pushed.is_ok(), "push into a ring with room failed");
            self.sent += 1;
        }
        Ok(())
    }

    /// Pop `count` messages; each must be the next in sequence, intact.
    pub fn pop(&mut self, count: u32) -> Outcome {
        for _ in 0..count {
            let popped = self.rx.pop();
            zassert!(popped.is_ok(), "pop reported a corrupt index");
            expect_message(popped.ok().flatten(), &message_for(self.received))?;
            self.received += 1;
        }
        Ok(())
    }

    /// The ring holds `N` messages: one more push must fail with `Full`.
    pub fn expect_full(&mut self) -> Outcome {
        zassert!(
            self.tx.push(message_for(self.sent)) == Err(RingError::Full),
            "push into a full ring did not report Full"
        );
        zassert_eq!(self.rx.available().unwrap_or(0), N);
        Ok(())
    }

    /// Fill the ring to `N`, check that it refuses one more, drain it.
    pub fn fill_and_drain(&mut self) -> Outcome {
        self.push(N as u32)?;
        self.expect_full()?;
        self.pop(N as u32)
    }

    /// Nothing is waiting: pop returns `None`, the fill level is 0, the
    /// producer sees all `N` slots free.
    pub fn expect_empty(&mut self) -> Outcome {
        zassert!(self.rx.pop() == Ok(None), "pop from an empty ring");
        zassert!(self.rx.available() == Ok(0), "empty ring reports messages");
        zassert!(self.tx.free() == Ok(N), "empty ring reports used slots");
        Ok(())
    }
}
