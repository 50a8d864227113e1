//! dual_model, CPU0: register a face-detection model (REALTIME traffic) and
//! a keyword-spotting model (NORMAL traffic) on the stub NPU, boot CPU1,
//! serve its requests, and print the `syn ipc status` view every second.
//!
//! After `DEMO_SECONDS` it prints a verdict: CPU1 attached, both of its
//! models were served at the sensor cadence, nothing failed. The service
//! keeps running afterwards (the `syn` shell commands stay available).
//! Times are QEMU's emulated time on `mps2/an521`, not a real part's.
//!
//! With `CONFIG_SYNAPTIC_CPU_INTERPRETER` CPU0 registers the real networks
//! instead ([`models::real`]: person detection and keyword spotting, for
//! the CPU interpreter, read from CPU0's flash), CPU1 sends the four shipped
//! test inputs once, and CPU0's service prints each result with its label
//! (`synaptic: result ...`); the verdict checks that every input was
//! answered with the label LiteRT's reference kernels predict.
#![no_std]

use dual_model_models as models;
use synaptic_serve::boot::{BootPlatform, Budgets};
use synaptic_zephyr::service::{self, Options};
use synaptic_zephyr::status::STATUS;
use zephyr::printkln;
use zephyr::time::{sleep, Duration};

/// Seconds of serving before the verdict.
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
const DEMO_SECONDS: u32 = 5;
/// Inferences CPU1 must have been served by then: half the 20 Hz cadence
/// over the demo time less one second for boot. Half, because under QEMU
/// a face request costs tens of emulated milliseconds (CPU1 renders 27 KB,
/// the stub NPU hashes all of it on CPU0) and CPU1 waits for each answer.
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
const EXPECTED_SERVED: u32 = (DEMO_SECONDS - 1) * (1000 / models::PERIOD_MS) / 2;

/// Emulated seconds CPU0 waits for the four real inferences: the
/// interpreter runs the person detector in QEMU's emulated time at
/// `-icount shift=7` (7.8 million instructions per second).
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
const REAL_SECONDS: u32 = 600;

#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
fn descs() -> Result<[synaptic_runtime::registry::ModelDesc<'static>; 2], ()> {
    service::label_outputs(models::real::LABELS);
    models::real::descs().map_err(|_| ())
}

#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn descs() -> Result<[synaptic_runtime::registry::ModelDesc<'static>; 2], ()> {
    models::descs().map_err(|_| ())
}

/// Real models: wait for CPU1's four inputs to be answered, then check the
/// labels against LiteRT's.
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
fn verdict() -> bool {
    let expected = models::real::INPUTS.len() as u32;
    let mut waited = 0;
    while service::interpreter_results() < expected && waited < REAL_SECONDS {
        sleep(Duration::millis_at_least(1000));
        waited += 1;
    }
    // The last reply follows its result; the counters follow the reply.
    while STATUS.served() < expected && waited < REAL_SECONDS {
        sleep(Duration::millis_at_least(1000));
        waited += 1;
    }
    printkln!("syn ipc status ({} s):", waited);
    service::print_status();
    let labels_ok = service::snapshot(|s| {
        // Each model's last result is its last input's: the no-person image
        // and "no".
        let last = |model: &str| {
            s.results
                .iter()
                .find(|r| r.model.as_str() == model)
                .and_then(|r| r.predicted().and_then(|i| r.classes.get(i).copied()))
        };
        let want = |k: usize| Some(models::real::INPUTS[k].2);
        last(models::real::PERSON) == want(1) && last(models::real::SPEECH) == want(3)
    });
    let results = service::interpreter_results();
    printkln!(
        "dual_model: {} real inferences on the CPU interpreter ({} expected), {} errors, labels {}",
        results,
        expected,
        STATUS.errors(),
        if labels_ok {
            "as LiteRT"
        } else {
            "DIFFER from LiteRT"
        }
    );
    results == expected && STATUS.served() == expected && STATUS.errors() == 0 && labels_ok
}

/// Stub models: serve the 20 Hz traffic for `DEMO_SECONDS`.
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn verdict() -> bool {
    for second in 1..=DEMO_SECONDS {
        sleep(Duration::millis_at_least(1000));
        printkln!("syn ipc status ({} s):", second);
        service::print_status();
    }
    let served = STATUS.served();
    printkln!(
        "dual_model: {} inferences served (at least {} expected), {} errors",
        served,
        EXPECTED_SERVED,
        STATUS.errors()
    );
    served >= EXPECTED_SERVED && STATUS.errors() == 0 && STATUS.status_answered() >= 2
}

#[no_mangle]
extern "C" fn rust_main() {
    let Ok(descs) = descs() else {
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
            printkln!("dual_model: FAIL (service did not start: {})", e);
            return;
        }
    };
    if !report.is_up() {
        // Single-core mode: the service runs, nobody calls it.
        service::print_status();
        printkln!("dual_model: single-core mode, no CPU1 to serve");
        return;
    }
    let ok = verdict();
    printkln!("dual_model: {}", if ok { "PASS" } else { "FAIL" });
}
