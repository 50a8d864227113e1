//! dual_model, CPU0: register a face-detection model (REALTIME traffic) and
//! a keyword-spotting model (NORMAL traffic) on the stub NPU, boot CPU1,
//! serve its requests, and print the `syn ipc status` view every second.
//!
//! After `DEMO_SECONDS` it prints a verdict: CPU1 attached, both of its
//! models were served at the sensor cadence, nothing failed. The service
//! keeps running afterwards (the `syn` shell commands stay available).
//! Times are QEMU's emulated time on `mps2/an521`, not a real part's.
#![no_std]

use dual_model_models as models;
use synaptic_serve::boot::{BootPlatform, Budgets};
use synaptic_zephyr::service::{self, Options};
use synaptic_zephyr::status::STATUS;
use zephyr::printkln;

/// Seconds of serving before the verdict.
const DEMO_SECONDS: u32 = 5;
/// Inferences CPU1 must have been served by then: half the 20 Hz cadence
/// over the demo time less one second for boot. Half, because under QEMU
/// a face request costs tens of emulated milliseconds (CPU1 renders 27 KB,
/// the stub NPU hashes all of it on CPU0) and CPU1 waits for each answer.
const EXPECTED_SERVED: u32 = (DEMO_SECONDS - 1) * (1000 / models::PERIOD_MS) / 2;

fn sleep_ms(ms: i32) {
    // SAFETY: plain kernel call from thread context.
    unsafe { zephyr::raw::k_msleep(ms) };
}

#[no_mangle]
extern "C" fn rust_main() {
    let Ok(descs) = models::descs() else {
        printkln!("dual_model: FAIL (model descriptions)");
        return;
    };
    let options = Options {
        models: heapless::Vec::from_slice(&descs).unwrap_or_default(),
        npu_latency_us: models::NPU_LATENCY_US,
        npu_seed: models::SEED,
        npu_fail_on_marker: false,
        npu_null: false,
        budgets: Budgets::default(),
    };
    let mut platform = synaptic_zephyr::boot_platform();
    let platform = platform.as_mut().map(|p| p as &mut dyn BootPlatform);
    let report = match service::start(options, platform) {
        Ok(report) => report,
        Err(e) => {
            printkln!("dual_model: FAIL (service did not start: {:?})", e);
            return;
        }
    };
    if !report.is_up() {
        // Single-core mode: the service runs, nobody calls it.
        service::print_status();
        printkln!("dual_model: single-core mode, no CPU1 to serve");
        return;
    }
    for second in 1..=DEMO_SECONDS {
        sleep_ms(1000);
        printkln!("syn ipc status ({} s):", second);
        service::print_status();
    }
    let served = STATUS.served();
    let ok = served >= EXPECTED_SERVED && STATUS.errors() == 0 && STATUS.status_answered() >= 2;
    printkln!(
        "dual_model: {} inferences served (at least {} expected), {} errors",
        served,
        EXPECTED_SERVED,
        STATUS.errors()
    );
    printkln!("dual_model: {}", if ok { "PASS" } else { "FAIL" });
}
