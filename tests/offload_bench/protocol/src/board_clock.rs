//! One clock for both cores: a CMSDK APB timer (the AN521's `timer0`,
//! devicetree `chosen { synaptic,bench-clock }`) free-running from its
//! largest count, read by CPU0 and CPU1 alike.
//!
//! Why not each core's `k_cycle_get_32`: in QEMU (`-icount`) the two
//! cores are round-robin vCPUs, and CPU1 runs only when CPU0 yields, halts
//! or at QEMU's 100 ms kick. Its SysTick, not serviced while CPU0
//! computes, loses wraps. Measured against this timer, CPU0's SysTick
//! keeps its rate, while CPU1's counted 1.5 to 1.7 times too few ticks
//! whenever CPU0 was not spinning. It was about right only while CPU0
//! polled a device. A phase that CPU1 times while CPU0 runs the
//! interpreter would mix two time bases: the interpreter's 593 ms per
//! inference on CPU0's clock read as 403 ms on CPU1's. Both cores read
//! this timer the same way, and it runs
//! at CPU0's SysTick rate (25 MHz on the AN521), so its ticks are CPU0's.

/// The timer's registers (CMSDK APB timer: control, current value, reload).
const CTRL: usize = 0;
const VALUE: usize = 1;
const RELOAD: usize = 2;
/// CTRL: count enable.
const ENABLE: u32 = 1;

/// A CMSDK APB timer used as a free-running up-counter.
#[derive(Clone, Copy, Debug)]
pub struct BoardClock {
    regs: *mut u32,
}

// SAFETY: the registers are device memory; every access is one volatile
// word read or write, which is what the hardware expects from any thread.
unsafe impl Sync for BoardClock {}
// SAFETY: as for `Sync`: the handle is an address.
unsafe impl Send for BoardClock {}

impl BoardClock {
    /// The timer at `base` (this core's address of it).
    ///
    /// # Safety
    ///
    /// `base` is a CMSDK APB timer's register block, mapped for the
    /// program's life, and nothing else (no Zephyr driver) uses the timer.
    pub const unsafe fn at(base: usize) -> BoardClock {
        BoardClock {
            regs: base as *mut u32,
        }
    }

    /// Start counting from 0 (CPU0, once, before CPU1 runs): the largest
    /// reload, so the count wraps only after 2^32 ticks (171 s at 25 MHz).
    pub fn start(&self) {
        // SAFETY: registers of the timer `at` was given (see there).
        unsafe {
            self.regs.add(CTRL).write_volatile(0);
            self.regs.add(RELOAD).write_volatile(u32::MAX);
            self.regs.add(VALUE).write_volatile(u32::MAX);
            self.regs.add(CTRL).write_volatile(ENABLE);
        }
    }

    /// Whether the timer counts (CPU0 started it).
    pub fn is_running(&self) -> bool {
        // SAFETY: as in `start`.
        unsafe { self.regs.add(CTRL).read_volatile() & ENABLE != 0 }
    }

    /// Ticks since `start`, wrapping (differences by `wrapping_sub`).
    pub fn now(&self) -> u32 {
        // SAFETY: as in `start`. The timer counts down from u32::MAX.
        !unsafe { self.regs.add(VALUE).read_volatile() }
    }
}

#[cfg(target_os = "none")]
extern "C" {
    /// The timer's address in this core's lens, 0 without the chosen node
    /// (each image's `src/bench_clock.c`).
    static offload_bench_clock_base: usize;
}

#[cfg(target_os = "none")]
impl BoardClock {
    /// The board clock devicetree names for this core, if it names one.
    pub fn from_devicetree() -> Option<BoardClock> {
        // SAFETY: a constant the image's C glue defines from devicetree.
        let base = unsafe { offload_bench_clock_base };
        // SAFETY: devicetree's `synaptic,bench-clock` timer, which no
        // driver of these images uses.
        (base != 0).then(|| unsafe { BoardClock::at(base) })
    }
}
