//! Build check of the doorbell: listen with a kernel semaphore, ring the
//! peer once, and report what happened (on hardware; CI only builds it).
//! On the MCXN947's CPU0 it also reads CPU1's vector table through the boot
//! ROM (never releasing CPU1), so the boot platform is compiled and linked.
#![no_std]
// Kconfig options are cfgs (build.rs); rustc does not know their names.
#![allow(unexpected_cfgs)]

use synaptic_zephyr::doorbell;
use synaptic_zephyr::sync::KernelSemaphore;
use zephyr::printkln;

/// Given by the doorbell interrupt when the peer rings.
static WAKE: KernelSemaphore = KernelSemaphore::new(0, 1);

/// Entry point called by zephyr-lang-rust's `main()`.
#[no_mangle]
extern "C" fn rust_main() {
    match doorbell::init(&WAKE) {
        Ok(peer) => match peer.try_ring() {
            Ok(()) => printkln!("doorbell_build: rang the peer"),
            Err(e) => printkln!("doorbell_build: ring failed: {}", e.negative_errno()),
        },
        Err(e) => printkln!("doorbell_build: init failed: {}", e.negative_errno()),
    }
    #[cfg(CONFIG_SOC_MCXN947_CPU0)]
    probe_cpu1_image();
}

/// Read and check CPU1's vector table (ROM flash driver), without release.
#[cfg(CONFIG_SOC_MCXN947_CPU0)]
fn probe_cpu1_image() {
    use synaptic_serve::boot::{check_vectors, BootPlatform};
    use synaptic_zephyr::mcxn947::Mcxn947Boot;

    // SAFETY: this is the only code touching CPU1's release or the flash
    // controller in this application, and it never calls `release`.
    let mut platform = match unsafe { Mcxn947Boot::from_devicetree() } {
        Ok(p) => p,
        Err(e) => {
            printkln!("doorbell_build: no CPU1 image: {}", e.negative());
            return;
        }
    };
    let bounds = platform.bounds();
    match platform.read_vectors() {
        Ok(v) => match check_vectors(v, &bounds) {
            Ok(_) => printkln!(
                "doorbell_build: CPU1 image sp={:#x} reset={:#x}",
                v.initial_sp,
                v.reset
            ),
            Err(e) => printkln!("doorbell_build: CPU1 image invalid: {:?}", e),
        },
        Err(e) => printkln!("doorbell_build: CPU1 image not read: {:?}", e),
    }
}
