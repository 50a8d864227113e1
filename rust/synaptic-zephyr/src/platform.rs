//! Devicetree facts, as evaluated by the module's C glue (`src/synaptic_dt.c`).
//!
//! Rust cannot expand devicetree macros, so the C side exports constant
//! structs (`include/synaptic/syn_platform.h`) and this module reads them.
//! No address that devicetree can supply is written in Rust.

/// The shared region in this core's lens (`chosen { synaptic,shared-memory }`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct SharedMemory {
    /// Base address as this core sees it.
    pub base: usize,
    /// Size in bytes.
    pub size: u32,
    /// Message slots per ring, a power of two.
    pub ring_entries: u32,
    present: u32,
}

/// CPU1's image as CPU0 sees it (`chosen { synaptic,cpu1-image }`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Cpu1Image {
    /// Vector table address in CPU0's lens.
    pub local_address: usize,
    /// Size of the image area.
    pub size: u32,
    /// Vector table address in CPU1's own lens: the boot vector.
    pub boot_address: u32,
    present: u32,
    /// CPU1's private RAM base in CPU1's own lens (`cpu1-ram`; see [`Cpu1Image::ram`]).
    pub ram_base: u32,
    /// CPU1's private RAM size in bytes (`cpu1-ram`).
    pub ram_size: u32,
    ram_present: u32,
}

impl Cpu1Image {
    /// CPU1's private RAM in CPU1's own lens, or `None` when the node has no
    /// `cpu1-ram` property (or the range would wrap the address space).
    pub fn ram(&self) -> Option<core::ops::Range<u32>> {
        if self.ram_present == 0 {
            return None;
        }
        let end = self.ram_base.checked_add(self.ram_size)?;
        Some(self.ram_base..end)
    }
}

extern "C" {
    static syn_dt_shared_memory: SharedMemory;
    static syn_dt_cpu1_image: Cpu1Image;
}

/// The shared region, or `None` when this build's devicetree has none.
pub fn shared_memory() -> Option<SharedMemory> {
    // SAFETY: the C glue defines this constant struct in every build with
    // CONFIG_SYNAPTIC, with the layout of `SharedMemory`, and never writes it.
    let region = unsafe { syn_dt_shared_memory };
    (region.present != 0).then_some(region)
}

/// CPU1's image, or `None` when this build's devicetree names none.
pub fn cpu1_image() -> Option<Cpu1Image> {
    // SAFETY: as above, a constant struct defined by the C glue.
    let image = unsafe { syn_dt_cpu1_image };
    (image.present != 0).then_some(image)
}
