//! The offload phases, CPU1 (see the crate documentation).

use core::sync::atomic::{AtomicU32, Ordering};

use offload_bench_protocol::{self as p, summarize, Board, Command, Kind, Row};
use synaptic_abi::Priority;
use synaptic_ipc::{Semaphore, Timeout};
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::client::Wait;
use synaptic_serve::ClientError;
use synaptic_zephyr::client::ZephyrClient;
use synaptic_zephyr::sync::KernelSemaphore;
use zephyr::time::{sleep, Duration};

use crate::{ask, ticks};

const TIMEOUT: Timeout = Timeout::Millis(2_000);

/// Worker threads (throughput and load).
const WORKERS: usize = 4;
/// The workers' priority: below the main thread's (0), which measures. A
/// load is background work: at the measuring thread's priority, a load
/// worker summing a frame's 4,096-byte output kept the STATUS caller,
/// woken by its reply, off CPU1 until the worker blocked (Zephyr does not
/// preempt for a woken thread of equal priority). An application gives
/// its latency-sensitive caller the higher priority in the same way.
const WORKER_PRIORITY: i32 = 1;

/// What the workers do: idle, keep both models served (one worker), or
/// saturate with `n` requests in flight.
static MODE: AtomicU32 = AtomicU32::new(MODE_IDLE);
const MODE_IDLE: u32 = 0;
const MODE_LOAD: u32 = 1;
/// `MODE_FLIGHT + n`: workers `0..n` saturate the small model.
const MODE_FLIGHT: u32 = 16;
/// Idle workers block here (no timer wake-ups that would cost CPU1 time
/// during the measurements); [`set_mode`] lets each of them look again.
static GATE: KernelSemaphore = KernelSemaphore::new(0, WORKERS as u32);
/// Requests the workers completed (throughput windows), and failures.
static COMPLETED: AtomicU32 = AtomicU32::new(0);
static FAILURES: AtomicU32 = AtomicU32::new(0);

/// Sample buffer of the longest phase (CPU1's RAM, used by one thread).
static mut SAMPLES: [u32; p::STATUS_ROUNDS] = [0; p::STATUS_ROUNDS];

/// Cycles CPU1 spent outside its idle thread so far.
fn busy_cycles() -> u64 {
    let mut stats: zephyr::raw::k_thread_runtime_stats_t =
        // SAFETY: a plain C struct of integers: all zeroes is a value.
        unsafe { core::mem::zeroed() };
    // SAFETY: `stats` is a valid, writable struct for the call.
    unsafe { zephyr::raw::k_thread_runtime_stats_all_get(&mut stats) };
    stats.total_cycles
}

/// The two models.
#[derive(Clone, Copy)]
struct Models {
    small: ModelHandle,
    frame: ModelHandle,
}

/// Every byte of `bytes`, summed (what a caller reading its output does).
fn sum(bytes: &[u8]) -> u32 {
    bytes
        .iter()
        .fold(0u32, |a, &b| a.wrapping_add(u32::from(b)))
}

/// One inference on `model` (`len` bytes in): write every input byte,
/// infer, read every output byte where CPU0 wrote it. Returns the round
/// trip.
fn infer_once(
    client: &ZephyrClient,
    model: ModelHandle,
    len: usize,
    wait: Wait,
    seq: u32,
) -> Result<u32, ClientError> {
    let start = ticks();
    let mut session = client.reserve(len, TIMEOUT)?;
    session.infer_input()[..len].fill(seq as u8);
    let total = session.infer_then(model, len, Priority::Normal, wait, TIMEOUT, sum)?;
    core::hint::black_box(total);
    Ok(ticks().wrapping_sub(start))
}

/// The same bytes without a request: write `len` into a reserved slot, read
/// `out_len` from the caller's buffer.
fn bytes_once(
    client: &ZephyrClient,
    len: usize,
    out: &mut [u8],
    seq: u32,
) -> Result<u32, ClientError> {
    let start = ticks();
    let mut session = client.reserve(len, TIMEOUT)?;
    session.infer_input()[..len].fill(seq as u8);
    drop(session);
    core::hint::black_box(sum(out));
    Ok(ticks().wrapping_sub(start))
}

/// Set the stub latency and let the serving thread apply it.
fn set_latency(board: &Board, client: &ZephyrClient, models: Models, us: u32) {
    ask(board, Command::SetLatency, us);
    for seq in 0..3 {
        let _ = infer_once(client, models.small, p::SMALL_LEN, Wait::Interrupt, seq);
    }
}

// Workers read their outputs in the slots: no output buffers of their own.
#[zephyr::thread(stack_size = 3072, pool_size = 4)]
fn worker(client: &'static ZephyrClient, models: Models, index: u32) {
    let mut seq = 0u32;
    loop {
        let mode = MODE.load(Ordering::Acquire);
        // The load keeps both models served (worker 0, alternately); a
        // throughput window saturates the small model with workers 0..n.
        let loading = mode == MODE_LOAD && index == 0;
        let saturating = mode > MODE_FLIGHT && index < mode - MODE_FLIGHT;
        if !(loading || saturating) {
            GATE.take(Timeout::Forever);
            continue;
        }
        let (model, len) = if loading && !seq.is_multiple_of(2) {
            (models.frame, p::FRAME_LEN)
        } else {
            (models.small, p::SMALL_LEN)
        };
        let result = infer_once(client, model, len, Wait::Interrupt, seq);
        seq = seq.wrapping_add(1);
        // Ordering: counters read after the window by the main thread.
        match result {
            Ok(_) => COMPLETED.fetch_add(1, Ordering::Relaxed),
            Err(_) => FAILURES.fetch_add(1, Ordering::Relaxed),
        };
    }
}

/// Switch the workers to `mode` and let each of them look at it.
fn set_mode(mode: u32) {
    MODE.store(mode, Ordering::Release);
    for _ in 0..WORKERS {
        GATE.give();
    }
}

/// A row of round trips from `rounds` calls of `one`, keeping the raw
/// samples as set `keep` when given.
fn timed(
    board: &Board,
    kind: Kind,
    param: u32,
    rounds: usize,
    keep: Option<usize>,
    mut one: impl FnMut(u32) -> Result<u32, ClientError>,
) -> Result<Row, u32> {
    // SAFETY: only the main thread touches SAMPLES, one phase at a time.
    let samples = unsafe { &mut *core::ptr::addr_of_mut!(SAMPLES) };
    let samples = &mut samples[..rounds];
    for (i, s) in samples.iter_mut().enumerate() {
        *s = one(i as u32).map_err(|_| kind as u32)?;
    }
    if let Some(set) = keep {
        board.put_samples(set, samples);
    }
    Ok(Row {
        kind: kind as u32,
        param,
        summary: summarize(samples),
        extra1: 0,
        extra2: 0,
    })
}

fn status_rows(board: &Board, client: &ZephyrClient, loaded: bool) -> Result<(), u32> {
    let sets = if loaded { (2, 3) } else { (0, 1) };
    let kinds = if loaded {
        (Kind::StatusPollLoaded, Kind::StatusIrqLoaded)
    } else {
        (Kind::StatusPoll, Kind::StatusIrq)
    };
    for (kind, set, wait) in [
        (kinds.0, sets.0, Wait::Poll),
        (kinds.1, sets.1, Wait::Interrupt),
    ] {
        let row = timed(board, kind, 0, p::STATUS_ROUNDS, Some(set), |_| {
            let start = ticks();
            client.ping_with(wait, TIMEOUT)?;
            Ok(ticks().wrapping_sub(start))
        })?;
        board.push_row(&row);
    }
    Ok(())
}

fn infer_rows(board: &Board, client: &ZephyrClient, models: Models) -> Result<(), u32> {
    let mut small = [0u8; p::SMALL_OUTPUT];
    let mut frame = [0u8; p::FRAME_OUTPUT];
    let cases: [(Kind, ModelHandle, usize, &mut [u8]); 2] = [
        (Kind::InferSmall, models.small, p::SMALL_LEN, &mut small),
        (Kind::InferFrame, models.frame, p::FRAME_LEN, &mut frame),
    ];
    for (kind, model, len, out) in cases {
        let bytes = timed(board, kind, 0, p::INFER_ROUNDS, None, |seq| {
            bytes_once(client, len, out, seq)
        })?;
        let mut row = timed(board, kind, 0, p::INFER_ROUNDS, None, |seq| {
            infer_once(client, model, len, Wait::Poll, seq)
        })?;
        row.extra1 = bytes.summary.p50;
        board.push_row(&row);
    }
    Ok(())
}

fn throughput_rows(board: &Board) -> Result<(), u32> {
    for &n in &p::IN_FLIGHT {
        set_mode(MODE_FLIGHT + n);
        // Let the workers fill the pipeline before the window opens.
        sleep(Duration::millis_at_least(50));
        let busy0 = ask(board, Command::NpuBusy, 0);
        let done0 = COMPLETED.load(Ordering::Relaxed);
        let t0 = ticks();
        sleep(Duration::millis_at_least(u64::from(p::THROUGHPUT_MS)));
        let busy1 = ask(board, Command::NpuBusy, 0);
        let done1 = COMPLETED.load(Ordering::Relaxed);
        let elapsed = ticks().wrapping_sub(t0);
        set_mode(MODE_IDLE);
        sleep(Duration::millis_at_least(20));
        let count = done1.wrapping_sub(done0);
        // Zephyr's µs on both cores: ticks / (ticks per µs), one clock rate.
        let ticks_per_us =
            (zephyr::kconfig::CONFIG_SYS_CLOCK_HW_CYCLES_PER_SEC as u32 / 1_000_000).max(1);
        let window_us = (elapsed / ticks_per_us).max(1);
        let per_second = (u64::from(count) * 1_000_000 / u64::from(window_us)) as u32;
        let busy_permille =
            (u64::from(busy1.wrapping_sub(busy0)) * 1000 / u64::from(window_us)).min(1000) as u32;
        let per_request = elapsed / count.max(1);
        let row = Row {
            kind: Kind::Throughput as u32,
            param: n,
            summary: p::Summary {
                n: count,
                min: per_request,
                p50: per_request,
                p99: per_request,
                max: per_request,
            },
            extra1: per_second,
            extra2: busy_permille,
        };
        if count == 0 {
            return Err(Kind::Throughput as u32);
        }
        board.push_row(&row);
    }
    Ok(())
}

fn sweep_rows(board: &Board, client: &ZephyrClient, models: Models) -> Result<(), u32> {
    for &us in &p::SWEEP_US {
        set_latency(board, client, models, us);
        for (kind, wait) in [
            (Kind::SweepPoll, Wait::Poll),
            (Kind::SweepIrq, Wait::Interrupt),
        ] {
            let busy0 = busy_cycles();
            let mut row = timed(board, kind, us, p::SWEEP_ROUNDS, None, |seq| {
                infer_once(client, models.small, p::SMALL_LEN, wait, seq)
            })?;
            let busy = busy_cycles().saturating_sub(busy0) / p::SWEEP_ROUNDS as u64;
            row.extra1 = u32::try_from(busy).unwrap_or(u32::MAX).max(1);
            board.push_row(&row);
        }
    }
    Ok(())
}

pub fn run(board: &Board, client: &'static ZephyrClient) -> Result<(), u32> {
    let (Ok(small), Ok(frame)) = (
        client.model_lookup(p::SMALL, TIMEOUT),
        client.model_lookup(p::FRAME, TIMEOUT),
    ) else {
        return Err(100);
    };
    let models = Models { small, frame };
    for index in 0..WORKERS as u32 {
        let thread = worker(client, models, index);
        thread.set_priority(WORKER_PRIORITY);
        thread.start();
    }
    status_rows(board, client, false)?;
    infer_rows(board, client, models)?;
    set_latency(board, client, models, p::LOAD_LATENCY_US);
    set_mode(MODE_LOAD);
    sleep(Duration::millis_at_least(20));
    let loaded = status_rows(board, client, true);
    set_mode(MODE_IDLE);
    loaded?;
    throughput_rows(board)?;
    sweep_rows(board, client, models)?;
    if FAILURES.load(Ordering::Relaxed) > 0 {
        return Err(200);
    }
    Ok(())
}
