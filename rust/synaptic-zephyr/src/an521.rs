//! Releasing CPU1 of the SSE-200 subsystem (Arm MPS2 AN521, emulated by QEMU).
//!
//! CPU1 is held in reset-wait until CPU0 writes CPU1's initial secure vector
//! table address (in CPU1's own lens) to `INITSVTOR1` and clears `CPU_WAIT`.
//! These are fixed SoC registers of the secure system-control block, not board
//! configuration, so they are constants here; where CPU1's image is comes from
//! devicetree ([`crate::platform::cpu1_image`]).

use synaptic_serve::boot::{BootError, BootPlatform, ImageBounds, VectorTable};

/// Secure system control block of the SSE-200.
const SYSTEM_CONTROL_SECURE_BASE: usize = 0x5002_1000;
/// Initial secure vector table address for CPU1.
const INITSVTOR1: usize = SYSTEM_CONTROL_SECURE_BASE + 0x114;
/// CPU boot wait control: bit n holds CPU n in wait.
const CPU_WAIT: usize = SYSTEM_CONTROL_SECURE_BASE + 0x118;

/// Start CPU1 at `boot_address` (its vector table, in CPU1's lens).
///
/// # Safety
///
/// Only on an SSE-200 (AN521) CPU0 running secure, and only with a
/// `boot_address` where a valid CPU1 vector table lies: CPU1 starts executing
/// from it at once.
pub unsafe fn release_cpu1(boot_address: u32) {
    // SAFETY: the caller guarantees an SSE-200 CPU0 in secure state, where
    // these are the documented word-sized system-control registers.
    unsafe {
        core::ptr::write_volatile(INITSVTOR1 as *mut u32, boot_address);
        core::ptr::write_volatile(CPU_WAIT as *mut u32, 0);
    }
}

/// The AN521 as a [`BootPlatform`]: CPU1's image is in SRAM (QEMU loads
/// it), so its vector table is read over the bus; release is
/// [`release_cpu1`].
#[derive(Clone, Debug)]
pub struct An521Boot {
    image: crate::platform::Cpu1Image,
    ram: core::ops::Range<u32>,
}

impl An521Boot {
    /// The boot platform for CPU1's image as devicetree describes it, with
    /// CPU1's RAM `ram` in CPU1's own lens.
    ///
    /// # Safety
    ///
    /// Only on an SSE-200 (AN521) CPU0 running secure, with `image` naming
    /// memory CPU0 can read: [`BootPlatform::release`] starts CPU1.
    pub unsafe fn new(image: crate::platform::Cpu1Image, ram: core::ops::Range<u32>) -> Self {
        An521Boot { image, ram }
    }
}

impl BootPlatform for An521Boot {
    fn bounds(&self) -> ImageBounds {
        ImageBounds {
            ram: self.ram.clone(),
            image: self.image.boot_address..self.image.boot_address.saturating_add(self.image.size),
        }
    }

    fn read_vectors(&mut self) -> Result<VectorTable, BootError> {
        let vectors = self.image.local_address as *const u32;
        // SAFETY: `new`'s contract: the image area is readable by CPU0 (SRAM
        // on the AN521, no erased-flash hazard); its first two words are the
        // vector table's initial SP and reset vector.
        let (initial_sp, reset) = unsafe {
            (
                core::ptr::read_volatile(vectors),
                core::ptr::read_volatile(vectors.add(1)),
            )
        };
        Ok(VectorTable { initial_sp, reset })
    }

    fn release(&mut self) -> Result<(), BootError> {
        // SAFETY: `new`'s contract (AN521 CPU0, secure), and boot_cpu1 calls
        // this only after the vector table passed its checks.
        unsafe { release_cpu1(self.image.boot_address) };
        Ok(())
    }
}

/// The boot platform for the CPU1 image devicetree names
/// (`chosen { synaptic,cpu1-image }`, with its `cpu1-ram` property giving
/// CPU1's RAM in CPU1's lens), or `None` when it names none or lacks
/// `cpu1-ram`.
#[cfg(CONFIG_SOC_MPS2_AN521_CPU0)]
pub fn from_devicetree() -> Option<An521Boot> {
    let image = crate::platform::cpu1_image()?;
    let ram = image.ram()?;
    // SAFETY: this build is for the AN521's CPU0 (secure), and devicetree
    // names the image area CPU0 reads.
    Some(unsafe { An521Boot::new(image, ram) })
}
