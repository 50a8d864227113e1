//! Offload benchmark, CPU0: serve the two null-executor models, carry out
//! CPU1's requests (stub latency, NPU busy time), and print what CPU1
//! measured: a table for people, `BENCH,` and `SAMPLES,` lines for
//! `scripts/bench_report.py`, and a verdict on whether every row is there
//! and well formed. Nothing here judges a figure: the benchmark reports,
//! it does not assert speed. The placement build
//! (`CONFIG_SYNAPTIC_CPU_INTERPRETER`, see `offload_bench_protocol`)
//! serves the real keyword-spotting network on both devices instead, also
//! switches the placement policy and reads the interpreter's busy time
//! for CPU1, and prints its phases (`placement`).
#![no_std]

use offload_bench_protocol::{self as p, Board, Command, Kind};
use synaptic_runtime::arena::ArenaError;
use synaptic_runtime::device::Policy;
use synaptic_runtime::registry::ModelDesc;
use synaptic_serve::boot::{BootPlatform, Budgets};
use synaptic_zephyr::service::{self, Options};
use synaptic_zephyr::status::STATUS;
use zephyr::printkln;
use zephyr::time::{sleep, Duration};

mod placement;

/// How long CPU1 may take for the whole run (emulated seconds).
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
const RUN_BUDGET_S: u32 = 120;
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
const RUN_BUDGET_S: u32 = 1_800;

#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn descs() -> Result<[ModelDesc<'static>; 2], ArenaError> {
    Ok([
        ModelDesc::int8(p::SMALL, &p::SMALL_INPUT, p::SMALL_OUTPUT)?,
        ModelDesc::int8(p::FRAME, &p::FRAME_INPUT, p::FRAME_OUTPUT)?,
    ])
}

/// The placement build: keyword spotting for the NPU and the CPU
/// interpreter.
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
fn descs() -> Result<[ModelDesc<'static>; 1], ArenaError> {
    static SPEECH_TFLITE: &[u8] = include_bytes!("../../../models/micro_speech.tflite");
    let speech = ModelDesc {
        devices: synaptic_runtime::device::DeviceMask::ALL,
        ..ModelDesc::tflite(
            p::PLACEMENT_MODEL,
            &p::PLACEMENT_INPUT,
            p::PLACEMENT_OUTPUT,
            SPEECH_TFLITE,
        )?
    };
    Ok([speech])
}

/// Rows of a complete run of this build.
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
const ROWS: usize = p::ROWS;
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
const ROWS: usize = p::PLACEMENT_ROWS;

/// How often CPU0 looks for a command of CPU1's, milliseconds.
const LOOK_MS: u32 = 50;

/// Answer CPU1's mailbox until it is done or the budget runs out.
fn serve_commands(board: &Board) -> bool {
    let mut waited_ms = 0u32;
    while !board.done() {
        if let Some((seq, command, arg)) = board.pending() {
            let value = match command {
                Some(Command::SetLatency) => {
                    service::set_npu_latency_us(arg);
                    0
                }
                Some(Command::NpuBusy) => STATUS.npu_busy_us(),
                Some(Command::SetPolicy) => match Policy::ALL.get(arg as usize) {
                    Some(policy) => {
                        service::set_policy(*policy);
                        0
                    }
                    None => u32::MAX,
                },
                Some(Command::CpuBusy) => STATUS.interpreter_busy_us(),
                None => u32::MAX,
            };
            board.answer(seq, value);
            continue;
        }
        // Commands are rare: a 50 ms look keeps CPU0's timer quiet while
        // CPU1 measures. Each look costs some 700 emulated instructions;
        // at 10 ms, 4 of the 1,000 loaded STATUS round trips (95 ms) met
        // one, enough to move their p99.
        sleep(Duration::millis_at_least(LOOK_MS.into()));
        waited_ms += LOOK_MS;
        if waited_ms > RUN_BUDGET_S * 1000 {
            return false;
        }
    }
    true
}

fn print_rows(board: &Board) -> bool {
    #[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
    printkln!(
        "bench: emulated k_cycle_get_32 ticks on mps2/an521 (QEMU -icount), measured on CPU1"
    );
    #[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
    printkln!(
        "bench: emulated board-clock ticks on mps2/an521 (QEMU -icount, timer0, CPU0's rate)"
    );
    let mut well_formed = board.rows_written() == ROWS;
    let mut calibration = None;
    for k in 0..board.rows_written() {
        let row = board.row(k);
        let s = row.summary;
        let name = Kind::from_raw(row.kind).map_or("?", Kind::name);
        let ok = row.is_well_formed();
        well_formed &= ok;
        match Kind::from_raw(row.kind) {
            Some(Kind::InferSmall | Kind::InferFrame) => printkln!(
                "bench: {} null executor, polled: min {} p50 {} p99 {} max {} ticks (n={}); CPU1 bytes alone p50 {}, transport p50 {}",
                name, s.min, s.p50, s.p99, s.max, s.n, row.extra1, s.p50.saturating_sub(row.extra1)
            ),
            Some(Kind::Throughput) => printkln!(
                "bench: {} in flight {}: {} inferences/s, NPU busy {}.{}% (stub {} us, {} in the window, {} ticks each)",
                name, row.param, row.extra1, row.extra2 / 10, row.extra2 % 10, p::LOAD_LATENCY_US, s.n, s.p50
            ),
            Some(Kind::PlacementCalib) => {
                calibration = Some(row);
                printkln!(
                    "bench: placement calibration: CPU interpreter {} ticks, stub NPU {} ticks at {} us",
                    s.p50, row.extra1, row.extra2
                );
            }
            Some(Kind::PlacementRun) => placement::print_phase(board, k, calibration),
            Some(Kind::PlacementClass) => {}
            Some(Kind::SweepPoll | Kind::SweepIrq) => printkln!(
                "bench: {} stub {} us: p50 {} ticks, CPU1 busy {} ticks per request",
                name, row.param, s.p50, row.extra1
            ),
            _ => printkln!(
                "bench: {}: min {} p50 {} p99 {} max {} ticks (n={})",
                name, s.min, s.p50, s.p99, s.max, s.n
            ),
        }
        printkln!(
            "BENCH,{},{},{},{},{},{},{},{},{}",
            name,
            row.param,
            s.n,
            s.min,
            s.p50,
            s.p99,
            s.max,
            row.extra1,
            row.extra2
        );
        if !ok {
            printkln!("bench: row {} ({}) is malformed", k, name);
        }
    }
    well_formed
}

/// The p99 of a `kind` row on the board, when CPU1 wrote one.
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn p99_of(board: &Board, kind: Kind) -> Option<u32> {
    (0..board.rows_written())
        .map(|k| board.row(k))
        .find(|row| row.kind == kind as u32)
        .map(|row| row.summary.p99)
}

/// How much a load stretches the STATUS round trip's tail: its loaded
/// p99 over its unloaded p99, interrupt-driven and polled, for people
/// and as `RATIO,<name>,<numerator>,<denominator>` for
/// `scripts/bench_report.py`.
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn print_ratios(board: &Board) {
    for (label, name, loaded, idle) in [
        (
            "irq",
            "p99_loaded_unloaded_irq",
            Kind::StatusIrqLoaded,
            Kind::StatusIrq,
        ),
        (
            "poll",
            "p99_loaded_unloaded_poll",
            Kind::StatusPollLoaded,
            Kind::StatusPoll,
        ),
    ] {
        let (Some(num), Some(den)) = (p99_of(board, loaded), p99_of(board, idle)) else {
            continue;
        };
        // Hundredths, in integers (printk has no floating point here).
        let hundredths = u64::from(num) * 100 / u64::from(den.max(1));
        printkln!(
            "bench: loaded/unloaded p99 ({}): {}.{:02} ({} / {} ticks)",
            label,
            hundredths / 100,
            hundredths % 100,
            num,
            den
        );
        printkln!("RATIO,{},{},{}", name, num, den);
    }
}

#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn print_samples(board: &Board) {
    const PER_LINE: usize = 25;
    let names = [
        "status_poll",
        "status_irq",
        "status_poll_loaded",
        "status_irq_loaded",
    ];
    for (set, name) in names.iter().enumerate() {
        for chunk in (0..p::STATUS_ROUNDS).step_by(PER_LINE) {
            let mut line: heapless::String<256> = heapless::String::new();
            for i in chunk..(chunk + PER_LINE).min(p::STATUS_ROUNDS) {
                let _ = core::fmt::write(&mut line, format_args!(",{}", board.sample(set, i)));
            }
            printkln!("SAMPLES,{}{}", name, line.as_str());
        }
    }
}

#[no_mangle]
extern "C" fn rust_main() {
    let Some(shm) = synaptic_zephyr::platform::shared_memory() else {
        printkln!("bench: no shared region in devicetree");
        return;
    };
    // SAFETY: devicetree's shared region, mapped for the program's life;
    // its last words are the benchmark board's alone on both cores.
    let board = unsafe { Board::at_end(shm.base, shm.size as usize) };
    board.clear();
    // The placement phases' time base, running before CPU1 starts.
    if let Some(clock) = offload_bench_protocol::BoardClock::from_devicetree() {
        clock.start();
    }
    let Ok(descs) = descs() else {
        printkln!("bench: model descriptors");
        return;
    };
    let options = Options {
        models: heapless::Vec::from_slice(&descs).unwrap_or_default(),
        npu_latency_us: 0,
        npu_seed: 0x5359_4E33,
        npu_fail_on_marker: false,
        // The placement build tells the devices apart by their answers.
        npu_null: !cfg!(CONFIG_SYNAPTIC_CPU_INTERPRETER),
        budgets: Budgets::default(),
    };
    let mut platform = synaptic_zephyr::boot_platform();
    let platform = platform.as_mut().map(|p| p as &mut dyn BootPlatform);
    match service::start(options, platform) {
        Ok(boot) if boot.is_up() => {}
        other => {
            printkln!("bench: CPU1 did not come up: {:?}", other.map(|b| b.link));
            return;
        }
    }
    let finished = serve_commands(&board);
    if !finished {
        printkln!("bench: CPU1 did not finish within {} s", RUN_BUDGET_S);
    } else if board.failed() != 0 {
        printkln!("bench: CPU1 stopped at step {}", board.failed());
    }
    let well_formed = print_rows(&board);
    #[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
    print_ratios(&board);
    #[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
    print_samples(&board);
    service::print_status();
    if finished && board.failed() == 0 && well_formed {
        printkln!("bench: PASS ({} rows, well formed)", ROWS);
    } else {
        printkln!("bench: FAIL");
    }
}
