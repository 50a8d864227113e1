//! Service test, CPU1: drive every path of the remote service and report
//! through the shared region (CPU1 has no console).
//!
//! First life: attach (handshake), look both models up, a 10,000-serve
//! alternating soak from [`SOAK_THREADS`] threads at once (so all exchange
//! slots are in flight, REALTIME and NORMAL mixed) with every output
//! checked against the stub NPU's reference function, a request staged
//! with the NPU's failure marker
//! (must come back `-EIO`), a request that times out (`-ETIMEDOUT`) and
//! the request after it (must wait for the late reply, then succeed), then
//! one more request left in flight, a scribble on a word CPU0 owns (the
//! tail of ring CPU1→CPU0, set `N` behind: the ring looks full to a fresh
//! producer) and a restart of CPU1 in place.
//! Second life: rejoin the live rings (CPU0 repairs its tail), handshake,
//! 100 checked serves; the pre-restart reply must be dropped or discarded,
//! never delivered. Then a model update: one thread streams the real
//! micro-speech network (`models/micro_speech.tflite`, from CPU1's flash,
//! chunk by chunk into the slots) as the speech model's version 2 into
//! CPU0's model store (`MODEL_UPDATE`) while another keeps inferring on
//! the speech model; CPU0 hot-swaps it, and no inference may fail or see
//! version 1 again once it has seen version 2.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

use service_test_protocol::{self as p, Report, Stop, Word};
use synaptic_abi::Priority;
use synaptic_ipc::Timeout;
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::client::Wait;
use synaptic_serve::ClientError;
use synaptic_zephyr::client::{self, ZephyrClient};

const TIMEOUT: Timeout = Timeout::Millis(500);

/// Threads of the soak: the main thread and `SOAK_THREADS - 1` workers.
const SOAK_THREADS: u32 = 4;

/// The soak's tallies, summed over its threads (CPU1's own RAM).
static SOAK_OK: AtomicU32 = AtomicU32::new(0);
static SOAK_WRONG: AtomicU32 = AtomicU32::new(0);
static SOAK_ERRORS: AtomicU32 = AtomicU32::new(0);
static SOAK_DONE: AtomicU32 = AtomicU32::new(0);

/// A model and its sizes.
#[derive(Clone, Copy)]
struct Model {
    handle: ModelHandle,
    input: usize,
    output: usize,
}

/// Stage request `seq` for `model`, infer, check the output. `marker`
/// stages the stub NPU's failure marker first; `frame` uses the frame slot
/// (the single-request API) instead of the smallest free slot that fits.
fn serve(
    client: &ZephyrClient,
    model: Model,
    seq: u32,
    marker: bool,
    frame: bool,
    timeout: Timeout,
) -> Result<bool, ClientError> {
    let mut session = if frame {
        client.session(TIMEOUT)?
    } else {
        client.reserve(model.input, TIMEOUT)?
    };
    let input = &mut session.infer_input()[..model.input];
    p::fill(seq, input);
    if marker {
        input[0] = synaptic_runtime::npu::FAIL_MARKER;
    }
    let mut expected = [0u8; 16];
    p::expected(model.handle.raw(), input, &mut expected[..model.output]);
    let mut out = [0u8; 16];
    let priority = if seq.is_multiple_of(2) {
        Priority::RealTime
    } else {
        Priority::Normal
    };
    let n = session.infer(model.handle, model.input, &mut out, priority, timeout)?;
    Ok(n == model.output && out[..n] == expected[..model.output])
}

fn status(result: Result<bool, ClientError>) -> u32 {
    ClientError::status(result.map(usize::from)) as u32
}

#[no_mangle]
extern "C" fn rust_main() {
    let Some(shm) = synaptic_zephyr::platform::shared_memory() else {
        return;
    };
    // SAFETY: devicetree's shared region, mapped for the program's life; the
    // last words are the test report's alone on both cores.
    let report = unsafe { Report::at_end(shm.base, shm.size as usize) };
    let life = report.get(Word::Lives) + 1;
    report.set(Word::Lives, life);
    let Ok((client, pong)) = client::attach(TIMEOUT) else {
        let at = if life == 1 {
            Stop::Attach
        } else {
            Stop::Rejoin
        };
        report.set(Word::Stopped, at as u32);
        return;
    };
    let (Ok(thumb), Ok(kws), Ok(speech)) = (
        client.model_lookup(p::THUMB, TIMEOUT),
        client.model_lookup(p::KWS, TIMEOUT),
        client.model_lookup(p::SPEECH, TIMEOUT),
    ) else {
        report.set(Word::Stopped, Stop::Lookup as u32);
        return;
    };
    // Built with CPU0's interpreter, CPU0 serves the model only it runs:
    // that scenario alone (CPU0 says so: a lookup of a name CPU0 does not
    // serve would count as a violation).
    if report.get(Word::CpuScenario) == 1 {
        match client.model_lookup(p::SPEECH_CPU, TIMEOUT) {
            Ok(speech_cpu) => cpu_store(client, &report, speech_cpu),
            Err(_) => report.set(Word::Stopped, Stop::Lookup as u32),
        }
        report.set(Word::Done, p::DONE);
        return;
    }
    let models = [
        Model {
            handle: thumb,
            input: p::THUMB_LEN,
            output: p::THUMB_OUTPUT,
        },
        Model {
            handle: kws,
            input: p::KWS_LEN,
            output: p::KWS_OUTPUT,
        },
    ];
    if life == 1 {
        first_life(client, &report, models);
    } else {
        report.set(Word::RejoinRttUs, pong.rtt_us);
        second_life(client, &report, models);
        let speech = Model {
            handle: speech,
            input: p::SPEECH_LEN,
            output: p::SPEECH_OUTPUT,
        };
        update(client, &report, speech);
        report.set(Word::Done, p::DONE);
    }
}

/// Serve every `SOAK_THREADS`-th request of the soak from `first` on,
/// adding to the tallies.
fn soak_share(client: &ZephyrClient, models: [Model; 2], first: u32) {
    let mut seq = first;
    while seq < p::SOAK {
        let counter = match serve(
            client,
            models[(seq % 2) as usize],
            seq,
            false,
            false,
            TIMEOUT,
        ) {
            Ok(true) => &SOAK_OK,
            Ok(false) => &SOAK_WRONG,
            Err(_) => &SOAK_ERRORS,
        };
        // Ordering: tallies; the `SOAK_DONE` Release publishes them.
        counter.fetch_add(1, Ordering::Relaxed);
        // A heartbeat now and then from the main thread: CPU0's MPU self
        // test watches the status count advance.
        if first == 0 && seq.is_multiple_of(100) {
            let _ = client.ping(TIMEOUT);
        }
        seq += SOAK_THREADS;
    }
    SOAK_DONE.fetch_add(1, Ordering::Release);
}

#[zephyr::thread(stack_size = 1536, pool_size = 3)]
fn soak_worker(client: &'static ZephyrClient, models: [Model; 2], first: u32) {
    soak_share(client, models, first);
}

/// The inference made while the main thread floods.
#[zephyr::thread(stack_size = 1536)]
fn flood_serve(client: &'static ZephyrClient, model: Model, report: Report) {
    // Its own core's flood fills both rings: a refused send, or a reply
    // CPU0 could not push, is retried (within two seconds); an answer must
    // be correct.
    let start = zephyr::time::now();
    let patience = zephyr::time::Duration::millis_at_least(2_000);
    let served = loop {
        match serve(client, model, 77, false, false, TIMEOUT) {
            Err(ClientError::Ipc(_) | ClientError::TimedOut)
                if zephyr::time::now() - start < patience =>
            {
                // SAFETY: a plain kernel call from thread context.
                unsafe { zephyr::raw::k_yield() };
            }
            other => break other,
        }
    };
    let code = match served {
        Ok(true) => 1,
        Ok(false) => 2,
        Err(ClientError::TimedOut) => 3,
        Err(ClientError::Busy) => 4,
        Err(ClientError::Ipc(_)) => 5,
        Err(_) => 6,
    };
    report.set(Word::FloodServe, code);
}

/// Push status requests as fast as possible for [`p::FLOOD_MS`], never
/// waiting for an answer (a CPU1 gone wrong), while another thread makes
/// an inference; CPU0 must keep serving and its shell must answer.
fn flood(client: &'static ZephyrClient, report: &Report, model: Model) {
    report.set(Word::Flooding, 1);
    flood_serve(client, model, *report).start();
    let start = zephyr::time::now();
    let length = zephyr::time::Duration::millis_at_least(u64::from(p::FLOOD_MS));
    let (mut pushed, mut refused) = (0u32, 0u32);
    while zephyr::time::now() - start < length {
        match client.ping_with(Wait::Interrupt, Timeout::NoWait) {
            Err(ClientError::Ipc(_)) => refused += 1,
            _ => pushed += 1,
        }
        // Equal-priority threads (the inference) still get CPU1.
        // SAFETY: a plain kernel call from thread context.
        unsafe { zephyr::raw::k_yield() };
    }
    report.set(Word::FloodPushed, pushed);
    report.set(Word::FloodRefused, refused);
    // The inference may still be retrying or waiting for its answer.
    for _ in 0..300 {
        if report.get(Word::FloodServe) != 0 {
            break;
        }
        zephyr::time::sleep(zephyr::time::Duration::millis_at_least(10));
    }
    // The flood is over when CPU0 has drained the ring: a ping answered
    // proves it (it sits behind every status request before it). Without
    // this the next request could find the ring still full and be refused
    // (-EAGAIN), depending on where CPU0's flood pauses fell.
    for _ in 0..200 {
        if client.ping(TIMEOUT).is_ok() {
            break;
        }
        zephyr::time::sleep(zephyr::time::Duration::millis_at_least(10));
    }
    report.set(Word::Flooding, 0);
}

/// No-wait requests asked until one is not answered in time.
const LATE_ATTEMPTS: u32 = 50;

fn first_life(client: &'static ZephyrClient, report: &Report, models: [Model; 2]) {
    for first in 1..SOAK_THREADS {
        soak_worker(client, models, first).start();
    }
    soak_share(client, models, 0);
    // Wait for the workers, with the heartbeat going on.
    while SOAK_DONE.load(Ordering::Acquire) < SOAK_THREADS {
        let _ = client.ping(TIMEOUT);
        zephyr::time::sleep(zephyr::time::Duration::millis_at_least(10));
    }
    report.set(Word::SoakOk, SOAK_OK.load(Ordering::Relaxed));
    report.set(Word::SoakWrong, SOAK_WRONG.load(Ordering::Relaxed));
    report.set(Word::SoakErrors, SOAK_ERRORS.load(Ordering::Relaxed));

    flood(client, report, models[1]);

    let failed = serve(client, models[1], 1, true, false, TIMEOUT);
    report.set(Word::NpuError, status(failed));

    // Both in the frame slot: the second must wait for the first's late
    // reply. Whether CPU0 answers a request before its no-wait check depends
    // on where QEMU switches emulated cores (it did once the serving
    // thread's stack grew): an answer in time is correct too, so ask again
    // until one is late.
    let mut late = Ok(true);
    for _ in 0..LATE_ATTEMPTS {
        late = serve(client, models[0], 2, false, true, Timeout::NoWait);
        if late != Ok(true) {
            break;
        }
    }
    report.set(Word::Timeout, status(late));
    let recovered = serve(client, models[0], 3, false, true, TIMEOUT);
    report.set(Word::Recovered, u32::from(recovered == Ok(true)));
    report.set(Word::Discarded1, client.stats().discarded);

    // Leave a request in flight and restart: its reply reaches the next life.
    let _ = serve(client, models[1], 4, false, true, Timeout::NoWait);
    // Once CPU0 has taken everything (a pong proves it), a buggy CPU1
    // scribbles on CPU0's tail before it dies: without CPU0's repair the
    // next life would find the ring full forever.
    let _ = client.ping(TIMEOUT);
    if let Ok(region) = synaptic_zephyr::service::region_from_devicetree() {
        let tail = synaptic_abi::ring_offset::<{ synaptic_zephyr::service::N }>(
            synaptic_abi::Direction::Cpu1ToCpu0,
        ) + synaptic_abi::region::RING_TAIL_OFFSET;
        if let Some(word) = region.shared_word(tail) {
            let scribbled = word
                .load(Ordering::Relaxed)
                .wrapping_sub(synaptic_zephyr::service::N as u32);
            word.store(scribbled, Ordering::Relaxed);
        }
    }
    // SAFETY: this image re-initialises everything it uses at startup
    // (CONFIG_INIT_ARCH_HW_AT_BOOT resets the core's state), and keeps
    // nothing it needs in its own RAM: the report is in the shared region.
    unsafe { client::restart() }
}

fn second_life(client: &ZephyrClient, report: &Report, models: [Model; 2]) {
    let (mut ok, mut errors) = (0, 0);
    for seq in 0..p::AFTER_RESTART {
        match serve(
            client,
            models[(seq % 2) as usize],
            seq + 100_000,
            false,
            false,
            TIMEOUT,
        ) {
            Ok(true) => ok += 1,
            _ => errors += 1,
        }
    }
    report.set(Word::RejoinOk, ok);
    report.set(Word::RejoinErrors, errors);
    // The pre-restart reply usually waits in the ring before this life's
    // sync and is dropped unread then (`stale`), else discarded after.
    let stats = client.stats();
    report.set(Word::Discarded2, stats.discarded.wrapping_add(stats.stale));
}

/// Set once the update returned; the inferring thread then makes a few
/// more and reports.
static UPDATE_RETURNED: AtomicU32 = AtomicU32::new(0);
/// `update_model`'s status, set with `UPDATE_RETURNED`.
static UPDATE_STATUS: AtomicU32 = AtomicU32::new(0);
/// The update's ticks, set with `UPDATE_RETURNED`.
static UPDATE_TICKS: AtomicU32 = AtomicU32::new(0);

fn ticks() -> u32 {
    // SAFETY: reading the cycle counter has no preconditions.
    unsafe { zephyr::raw::k_cycle_get_32() }
}
/// Inferences made after the update returned.
const AFTER_UPDATE: u32 = 5;

/// A signed speech container streamed around `preamble` (tampered: with a
/// payload byte flipped): what CPU0 answered.
fn stream_signed(client: &ZephyrClient, preamble: &[u8], tampered: bool) -> i32 {
    let chunk = if tampered {
        p::tampered_chunk
    } else {
        p::container_chunk
    };
    let result = client.update_model_with(
        p::SPEECH,
        p::SIGNED_LEN,
        Timeout::Millis(10_000),
        |offset, out| chunk(preamble, p::MICRO_SPEECH, offset, out),
    );
    ClientError::status(result.map(|v| v as usize))
}

/// Stream the speech model's version 2, signed: the container's header and
/// signature block, then the network from flash, written chunk by chunk
/// into the slots. Then the refusals of a store that checks signatures: the
/// same container changed after signing, one signed by a key CPU0 does not
/// trust, and, once version 2 is confirmed, version 1.
#[zephyr::thread(stack_size = 2048)]
fn updater(client: &'static ZephyrClient, report: Report) {
    let start = ticks();
    let status = stream_signed(client, &p::SIGNED_V2, false);
    UPDATE_TICKS.store(ticks().wrapping_sub(start), Ordering::Relaxed);
    UPDATE_STATUS.store(status as u32, Ordering::Relaxed);
    let refusal = |word, status: i32| report.set(word, status as u32);
    if report.get(Word::SignaturesRequired) == 1 {
        let unsigned = match p::speech_header(5) {
            Ok(header) => ClientError::status(
                client
                    .update_model_with(
                        p::SPEECH,
                        p::UPDATE_LEN,
                        Timeout::Millis(10_000),
                        |offset, chunk| p::container_chunk(&header, p::MICRO_SPEECH, offset, chunk),
                    )
                    .map(|v| v as usize),
            ),
            Err(_) => -1,
        };
        refusal(Word::SignedUnsigned, unsigned);
    }
    refusal(
        Word::SignedTampered,
        stream_signed(client, &p::SIGNED_V5, true),
    );
    refusal(
        Word::SignedUntrusted,
        stream_signed(client, &p::UNTRUSTED_V5, false),
    );
    let confirmed = client.confirm_model(Timeout::Millis(10_000));
    refusal(
        Word::SignedConfirm,
        ClientError::status(confirmed.map(|v| v as usize)),
    );
    refusal(
        Word::SignedDowngrade,
        stream_signed(client, &p::SIGNED_V1, false),
    );
    UPDATE_RETURNED.store(1, Ordering::Release);
}

/// The update with inferences on the speech model going on throughout;
/// reports the `Update*` words.
fn update(client: &'static ZephyrClient, report: &Report, speech: Model) {
    updater(client, *report).start();
    let (mut serves, mut errors, mut back, mut new) = (0u32, 0u32, 0u32, false);
    let (mut pings, mut ping_max) = (0u32, 0u32);
    let mut after = 0;
    let mut seq = 200_000;
    while after < AFTER_UPDATE {
        if UPDATE_RETURNED.load(Ordering::Acquire) == 1 {
            after += 1;
        } else {
            // A status round trip while CPU0 streams, verifies (on its
            // verifier thread) and swaps. One ping is in flight at a time:
            // while the updater's own is (its pause between steps CPU0
            // answered -EBUSY), wait a little and try again.
            for _ in 0..8 {
                let start = ticks();
                match client.ping_with(Wait::Interrupt, TIMEOUT) {
                    Ok(_) => {
                        pings += 1;
                        ping_max = ping_max.max(ticks().wrapping_sub(start));
                        break;
                    }
                    Err(ClientError::Busy) => {
                        zephyr::time::sleep(zephyr::time::Duration::millis_at_least(1));
                    }
                    Err(_) => break,
                }
            }
        }
        match serve(client, speech, seq, false, false, TIMEOUT) {
            // Version 1's output.
            Ok(true) => {
                back += u32::from(new);
                new = false;
            }
            Ok(false) => new = true,
            Err(_) => errors += 1,
        }
        serves += 1;
        seq += 1;
    }
    report.set(Word::UpdateStatus, UPDATE_STATUS.load(Ordering::Relaxed));
    report.set(Word::UpdateServes, serves);
    report.set(Word::UpdateErrors, errors);
    report.set(Word::UpdateBack, back);
    report.set(Word::UpdateNew, u32::from(new));
    report.set(Word::UpdateTicks, UPDATE_TICKS.load(Ordering::Relaxed));
    report.set(Word::UpdatePings, pings);
    report.set(Word::UpdatePingMaxTicks, ping_max);
}

/// A CPU0 interpreter's inference: up to a second of emulated time each.
const CPU_TIMEOUT: Timeout = Timeout::Millis(5_000);

/// [`p::SPEECH_CPU`]'s output for LiteRT's input `k`, hashed.
fn cpu_infer(client: &ZephyrClient, model: ModelHandle, k: u32) -> Result<u64, ClientError> {
    let mut session = client.reserve(p::SPEECH_LEN, CPU_TIMEOUT)?;
    p::litert_input(k, &mut session.infer_input()[..p::SPEECH_LEN]);
    let mut out = [0u8; p::SPEECH_OUTPUT];
    let n = session.infer(
        model,
        p::SPEECH_LEN,
        &mut out,
        Priority::Normal,
        CPU_TIMEOUT,
    )?;
    Ok(p::fnv1a64(&out[..n]))
}

/// Stream a [`p::SPEECH_CPU`] container around `payload`: the status.
fn cpu_update(client: &ZephyrClient, version: u32, payload: &[u8]) -> u32 {
    let Ok(header) = p::speech_cpu_header(version, payload) else {
        return u32::MAX;
    };
    let result = client.update_model_with(
        p::SPEECH_CPU,
        header.len() + payload.len(),
        Timeout::Millis(10_000),
        |offset, chunk| p::container_chunk(&header, payload, offset, chunk),
    );
    ClientError::status(result.map(|v| v as usize)) as u32
}

/// The model only CPU0's interpreter serves, updated from the store: its
/// version 1 (CPU0's image) answers; a version whose network the
/// interpreter cannot run (half a flatbuffer, sound container) is refused;
/// version 2 streamed into the store answers LiteRT's outputs for it,
/// under the handle held all along. Reports the `Cpu*` words.
fn cpu_store(client: &ZephyrClient, report: &Report, model: ModelHandle) {
    let (mut like_v2, mut matched, mut errors) = (0, 0, 0);
    for k in 0..p::CPU_INPUTS {
        match cpu_infer(client, model, k) {
            Ok(h) => like_v2 += u32::from(Some(h) == p::expected_hash(p::SPEECH_V2_EXPECT, k)),
            Err(_) => errors += 1,
        }
    }
    report.set(Word::CpuBeforeLikeV2, like_v2);
    let cut = &p::SPEECH_V2[..p::SPEECH_V2.len() / 2];
    report.set(
        Word::CpuRefused,
        cpu_update(client, p::CPU_UPDATE_VERSION + 1, cut),
    );
    report.set(
        Word::CpuUpdate,
        cpu_update(client, p::CPU_UPDATE_VERSION, p::SPEECH_V2),
    );
    for k in 0..p::CPU_INPUTS {
        match cpu_infer(client, model, k) {
            Ok(h) => matched += u32::from(Some(h) == p::expected_hash(p::SPEECH_V2_EXPECT, k)),
            Err(_) => errors += 1,
        }
    }
    report.set(Word::CpuMatched, matched);
    report.set(Word::CpuErrors, errors);
}
