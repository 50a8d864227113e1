//! Dual-core skeleton, CPU0: release CPU1 and read the word it writes.
//!
//! Both cores see the shared region through their own lens (devicetree gives
//! each its address); the word CPU1 writes through its lens must appear in
//! CPU0's.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_zephyr::{an521, platform};
use zephyr::printkln;
use zephyr::raw;

/// What CPU1 writes ("SYN1").
const CPU1_HELLO: u32 = 0x5359_4E31;
/// How long CPU0 waits for it.
const WAIT_MS: i64 = 1000;

#[no_mangle]
extern "C" fn rust_main() {
    match run() {
        Ok(()) => printkln!("dual-core skeleton: PASS"),
        Err(why) => printkln!("dual-core skeleton: FAIL ({})", why),
    }
}

fn run() -> Result<(), &'static str> {
    let shared = platform::shared_memory().ok_or("no synaptic,shared-memory in devicetree")?;
    let image = platform::cpu1_image().ok_or("no synaptic,cpu1-image in devicetree")?;

    // SAFETY: devicetree reserves the shared region for this purpose; its
    // base is word aligned and mapped on this core, and only atomics touch it.
    let word = unsafe { &*(shared.base as *const AtomicU32) };
    // Ordering: Relaxed: nothing else is published with it; CPU1 is not running yet.
    word.store(0, Ordering::Relaxed);

    // SAFETY: devicetree places CPU1's image at local_address, readable by
    // CPU0; the first two words are its vector table's initial SP and reset.
    let (initial_sp, reset) = unsafe {
        let vectors = image.local_address as *const u32;
        (
            core::ptr::read_volatile(vectors),
            core::ptr::read_volatile(vectors.add(1)),
        )
    };
    printkln!(
        "CPU1 vector table: initial SP 0x{:08x}, reset 0x{:08x}",
        initial_sp,
        reset
    );
    if reset & 1 == 0 || initial_sp == 0 || initial_sp == u32::MAX {
        return Err("CPU1 image absent or not a Thumb vector table");
    }

    // SAFETY: this sample runs only on mps2/an521/cpu0 (secure), and the
    // vector table at boot_address was just checked.
    unsafe { an521::release_cpu1(image.boot_address) };

    // SAFETY: plain kernel calls.
    let start = unsafe { raw::k_uptime_get() };
    loop {
        // Ordering: Acquire pairs with CPU1's Release store of the word.
        let value = word.load(Ordering::Acquire);
        if value == CPU1_HELLO {
            // SAFETY: plain kernel call.
            let elapsed = unsafe { raw::k_uptime_get() } - start;
            printkln!(
                "CPU1 wrote 0x{:08x} into the shared word at 0x{:08x} (CPU0 lens) within {} ms",
                value,
                shared.base,
                elapsed
            );
            return Ok(());
        }
        // SAFETY: plain kernel calls.
        if unsafe { raw::k_uptime_get() } - start > WAIT_MS {
            return Err("CPU1 did not write the shared word within 1 s");
        }
        // SAFETY: plain kernel call.
        unsafe { raw::k_msleep(1) };
    }
}
