//! Placement phases, CPU1 (the build with the CPU interpreter): one real
//! network on both of CPU0's devices, requests of every class arriving as
//! a Poisson stream, under every placement policy at every load.
//!
//! Calibration first: one keyword-spotting inference on the CPU
//! interpreter (policy cpu) gives its time; the stub NPU is set to 2/3 of
//! it and one inference timed there (policy npu). The two answers differ
//! (the interpreter's scores against the stub's hash), so each later
//! answer tells which device ran it. Then per phase: CPU0 switches the
//! policy, the main thread releases the same [`Arrivals`] sequence at the
//! phase's rate, one worker per exchange slot takes the most urgent
//! arrival waiting (highest class, then oldest) and asks at its class, and
//! the phase's rows go to the board once every request is answered. An
//! arrival that finds every worker busy waits on CPU1 (as a caller with no
//! free slot would), in class order.
//!
//! Every time here (calibration, arrivals, latencies, the phase's span) is
//! read from the [`BoardClock`], whose ticks are CPU0's: CPU1's own
//! `k_cycle_get_32` runs slow in QEMU while CPU0 computes (see there), so
//! timing the interpreter on it made the phases' CPU 1.5x the NPU on CPU1
//! and 2.2x on CPU0, where the scheduler places by it.

use core::sync::atomic::{AtomicU32, Ordering};

use offload_bench_protocol::{
    self as p, phase_param, summarize, Arrivals, Board, BoardClock, Command, Kind,
};
use synaptic_abi::Priority;
use synaptic_ipc::{Semaphore, Timeout};
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::client::Wait;
use synaptic_serve::ClientError;
use synaptic_zephyr::client::ZephyrClient;
use synaptic_zephyr::sync::KernelSemaphore;
use zephyr::time::{sleep, Duration};

use crate::ask;

/// Ticks of the board clock (checked running by [`run`] before any phase).
fn ticks() -> u32 {
    BoardClock::from_devicetree().map_or(0, |c| c.now())
}

/// A request may wait behind a whole phase's backlog.
const TIMEOUT: Timeout = Timeout::Millis(120_000);
/// Workers: one per exchange slot (the build's 8).
const WORKERS: usize = 8;
/// Longest a phase may take to drain, milliseconds.
const DRAIN_MS: u32 = 170_000;
/// After a policy switch: CPU0 applies it at its serving thread's next
/// turn, which its 50 ms idle timer starts at the latest.
const SWITCH_MS: u64 = 200;

const N: usize = p::PLACEMENT_ARRIVALS;

/// Arrivals released to the workers and not yet taken.
static PENDING: KernelSemaphore = KernelSemaphore::new(0, N as u32);
/// Requests answered in this phase.
static DONE: AtomicU32 = AtomicU32::new(0);
/// Per arrival: not released yet, released and waiting, taken by a worker.
const UNRELEASED: u32 = 0;
const WAITING: u32 = 1;
const TAKEN: u32 = 2;
static STATE: [AtomicU32; N] = [const { AtomicU32::new(UNRELEASED) }; N];
/// Per arrival: its class index, its release tick, its latency, and which
/// device answered it (0 the NPU, 1 the CPU interpreter, 2 an answer of
/// neither, 3 + errno a failure).
static CLASS: [AtomicU32; N] = [const { AtomicU32::new(0) }; N];
static ARRIVED: [AtomicU32; N] = [const { AtomicU32::new(0) }; N];
static LATENCY: [AtomicU32; N] = [const { AtomicU32::new(0) }; N];
static WHERE: [AtomicU32; N] = [const { AtomicU32::new(0) }; N];
/// The first output word of each device's answer (calibration).
static ANSWER_NPU: AtomicU32 = AtomicU32::new(0);
static ANSWER_CPU: AtomicU32 = AtomicU32::new(0);

/// One inference at `priority` on an all-zero input; the answer's first
/// four bytes.
fn infer_word(
    client: &ZephyrClient,
    model: ModelHandle,
    priority: Priority,
) -> Result<u32, ClientError> {
    let mut session = client.reserve(p::PLACEMENT_LEN, TIMEOUT)?;
    session.infer_input()[..p::PLACEMENT_LEN].fill(0);
    session.infer_then(
        model,
        p::PLACEMENT_LEN,
        priority,
        Wait::Interrupt,
        TIMEOUT,
        |out| match *out {
            [a, b, c, d, ..] => u32::from_le_bytes([a, b, c, d]),
            _ => 0,
        },
    )
}

/// Claim the waiting arrival of the highest class, the oldest of it: its
/// index and class. A worker holds one `PENDING` unit, so one is waiting
/// (another worker may claim the one seen first: look again).
fn take_most_urgent() -> Option<(usize, u32)> {
    for _ in 0..N {
        let mut best: Option<(usize, u32)> = None;
        for (k, state) in STATE.iter().enumerate() {
            // Ordering: Acquire pairs with the main thread's Release of
            // WAITING, after it stored the class and the release tick.
            if state.load(Ordering::Acquire) != WAITING {
                continue;
            }
            let class = CLASS[k].load(Ordering::Relaxed);
            if best.is_none_or(|(_, c)| class > c) {
                best = Some((k, class));
            }
        }
        let (k, class) = best?;
        if STATE[k]
            .compare_exchange(WAITING, TAKEN, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            return Some((k, class));
        }
    }
    None
}

#[zephyr::thread(stack_size = 2048, pool_size = 8)]
fn placer(client: &'static ZephyrClient, model: ModelHandle) {
    loop {
        PENDING.take(Timeout::Forever);
        let Some((k, class)) = take_most_urgent() else {
            continue;
        };
        let priority = Priority::ALL[class as usize % Priority::COUNT];
        let answer = infer_word(client, model, priority);
        let latency = ticks().wrapping_sub(ARRIVED[k].load(Ordering::Acquire));
        let device = match answer {
            Ok(w) if w == ANSWER_NPU.load(Ordering::Relaxed) => 0,
            Ok(w) if w == ANSWER_CPU.load(Ordering::Relaxed) => 1,
            Ok(_) => 2,
            Err(e) => 3 + e.to_errno() as u32,
        };
        LATENCY[k].store(latency, Ordering::Relaxed);
        WHERE[k].store(device, Ordering::Relaxed);
        // Ordering: Release, so the main thread that sees the count sees
        // the latency and the device.
        DONE.fetch_add(1, Ordering::Release);
    }
}

/// Switch CPU0's policy and give it a turn to apply it.
fn set_policy(board: &Board, policy: usize) {
    ask(board, Command::SetPolicy, policy as u32);
    sleep(Duration::millis_at_least(SWITCH_MS));
}

/// The second of two timed inferences at NORMAL (the first loads and
/// plans): its round trip and its answer word.
fn calibrate(client: &ZephyrClient, model: ModelHandle) -> Result<(u32, u32), u32> {
    let mut last = (0, 0);
    for _ in 0..2 {
        let start = ticks();
        let word = infer_word(client, model, Priority::Normal).map_err(|_| 301u32)?;
        last = (ticks().wrapping_sub(start), word);
    }
    Ok(last)
}

/// Release the phase's arrivals at `mean_gap` ticks apart on average and
/// wait for every answer: the time to the last arrival and to the last
/// answer, µs (a phase can outlast the board clock's 32-bit wrap).
fn run_phase(mean_gap: u64) -> Result<(u32, u32), u32> {
    DONE.store(0, Ordering::Relaxed);
    for state in &STATE {
        state.store(UNRELEASED, Ordering::Relaxed);
    }
    let ticks_per_ms = (zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u64 / 1000).max(1);
    // The sequence's own mean gap (Q16): scale by it, so that the phase's
    // load is the one asked for (240 draws average 0.83, not 1).
    let drawn: u64 = Arrivals::new().take(N).map(|(g, _)| u64::from(g)).sum();
    let drawn_mean = (drawn / N as u64).max(1);
    let mut span = Span::new();
    let mut due = 0u64;
    for (k, (gap, class)) in Arrivals::new().take(N).enumerate() {
        due += u64::from(gap) * mean_gap / drawn_mean;
        // CPU1's sleep is timed by its own clock, which runs slow against
        // the board's (up to 1.7x): sleep half of what is left, look again.
        loop {
            let now = span.ticks();
            if now >= due {
                break;
            }
            sleep(Duration::millis_at_least(
                ((due - now) / ticks_per_ms / 2).max(1),
            ));
        }
        CLASS[k].store(class as u32, Ordering::Relaxed);
        ARRIVED[k].store(ticks(), Ordering::Relaxed);
        // Ordering: Release, so the worker that sees WAITING sees the
        // class and the release tick.
        STATE[k].store(WAITING, Ordering::Release);
        PENDING.give();
    }
    let arrivals = span.ticks();
    let mut waited = 0;
    while (DONE.load(Ordering::Acquire) as usize) < N {
        sleep(Duration::millis_at_least(5));
        span.ticks();
        waited += 5;
        if waited > DRAIN_MS {
            return Err(310);
        }
    }
    let us = |ticks: u64| (ticks / ticks_per_us()).min(u64::from(u32::MAX)) as u32;
    Ok((us(arrivals), us(span.ticks())))
}

fn ticks_per_us() -> u64 {
    (zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u64 / 1_000_000).max(1)
}

/// Board time since it was made, in ticks, from reads of the 32-bit board
/// clock at least once per wrap (171 s at 25 MHz; a phase takes longer).
struct Span {
    last: u32,
    ticks: u64,
}

impl Span {
    fn new() -> Span {
        Span {
            last: ticks(),
            ticks: 0,
        }
    }

    fn ticks(&mut self) -> u64 {
        let now = ticks();
        self.ticks += u64::from(now.wrapping_sub(self.last));
        self.last = now;
        self.ticks
    }
}

/// CPU0's NPU and CPU interpreter busy times so far, µs.
fn busy_us(board: &Board) -> (u32, u32) {
    (
        ask(board, Command::NpuBusy, 0),
        ask(board, Command::CpuBusy, 0),
    )
}

/// Busy time of a device over `elapsed_us`, per mille, from CPU0's µs.
fn permille(busy_us: u32, elapsed_us: u32) -> u32 {
    (u64::from(busy_us) * 1000 / u64::from(elapsed_us.max(1))).min(1000) as u32
}

/// One phase's rows: the run's, then one per class.
fn phase_rows(
    board: &Board,
    param: u32,
    (arrivals_us, elapsed_us): (u32, u32),
    busy: (u32, u32),
) -> Result<(), u32> {
    let run = p::Row {
        kind: Kind::PlacementRun as u32,
        param,
        summary: p::Summary {
            n: N as u32,
            min: arrivals_us,
            p50: elapsed_us,
            p99: elapsed_us,
            max: elapsed_us,
        },
        extra1: permille(busy.0, elapsed_us),
        extra2: permille(busy.1, elapsed_us),
    };
    board.push_row(&run);
    for class in 0..Priority::COUNT {
        let mut samples = [0u32; N];
        let mut n = 0;
        let mut on_npu = 0;
        let mut total = 0u64;
        for k in 0..N {
            if CLASS[k].load(Ordering::Relaxed) as usize != class {
                continue;
            }
            match WHERE[k].load(Ordering::Relaxed) {
                0 => on_npu += 1,
                1 => {}
                // 320: an answer of neither device; 323 + errno: a failure.
                other => return Err(318 + other),
            }
            let latency = LATENCY[k].load(Ordering::Relaxed);
            samples[n] = latency;
            total += u64::from(latency);
            n += 1;
        }
        let row = p::Row {
            kind: Kind::PlacementClass as u32,
            param,
            summary: summarize(&mut samples[..n]),
            extra1: class as u32 | on_npu << 8,
            extra2: (total / n.max(1) as u64) as u32,
        };
        board.push_row(&row);
    }
    Ok(())
}

/// The placement run: calibration, then every phase.
pub fn run(board: &Board, client: &'static ZephyrClient) -> Result<(), u32> {
    if !BoardClock::from_devicetree().is_some_and(|c| c.is_running()) {
        return Err(303);
    }
    let model = client
        .model_lookup(p::PLACEMENT_MODEL, TIMEOUT)
        .map_err(|_| 300u32)?;
    // Policy indices: synaptic_runtime::device::Policy::ALL.
    const NPU: usize = 0;
    const CPU: usize = 1;
    set_policy(board, CPU);
    let (cpu_ticks, cpu_word) = calibrate(client, model)?;
    let npu_us = cpu_ticks / ticks_per_us() as u32 * p::NPU_OF_CPU.0 / p::NPU_OF_CPU.1;
    ask(board, Command::SetLatency, npu_us);
    set_policy(board, NPU);
    let (npu_ticks, npu_word) = calibrate(client, model)?;
    if npu_word == cpu_word {
        return Err(302);
    }
    ANSWER_NPU.store(npu_word, Ordering::Relaxed);
    ANSWER_CPU.store(cpu_word, Ordering::Relaxed);
    board.push_row(&p::Row {
        kind: Kind::PlacementCalib as u32,
        param: 0,
        summary: p::Summary {
            n: 1,
            min: cpu_ticks,
            p50: cpu_ticks,
            p99: cpu_ticks,
            max: cpu_ticks,
        },
        extra1: npu_ticks,
        extra2: npu_us,
    });
    for _ in 0..WORKERS {
        placer(client, model).start();
    }
    for (load, &permille_load) in p::PLACEMENT_LOADS_PERMILLE.iter().enumerate() {
        // Arrivals at `load` times the NPU's rate.
        let mean_gap = u64::from(npu_ticks) * 1000 / u64::from(permille_load);
        for policy in 0..p::PLACEMENT_POLICIES {
            set_policy(board, policy);
            let busy0 = busy_us(board);
            let span = run_phase(mean_gap)?;
            // CPU0 publishes its busy times after each answering turn.
            sleep(Duration::millis_at_least(SWITCH_MS));
            let busy1 = busy_us(board);
            let busy = (busy1.0.wrapping_sub(busy0.0), busy1.1.wrapping_sub(busy0.1));
            phase_rows(board, phase_param(policy, load), span, busy)?;
        }
    }
    Ok(())
}
