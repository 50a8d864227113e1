//! Booting CPU1 of the NXP MCXN947 (FRDM-MCXN947) from CPU0.
//!
//! **Not run on hardware**: this code is compiled, type-checked, clippy-clean
//! and linked in CI (the `frdm_mcxn947/mcxn947/cpu0` build of
//! `tests/doorbell_build`), but no board was available to execute it. The
//! register sequence and the ROM API layout below follow NXP's code as cited;
//! treat the first run on a board as its test.
//!
//! Three steps, behind [`BootPlatform`]:
//!
//! * [`BootPlatform::bounds`]: CPU1's RAM (`cpu1-ram` of the chosen
//!   `synaptic,cpu1-image` node) and image (`boot-address` + the node's
//!   size), both in CPU1's own lens, from devicetree.
//! * [`BootPlatform::read_vectors`]: the first two words of CPU1's vector
//!   table, read through the **boot ROM's flash driver**, never over the bus:
//!   a bus read of erased flash raises an ECC error that wedges the chip.
//!   `flash_init`, then `flash_verify_erase` of the image's first page
//!   (erased: [`BootError::ImageAbsent`], single-core mode), then
//!   `flash_read` of 8 bytes.
//! * [`BootPlatform::release`]: write the boot vector (CPU1's lens, without
//!   CPU0's secure alias) to `SYSCON->CPBOOT`, then enable CPU1's clock while
//!   holding it in reset, then take it out of reset (`SYSCON->CPUCTRL`).
//!
//! Fixed SoC addresses (the ROM API tree, SYSCON) are constants here, as in
//! [`crate::an521`]; where CPU1's image and RAM are comes from devicetree.
//! CPU0 runs Secure, so the constants are the secure aliases.
//!
//! Not done here: the AHB secure controller's security level for CPU1
//! (`AHBSC->MASTER_SEC_LEVEL`, which Zephyr's `CONFIG_SECOND_CORE_MCUX`
//! sets before its own release in `soc/nxp/mcx/mcxn/soc.c`). CPU1 uses
//! only the plain (non-secure) lens, which the reset configuration allows;
//! a product that locks the AHBSC down must grant CPU1 its ranges first.
#![cfg(all(CONFIG_SOC_MCXN947_CPU0, not(CONFIG_TRUSTED_EXECUTION_NONSECURE)))]

use core::ops::Range;
use core::ptr;
use core::sync::atomic::{fence, Ordering};

use synaptic_abi::memory_map::SECURE_ALIAS;
use synaptic_abi::Errno;
use synaptic_serve::boot::{BootError, BootPlatform, ImageBounds, VectorTable};

use crate::platform::{cpu1_image, Cpu1Image};

/// The boot ROM's API tree (`BOOTLOADER_API_TREE_POINTER` in hal_nxp's
/// `devices/MCX/MCXN/MCXN947/drivers/romapi/flash/src/fsl_flash.c`), secure
/// ROM alias.
const ROM_API_TREE: usize = 0x1303_FC00;

/// SYSCON, secure alias (`SYSCON0_BASE` in hal_nxp's
/// `MCXN947_cm33_core0_COMMON.h`).
const SYSCON_BASE: usize = 0x5000_0000;
/// `SYSCON->CPUCTRL`, CPU control for multiple processors (offset 0x800).
const CPUCTRL: usize = SYSCON_BASE + 0x800;
/// `SYSCON->CPBOOT`, CPU1's boot VTOR address bits [31:7] (offset 0x804).
const CPBOOT: usize = SYSCON_BASE + 0x804;
/// `CPUCTRL.CPU1CLKEN`: CPU1's clock is enabled.
const CPUCTRL_CPU1CLKEN: u32 = 1 << 3;
/// `CPUCTRL.CPU1RSTEN`: CPU1 is held in reset.
const CPUCTRL_CPU1RSTEN: u32 = 1 << 5;
/// `CPUCTRL.PROT`: a write takes effect only with this key in bits [31:16].
const CPUCTRL_PROT_MASK: u32 = 0xFFFF_0000;
/// The `CPUCTRL.PROT` key (0b1100_0000_1100_0100 in PERI_SYSCON.h).
const CPUCTRL_PROT_KEY: u32 = 0xC0C4_0000;
/// `CPBOOT` holds VTOR bits [31:7]: the vector table must be 128-byte aligned.
const CPBOOT_MASK: u32 = 0xFFFF_FF80;

/// Status the ROM API returns on success (`kStatus_Success`).
const ROM_SUCCESS: i32 = 0;

/// `flash_config_t` of hal_nxp's MCXN947 `romapi/flash/fsl_flash.h`: the
/// driver state the caller allocates and the ROM fills in `flash_init`.
/// Only some fields are read here; the others keep the layout.
#[allow(dead_code)]
#[repr(C)]
struct FlashConfig {
    pflash_block_base: u32,
    pflash_total_size: u32,
    pflash_block_count: u32,
    pflash_page_size: u32,
    pflash_sector_size: u32,
    /// `flash_ffr_config_t`: six words.
    ffr_config: [u32; 6],
    /// `flash_mode_config_t`: `sysFreqInMHz` and three 4/4/8-byte structs.
    mode_config: [u32; 5],
    nboot_ctx: *mut u32,
    use_ahb_read: bool,
}

type FlashInit = unsafe extern "C" fn(config: *mut FlashConfig) -> i32;
type FlashVerifyErase = unsafe extern "C" fn(config: *mut FlashConfig, start: u32, len: u32) -> i32;
type FlashRead =
    unsafe extern "C" fn(config: *mut FlashConfig, start: u32, dest: *mut u8, len: u32) -> i32;

/// `flash_driver_interface_t` (same file): the ROM's flash driver. Entries
/// this module does not call are kept as opaque words for the layout.
#[allow(dead_code)]
#[repr(C)]
struct FlashDriverInterface {
    version: u32,
    flash_init: Option<FlashInit>,
    flash_erase: usize,
    flash_program: usize,
    flash_verify_erase: Option<FlashVerifyErase>,
    flash_verify_program: usize,
    flash_get_property: usize,
    reserved0: [u32; 3],
    /// `ffr_init` .. `ffr_cust_keystore_write`.
    ffr: [usize; 6],
    reserved1: u32,
    reserved2: u32,
    ffr_infield_page_write: usize,
    ffr_get_customer_infield_data: usize,
    flash_read: Option<FlashRead>,
    reserved3: u32,
    flash_get_cust_keystore: usize,
    flash_deinit: usize,
}

/// `bootloader_tree_t` (same file), up to the flash driver.
#[allow(dead_code)]
#[repr(C)]
struct BootloaderTree {
    run_bootloader: usize,
    version: u32,
    copyright: usize,
    reserved0: u32,
    flash_driver: *const FlashDriverInterface,
}

// The layouts above, as the C headers give them on this 32-bit target.
#[cfg(target_pointer_width = "32")]
const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<FlashConfig>() == 72);
    assert!(offset_of!(FlashConfig, nboot_ctx) == 64);
    assert!(offset_of!(FlashDriverInterface, flash_init) == 4);
    assert!(offset_of!(FlashDriverInterface, flash_verify_erase) == 16);
    assert!(offset_of!(FlashDriverInterface, flash_read) == 80);
    assert!(size_of::<FlashDriverInterface>() == 96);
    assert!(offset_of!(BootloaderTree, flash_driver) == 16);
};

/// The MCXN947 as a [`BootPlatform`] (CPU0, Secure). See the module docs;
/// not run on hardware.
#[derive(Clone, Debug)]
pub struct Mcxn947Boot {
    image: Cpu1Image,
    ram: Range<u32>,
}

impl Mcxn947Boot {
    /// The boot platform for the chosen `synaptic,cpu1-image` node.
    ///
    /// # Errors
    ///
    /// [`Errno::NoDev`] when the devicetree names no CPU1 image (run single
    /// core); [`Errno::Inval`] when the node lacks `cpu1-ram`, when its two
    /// lenses disagree (CPU0's `reg` must be `boot-address` plus the secure
    /// alias), when the boot address is not 128-byte aligned (`CPBOOT`
    /// keeps bits [31:7]) or when the image range wraps.
    ///
    /// # Safety
    ///
    /// Only one owner may drive CPU1's release, and nothing else may run a
    /// flash controller command while [`BootPlatform::read_vectors`] does
    /// (e.g. Zephyr's flash driver writing from another thread): the ROM's
    /// flash driver uses the same controller. [`BootPlatform::release`]
    /// starts CPU1 at the image; call it only on a checked vector table
    /// (as `synaptic_serve::boot::boot_cpu1` does).
    pub unsafe fn from_devicetree() -> Result<Self, Errno> {
        let image = cpu1_image().ok_or(Errno::NoDev)?;
        let ram = image.ram().ok_or(Errno::Inval)?;
        let lenses_agree = image
            .boot_address
            .checked_add(SECURE_ALIAS)
            .map(|a| a as usize)
            == Some(image.local_address);
        let aligned = image.boot_address & !CPBOOT_MASK == 0;
        let fits = image.boot_address.checked_add(image.size).is_some();
        if !(lenses_agree && aligned && fits) {
            return Err(Errno::Inval);
        }
        Ok(Mcxn947Boot { image, ram })
    }

    /// The ROM's flash driver, or `None` when the tree names none (or lacks
    /// one of the three calls).
    fn rom_flash_driver() -> Option<(FlashInit, FlashVerifyErase, FlashRead)> {
        let tree = ROM_API_TREE as *const BootloaderTree;
        // SAFETY: the API tree is a constant structure in the boot ROM at a
        // fixed address (hal_nxp's BOOTLOADER_API_TREE_POINTER), readable by
        // CPU0 in secure state (this module is built for that only); ROM
        // reads have no erased-flash hazard.
        let driver = unsafe { ptr::read_volatile(ptr::addr_of!((*tree).flash_driver)) };
        if driver.is_null() {
            return None;
        }
        // SAFETY: `driver` points at the ROM's flash driver interface (a
        // constant ROM structure with the layout asserted above).
        let (init, verify_erase, read) = unsafe {
            (
                ptr::read_volatile(ptr::addr_of!((*driver).flash_init)),
                ptr::read_volatile(ptr::addr_of!((*driver).flash_verify_erase)),
                ptr::read_volatile(ptr::addr_of!((*driver).flash_read)),
            )
        };
        Some((init?, verify_erase?, read?))
    }
}

impl BootPlatform for Mcxn947Boot {
    fn bounds(&self) -> ImageBounds {
        ImageBounds {
            ram: self.ram.clone(),
            // `from_devicetree` checked that this does not wrap.
            image: self.image.boot_address..self.image.boot_address + self.image.size,
        }
    }

    fn read_vectors(&mut self) -> Result<VectorTable, BootError> {
        let (init, verify_erase, read) =
            Self::rom_flash_driver().ok_or(BootError::Platform(Errno::NoDev.negative()))?;
        let mut config = FlashConfig {
            pflash_block_base: 0,
            pflash_total_size: 0,
            pflash_block_count: 0,
            pflash_page_size: 0,
            pflash_sector_size: 0,
            ffr_config: [0; 6],
            mode_config: [0; 5],
            nboot_ctx: ptr::null_mut(),
            use_ahb_read: false,
        };
        // SAFETY: the ROM's flash_init only fills the caller's zeroed
        // config (as the SDK's FLASH_Init does); `from_devicetree`'s
        // contract keeps other flash commands away meanwhile.
        let status = unsafe { init(&mut config) };
        if status != ROM_SUCCESS {
            return Err(BootError::Platform(status));
        }
        // The image's address in the ROM driver's view: its block base plus
        // the image's offset in flash, which is its plain address (CPU1's
        // lens): the internal flash starts at 0 in the plain lens.
        let start = config
            .pflash_block_base
            .checked_add(self.image.boot_address)
            .ok_or(BootError::Platform(Errno::Inval.negative()))?;
        let page = config.pflash_page_size;
        let page = if page >= 8 && page % 4 == 0 { page } else { 16 };
        // SAFETY: a controller command on flash bank 1 (CPU1's image) while
        // CPU0 executes from bank 0; word-aligned start and length, as the
        // ROM requires; no memory of ours is written.
        let erased = unsafe { verify_erase(&mut config, start, page) };
        if erased == ROM_SUCCESS {
            return Err(BootError::ImageAbsent);
        }
        // Any other status: not entirely erased (or an argument the ROM
        // refuses, which flash_read below reports with its own status).
        let mut words = [0u32; 2];
        // SAFETY: the ROM copies 8 bytes into `words` (8 bytes, aligned),
        // reading the flash through the controller, which reports ECC
        // errors as a status instead of a bus fault.
        let status = unsafe { read(&mut config, start, words.as_mut_ptr().cast::<u8>(), 8) };
        if status != ROM_SUCCESS {
            return Err(BootError::Platform(status));
        }
        Ok(VectorTable {
            initial_sp: words[0],
            reset: words[1],
        })
    }

    fn release(&mut self) -> Result<(), BootError> {
        // The sequence of Zephyr's `second_core_boot()` in
        // soc/nxp/mcx/mcxn/soc.c (taken from the NXP SDK), without its
        // AHBSC step (see the module docs): CPBOOT, then CPU1's clock on
        // while held in reset, then out of reset; each CPUCTRL write carries
        // the PROT key.
        let boot = self.image.boot_address & CPBOOT_MASK;
        // Everything CPU0 wrote to the shared region (publish) lands before
        // CPU1 can run.
        fence(Ordering::SeqCst);
        // SAFETY: SYSCON's CPBOOT and CPUCTRL are word registers at these
        // fixed secure addresses on the MCXN947, whose CPU0 in secure state
        // this module is built for; `from_devicetree`'s contract makes this
        // the only code releasing CPU1, and `boot` is CPU1's vector table in
        // CPU1's lens (the boot vector escapes CPU0's alias on purpose).
        unsafe {
            ptr::write_volatile(CPBOOT as *mut u32, boot);
            let ctrl =
                (ptr::read_volatile(CPUCTRL as *const u32) & !CPUCTRL_PROT_MASK) | CPUCTRL_PROT_KEY;
            ptr::write_volatile(
                CPUCTRL as *mut u32,
                ctrl | CPUCTRL_CPU1CLKEN | CPUCTRL_CPU1RSTEN,
            );
            ptr::write_volatile(
                CPUCTRL as *mut u32,
                (ctrl | CPUCTRL_CPU1CLKEN) & !CPUCTRL_CPU1RSTEN,
            );
        }
        Ok(())
    }
}
