//! Build check of the doorbell: listen with a kernel semaphore, ring the
//! peer once, and report what happened (on hardware; CI only builds it).
#![no_std]

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
}
