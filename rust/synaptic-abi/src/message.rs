//! The 20-byte message that travels through the rings, and its checked decoding.
//!
//! Invariants: [`Message`] is the raw wire form, plain integers only, so C and
//! cbindgen see the same bytes; it is never trusted. [`ValidMessage`] is what
//! a [`Message`] becomes after `TryFrom`: its type and priority are real
//! enum values. Payloads are named by an offset from the region base, never a
//! pointer; [`ValidMessage::payload_range`] checks the offset and length
//! against the payload pool before any slice exists.

use core::mem::{align_of, offset_of, size_of};
use core::ops::Range;

use crate::priority::{InvalidPriority, Priority};

/// A message on the wire: 20 bytes, `#[repr(C)]`, every field a plain integer.
///
/// This is what a ring slot holds. Read it once into a local copy, then
/// decode it with `ValidMessage::try_from(msg)` before acting on it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Message {
    /// Sender-assigned identifier; a response echoes its request's id.
    pub msg_id: u32,
    /// A [`MessageType`] wire value.
    pub msg_type: u8,
    /// A [`Priority`] wire value.
    pub priority: u8,
    /// Payload length in bytes (0: no payload).
    pub payload_len: u16,
    /// Payload offset from the region base (lens-free: both cores agree on it).
    pub payload_offset: u32,
    /// Sender's timestamp in microseconds (wraps).
    pub timestamp_us: u32,
    /// 0 or a positive count on success, a negative errno on failure.
    pub status: i32,
}

/// Size of [`Message`] on the wire.
pub const MSG_SIZE: usize = 20;

const _: () = {
    assert!(size_of::<Message>() == MSG_SIZE);
    assert!(align_of::<Message>() == 4);
    assert!(offset_of!(Message, msg_id) == 0);
    assert!(offset_of!(Message, msg_type) == 4);
    assert!(offset_of!(Message, priority) == 5);
    assert!(offset_of!(Message, payload_len) == 6);
    assert!(offset_of!(Message, payload_offset) == 8);
    assert!(offset_of!(Message, timestamp_us) == 12);
    assert!(offset_of!(Message, status) == 16);
};

/// Wire value of [`MessageType::InferReq`].
pub const MSG_TYPE_INFER_REQ: u8 = 0;
/// Wire value of [`MessageType::InferResp`].
pub const MSG_TYPE_INFER_RESP: u8 = 1;
/// Wire value of [`MessageType::ModelLoad`].
pub const MSG_TYPE_MODEL_LOAD: u8 = 2;
/// Wire value of [`MessageType::ModelUnload`].
pub const MSG_TYPE_MODEL_UNLOAD: u8 = 3;
/// Wire value of [`MessageType::StatusReq`].
pub const MSG_TYPE_STATUS_REQ: u8 = 4;
/// Wire value of [`MessageType::StatusResp`].
pub const MSG_TYPE_STATUS_RESP: u8 = 5;
/// Wire value of [`MessageType::ModelUpdate`].
pub const MSG_TYPE_MODEL_UPDATE: u8 = 6;
/// Number of message types (wire values are `0..MSG_TYPE_COUNT`).
pub const MSG_TYPE_COUNT: usize = 7;

/// What a message asks for or answers.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MessageType {
    /// Run inference on the exchange slot's input.
    InferReq = MSG_TYPE_INFER_REQ,
    /// Result of an `InferReq` (status = output length or -errno).
    InferResp = MSG_TYPE_INFER_RESP,
    /// Load a model.
    ModelLoad = MSG_TYPE_MODEL_LOAD,
    /// Unload a model.
    ModelUnload = MSG_TYPE_MODEL_UNLOAD,
    /// Ask for the peer's status.
    StatusReq = MSG_TYPE_STATUS_REQ,
    /// Answer to a `StatusReq`.
    StatusResp = MSG_TYPE_STATUS_RESP,
    /// One step of a model update CPU1 streams to CPU0's model store
    /// through an exchange slot (the step in the slot header's
    /// `update_op`); answered with the same type (ABI v3).
    ModelUpdate = MSG_TYPE_MODEL_UPDATE,
}

impl MessageType {
    /// Every type, in wire order.
    pub const ALL: [MessageType; MSG_TYPE_COUNT] = [
        MessageType::InferReq,
        MessageType::InferResp,
        MessageType::ModelLoad,
        MessageType::ModelUnload,
        MessageType::StatusReq,
        MessageType::StatusResp,
        MessageType::ModelUpdate,
    ];

    /// Index `0..MSG_TYPE_COUNT`, for per-type tables.
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The wire value.
    pub const fn wire(self) -> u8 {
        self as u8
    }
}

/// A raw type byte that names no [`MessageType`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct InvalidMessageType(pub u8);

impl TryFrom<u8> for MessageType {
    type Error = InvalidMessageType;

    fn try_from(raw: u8) -> Result<Self, Self::Error> {
        MessageType::ALL
            .get(usize::from(raw))
            .copied()
            .ok_or(InvalidMessageType(raw))
    }
}

/// Why a raw [`Message`] was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum MessageError {
    /// `msg_type` names no [`MessageType`].
    Type(InvalidMessageType),
    /// `priority` names no [`Priority`] class.
    Priority(InvalidPriority),
    /// `payload_offset + payload_len` does not lie inside the payload pool.
    PayloadOutOfBounds {
        /// The offending offset.
        offset: u32,
        /// The offending length.
        len: u16,
    },
}

impl MessageError {
    /// The errno this error maps to at the C and wire boundary.
    pub const fn errno(self) -> crate::Errno {
        match self {
            MessageError::Type(_) | MessageError::Priority(_) => crate::Errno::BadMsg,
            MessageError::PayloadOutOfBounds { .. } => crate::Errno::Fault,
        }
    }
}

impl From<InvalidMessageType> for MessageError {
    fn from(e: InvalidMessageType) -> Self {
        MessageError::Type(e)
    }
}

impl From<InvalidPriority> for MessageError {
    fn from(e: InvalidPriority) -> Self {
        MessageError::Priority(e)
    }
}

/// A message whose type and priority have been decoded and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ValidMessage {
    /// Identifier (see [`Message::msg_id`]).
    pub msg_id: u32,
    /// Decoded type.
    pub msg_type: MessageType,
    /// Decoded priority class.
    pub priority: Priority,
    /// Payload length in bytes.
    pub payload_len: u16,
    /// Payload offset from the region base, not yet bounds-checked.
    pub payload_offset: u32,
    /// Sender's timestamp.
    pub timestamp_us: u32,
    /// Status word.
    pub status: i32,
}

impl TryFrom<Message> for ValidMessage {
    type Error = MessageError;

    fn try_from(raw: Message) -> Result<Self, Self::Error> {
        Ok(ValidMessage {
            msg_id: raw.msg_id,
            msg_type: MessageType::try_from(raw.msg_type)?,
            priority: Priority::try_from(raw.priority)?,
            payload_len: raw.payload_len,
            payload_offset: raw.payload_offset,
            timestamp_us: raw.timestamp_us,
            status: raw.status,
        })
    }
}

impl From<ValidMessage> for Message {
    fn from(m: ValidMessage) -> Self {
        Message {
            msg_id: m.msg_id,
            msg_type: m.msg_type.wire(),
            priority: m.priority as u8,
            payload_len: m.payload_len,
            payload_offset: m.payload_offset,
            timestamp_us: m.timestamp_us,
            status: m.status,
        }
    }
}

impl ValidMessage {
    /// A message of `msg_type` and `priority` with every other field zero
    /// (no payload, id assigned by the sender).
    pub const fn new(msg_type: MessageType, priority: Priority) -> Self {
        ValidMessage {
            msg_id: 0,
            msg_type,
            priority,
            payload_len: 0,
            payload_offset: 0,
            timestamp_us: 0,
            status: 0,
        }
    }

    /// The payload as a byte range from the region base, checked against the
    /// payload pool `pool` (also offsets from the region base).
    ///
    /// An empty payload (`payload_len == 0`) yields an empty range at the pool
    /// start whatever the offset says.
    ///
    /// # Errors
    ///
    /// [`MessageError::PayloadOutOfBounds`] when the payload does not lie
    /// entirely inside `pool` (overflow included).
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_abi::{Message, ValidMessage, MSG_TYPE_INFER_REQ};
    /// let raw = Message { msg_type: MSG_TYPE_INFER_REQ, payload_offset: 1000, payload_len: 24, ..Message::default() };
    /// let msg = ValidMessage::try_from(raw).unwrap();
    /// assert_eq!(msg.payload_range(960..2000), Ok(1000..1024));
    /// assert!(msg.payload_range(960..1010).is_err());
    /// ```
    pub fn payload_range(&self, pool: Range<usize>) -> Result<Range<usize>, MessageError> {
        if self.payload_len == 0 {
            return Ok(pool.start..pool.start);
        }
        let error = MessageError::PayloadOutOfBounds {
            offset: self.payload_offset,
            len: self.payload_len,
        };
        let start = usize::try_from(self.payload_offset).map_err(|_| error)?;
        let end = start
            .checked_add(usize::from(self.payload_len))
            .ok_or(error)?;
        if start >= pool.start && end <= pool.end {
            Ok(start..end)
        } else {
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_type_round_trips_and_rejects_unknown() {
        for t in MessageType::ALL {
            assert_eq!(MessageType::try_from(t.wire()), Ok(t));
        }
        assert_eq!(MessageType::InferReq.wire(), 0);
        assert_eq!(MessageType::StatusResp.wire(), 5);
        assert_eq!(MessageType::ModelUpdate.wire(), 6);
        for raw in 7..=u8::MAX {
            assert_eq!(MessageType::try_from(raw), Err(InvalidMessageType(raw)));
        }
    }

    #[test]
    fn decode_checks_type_and_priority() {
        let good = Message {
            msg_id: 7,
            msg_type: MSG_TYPE_STATUS_REQ,
            priority: 2,
            ..Message::default()
        };
        let valid = ValidMessage::try_from(good).unwrap();
        assert_eq!(valid.msg_type, MessageType::StatusReq);
        assert_eq!(valid.priority, Priority::RealTime);
        assert_eq!(Message::from(valid), good);

        let bad_type = Message {
            msg_type: 9,
            ..good
        };
        assert_eq!(
            ValidMessage::try_from(bad_type),
            Err(MessageError::Type(InvalidMessageType(9)))
        );
        let bad_priority = Message {
            priority: 3,
            ..good
        };
        assert_eq!(
            ValidMessage::try_from(bad_priority),
            Err(MessageError::Priority(InvalidPriority(3)))
        );
        assert_eq!(
            MessageError::Type(InvalidMessageType(9)).errno(),
            crate::Errno::BadMsg
        );
    }

    #[test]
    fn payload_range_rejects_overflow_and_outside_pool() {
        let msg = |offset, len| {
            ValidMessage::try_from(Message {
                payload_offset: offset,
                payload_len: len,
                ..Message::default()
            })
            .unwrap()
        };
        assert_eq!(msg(100, 10).payload_range(100..110), Ok(100..110));
        assert!(msg(99, 10).payload_range(100..200).is_err());
        assert!(msg(195, 10).payload_range(100..200).is_err());
        assert!(msg(u32::MAX, 10)
            .payload_range(0..u32::MAX as usize)
            .is_err());
        assert_eq!(msg(u32::MAX, 0).payload_range(100..200), Ok(100..100));
    }
}
