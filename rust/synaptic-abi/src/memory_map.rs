//! Per-platform memory maps: where each core's private RAM and the shared
//! window lie, and the address aliases each core sees them through.
//!
//! Invariants, asserted at compile time for every map: CPU0 private RAM,
//! the shared window and CPU1 private RAM tile one contiguous range with no
//! gap or overlap, in that order; the shared window holds the default region
//! (control block, two rings, exchange slot).
//!
//! Addresses are the plain (non-secure) lens. CPU0 runs Secure and adds its
//! alias ([`MemoryMap::cpu0_alias`], `0x1000_0000`) to every address; CPU1
//! adds nothing. Two values escape the alias and must not have it added:
//! **the CPU1 boot vector** ([`MemoryMap::cpu1_image_base`], always in CPU1's
//! own lens, even when CPU0 writes it) and **payload offsets** (lens-free by
//! construction).

use crate::region::{region_size, RING_ENTRIES_DEFAULT};

/// One of the two cores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Core {
    /// The runtime core (FPU, TrustZone, MPU, NPU).
    Cpu0,
    /// The application core (no FPU, no MPU).
    Cpu1,
}

/// A platform's RAM layout, in the plain lens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryMap {
    /// Start of CPU0's private RAM.
    pub cpu0_private_base: u32,
    /// Size of CPU0's private RAM.
    pub cpu0_private_size: u32,
    /// Start of the shared window (the region base).
    pub shared_base: u32,
    /// Size of the shared window.
    pub shared_size: u32,
    /// Start of CPU1's private RAM.
    pub cpu1_private_base: u32,
    /// Size of CPU1's private RAM (0: single-core map, no CPU1).
    pub cpu1_private_size: u32,
    /// CPU1's image (vector table), **in CPU1's lens**: CPU0 writes this value
    /// into the boot register as is, without its alias.
    pub cpu1_image_base: u32,
    /// Added by CPU0 to every plain address (Secure alias).
    pub cpu0_alias: u32,
    /// Added by CPU1 to every plain address.
    pub cpu1_alias: u32,
}

impl MemoryMap {
    /// Whether the three RAM ranges tile with no gap or overlap (and do not
    /// wrap the address space).
    pub const fn tiles(&self) -> bool {
        let cpu0_end = self.cpu0_private_base as u64 + self.cpu0_private_size as u64;
        let shared_end = self.shared_base as u64 + self.shared_size as u64;
        let cpu1_end = self.cpu1_private_base as u64 + self.cpu1_private_size as u64;
        cpu0_end == self.shared_base as u64
            && shared_end == self.cpu1_private_base as u64
            && cpu1_end <= u32::MAX as u64 + 1
    }

    /// Whether this map has a second core.
    pub const fn is_dual_core(&self) -> bool {
        self.cpu1_private_size != 0
    }

    /// The alias `core` adds to plain addresses.
    pub const fn alias(&self, core: Core) -> u32 {
        match core {
            Core::Cpu0 => self.cpu0_alias,
            Core::Cpu1 => self.cpu1_alias,
        }
    }

    /// The region base as `core` addresses it.
    pub const fn shared_base_for(&self, core: Core) -> u32 {
        self.shared_base.wrapping_add(self.alias(core))
    }
}

/// Secure alias CPU0 adds on both dual-core parts.
pub const SECURE_ALIAS: u32 = 0x1000_0000;
/// CPU0 private RAM size on both dual-core parts (256 KiB).
pub const CPU0_PRIVATE_SIZE: u32 = 256 * 1024;
/// Shared window size on both dual-core parts (96 KiB).
pub const SHARED_SIZE: u32 = 96 * 1024;
/// CPU1 private RAM size on both dual-core parts (64 KiB).
pub const CPU1_PRIVATE_SIZE: u32 = 64 * 1024;

/// MCXN947: CPU0 private RAM.
pub const MCXN947_CPU0_PRIVATE_BASE: u32 = 0x2000_0000;
/// MCXN947: shared window.
pub const MCXN947_SHARED_BASE: u32 = 0x2004_0000;
/// MCXN947: CPU1 private RAM.
pub const MCXN947_CPU1_PRIVATE_BASE: u32 = 0x2005_8000;
/// MCXN947: CPU1 image, XIP from flash bank 1, CPU1's lens.
pub const MCXN947_CPU1_IMAGE_BASE: u32 = 0x0010_0000;

/// MCXN947 (FRDM-MCXN947).
pub const MCXN947: MemoryMap = MemoryMap {
    cpu0_private_base: MCXN947_CPU0_PRIVATE_BASE,
    cpu0_private_size: CPU0_PRIVATE_SIZE,
    shared_base: MCXN947_SHARED_BASE,
    shared_size: SHARED_SIZE,
    cpu1_private_base: MCXN947_CPU1_PRIVATE_BASE,
    cpu1_private_size: CPU1_PRIVATE_SIZE,
    cpu1_image_base: MCXN947_CPU1_IMAGE_BASE,
    cpu0_alias: SECURE_ALIAS,
    cpu1_alias: 0,
};

/// AN521: CPU0 private RAM. The SSE-200 SRAM at `0x2800_0000` (plain lens,
/// what CPU1 uses) is the same bytes CPU0 sees at `0x3800_0000` (Secure
/// alias). The three ranges tile its first 416 KiB with the MCXN947's sizes
/// and offsets: the layout code and asserts are shared unchanged.
pub const AN521_CPU0_PRIVATE_BASE: u32 = 0x2800_0000;
/// AN521: shared window (CPU0 sees it at `0x3804_0000`).
pub const AN521_SHARED_BASE: u32 = 0x2804_0000;
/// AN521: CPU1 private RAM.
pub const AN521_CPU1_PRIVATE_BASE: u32 = 0x2805_8000;
/// AN521: CPU1 image (vector table) in CPU1's lens: where `mps2/an521/cpu1`
/// links its code (the board's `code` node: the 468 KiB at the top of the
/// 4 MiB code SRAM that TF-M's AN521 layout leaves unused). CPU0 reads the
/// same bytes at `0x1038_B000` through its Secure alias, but writes this
/// value, without the alias, into `INITSVTOR1`. It does not mirror the
/// MCXN947 value: the board decides, and the map follows the board.
pub const AN521_CPU1_IMAGE_BASE: u32 = 0x0038_B000;

/// MPS2 AN521 under QEMU (`mps2/an521/cpu0` + `mps2/an521/cpu1`).
pub const AN521: MemoryMap = MemoryMap {
    cpu0_private_base: AN521_CPU0_PRIVATE_BASE,
    cpu0_private_size: CPU0_PRIVATE_SIZE,
    shared_base: AN521_SHARED_BASE,
    shared_size: SHARED_SIZE,
    cpu1_private_base: AN521_CPU1_PRIVATE_BASE,
    cpu1_private_size: CPU1_PRIVATE_SIZE,
    cpu1_image_base: AN521_CPU1_IMAGE_BASE,
    cpu0_alias: SECURE_ALIAS,
    cpu1_alias: 0,
};

/// qemu_cortex_m3 (single core, 64 KiB SRAM at `0x2000_0000`): the upper
/// 36 KiB is the shared window, enough for default rings and the frame slot
/// alone ([`SlotGeometry::SINGLE`](crate::SlotGeometry::SINGLE)); no CPU1,
/// no alias.
/// A Zephyr build must keep that half out of its own RAM (or place the region
/// in a static buffer and use only the offsets).
pub const QEMU_CORTEX_M3: MemoryMap = MemoryMap {
    cpu0_private_base: 0x2000_0000,
    cpu0_private_size: 28 * 1024,
    shared_base: 0x2000_7000,
    shared_size: 36 * 1024,
    cpu1_private_base: 0x2001_0000,
    cpu1_private_size: 0,
    cpu1_image_base: 0,
    cpu0_alias: 0,
    cpu1_alias: 0,
};

/// Every map, for table-driven checks.
pub const ALL_MAPS: [MemoryMap; 3] = [MCXN947, AN521, QEMU_CORTEX_M3];

const _: () = {
    let mut i = 0;
    while i < ALL_MAPS.len() {
        let map = ALL_MAPS[i];
        assert!(map.tiles(), "RAM ranges must tile with no gap or overlap");
        // Dual-core maps take the default slots; the single-core test map
        // the frame slot alone.
        let slots = if map.is_dual_core() {
            crate::SlotGeometry::DEFAULT
        } else {
            crate::SlotGeometry::SINGLE
        };
        assert!(region_size::<RING_ENTRIES_DEFAULT>(slots) <= map.shared_size as usize);
        i += 1;
    }
    assert!(MCXN947.is_dual_core() && AN521.is_dual_core() && !QEMU_CORTEX_M3.is_dual_core());
    assert!(
        MCXN947.shared_base - MCXN947.cpu0_private_base
            == AN521.shared_base - AN521.cpu0_private_base
    );
    assert!(AN521.shared_base + AN521.cpu0_alias == 0x3804_0000);
    // The boot vector is in CPU1's lens and outside CPU1's RAM (it is code).
    assert!(AN521.cpu1_image_base == 0x0038_B000);
    assert!(AN521.cpu1_image_base + AN521.cpu0_alias == 0x1038_B000);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_and_ends() {
        assert_eq!(MCXN947.shared_base_for(Core::Cpu0), 0x3004_0000);
        assert_eq!(MCXN947.shared_base_for(Core::Cpu1), 0x2004_0000);
        assert_eq!(AN521.shared_base_for(Core::Cpu0), 0x3804_0000);
        assert_eq!(
            AN521.cpu1_private_base + AN521.cpu1_private_size,
            0x2806_8000
        );
        let overlapping = MemoryMap {
            shared_base: MCXN947.shared_base - 4,
            ..MCXN947
        };
        assert!(!overlapping.tiles());
        let gap = MemoryMap {
            cpu1_private_base: MCXN947.cpu1_private_base + 4,
            ..MCXN947
        };
        assert!(!gap.tiles());
    }

    #[test]
    fn an521_cpu1_image_is_where_the_board_links_it() {
        // mps2/an521/cpu1: `code: memory@38B000`, CPU1's lens; CPU0 reads the
        // vector table through its Secure alias but boots CPU1 with the plain value.
        assert_eq!(AN521.cpu1_image_base, 0x0038_B000);
        assert_eq!(
            AN521.cpu1_image_base.wrapping_add(AN521.alias(Core::Cpu0)),
            0x1038_B000
        );
        assert_eq!(AN521.alias(Core::Cpu1), 0);
        let image = AN521.cpu1_image_base..AN521.cpu1_image_base + 468 * 1024;
        assert!(!image.contains(&AN521.cpu1_private_base));
        assert_eq!(MCXN947.cpu1_image_base, 0x0010_0000);
    }
}
