//! The park handshake on Zephyr ([`synaptic_serve::park`]): CPU1 holds in
//! RAM from its doorbell interrupt; CPU0's model store writes with CPU1
//! held when the store shares CPU1's flash bank.
//!
//! # Invariants
//!
//! * CPU1's hold runs in [`hold_in_ram`], placed in Zephyr's `.ramfunc`
//!   section (copied to RAM at boot), with PRIMASK set: no interrupt
//!   handler, and so no code in flash, runs on CPU1 until CPU0 releases
//!   it. The function calls nothing (the handshake's loop is inlined into
//!   it) and is reached through a register branch, so no veneer in flash
//!   stands between.
//! * The interrupt checks the request before it gives the dispatch thread
//!   its wake-up: a doorbell that asked for a park and also announced
//!   replies does both.
//! * The hold is bounded (Kconfig `SYNAPTIC_PARK_HOLD_MS`, counted in
//!   reads of the request word, at most one per [`READ_CYCLES`] core
//!   cycles), and a request
//!   already there when CPU1 attached is ignored ([`ParkHold`]).
#![cfg(CONFIG_SYNAPTIC_DOORBELL)]

use core::ptr::null_mut;
use core::sync::atomic::{AtomicPtr, Ordering};

use static_cell::StaticCell;
use synaptic_serve::park::{ParkHold, ParkWords};

/// Core cycles one pass of the hold's loop takes at least: it loads the
/// request and the ignored generation, compares both, counts, compares
/// the count, yields and branches, eight instructions of at least a cycle
/// each (16 as compiled for thumbv8m.main).
const READ_CYCLES: u64 = 8;

/// The hold's bound in reads of the request word: `SYNAPTIC_PARK_HOLD_MS`
/// of core cycles, [`READ_CYCLES`] a read at least.
const HOLD_READS: u32 = {
    let cycles = zephyr::kconfig::CONFIG_SYNAPTIC_PARK_HOLD_MS as u64
        * zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u64
        / 1000
        / READ_CYCLES;
    if cycles > u32::MAX as u64 {
        u32::MAX
    } else {
        cycles as u32
    }
};

/// CPU1's side of the handshake, set once at attach.
static CPU1_HOLD: StaticCell<ParkHold<'static>> = StaticCell::new();
static CPU1_PARK: AtomicPtr<ParkHold<'static>> = AtomicPtr::new(null_mut());

/// CPU1: answer park requests from now on (its attach, before the
/// doorbell starts); a request already there is ignored. A second call
/// keeps the first words.
pub(crate) fn serve_on_cpu1(words: ParkWords<'static>) {
    if let Some(words) = CPU1_HOLD.try_init(ParkHold::new(words, HOLD_READS)) {
        // Ordering: Release, once per boot; the interrupt's Relaxed load
        // is enough on one core (see `on_cpu1_doorbell`).
        CPU1_PARK.store(words, Ordering::Release);
    }
}

/// CPU1's doorbell interrupt, first thing: hold in RAM while CPU0 asks.
pub(crate) fn on_cpu1_doorbell() {
    // Ordering: Relaxed: `serve_on_cpu1` stored it on this core before the
    // doorbell's interrupt was enabled, and an interrupt sees the stores
    // its core made before it.
    let words = CPU1_PARK.load(Ordering::Relaxed);
    if words.is_null() {
        return;
    }
    // SAFETY: a non-null pointer is only ever the `&'static` that
    // `serve_on_cpu1` stored, never written through.
    let words = unsafe { &*words };
    if words.asked() {
        // A register branch into RAM (see the module's invariants).
        let hold: fn(&ParkHold<'static>) = hold_in_ram;
        core::hint::black_box(hold)(words);
    }
}

/// Mask interrupts, acknowledge, spin until released, unmask. In RAM.
#[link_section = ".ramfunc"]
#[inline(never)]
fn hold_in_ram(words: &ParkHold<'static>) {
    let primask: u32;
    // SAFETY: reads PRIMASK and sets it (masks every configurable
    // interrupt); restored below. `dsb; isb` finish what was fetched from
    // flash before the acknowledgement says CPU1 is off it. No `nomem`:
    // the compiler must not move memory accesses across.
    unsafe {
        core::arch::asm!("mrs {0}, PRIMASK", "cpsid i", "dsb", "isb", out(reg) primask,
            options(nostack, preserves_flags));
    }
    // Abandoned or not, CPU1 runs on; CPU0 counts what it refused.
    let _ = words.hold(relax);
    // SAFETY: restores the PRIMASK read above.
    unsafe {
        core::arch::asm!("msr PRIMASK, {0}", "isb", in(reg) primask,
            options(nostack, preserves_flags));
    }
}

/// Between two reads of a shared word: `yield`, which lets the other vCPU
/// of a round-robin emulator run and costs a cycle on silicon.
#[inline(always)]
fn relax() {
    // SAFETY: `yield` is a hint: it touches no memory, stack or flags.
    unsafe { core::arch::asm!("yield", options(nomem, nostack, preserves_flags)) };
}

/// CPU0's parker for the model store, when the store needs one.
#[cfg(feature = "store")]
pub(crate) mod cpu0 {
    use synaptic_serve::park::{ParkError, ParkLimits, ParkRecord, ParkStats, Parker};

    use crate::clock::ZephyrClock;
    use crate::doorbell::PeerDoorbell;

    /// The acknowledgement's timeout within CPU1's hold bound (a build
    /// error when the timeout is more than half the bound).
    const LIMITS: ParkLimits = match ParkLimits::new(
        zephyr::kconfig::CONFIG_SYNAPTIC_STORE_PARK_TIMEOUT_MS as u64 * 1000,
        zephyr::kconfig::CONFIG_SYNAPTIC_PARK_HOLD_MS as u64 * 1000,
    ) {
        Some(limits) => limits,
        None => panic!("SYNAPTIC_STORE_PARK_TIMEOUT_MS is more than half of SYNAPTIC_PARK_HOLD_MS"),
    };

    /// The request CPU0 stands by, which its maintenance republishes
    /// (`crate::service`'s intake).
    pub(crate) static RECORD: ParkRecord = ParkRecord::new();

    /// The store's parker over the devicetree's shared region.
    #[derive(Debug)]
    pub(crate) struct StoreParker(Parker<'static, PeerDoorbell>);

    impl StoreParker {
        /// `None` when this build has no shared region.
        pub(crate) fn new() -> Option<StoreParker> {
            let region = crate::service::region_from_devicetree().ok()?;
            Some(StoreParker(Parker::new(
                region.park_words(),
                &RECORD,
                PeerDoorbell::for_parks(),
            )))
        }

        /// Run `op` (a flash write or erase) with CPU1 parked, or as it is
        /// when boot never started CPU1. The scheduler stays locked from
        /// request to release: a thread preempting this one would hold
        /// CPU1 for as long as it ran.
        pub(crate) fn around<T>(&mut self, op: impl FnOnce() -> T) -> Result<T, ParkError> {
            if crate::status::STATUS.cpu1_never_started() {
                return Ok(op());
            }
            let _locked = SchedLock::new();
            self.0
                .with_cpu1_parked(&ZephyrClock, LIMITS, super::relax, op)
        }

        pub(crate) fn stats(&self) -> ParkStats {
            self.0.stats()
        }
    }

    /// `k_sched_lock` until dropped (interrupts still run).
    struct SchedLock;

    impl SchedLock {
        fn new() -> SchedLock {
            // SAFETY: called from a thread (the store is never written from
            // an ISR); paired with the unlock in `drop`.
            unsafe { zephyr::raw::k_sched_lock() };
            SchedLock
        }
    }

    impl Drop for SchedLock {
        fn drop(&mut self) {
            // SAFETY: undoes this guard's own `k_sched_lock`.
            unsafe { zephyr::raw::k_sched_unlock() };
        }
    }
}
