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
    cycles / HZ * 1_000_000 + cycles % HZ * 1_000_000 / HZ
}

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
    fn delay_us(&self, us: u64) {
        let mut left = us;
        while left > 0 {
            let chunk = left.min(u64::from(u32::MAX)) as u32;
            // SAFETY: a busy wait has no preconditions.
            unsafe { raw::k_busy_wait(chunk) };
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
