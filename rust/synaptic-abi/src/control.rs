//! The 64-byte control block at offset 0 of the shared region.
//!
//! Invariants: CPU0 writes `magic`, `layout_version`, `ring_entries` and
//! `shared_size` before it releases CPU1; each core writes only its own
//! `cpuN_ready` word; CPU1 alone writes the four round-trip statistics (it
//! has no console, CPU0's shell reads them). A core attaching to the region
//! checks the geometry with [`ControlBlock::check`] before it touches a ring.

use core::mem::{offset_of, size_of};

/// Region magic: the ASCII bytes `S Y N 3` read big-endian (`0x53594E33`),
/// the value the C reference uses.
pub const MAGIC: u32 = 0x5359_4E33;
/// Layout version of this contract.
pub const LAYOUT_VERSION: u32 = 1;
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
    /// Reserved, written as zero.
    pub reserved: [u32; 6],
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
    assert!(offset_of!(ControlBlock, reserved) == 40);
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
}

impl LayoutError {
    /// The errno this error maps to at the C boundary.
    pub const fn errno(self) -> crate::Errno {
        crate::Errno::Proto
    }
}

impl ControlBlock {
    /// The block CPU0 publishes for rings of `N` entries in a region of
    /// `shared_size` bytes (ready flags and statistics zero).
    pub const fn published<const N: usize>(shared_size: u32) -> ControlBlock {
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
            reserved: [0; 6],
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
    /// use synaptic_abi::{ControlBlock, LayoutError};
    /// let block = ControlBlock::published::<16>(96 * 1024);
    /// assert_eq!(block.check::<16>(96 * 1024), Ok(()));
    /// assert!(matches!(block.check::<8>(96 * 1024), Err(LayoutError::RingEntries { .. })));
    /// ```
    pub const fn check<const N: usize>(&self, shared_size: u32) -> Result<(), LayoutError> {
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
    fn check_reports_each_mismatch() {
        let good = ControlBlock::published::<16>(98_304);
        assert_eq!(good.check::<16>(98_304), Ok(()));
        let bad_magic = ControlBlock { magic: 0, ..good };
        assert_eq!(bad_magic.check::<16>(98_304), Err(LayoutError::BadMagic(0)));
        let bad_version = ControlBlock {
            layout_version: 2,
            ..good
        };
        assert_eq!(
            bad_version.check::<16>(98_304),
            Err(LayoutError::Version(2))
        );
        assert_eq!(
            good.check::<16>(65_536),
            Err(LayoutError::SharedSize {
                expected: 65_536,
                found: 98_304
            })
        );
    }
}
