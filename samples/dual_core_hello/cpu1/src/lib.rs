//! Dual-core skeleton, CPU1: write a word into the shared region.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_zephyr::platform;

/// What CPU0 waits for ("SYN1").
const CPU1_HELLO: u32 = 0x5359_4E31;

#[no_mangle]
extern "C" fn rust_main() {
    // No console on this core: without a shared region there is nobody to tell.
    let Some(shared) = platform::shared_memory() else {
        return;
    };
    // SAFETY: devicetree reserves the shared region; its base is word aligned
    // and mapped on this core, and only atomics touch this word.
    let word = unsafe { &*(shared.base as *const AtomicU32) };
    // Ordering: Release pairs with CPU0's Acquire load.
    word.store(CPU1_HELLO, Ordering::Release);
}
