//! The container a model is stored in: a 96-byte header (name, version,
//! payload length and CRC, input and output shapes), in format 2 a
//! signature block ([`crate::signature`]), and the `.tflite` payload.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "SYNM"
//!      4     2  format (1: unsigned; 2: signed, the signature block follows)
//!      6     2  header length (96)
//!      8    32  name, UTF-8, NUL-padded (1..=31 bytes)
//!     40     4  model version
//!     44     4  payload length
//!     48     4  payload CRC32 (ISO-HDLC)
//!     52     4  input dtype, input rank, output dtype, output rank
//!     56    16  input dimensions (4 x u32; 1 past the rank)
//!     72    16  output dimensions
//!     88     4  reserved (0)
//!     92     4  CRC32 of bytes 0..92
//! ```
//! All words little-endian.

use crate::signature::SIGNATURE_LEN;
use crate::{crc32, StoreError};

/// Bytes of the header.
pub const HEADER_LEN: usize = 96;
/// Longest name in bytes (one NUL at least).
pub const NAME_MAX: usize = 31;
const MAGIC: [u8; 4] = *b"SYNM";
/// Format of an unsigned container.
const FORMAT_UNSIGNED: u16 = 1;
/// Format of a signed one (a [`SignatureBlock`](crate::signature::SignatureBlock) after the header).
const FORMAT_SIGNED: u16 = 2;

/// A tensor's type code and shape, as the container records them (the
/// type codes are `.tflite`'s `TensorType`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorShape {
    /// `.tflite` `TensorType` code (9: int8).
    pub dtype: u8,
    /// Dimensions used, 0..=4.
    pub rank: u8,
    /// Dimensions; 1 past the rank.
    pub dims: [u32; 4],
}

impl TensorShape {
    /// An int8 tensor of shape `dims` (at most 4 used; the rest 1).
    pub fn int8(dims: &[u32]) -> TensorShape {
        let rank = dims.len().min(4);
        let mut d = [1u32; 4];
        d[..rank].copy_from_slice(&dims[..rank]);
        TensorShape {
            dtype: 9,
            rank: rank as u8,
            dims: d,
        }
    }
}

/// A container header, decoded and checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    name: [u8; NAME_MAX + 1],
    /// The model's version (the store orders nothing by it; it is reported).
    pub version: u32,
    /// Payload bytes after the header.
    pub payload_len: u32,
    /// CRC32 of the payload.
    pub payload_crc: u32,
    /// The model's input.
    pub input: TensorShape,
    /// The model's output.
    pub output: TensorShape,
    /// Format 2: a signature block follows the header.
    pub signed: bool,
}

impl Header {
    /// A header for `payload` named `name`.
    ///
    /// # Errors
    ///
    /// [`StoreError::BadName`]; [`StoreError::TooLarge`] beyond `u32`.
    pub fn new(
        name: &str,
        version: u32,
        payload: &[u8],
        input: TensorShape,
        output: TensorShape,
    ) -> Result<Header, StoreError> {
        Ok(Header {
            name: encode_name(name)?,
            version,
            payload_len: u32::try_from(payload.len()).map_err(|_| StoreError::TooLarge)?,
            payload_crc: crc32(payload),
            input,
            output,
            signed: false,
        })
    }

    /// The model's name.
    pub fn name(&self) -> &str {
        name_str(&self.name)
    }

    /// Bytes before the payload: the header, and the signature block of a
    /// signed container.
    pub fn preamble_len(&self) -> usize {
        HEADER_LEN + if self.signed { SIGNATURE_LEN } else { 0 }
    }

    /// Bytes of the whole container (`usize::MAX` when it cannot be
    /// addressed: a hostile header's length near `u32::MAX` on a 32-bit
    /// core, which no slot or buffer then matches).
    pub fn total_len(&self) -> usize {
        self.preamble_len()
            .saturating_add(usize::try_from(self.payload_len).unwrap_or(usize::MAX))
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let mut b = [0u8; HEADER_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        let format = if self.signed {
            FORMAT_SIGNED
        } else {
            FORMAT_UNSIGNED
        };
        b[4..6].copy_from_slice(&format.to_le_bytes());
        b[6..8].copy_from_slice(&(HEADER_LEN as u16).to_le_bytes());
        b[8..40].copy_from_slice(&self.name);
        put(&mut b, 40, self.version);
        put(&mut b, 44, self.payload_len);
        put(&mut b, 48, self.payload_crc);
        b[52..56].copy_from_slice(&[
            self.input.dtype,
            self.input.rank,
            self.output.dtype,
            self.output.rank,
        ]);
        for (k, (i, o)) in self.input.dims.iter().zip(&self.output.dims).enumerate() {
            put(&mut b, 56 + 4 * k, *i);
            put(&mut b, 72 + 4 * k, *o);
        }
        let crc = crc32(&b[..92]);
        put(&mut b, 92, crc);
        b
    }

    /// Decode and check a header (magic, format, length, CRC, name, ranks).
    ///
    /// # Errors
    ///
    /// [`StoreError::BadContainer`].
    pub fn decode(b: &[u8]) -> Result<Header, StoreError> {
        let b: &[u8; HEADER_LEN] = b
            .get(..HEADER_LEN)
            .and_then(|b| b.try_into().ok())
            .ok_or(StoreError::BadContainer)?;
        let format = u16::from_le_bytes([b[4], b[5]]);
        let ok = b[0..4] == MAGIC
            && (format == FORMAT_UNSIGNED || format == FORMAT_SIGNED)
            && usize::from(u16::from_le_bytes([b[6], b[7]])) == HEADER_LEN
            && get(b, 92) == crc32(&b[..92]);
        if !ok {
            return Err(StoreError::BadContainer);
        }
        let mut name = [0u8; NAME_MAX + 1];
        name.copy_from_slice(&b[8..40]);
        if valid_name(&name).is_none() {
            return Err(StoreError::BadContainer);
        }
        let shape = |dtype: u8, rank: u8, at: usize| -> Result<TensorShape, StoreError> {
            if rank > 4 {
                return Err(StoreError::BadContainer);
            }
            Ok(TensorShape {
                dtype,
                rank,
                dims: core::array::from_fn(|k| get(b, at + 4 * k)),
            })
        };
        Ok(Header {
            name,
            version: get(b, 40),
            payload_len: get(b, 44),
            payload_crc: get(b, 48),
            input: shape(b[52], b[53], 56)?,
            output: shape(b[54], b[55], 72)?,
            signed: format == FORMAT_SIGNED,
        })
    }
}

/// Check a whole container held in memory as the store checks one in
/// flash at the end of an update: header, length, payload CRC, what
/// `trust` admits, the version against `security` (the model's
/// anti-rollback counter), the signature, the payload's digest. For hosts (the packing
/// tool's `verify`) and for fuzzing the parser and the verifier.
///
/// # Errors
///
/// [`StoreError::BadContainer`], [`StoreError::Length`],
/// [`StoreError::CrcMismatch`], [`StoreError::Unsigned`],
/// [`StoreError::UntrustedKey`], [`StoreError::Downgrade`],
/// [`StoreError::BadSignature`].
pub fn check(
    bytes: &[u8],
    trust: &crate::signature::Trust<'_>,
    security: u32,
) -> Result<Header, StoreError> {
    use crate::signature::{check_payload, sha256, SignatureBlock};
    let header = Header::decode(bytes)?;
    if bytes.len() != header.total_len() {
        return Err(StoreError::Length);
    }
    let payload = &bytes[header.preamble_len()..];
    if crc32(payload) != header.payload_crc {
        return Err(StoreError::CrcMismatch);
    }
    let block = if header.signed {
        Some(SignatureBlock::decode(&bytes[HEADER_LEN..])?)
    } else {
        None
    };
    trust.admit(block.as_ref())?;
    if header.version < security {
        return Err(StoreError::Downgrade);
    }
    let head: &[u8; HEADER_LEN] = bytes[..HEADER_LEN]
        .try_into()
        .map_err(|_| StoreError::BadContainer)?;
    trust.verify_header(head, block.as_ref())?;
    if let Some(b) = &block {
        check_payload(b, &sha256(payload))?;
    }
    Ok(header)
}

fn put(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

fn get(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// `name` NUL-padded to 32 bytes.
pub(crate) fn encode_name(name: &str) -> Result<[u8; NAME_MAX + 1], StoreError> {
    let bytes = name.as_bytes();
    if bytes.is_empty() || bytes.len() > NAME_MAX || bytes.contains(&0) {
        return Err(StoreError::BadName);
    }
    let mut out = [0u8; NAME_MAX + 1];
    out[..bytes.len()].copy_from_slice(bytes);
    Ok(out)
}

/// The name in a NUL-padded field, if it is one (UTF-8, 1..=31 bytes,
/// zeros after).
pub(crate) fn valid_name(field: &[u8; NAME_MAX + 1]) -> Option<&str> {
    let len = field.iter().position(|&c| c == 0)?;
    if len == 0 || field[len..].iter().any(|&c| c != 0) {
        return None;
    }
    core::str::from_utf8(&field[..len]).ok()
}

pub(crate) fn name_str(field: &[u8; NAME_MAX + 1]) -> &str {
    valid_name(field).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(dims: [u32; 4], rank: u8) -> TensorShape {
        TensorShape {
            dtype: 9,
            rank,
            dims,
        }
    }

    #[test]
    fn a_header_round_trips_and_every_corruption_is_refused() {
        let payload = [1u8, 2, 3, 4, 5];
        let h = Header::new(
            "kws",
            7,
            &payload,
            shape([1, 49, 40, 1], 4),
            shape([1, 4, 1, 1], 2),
        )
        .unwrap();
        let bytes = h.encode();
        assert_eq!(Header::decode(&bytes), Ok(h));
        assert_eq!(h.name(), "kws");
        assert_eq!(h.total_len(), HEADER_LEN + 5);
        let signed = Header { signed: true, ..h };
        assert_eq!(Header::decode(&signed.encode()), Ok(signed));
        assert_eq!(signed.total_len(), HEADER_LEN + SIGNATURE_LEN + 5);
        for i in 0..HEADER_LEN {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes;
                b[i] ^= bit;
                assert_eq!(
                    Header::decode(&b),
                    Err(StoreError::BadContainer),
                    "byte {i}"
                );
            }
        }
        assert_eq!(
            Header::decode(&bytes[..HEADER_LEN - 1]),
            Err(StoreError::BadContainer)
        );
    }

    #[test]
    fn names_are_checked() {
        let s = TensorShape::default();
        assert_eq!(Header::new("", 1, &[], s, s), Err(StoreError::BadName));
        assert_eq!(
            Header::new(&"x".repeat(32), 1, &[], s, s),
            Err(StoreError::BadName)
        );
        assert_eq!(Header::new("a\0b", 1, &[], s, s), Err(StoreError::BadName));
        assert!(Header::new(&"x".repeat(31), 1, &[], s, s).is_ok());
    }
}
