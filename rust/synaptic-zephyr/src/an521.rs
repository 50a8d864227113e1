//! Releasing CPU1 of the SSE-200 subsystem (Arm MPS2 AN521, emulated by QEMU).
//!
//! CPU1 is held in reset-wait until CPU0 writes CPU1's initial secure vector
//! table address (in CPU1's own lens) to `INITSVTOR1` and clears `CPU_WAIT`.
//! These are fixed SoC registers of the secure system-control block, not board
//! configuration, so they are constants here; where CPU1's image is comes from
//! devicetree ([`crate::platform::cpu1_image`]).

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
