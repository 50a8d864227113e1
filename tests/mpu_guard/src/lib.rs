//! A stand-in for what the serving layer exports in a full CPU0 image, so
//! the MPU guard's C code links and runs without CPU1:
//! `syn_service_progress()`, the counters `syn_mpu_test_run()` watches,
//! derived from uptime at the rates CPU1 drives them (20 inferences and one
//! STATUS_REQ per second), so the real 2 s wait is exercised. (The shell
//! and the real counters run in `tests/service`.)
#![no_std]

use zephyr::time::now;

/// Requests a CPU1 at 20 Hz would have had served after `uptime_ms`.
const SERVED_PERIOD_MS: u64 = 50;
/// STATUS_REQ heartbeats a CPU1 at 1 Hz would have had answered.
const STATUS_PERIOD_MS: u64 = 1000;

/// Progress counters of a simulated serving layer.
///
/// # Safety
///
/// `served` and `status_answered` must each be null or valid for a `u32`
/// write.
#[no_mangle]
pub unsafe extern "C" fn syn_service_progress(served: *mut u32, status_answered: *mut u32) {
    let uptime_ms = now().duration_since_epoch().to_millis();
    // Truncation is the counters' wrap-around, as with real counters.
    let served_now = (uptime_ms / SERVED_PERIOD_MS) as u32;
    let status_now = (uptime_ms / STATUS_PERIOD_MS) as u32;
    // SAFETY: the caller passes null or a pointer valid for a u32 write.
    if let Some(out) = unsafe { served.as_mut() } {
        *out = served_now;
    }
    // SAFETY: as above.
    if let Some(out) = unsafe { status_answered.as_mut() } {
        *out = status_now;
    }
}
