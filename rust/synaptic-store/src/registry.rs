//! The registry: which model lives in which slot, kept twice (ping-pong).
//!
//! Each of the two registry sectors holds one record; a commit writes the
//! next generation into the sector that does *not* hold the current one,
//! so a power cut during a commit leaves the current record intact and
//! the torn one fails its CRC. At boot the valid record with the higher
//! generation wins.
//!
//! ```text
//! record: "SYNR", format u16 (2), entries u16, generation u32,
//!         entries x 68 bytes, CRC32 of everything before it
//! entry:  name [32] (all zero: unused), active u8, previous u8,
//!         state [2] u8, version [2] u32, erases [2] u32, length [2] u32,
//!         staged u8, reserved [3], security counter u32
//! ```
//!
//! Format 1 (64-byte entries, no security counter) is still read, with
//! every counter 0, so a store written before anti-rollback opens with
//! its models; the next commit writes format 2.

use crate::container::{valid_name, NAME_MAX};
use crate::{crc32, StoreError};

const MAGIC: [u8; 4] = *b"SYNR";
const FORMAT: u16 = 2;
/// Format 1: entries without the security counter.
const FORMAT_1: u16 = 1;
/// Bytes of one entry.
pub(crate) const ENTRY_LEN: usize = 68;
/// Bytes of one format-1 entry.
const ENTRY_LEN_1: usize = 64;
/// Bytes before the entries.
const HEAD_LEN: usize = 12;

/// "No slot" in `active` / `previous`.
pub(crate) const NONE: u8 = 0xFF;

/// What one A/B slot of a model holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlotState {
    /// Nothing usable (erased, or never written).
    Empty,
    /// Being written by an update: never loaded.
    Staging,
    /// A complete container whose CRCs were checked after writing.
    Valid,
}

impl SlotState {
    fn code(self) -> u8 {
        match self {
            SlotState::Empty => 0,
            SlotState::Staging => 2,
            SlotState::Valid => 1,
        }
    }

    fn from_code(c: u8) -> Option<SlotState> {
        match c {
            0 => Some(SlotState::Empty),
            1 => Some(SlotState::Valid),
            2 => Some(SlotState::Staging),
            _ => None,
        }
    }
}

/// One model's registry entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    pub(crate) name: [u8; NAME_MAX + 1],
    /// The slot loads use (`NONE`: none).
    pub(crate) active: u8,
    /// The slot a rollback returns to (`NONE`: none).
    pub(crate) previous: u8,
    pub(crate) state: [SlotState; 2],
    pub(crate) version: [u32; 2],
    /// Erases of each slot's sectors (wear), as of the last commit.
    pub(crate) erases: [u32; 2],
    /// Container bytes in each slot.
    pub(crate) len: [u32; 2],
    /// The slot holding a verified version not yet activated (`NONE`:
    /// none): what [`activate`](crate::Store::activate) switches to.
    pub(crate) staged: u8,
    /// The lowest version the store installs, activates or rolls back to
    /// (anti-rollback): raised by [`confirm`](crate::Store::confirm).
    pub(crate) security: u32,
}

impl Entry {
    pub(crate) const UNUSED: Entry = Entry {
        name: [0; NAME_MAX + 1],
        active: NONE,
        previous: NONE,
        state: [SlotState::Empty; 2],
        version: [0; 2],
        erases: [0; 2],
        len: [0; 2],
        staged: NONE,
        security: 0,
    };

    pub(crate) fn is_used(&self) -> bool {
        self.name[0] != 0
    }
}

/// A registry record: a generation and `M` entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Record<const M: usize> {
    pub(crate) generation: u32,
    pub(crate) entries: [Entry; M],
}

impl<const M: usize> Record<M> {
    pub(crate) const EMPTY: Self = Record {
        generation: 0,
        entries: [Entry::UNUSED; M],
    };

    /// Bytes of an encoded record.
    pub(crate) const LEN: usize = HEAD_LEN + M * ENTRY_LEN + 4;

    /// Encode into `out` (at least [`Self::LEN`] bytes; the rest untouched).
    pub(crate) fn encode(&self, out: &mut [u8]) {
        let b = &mut out[..Self::LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4..6].copy_from_slice(&FORMAT.to_le_bytes());
        b[6..8].copy_from_slice(&(M as u16).to_le_bytes());
        b[8..12].copy_from_slice(&self.generation.to_le_bytes());
        for (e, chunk) in self
            .entries
            .iter()
            .zip(b[HEAD_LEN..].chunks_exact_mut(ENTRY_LEN))
        {
            chunk[..32].copy_from_slice(&e.name);
            chunk[32] = e.active;
            chunk[33] = e.previous;
            chunk[34] = e.state[0].code();
            chunk[35] = e.state[1].code();
            for s in 0..2 {
                chunk[36 + 4 * s..40 + 4 * s].copy_from_slice(&e.version[s].to_le_bytes());
                chunk[44 + 4 * s..48 + 4 * s].copy_from_slice(&e.erases[s].to_le_bytes());
                chunk[52 + 4 * s..56 + 4 * s].copy_from_slice(&e.len[s].to_le_bytes());
            }
            chunk[60] = e.staged;
            chunk[61..64].fill(0);
            chunk[64..68].copy_from_slice(&e.security.to_le_bytes());
        }
        let end = Self::LEN - 4;
        let crc = crc32(&b[..end]);
        b[end..].copy_from_slice(&crc.to_le_bytes());
    }

    /// Decode a record (format 2, or format 1 with every security counter
    /// 0); `None` unless every field is well formed and the CRC matches.
    pub(crate) fn decode(b: &[u8]) -> Option<Self> {
        let entry_len = match u16::from_le_bytes([*b.get(4)?, *b.get(5)?]) {
            FORMAT => ENTRY_LEN,
            FORMAT_1 => ENTRY_LEN_1,
            _ => return None,
        };
        let len = HEAD_LEN + M * entry_len + 4;
        let b = b.get(..len)?;
        let end = len - 4;
        let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        if b[0..4] != MAGIC
            || usize::from(u16::from_le_bytes([b[6], b[7]])) != M
            || word(end) != crc32(&b[..end])
        {
            return None;
        }
        let mut record = Record {
            generation: word(8),
            entries: [Entry::UNUSED; M],
        };
        for (k, e) in record.entries.iter_mut().enumerate() {
            let at = HEAD_LEN + k * entry_len;
            let c = &b[at..at + entry_len];
            let mut name = [0u8; NAME_MAX + 1];
            name.copy_from_slice(&c[..32]);
            let used = name[0] != 0;
            if used && valid_name(&name).is_none() || !used && name.iter().any(|&x| x != 0) {
                return None;
            }
            let slot = |v: u8| v == NONE || v < 2;
            if !slot(c[32]) || !slot(c[33]) || !slot(c[60]) {
                return None;
            }
            let w = |o: usize| u32::from_le_bytes([c[o], c[o + 1], c[o + 2], c[o + 3]]);
            *e = Entry {
                name,
                active: c[32],
                previous: c[33],
                state: [SlotState::from_code(c[34])?, SlotState::from_code(c[35])?],
                version: [w(36), w(40)],
                erases: [w(44), w(48)],
                len: [w(52), w(56)],
                staged: c[60],
                security: if entry_len == ENTRY_LEN { w(64) } else { 0 },
            };
        }
        Some(record)
    }
}

/// Check a decoded record's references: an active, previous or staged
/// slot must be `Valid`.
pub(crate) fn consistent<const M: usize>(r: &Record<M>) -> Result<(), StoreError> {
    for e in r.entries.iter().filter(|e| e.is_used()) {
        for s in [e.active, e.previous, e.staged] {
            if s != NONE && e.state[usize::from(s)] != SlotState::Valid {
                return Err(StoreError::Corrupt);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record as a store written before anti-rollback has it: format 1,
    /// 64-byte entries.
    fn format_1<const M: usize>(r: &Record<M>) -> [u8; 1104] {
        let mut two = [0u8; 1104];
        r.encode(&mut two);
        let mut one = [0u8; 1104];
        one[..HEAD_LEN].copy_from_slice(&two[..HEAD_LEN]);
        one[4..6].copy_from_slice(&FORMAT_1.to_le_bytes());
        for k in 0..M {
            let from = HEAD_LEN + k * ENTRY_LEN;
            let to = HEAD_LEN + k * ENTRY_LEN_1;
            one[to..to + ENTRY_LEN_1].copy_from_slice(&two[from..from + ENTRY_LEN_1]);
        }
        let end = HEAD_LEN + M * ENTRY_LEN_1;
        let crc = crc32(&one[..end]);
        one[end..end + 4].copy_from_slice(&crc.to_le_bytes());
        one
    }

    #[test]
    fn a_format_1_record_reads_with_every_counter_zero() {
        let mut r = Record::<3>::EMPTY;
        r.generation = 41;
        r.entries[1] = Entry {
            name: *b"kws\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
            active: 0,
            previous: 1,
            state: [SlotState::Valid; 2],
            version: [7, 6],
            erases: [3, 2],
            len: [1000, 900],
            staged: NONE,
            security: 5,
        };
        let mut two = [0u8; 1104];
        r.encode(&mut two);
        assert_eq!(Record::<3>::decode(&two), Some(r));
        let old = format_1(&r);
        let mut expected = r;
        expected.entries[1].security = 0;
        assert_eq!(Record::<3>::decode(&old), Some(expected));
        // A format-1 record is still CRC-checked.
        let mut torn = old;
        torn[HEAD_LEN + 70] ^= 1;
        assert_eq!(Record::<3>::decode(&torn), None);
    }
}
