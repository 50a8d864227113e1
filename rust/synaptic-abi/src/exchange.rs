//! The exchange slots: where tensors are staged zero-copy, one remote
//! request per slot, in the payload pool.
//!
//! Invariants (ABI v2): the pool holds [`SlotGeometry::count`] slots back to
//! back. Slot 0 is the *frame slot*, laid out as [`ExchangeSlot`]: a 64-byte
//! header, then `input[27_648]` (one 96x96x3 frame) at +64, then
//! `output[4_096]`. Slots 1.. are *small slots*: the same header, then
//! `small_input` input bytes, then `small_output` output bytes, each slot
//! rounded up to 64 bytes. Every size is a multiple of 16, so every tensor
//! is 16-byte aligned when the region is. Every header field read from the
//! peer is checked before use against *that slot's* capacities, the model
//! name NUL-terminated within 32 bytes. Read each field once into a local
//! copy, check the copy, use the copy.

use core::mem::{offset_of, size_of};

/// Size of [`ExchangeHeader`].
pub const EXCHANGE_HEADER_SIZE: usize = 64;
/// Capacity of the input tensor (96 x 96 x 3 bytes).
pub const EXCHANGE_INPUT_SIZE: usize = 27_648;
/// Capacity of the output tensor.
pub const EXCHANGE_OUTPUT_SIZE: usize = 4_096;
/// Offset of `input` in the slot.
pub const EXCHANGE_INPUT_OFFSET: usize = 64;
/// Offset of `output` in the slot.
pub const EXCHANGE_OUTPUT_OFFSET: usize = 27_712;
/// Size of [`ExchangeSlot`].
pub const EXCHANGE_SLOT_SIZE: usize = 31_808;
/// Bytes of `model_name`, terminating NUL included.
pub const MODEL_NAME_SIZE: usize = 32;
/// Most exchange slots a region can have (a slot mask fits one status word).
pub const MAX_EXCHANGE_SLOTS: usize = 8;
/// Default number of exchange slots (Kconfig `SYNAPTIC_EXCHANGE_SLOTS`).
pub const EXCHANGE_SLOTS_DEFAULT: u32 = 4;
/// Default input capacity of a small slot (Kconfig).
pub const SMALL_INPUT_SIZE_DEFAULT: u32 = 4_096;
/// Default output capacity of a small slot (Kconfig).
pub const SMALL_OUTPUT_SIZE_DEFAULT: u32 = 1_024;
/// Every slot starts on this boundary from the pool's start.
pub const SLOT_ALIGN: usize = 64;
/// Tensor capacities are multiples of this (their alignment in the slot).
pub const TENSOR_ALIGN: usize = 16;

/// How many exchange slots the region has and how large the small ones are.
///
/// Both images are built with one; CPU0 publishes it in the control block
/// and CPU1 refuses to attach to a different one.
///
/// # Examples
///
/// ```
/// use synaptic_abi::SlotGeometry;
/// let g = SlotGeometry::DEFAULT;
/// assert_eq!(g.count, 4);
/// assert_eq!(g.input_capacity(0), Some(27_648));
/// assert_eq!(g.input_capacity(1), Some(4_096));
/// assert_eq!(g.slot_offset(1), Some(31_808));
/// assert_eq!(g.input_capacity(4), None);
/// assert!(g.check().is_ok());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotGeometry {
    /// Slots, `1..=MAX_EXCHANGE_SLOTS`; slot 0 is the frame slot.
    pub count: u32,
    /// Input capacity of each small slot (multiple of 16).
    pub small_input: u32,
    /// Output capacity of each small slot (multiple of 16).
    pub small_output: u32,
}

/// Why a [`SlotGeometry`] is not a valid layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GeometryError {
    /// `count` is 0 or over [`MAX_EXCHANGE_SLOTS`].
    Count(u32),
    /// A small capacity is not a multiple of 16, or its `payload_len`
    /// (header plus input) would not fit a `u16`.
    Capacity(u32),
}

impl SlotGeometry {
    /// Four slots: the frame slot and three of 4,096 in / 1,024 out.
    pub const DEFAULT: SlotGeometry = SlotGeometry {
        count: EXCHANGE_SLOTS_DEFAULT,
        small_input: SMALL_INPUT_SIZE_DEFAULT,
        small_output: SMALL_OUTPUT_SIZE_DEFAULT,
    };

    /// The frame slot alone (ABI v1's single slot, in v2's layout).
    pub const SINGLE: SlotGeometry = SlotGeometry {
        count: 1,
        ..SlotGeometry::DEFAULT
    };

    /// Check the geometry's own rules (not whether it fits a region).
    ///
    /// # Errors
    ///
    /// [`GeometryError`].
    pub const fn check(&self) -> Result<(), GeometryError> {
        if self.count == 0 || self.count as usize > MAX_EXCHANGE_SLOTS {
            return Err(GeometryError::Count(self.count));
        }
        let small = [self.small_input, self.small_output];
        let mut k = 0;
        while k < small.len() {
            let c = small[k];
            if c as usize % TENSOR_ALIGN != 0
                || c as usize > u16::MAX as usize - EXCHANGE_HEADER_SIZE
            {
                return Err(GeometryError::Capacity(c));
            }
            k += 1;
        }
        Ok(())
    }

    /// Input capacity of slot `index`, `None` past the last slot.
    pub const fn input_capacity(&self, index: usize) -> Option<usize> {
        if index >= self.count as usize {
            None
        } else if index == 0 {
            Some(EXCHANGE_INPUT_SIZE)
        } else {
            Some(self.small_input as usize)
        }
    }

    /// Output capacity of slot `index`, `None` past the last slot.
    pub const fn output_capacity(&self, index: usize) -> Option<usize> {
        if index >= self.count as usize {
            None
        } else if index == 0 {
            Some(EXCHANGE_OUTPUT_SIZE)
        } else {
            Some(self.small_output as usize)
        }
    }

    /// Offset of slot `index`'s output from the slot's start.
    pub const fn output_offset(&self, index: usize) -> Option<usize> {
        match self.input_capacity(index) {
            Some(input) => Some(EXCHANGE_HEADER_SIZE + input),
            None => None,
        }
    }

    /// Size of a small slot, rounded up to [`SLOT_ALIGN`].
    pub const fn small_slot_size(&self) -> usize {
        let raw = EXCHANGE_HEADER_SIZE + self.small_input as usize + self.small_output as usize;
        raw.div_ceil(SLOT_ALIGN) * SLOT_ALIGN
    }

    /// Offset of slot `index` from the start of the payload pool.
    pub const fn slot_offset(&self, index: usize) -> Option<usize> {
        if index >= self.count as usize {
            None
        } else if index == 0 {
            Some(0)
        } else {
            Some(EXCHANGE_SLOT_SIZE + (index - 1) * self.small_slot_size())
        }
    }

    /// Bytes all slots take from the start of the payload pool.
    pub const fn pool_bytes(&self) -> usize {
        if self.count == 0 {
            0
        } else {
            EXCHANGE_SLOT_SIZE + (self.count as usize - 1) * self.small_slot_size()
        }
    }

    /// Which slot starts at `offset` from the start of the pool.
    pub const fn slot_at(&self, offset: usize) -> Option<usize> {
        // Arithmetic, not a search: the serving path asks once per request.
        if self.count == 0 {
            return None;
        }
        if offset == 0 {
            return Some(0);
        }
        let step = self.small_slot_size();
        if offset < EXCHANGE_SLOT_SIZE || step == 0 {
            return None;
        }
        let from_small = offset - EXCHANGE_SLOT_SIZE;
        let index = 1 + from_small / step;
        if from_small % step != 0 || index >= self.count as usize {
            None
        } else {
            Some(index)
        }
    }
}

/// A raw `input_len` word checked against a slot's input `capacity`.
///
/// # Errors
///
/// [`ExchangeError::InputTooLong`].
pub fn input_len_within(len: u32, capacity: usize) -> Result<usize, ExchangeError> {
    match usize::try_from(len) {
        Ok(n) if n <= capacity => Ok(n),
        _ => Err(ExchangeError::InputTooLong(len)),
    }
}

/// Header of the exchange slot, raw wire form.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExchangeHeader {
    /// Model handle the request names.
    pub model: u32,
    /// Model name, NUL-terminated within 32 bytes (for lookup by name).
    pub model_name: [u8; MODEL_NAME_SIZE],
    /// Bytes of `input` that are valid.
    pub input_len: u32,
    /// Bytes of `output` that are valid.
    pub output_len: u32,
    /// 0 or a negative errno from the last inference.
    pub infer_status: i32,
    /// `MODEL_UPDATE`: which step (an `UPDATE_OP_*` value; ABI v3).
    pub update_op: u32,
    /// `MODEL_UPDATE`: the container's total size (`UPDATE_OP_BEGIN`) or
    /// the offset in it of the chunk in `input` (`UPDATE_OP_DATA`).
    pub update_arg: u32,
    /// Reserved, written as zero.
    pub reserved: [u32; 2],
}

/// `MODEL_UPDATE` step: start an update of the model named in
/// `model_name`, `update_arg` container bytes long.
pub const UPDATE_OP_BEGIN: u32 = 1;
/// `MODEL_UPDATE` step: `input_len` container bytes in `input`, at offset
/// `update_arg` of the container (chunks in order, none skipped).
pub const UPDATE_OP_DATA: u32 = 2;
/// `MODEL_UPDATE` step: every byte is in; verify the container from flash.
pub const UPDATE_OP_FINISH: u32 = 3;
/// `MODEL_UPDATE` step: make the verified version the active one; a model
/// CPU0 serves is hot-swapped to it. The reply's status is its version.
pub const UPDATE_OP_ACTIVATE: u32 = 4;
/// `MODEL_UPDATE` step: make the previous version of the model named in
/// `model_name` active again (hot-swapped likewise); status: its version.
pub const UPDATE_OP_ROLLBACK: u32 = 5;
/// `MODEL_UPDATE` step (v6): confirm the active version of the model last
/// activated: its security counter rises to that version, and no older
/// version installs or is rolled back to again. Status: the version.
pub const UPDATE_OP_CONFIRM: u32 = 6;

/// The whole exchange slot, raw wire form. Too large for a stack: it only
/// ever exists in the shared region.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct ExchangeSlot {
    /// Header.
    pub header: ExchangeHeader,
    /// Input tensor bytes.
    pub input: [u8; EXCHANGE_INPUT_SIZE],
    /// Output tensor bytes.
    pub output: [u8; EXCHANGE_OUTPUT_SIZE],
}

const _: () = {
    assert!(size_of::<ExchangeHeader>() == EXCHANGE_HEADER_SIZE);
    assert!(offset_of!(ExchangeHeader, model) == 0);
    assert!(offset_of!(ExchangeHeader, model_name) == 4);
    assert!(offset_of!(ExchangeHeader, input_len) == 36);
    assert!(offset_of!(ExchangeHeader, output_len) == 40);
    assert!(offset_of!(ExchangeHeader, infer_status) == 44);
    assert!(offset_of!(ExchangeHeader, update_op) == 48);
    assert!(offset_of!(ExchangeHeader, update_arg) == 52);
    assert!(offset_of!(ExchangeHeader, reserved) == 56);
    assert!(offset_of!(ExchangeSlot, input) == EXCHANGE_INPUT_OFFSET);
    assert!(offset_of!(ExchangeSlot, output) == EXCHANGE_OUTPUT_OFFSET);
    assert!(EXCHANGE_OUTPUT_OFFSET == EXCHANGE_INPUT_OFFSET + EXCHANGE_INPUT_SIZE);
    assert!(size_of::<ExchangeSlot>() == EXCHANGE_SLOT_SIZE);
    assert!(EXCHANGE_SLOT_SIZE == EXCHANGE_OUTPUT_OFFSET + EXCHANGE_OUTPUT_SIZE);
    assert!(EXCHANGE_INPUT_SIZE == 96 * 96 * 3);
    assert!(EXCHANGE_SLOT_SIZE % SLOT_ALIGN == 0);
    assert!(EXCHANGE_OUTPUT_OFFSET % TENSOR_ALIGN == 0);
    assert!(SlotGeometry::DEFAULT.check().is_ok());
    // A slot mask of every slot fits the positive half of a status word.
    assert!(MAX_EXCHANGE_SLOTS < 31);
};

/// Why an exchange header was rejected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExchangeError {
    /// `input_len` exceeds [`EXCHANGE_INPUT_SIZE`].
    InputTooLong(u32),
    /// `output_len` exceeds [`EXCHANGE_OUTPUT_SIZE`].
    OutputTooLong(u32),
    /// No NUL within [`MODEL_NAME_SIZE`] bytes.
    NameNotTerminated,
    /// A name to store is longer than 31 bytes or contains a NUL.
    NameInvalid,
}

impl ExchangeError {
    /// The errno this error maps to at the C and wire boundary.
    pub const fn errno(self) -> crate::Errno {
        match self {
            ExchangeError::InputTooLong(_) | ExchangeError::OutputTooLong(_) => {
                crate::Errno::TooBig
            }
            ExchangeError::NameNotTerminated | ExchangeError::NameInvalid => crate::Errno::Inval,
        }
    }
}

impl ExchangeHeader {
    /// `input_len` checked against the frame slot's input capacity.
    ///
    /// # Errors
    ///
    /// [`ExchangeError::InputTooLong`].
    pub fn input_len(&self) -> Result<usize, ExchangeError> {
        self.input_len_within(EXCHANGE_INPUT_SIZE)
    }

    /// `input_len` checked against a slot's input `capacity`.
    ///
    /// # Errors
    ///
    /// [`ExchangeError::InputTooLong`].
    pub fn input_len_within(&self, capacity: usize) -> Result<usize, ExchangeError> {
        input_len_within(self.input_len, capacity)
    }

    /// `output_len` checked against the frame slot's output capacity.
    ///
    /// # Errors
    ///
    /// [`ExchangeError::OutputTooLong`].
    pub fn output_len(&self) -> Result<usize, ExchangeError> {
        let len = self.output_len;
        match usize::try_from(len) {
            Ok(n) if n <= EXCHANGE_OUTPUT_SIZE => Ok(n),
            _ => Err(ExchangeError::OutputTooLong(len)),
        }
    }

    /// The model name without its NUL.
    ///
    /// # Errors
    ///
    /// [`ExchangeError::NameNotTerminated`] when no NUL lies within 32 bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_abi::ExchangeHeader;
    /// let mut header = ExchangeHeader::default();
    /// header.set_model_name(b"kws").unwrap();
    /// assert_eq!(header.model_name(), Ok(&b"kws"[..]));
    /// header.model_name = [b'x'; 32];
    /// assert!(header.model_name().is_err());
    /// ```
    pub fn model_name(&self) -> Result<&[u8], ExchangeError> {
        let end = self
            .model_name
            .iter()
            .position(|&b| b == 0)
            .ok_or(ExchangeError::NameNotTerminated)?;
        Ok(&self.model_name[..end])
    }

    /// Store `name` NUL-terminated and NUL-padded.
    ///
    /// # Errors
    ///
    /// [`ExchangeError::NameInvalid`] when `name` is longer than 31 bytes or
    /// contains a NUL.
    pub fn set_model_name(&mut self, name: &[u8]) -> Result<(), ExchangeError> {
        if name.len() >= MODEL_NAME_SIZE || name.contains(&0) {
            return Err(ExchangeError::NameInvalid);
        }
        self.model_name = [0; MODEL_NAME_SIZE];
        self.model_name[..name.len()].copy_from_slice(name);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_bounded() {
        let mut h = ExchangeHeader {
            input_len: EXCHANGE_INPUT_SIZE as u32,
            output_len: EXCHANGE_OUTPUT_SIZE as u32,
            ..ExchangeHeader::default()
        };
        assert_eq!(h.input_len(), Ok(EXCHANGE_INPUT_SIZE));
        assert_eq!(h.output_len(), Ok(EXCHANGE_OUTPUT_SIZE));
        h.input_len += 1;
        h.output_len = u32::MAX;
        assert_eq!(
            h.input_len(),
            Err(ExchangeError::InputTooLong(EXCHANGE_INPUT_SIZE as u32 + 1))
        );
        assert_eq!(h.output_len(), Err(ExchangeError::OutputTooLong(u32::MAX)));
    }

    #[test]
    fn geometry_tiles_the_pool() {
        let g = SlotGeometry::DEFAULT;
        assert_eq!(g.small_slot_size(), 64 + 4_096 + 1_024);
        for k in 1..g.count as usize {
            let end = g.slot_offset(k - 1).unwrap()
                + if k == 1 {
                    EXCHANGE_SLOT_SIZE
                } else {
                    g.small_slot_size()
                };
            assert_eq!(g.slot_offset(k), Some(end));
            assert_eq!(g.slot_at(end), Some(k));
            assert_eq!(g.output_offset(k), Some(64 + 4_096));
        }
        assert_eq!(g.pool_bytes(), EXCHANGE_SLOT_SIZE + 3 * 5_184);
        assert_eq!(g.slot_at(0), Some(0));
        assert_eq!(g.slot_at(1), None);
        assert_eq!(g.slot_at(EXCHANGE_SLOT_SIZE + 8), None);
        assert_eq!(g.slot_at(g.pool_bytes()), None, "past the last slot");
        assert_eq!(g.slot_offset(4), None);
        let one = SlotGeometry { count: 1, ..g };
        assert_eq!(one.slot_at(EXCHANGE_SLOT_SIZE), None);
        let odd = SlotGeometry {
            small_input: 100,
            ..g
        };
        assert_eq!(odd.check(), Err(GeometryError::Capacity(100)));
        let none = SlotGeometry { count: 0, ..g };
        assert_eq!(none.check(), Err(GeometryError::Count(0)));
        assert_eq!(none.pool_bytes(), 0);
        assert_eq!(none.slot_at(0), None);
        let many = SlotGeometry { count: 9, ..g };
        assert_eq!(many.check(), Err(GeometryError::Count(9)));
        let one = SlotGeometry { count: 1, ..g };
        assert_eq!(one.pool_bytes(), EXCHANGE_SLOT_SIZE);
        assert_eq!(one.input_capacity(1), None);
    }

    #[test]
    fn names_are_nul_terminated_within_32_bytes() {
        let mut h = ExchangeHeader::default();
        assert_eq!(h.model_name(), Ok(&b""[..]));
        h.set_model_name(&[b'a'; 31]).unwrap();
        assert_eq!(h.model_name(), Ok(&[b'a'; 31][..]));
        assert_eq!(
            h.set_model_name(&[b'a'; 32]),
            Err(ExchangeError::NameInvalid)
        );
        assert_eq!(h.set_model_name(b"a\0b"), Err(ExchangeError::NameInvalid));
        h.model_name = [b'z'; 32];
        assert_eq!(h.model_name(), Err(ExchangeError::NameNotTerminated));
    }
}
