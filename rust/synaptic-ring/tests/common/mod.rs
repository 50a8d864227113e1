//! Messages whose every field is derived from a sequence number, so a lost,
//! duplicated, reordered or torn message is caught by `check`.

use synaptic_abi::Message;

/// The message with sequence number `seq`.
pub fn message(seq: u32) -> Message {
    Message {
        msg_id: seq,
        msg_type: (seq % 6) as u8,
        priority: (seq % 3) as u8,
        payload_len: (seq.wrapping_mul(7) >> 3) as u16,
        payload_offset: seq ^ 0xA5A5_A5A5,
        timestamp_us: seq.wrapping_mul(2_654_435_761),
        status: seq.rotate_left(13) as i32,
    }
}

/// Panics unless `got` is exactly `message(seq)`.
#[allow(dead_code)]
pub fn check(seq: u32, got: &synaptic_abi::Message) {
    assert_eq!(*got, message(seq), "message {seq} lost, reordered or torn");
}
