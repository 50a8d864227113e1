//! Placement phases, CPU0's side: print each phase CPU1 measured, with the
//! latency model's prediction for it (`synaptic_runtime::latency::
//! predict_placed`, on the phase's measured arrivals and split and the
//! calibration's service times). Figures in emulated milliseconds
//! (`k_cycle_get_32` ticks over the clock rate); the `PLACEMENT,` lines
//! keep the raw ticks.

use offload_bench_protocol::{self as p, phase_of, Board, Kind, Row};
use synaptic_abi::Priority;
use synaptic_runtime::device::Policy;
use synaptic_runtime::latency::{predict_placed, PooledClass};
use synaptic_zephyr::sched_config::WEIGHTS;
use zephyr::printkln;

const HZ: u32 = zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u32;

fn class_name(index: usize) -> &'static str {
    match Priority::ALL.get(index) {
        Some(Priority::RealTime) => "realtime",
        Some(Priority::Normal) => "normal",
        Some(Priority::BestEffort) => "best_effort",
        None => "?",
    }
}

/// The model's mean (ms) and its error against the measured one (%).
struct Model(Option<(u32, i32)>);

impl core::fmt::Display for Model {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self.0 {
            Some((ms, error)) => write!(f, "model {ms} ms ({error:+} %)"),
            None => f.write_str("model unstable"),
        }
    }
}

fn ms(ticks: f32) -> u32 {
    (ticks * 1000.0 / HZ as f32) as u32
}

/// Print the phase whose run row is row `k`, its class rows after it.
pub fn print_phase(board: &Board, k: usize, calibration: Option<Row>) {
    let run = board.row(k);
    let (policy_index, load_index) = phase_of(run.param);
    let (Some(policy), Some(&load), Some(calibration)) = (
        Policy::ALL.get(policy_index),
        p::PLACEMENT_LOADS_PERMILLE.get(load_index),
        calibration,
    ) else {
        printkln!(
            "bench: placement row {} without its phase or calibration",
            k
        );
        return;
    };
    // Throughput over the whole phase; arrival rates over the arrivals.
    // The run row's spans are µs (a phase can outlast the clock's wrap).
    let per_s = run.summary.n as f32 * 1e6 / (run.summary.p50 as f32).max(1.0);
    let window_s = run.summary.min as f32 / 1e6;
    printkln!(
        "bench: placement {} load {}.{}: {}.{:02} inferences/s, NPU busy {}.{}%, CPU busy {}.{}%",
        policy.name(),
        load / 1000,
        load % 1000 / 100,
        per_s as u32,
        (per_s * 100.0) as u32 % 100,
        run.extra1 / 10,
        run.extra1 % 10,
        run.extra2 / 10,
        run.extra2 % 10
    );
    // The calibration's round trips as each device's service time.
    let service_us =
        [calibration.extra1, calibration.summary.p50].map(|ticks| ticks as f32 * 1e6 / HZ as f32);
    let classes: [Row; Priority::COUNT] = core::array::from_fn(|c| board.row(k + 1 + c));
    let mut load_of = [PooledClass::IDLE; Priority::COUNT];
    for row in classes
        .iter()
        .filter(|r| r.kind == Kind::PlacementClass as u32)
    {
        let class = (row.extra1 & 0xFF) as usize;
        let on_npu = (row.extra1 >> 8) as f32;
        if let Some(l) = load_of.get_mut(class) {
            *l = PooledClass {
                arrivals_per_s: row.summary.n as f32 / window_s.max(1e-6),
                service_us,
                service_scv: 0.0,
                share: [on_npu, row.summary.n as f32 - on_npu],
            };
        }
    }
    let predicted = predict_placed(*policy, &load_of, WEIGHTS);
    for row in &classes {
        let class = (row.extra1 & 0xFF) as usize;
        let s = row.summary;
        let mean = row.extra2 as f32;
        let model = predicted
            .get(class)
            .copied()
            .flatten()
            .map(|f| f.mean_us * HZ as f32 / 1e6);
        printkln!(
            "bench: placement {} load {}.{} {}: n {} ({} on the NPU), mean {} ms, p99 {} ms; {}",
            policy.name(),
            load / 1000,
            load % 1000 / 100,
            class_name(class),
            s.n,
            row.extra1 >> 8,
            ms(mean),
            ms(s.p99 as f32),
            Model(model.map(|m| (ms(m), ((m - mean) / mean.max(1.0) * 100.0) as i32)))
        );
        printkln!(
            "PLACEMENT,{},{},{},{},{},{},{},{},{},{},{}",
            policy.name(),
            load,
            class_name(class),
            s.n,
            row.extra1 >> 8,
            row.extra2,
            s.p99,
            model.map_or(0, |m| m as u32),
            run.summary.p50,
            run.extra1,
            run.extra2
        );
    }
}
