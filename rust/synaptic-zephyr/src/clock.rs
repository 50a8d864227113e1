//! Time on Zephyr for the portable crates: the runtime's microsecond
//! [`Clock`] and busy-wait [`Delay`], and the boot sequence's sleeping
//! [`BootClock`].
//!
//! With a 64-bit hardware cycle counter (`CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER`,
//! e.g. `CONFIG_CORTEX_M_SYSTICK_64BIT_CYCLE_COUNTER=y`) the clock has
//! cycle resolution; without one it falls back to the kernel tick
//! (`CONFIG_SYS_CLOCK_TICKS_PER_SEC`), coarser but monotonic. Either way it
//! is stateless, so one clock serves every thread.

use synaptic_runtime::time::{Clock, Delay};
use synaptic_serve::boot::BootClock;
use zephyr::raw;

/// Zephyr's monotonic time in microseconds (a unit struct: `Copy`, `Sync`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ZephyrClock;

#[cfg(CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER)]
fn now_us() -> u64 {
    const HZ: u64 = zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u64;
    // SAFETY: reading the 64-bit cycle counter has no preconditions.
    let cycles = unsafe { raw::k_cycle_get_64() };
    cycles_to_us::<HZ>(cycles)
}

/// `cycles` of a `HZ` counter in microseconds. The runtime reads the clock
/// several times per request, so this avoids the two 64-bit divisions of
/// the plain formula (library calls on Cortex-M) when `HZ` is a whole
/// number of MHz: `cycles / (HZ / 10^6)` as a multiply by the rounded-up
/// reciprocal, exact for every `cycles` below `2^64 / (HZ / 10^6)`
/// (the error term stays under `1 / (HZ / 10^6)`, which never carries past
/// the largest fractional part, `(d - 1) / d`).
#[cfg_attr(not(CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER), allow(dead_code))]
const fn cycles_to_us<const HZ: u64>(cycles: u64) -> u64 {
    if HZ % 1_000_000 == 0 && HZ >= 1_000_000 {
        let per_us = HZ / 1_000_000;
        if per_us == 1 {
            return cycles;
        }
        let reciprocal = (u64::MAX / per_us) + 1;
        ((cycles as u128 * reciprocal as u128) >> 64) as u64
    } else {
        cycles / HZ * 1_000_000 + cycles % HZ * 1_000_000 / HZ
    }
}

const _: () = {
    // Spot checks of the reciprocal path against the plain formula.
    assert!(cycles_to_us::<25_000_000>(0) == 0);
    assert!(cycles_to_us::<25_000_000>(24) == 0);
    assert!(cycles_to_us::<25_000_000>(25) == 1);
    assert!(cycles_to_us::<25_000_000>(25 * 1_000_003 - 1) == 1_000_002);
    assert!(cycles_to_us::<25_000_000>((1 << 40) + 7) == ((1 << 40) + 7) / 25);
    assert!(cycles_to_us::<150_000_000>(u32::MAX as u64 * 1_000) == u32::MAX as u64 * 1_000 / 150);
    assert!(cycles_to_us::<12_000_000>(u64::MAX / 13) == u64::MAX / 13 / 12);
    assert!(cycles_to_us::<1_000_000>(12_345) == 12_345);
    assert!(cycles_to_us::<32_768>(32_768 * 3) == 3_000_000);
};

#[cfg(not(CONFIG_TIMER_HAS_64BIT_CYCLE_COUNTER))]
fn now_us() -> u64 {
    const HZ: u64 = zephyr::kconfig::CONFIG_SYS_CLOCK_TICKS_PER_SEC as u64;
    // SAFETY: reading the tick count has no preconditions.
    let ticks = unsafe { raw::k_uptime_ticks() } as u64;
    ticks / HZ * 1_000_000 + ticks % HZ * 1_000_000 / HZ
}

impl Clock for ZephyrClock {
    fn now_us(&self) -> u64 {
        now_us()
    }
}

impl Delay for ZephyrClock {
    /// Busy-waits (the stub NPU's compute time keeps the core busy, as a
    /// real invoke would keep the bus).
    #[cfg(not(CONFIG_QEMU_TARGET))]
    fn delay_us(&self, us: u64) {
        let mut left = us;
        while left > 0 {
            let chunk = left.min(u64::from(u32::MAX)) as u32;
            // SAFETY: a busy wait has no preconditions.
            unsafe { raw::k_busy_wait(chunk) };
            left -= u64::from(chunk);
        }
    }

    /// In QEMU, waits with `wfe` on the cycle counter instead: QEMU runs
    /// the emulated cores in turns on one host thread, so a busy loop
    /// here would stop the other core for the whole device time, which a
    /// real NPU running beside the CPU never does. Each `wfe` hands the
    /// turn over.
    #[cfg(CONFIG_QEMU_TARGET)]
    fn delay_us(&self, us: u64) {
        const PER_US: u64 = zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u64 / 1_000_000;
        let mut left = us.saturating_mul(PER_US);
        while left > 0 {
            let chunk = left.min(u64::from(u32::MAX / 2)) as u32;
            // SAFETY: reading the cycle counter has no preconditions.
            let start = unsafe { raw::k_cycle_get_32() };
            // SAFETY: as above; `wfe` only waits for an event or interrupt.
            while unsafe { raw::k_cycle_get_32() }.wrapping_sub(start) < chunk {
                crate::sync::wait_for_event();
            }
            left -= u64::from(chunk);
        }
    }
}

impl BootClock for ZephyrClock {
    fn now_us(&self) -> u64 {
        now_us()
    }

    /// Sleeps (other threads, the serving thread among them, run meanwhile).
    fn sleep_us(&self, us: u32) {
        // SAFETY: plain kernel call from thread context.
        unsafe { raw::k_usleep(us.min(i32::MAX as u32) as i32) };
    }
}
