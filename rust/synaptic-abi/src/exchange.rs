//! The exchange slot: where a tensor is staged zero-copy for one remote
//! inference, at the start of the payload pool.
//!
//! Invariants: a 64-byte header, then `input[27_648]` (one 96x96x3 frame) at
//! +64, then `output[4_096]`. Every header field read from the peer is
//! checked before use: `input_len <= 27_648`, `output_len <= 4_096`, the
//! model name NUL-terminated within 32 bytes. Read each field once into a
//! local copy, check the copy, use the copy.

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
    /// Reserved, written as zero.
    pub reserved: [u32; 4],
}

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
    assert!(offset_of!(ExchangeHeader, reserved) == 48);
    assert!(offset_of!(ExchangeSlot, input) == EXCHANGE_INPUT_OFFSET);
    assert!(offset_of!(ExchangeSlot, output) == EXCHANGE_OUTPUT_OFFSET);
    assert!(EXCHANGE_OUTPUT_OFFSET == EXCHANGE_INPUT_OFFSET + EXCHANGE_INPUT_SIZE);
    assert!(size_of::<ExchangeSlot>() == EXCHANGE_SLOT_SIZE);
    assert!(EXCHANGE_SLOT_SIZE == EXCHANGE_OUTPUT_OFFSET + EXCHANGE_OUTPUT_SIZE);
    assert!(EXCHANGE_INPUT_SIZE == 96 * 96 * 3);
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
    /// `input_len` checked against the input capacity.
    ///
    /// # Errors
    ///
    /// [`ExchangeError::InputTooLong`].
    pub fn input_len(&self) -> Result<usize, ExchangeError> {
        let len = self.input_len;
        match usize::try_from(len) {
            Ok(n) if n <= EXCHANGE_INPUT_SIZE => Ok(n),
            _ => Err(ExchangeError::InputTooLong(len)),
        }
    }

    /// `output_len` checked against the output capacity.
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
