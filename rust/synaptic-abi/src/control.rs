//! The 64-byte control block at offset 0 of the shared region.
//!
//! Invariants: CPU0 writes `magic`, `layout_version`, `ring_entries`,
//! `shared_size` and the exchange-slot geometry (`exchange_slots`,
//! `small_input_size`, `small_output_size`) before it releases CPU1; each
//! core writes only its own `cpuN_ready` word; CPU1 alone writes the four
//! round-trip statistics (it has no console, CPU0's shell reads them) and
//! `cpu1_layout_version`, the version it was built for, before it checks the
//! block, so CPU0 can say why a CPU1 of another version never attaches. A
//! core attaching to the region checks the geometry with
//! [`ControlBlock::check`] before it touches a ring.
//!
//! ABI v2 turned four reserved words of v1 into the slot geometry and
//! `cpu1_layout_version`; v3 added the `MODEL_UPDATE` message and two words
//! of the exchange header for it; v4 turned the last two
//! reserved words into the park handshake (`park_request`, CPU0-written;
//! `park_ack`, CPU1-written), with which CPU0 holds CPU1 in RAM while it
//! writes the flash bank CPU1 executes from; v5 bounds the
//! hold (step 4 below) and makes `park_request` a word CPU0's maintenance
//! republishes like its others ([`CONTROL_WORDS`]); v6 (this version)
//! signs model updates: `MODEL_UPDATE` gains the confirm step
//! (`UPDATE_OP_CONFIRM`, the anti-rollback counter) and the refusals
//! `-ENOMSG` (unsigned), `-EACCES` (untrusted signer) and `-ERANGE`
//! (below the security counter). An image refuses a block of
//! another version by its `layout_version`, and CPU0 says which version a
//! CPU1 that never attaches was built for.
//!
//! # The park handshake
//!
//! 1. CPU0 writes a new nonzero generation into `park_request` and rings
//!    the doorbell.
//! 2. CPU1's doorbell interrupt sees the request, masks its interrupts,
//!    moves to a function in RAM and writes the generation into `park_ack`;
//!    from then until `park_request` is zero it fetches nothing from flash.
//! 3. CPU0 writes the flash once `park_ack` equals its generation, then
//!    writes zero into `park_request`; CPU1 writes zero into `park_ack` and
//!    returns from its interrupt.
//!
//! 4. (v5) CPU1 holds for a bounded number of reads of `park_request` and
//!    then runs again, ignoring that generation; CPU0 starts a write only
//!    within the first half of the bound after its request. A request
//!    already there when CPU1 attaches is ignored.
//!
//! CPU0 that does not see the acknowledgement in time writes zero and does
//! not touch the flash; a late acknowledgement names an old generation, so
//! it never passes for the next one.

use core::mem::{offset_of, size_of};

use crate::exchange::SlotGeometry;

/// Region magic: the ASCII bytes `S Y N 3` read big-endian (`0x53594E33`),
/// the value the C reference uses.
pub const MAGIC: u32 = 0x5359_4E33;
/// Layout version of this contract.
pub const LAYOUT_VERSION: u32 = 6;
/// Size of [`ControlBlock`].
pub const CONTROL_BLOCK_SIZE: usize = 64;
/// Value a core writes into its `cpuN_ready` word once it is attached.
pub const READY: u32 = 1;

/// The control block, raw wire form (plain integers, never trusted).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlBlock {
    /// [`MAGIC`].
    pub magic: u32,
    /// [`LAYOUT_VERSION`].
    pub layout_version: u32,
    /// Entries per ring (a power of two).
    pub ring_entries: u32,
    /// Size of the whole shared region in bytes.
    pub shared_size: u32,
    /// CPU0 has published the region ([`READY`]).
    pub cpu0_ready: u32,
    /// CPU1 has attached ([`READY`]).
    pub cpu1_ready: u32,
    /// Last round trip seen by CPU1, microseconds.
    pub rtt_last_us: u32,
    /// Smallest round trip, microseconds.
    pub rtt_min_us: u32,
    /// Largest round trip, microseconds.
    pub rtt_max_us: u32,
    /// Number of round trips measured.
    pub rtt_count: u32,
    /// Exchange slots in the payload pool ([`SlotGeometry::count`]).
    pub exchange_slots: u32,
    /// Input capacity of each small slot.
    pub small_input_size: u32,
    /// Output capacity of each small slot.
    pub small_output_size: u32,
    /// The layout version CPU1 was built for (CPU1-written, 0 until then).
    pub cpu1_layout_version: u32,
    /// Nonzero: the generation of CPU0's request that CPU1 park (ABI v4,
    /// CPU0-written); zero: CPU1 may run.
    pub park_request: u32,
    /// The generation CPU1 is parked for (ABI v4, CPU1-written); zero while
    /// it runs.
    pub park_ack: u32,
}

const _: () = {
    assert!(size_of::<ControlBlock>() == CONTROL_BLOCK_SIZE);
    assert!(offset_of!(ControlBlock, magic) == 0);
    assert!(offset_of!(ControlBlock, layout_version) == 4);
    assert!(offset_of!(ControlBlock, ring_entries) == 8);
    assert!(offset_of!(ControlBlock, shared_size) == 12);
    assert!(offset_of!(ControlBlock, cpu0_ready) == 16);
    assert!(offset_of!(ControlBlock, cpu1_ready) == 20);
    assert!(offset_of!(ControlBlock, rtt_last_us) == 24);
    assert!(offset_of!(ControlBlock, rtt_min_us) == 28);
    assert!(offset_of!(ControlBlock, rtt_max_us) == 32);
    assert!(offset_of!(ControlBlock, rtt_count) == 36);
    assert!(offset_of!(ControlBlock, exchange_slots) == 40);
    assert!(offset_of!(ControlBlock, small_input_size) == 44);
    assert!(offset_of!(ControlBlock, small_output_size) == 48);
    assert!(offset_of!(ControlBlock, cpu1_layout_version) == 52);
    assert!(offset_of!(ControlBlock, park_request) == 56);
    assert!(offset_of!(ControlBlock, park_ack) == 60);
};

/// The core that writes a shared word; the other only reads it (and a
/// buggy or hostile peer's writes are undone by the owner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// CPU0 writes it and keeps it true: it holds the authoritative value
    /// privately (or derives it from its build) and republishes it in its
    /// periodic maintenance.
    Cpu0,
    /// CPU1 writes it (its maintenance and every attach republish it).
    Cpu1,
}

/// One word of the control block: its field, offset and owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ControlWord {
    /// The field's name in [`ControlBlock`].
    pub name: &'static str,
    /// Byte offset in the block.
    pub offset: usize,
    /// The core that writes it.
    pub owner: Owner,
}

const fn word(name: &'static str, offset: usize, owner: Owner) -> ControlWord {
    ControlWord {
        name,
        offset,
        owner,
    }
}

/// Every word of the control block with its owner, in offset order: the
/// list CPU0's maintenance republishes its words from and the self-healing
/// tests iterate, so a word added to the block is covered by both (the
/// asserts below fail until it is listed here).
pub const CONTROL_WORDS: [ControlWord; CONTROL_BLOCK_SIZE / 4] = [
    word("magic", offset_of!(ControlBlock, magic), Owner::Cpu0),
    word(
        "layout_version",
        offset_of!(ControlBlock, layout_version),
        Owner::Cpu0,
    ),
    word(
        "ring_entries",
        offset_of!(ControlBlock, ring_entries),
        Owner::Cpu0,
    ),
    word(
        "shared_size",
        offset_of!(ControlBlock, shared_size),
        Owner::Cpu0,
    ),
    word(
        "cpu0_ready",
        offset_of!(ControlBlock, cpu0_ready),
        Owner::Cpu0,
    ),
    word(
        "cpu1_ready",
        offset_of!(ControlBlock, cpu1_ready),
        Owner::Cpu1,
    ),
    word(
        "rtt_last_us",
        offset_of!(ControlBlock, rtt_last_us),
        Owner::Cpu1,
    ),
    word(
        "rtt_min_us",
        offset_of!(ControlBlock, rtt_min_us),
        Owner::Cpu1,
    ),
    word(
        "rtt_max_us",
        offset_of!(ControlBlock, rtt_max_us),
        Owner::Cpu1,
    ),
    word(
        "rtt_count",
        offset_of!(ControlBlock, rtt_count),
        Owner::Cpu1,
    ),
    word(
        "exchange_slots",
        offset_of!(ControlBlock, exchange_slots),
        Owner::Cpu0,
    ),
    word(
        "small_input_size",
        offset_of!(ControlBlock, small_input_size),
        Owner::Cpu0,
    ),
    word(
        "small_output_size",
        offset_of!(ControlBlock, small_output_size),
        Owner::Cpu0,
    ),
    word(
        "cpu1_layout_version",
        offset_of!(ControlBlock, cpu1_layout_version),
        Owner::Cpu1,
    ),
    word(
        "park_request",
        offset_of!(ControlBlock, park_request),
        Owner::Cpu0,
    ),
    word("park_ack", offset_of!(ControlBlock, park_ack), Owner::Cpu1),
];

const _: () = {
    // One entry per word, in offset order.
    let mut i = 0;
    while i < CONTROL_WORDS.len() {
        assert!(CONTROL_WORDS[i].offset == 4 * i);
        i += 1;
    }
};

/// Why a control block does not describe the region this image was built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum LayoutError {
    /// `magic` is not [`MAGIC`] (region not published, or overwritten).
    BadMagic(u32),
    /// `layout_version` is not [`LAYOUT_VERSION`].
    Version(u32),
    /// `ring_entries` differs from this image's ring size.
    RingEntries {
        /// What this image was built with.
        expected: u32,
        /// What the control block says.
        found: u32,
    },
    /// `shared_size` differs from this image's memory map.
    SharedSize {
        /// What this image was built with.
        expected: u32,
        /// What the control block says.
        found: u32,
    },
    /// The exchange-slot geometry differs from this image's.
    Slots {
        /// What this image was built with.
        expected: SlotGeometry,
        /// What the control block says.
        found: SlotGeometry,
    },
}

impl LayoutError {
    /// The errno this error maps to at the C boundary.
    pub const fn errno(self) -> crate::Errno {
        crate::Errno::Proto
    }
}

impl ControlBlock {
    /// The block CPU0 publishes for rings of `N` entries and `slots` in a
    /// region of `shared_size` bytes (ready flags and statistics zero).
    pub const fn published<const N: usize>(shared_size: u32, slots: SlotGeometry) -> ControlBlock {
        ControlBlock {
            magic: MAGIC,
            layout_version: LAYOUT_VERSION,
            ring_entries: crate::region::ring_entries_u32::<N>(),
            shared_size,
            cpu0_ready: 0,
            cpu1_ready: 0,
            rtt_last_us: 0,
            rtt_min_us: 0,
            rtt_max_us: 0,
            rtt_count: 0,
            exchange_slots: slots.count,
            small_input_size: slots.small_input,
            small_output_size: slots.small_output,
            cpu1_layout_version: 0,
            park_request: 0,
            park_ack: 0,
        }
    }

    /// The block as its sixteen words, in offset order (the index of
    /// [`CONTROL_WORDS`]).
    pub const fn to_words(&self) -> [u32; CONTROL_BLOCK_SIZE / 4] {
        [
            self.magic,
            self.layout_version,
            self.ring_entries,
            self.shared_size,
            self.cpu0_ready,
            self.cpu1_ready,
            self.rtt_last_us,
            self.rtt_min_us,
            self.rtt_max_us,
            self.rtt_count,
            self.exchange_slots,
            self.small_input_size,
            self.small_output_size,
            self.cpu1_layout_version,
            self.park_request,
            self.park_ack,
        ]
    }

    /// The slot geometry the block describes.
    pub const fn slots(&self) -> SlotGeometry {
        SlotGeometry {
            count: self.exchange_slots,
            small_input: self.small_input_size,
            small_output: self.small_output_size,
        }
    }

    /// Check magic, version and geometry against what this image expects.
    ///
    /// # Errors
    ///
    /// The first mismatch found, as a [`LayoutError`].
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_abi::{ControlBlock, LayoutError, SlotGeometry};
    /// let slots = SlotGeometry::DEFAULT;
    /// let block = ControlBlock::published::<16>(96 * 1024, slots);
    /// assert_eq!(block.check::<16>(96 * 1024, slots), Ok(()));
    /// assert!(matches!(block.check::<8>(96 * 1024, slots), Err(LayoutError::RingEntries { .. })));
    /// let two = SlotGeometry { count: 2, ..slots };
    /// assert!(matches!(block.check::<16>(96 * 1024, two), Err(LayoutError::Slots { .. })));
    /// ```
    pub const fn check<const N: usize>(
        &self,
        shared_size: u32,
        slots: SlotGeometry,
    ) -> Result<(), LayoutError> {
        if self.magic != MAGIC {
            return Err(LayoutError::BadMagic(self.magic));
        }
        if self.layout_version != LAYOUT_VERSION {
            return Err(LayoutError::Version(self.layout_version));
        }
        let expected = crate::region::ring_entries_u32::<N>();
        if self.ring_entries != expected {
            return Err(LayoutError::RingEntries {
                expected,
                found: self.ring_entries,
            });
        }
        if self.shared_size != shared_size {
            return Err(LayoutError::SharedSize {
                expected: shared_size,
                found: self.shared_size,
            });
        }
        let found = self.slots();
        if found.count != slots.count
            || found.small_input != slots.small_input
            || found.small_output != slots.small_output
        {
            return Err(LayoutError::Slots {
                expected: slots,
                found,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic_spells_syn3() {
        assert_eq!(&MAGIC.to_be_bytes(), b"SYN3");
    }

    #[test]
    fn to_words_follows_the_word_list() {
        // Each field holds its own offset: word i must be CONTROL_WORDS[i]'s.
        let block = ControlBlock {
            magic: offset_of!(ControlBlock, magic) as u32,
            layout_version: offset_of!(ControlBlock, layout_version) as u32,
            ring_entries: offset_of!(ControlBlock, ring_entries) as u32,
            shared_size: offset_of!(ControlBlock, shared_size) as u32,
            cpu0_ready: offset_of!(ControlBlock, cpu0_ready) as u32,
            cpu1_ready: offset_of!(ControlBlock, cpu1_ready) as u32,
            rtt_last_us: offset_of!(ControlBlock, rtt_last_us) as u32,
            rtt_min_us: offset_of!(ControlBlock, rtt_min_us) as u32,
            rtt_max_us: offset_of!(ControlBlock, rtt_max_us) as u32,
            rtt_count: offset_of!(ControlBlock, rtt_count) as u32,
            exchange_slots: offset_of!(ControlBlock, exchange_slots) as u32,
            small_input_size: offset_of!(ControlBlock, small_input_size) as u32,
            small_output_size: offset_of!(ControlBlock, small_output_size) as u32,
            cpu1_layout_version: offset_of!(ControlBlock, cpu1_layout_version) as u32,
            park_request: offset_of!(ControlBlock, park_request) as u32,
            park_ack: offset_of!(ControlBlock, park_ack) as u32,
        };
        for (value, word) in block.to_words().iter().zip(CONTROL_WORDS) {
            assert_eq!(*value as usize, word.offset, "{}", word.name);
        }
        // The handshake's request and the geometry are CPU0's; the ack,
        // readiness and statistics CPU1's.
        let owner = |name| {
            CONTROL_WORDS
                .iter()
                .find(|w| w.name == name)
                .map(|w| w.owner)
        };
        assert_eq!(owner("park_request"), Some(Owner::Cpu0));
        assert_eq!(owner("park_ack"), Some(Owner::Cpu1));
        assert_eq!(owner("cpu1_ready"), Some(Owner::Cpu1));
    }

    #[test]
    fn check_reports_each_mismatch() {
        let slots = SlotGeometry::DEFAULT;
        let good = ControlBlock::published::<16>(98_304, slots);
        assert_eq!(good.check::<16>(98_304, slots), Ok(()));
        let bad_magic = ControlBlock { magic: 0, ..good };
        assert_eq!(
            bad_magic.check::<16>(98_304, slots),
            Err(LayoutError::BadMagic(0))
        );
        // A v1 peer's block is refused by its version.
        let v1 = ControlBlock {
            layout_version: 1,
            ..good
        };
        assert_eq!(v1.check::<16>(98_304, slots), Err(LayoutError::Version(1)));
        assert_eq!(
            good.check::<16>(65_536, slots),
            Err(LayoutError::SharedSize {
                expected: 65_536,
                found: 98_304
            })
        );
        let small = SlotGeometry {
            small_output: 512,
            ..slots
        };
        assert_eq!(
            good.check::<16>(98_304, small),
            Err(LayoutError::Slots {
                expected: small,
                found: slots
            })
        );
    }
}
