//! Service test, CPU1: drive every path of the remote service and report
//! through the shared region (CPU1 has no console).
//!
//! First life: attach (handshake), look both models up, a 10,000-serve
//! alternating soak with every output checked against the stub NPU's
//! reference function, a request staged with the NPU's failure marker
//! (must come back `-EIO`), a request that times out (`-ETIMEDOUT`) and
//! the request after it (must wait for the late reply, then succeed), then
//! one more request left in flight and a restart of CPU1 in place.
//! Second life: rejoin the live rings, handshake, 100 checked serves; the
//! pre-restart reply must be discarded, never delivered.
#![no_std]

use service_test_protocol::{self as p, Report, Stop, Word};
use synaptic_abi::Priority;
use synaptic_ipc::Timeout;
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::ClientError;
use synaptic_zephyr::client::{self, ZephyrClient};

const TIMEOUT: Timeout = Timeout::Millis(500);

/// A model and its sizes.
#[derive(Clone, Copy)]
struct Model {
    handle: ModelHandle,
    input: usize,
    output: usize,
}

/// Stage request `seq` for `model`, infer, check the output. `marker`
/// stages the stub NPU's failure marker first.
fn serve(
    client: &ZephyrClient,
    model: Model,
    seq: u32,
    marker: bool,
    timeout: Timeout,
) -> Result<bool, ClientError> {
    let mut session = client.session(TIMEOUT)?;
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
    let (Ok(thumb), Ok(kws)) = (
        client.model_lookup(p::THUMB, TIMEOUT),
        client.model_lookup(p::KWS, TIMEOUT),
    ) else {
        report.set(Word::Stopped, Stop::Lookup as u32);
        return;
    };
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
    }
}

fn first_life(client: &ZephyrClient, report: &Report, models: [Model; 2]) {
    let (mut ok, mut wrong, mut errors) = (0, 0, 0);
    for seq in 0..p::SOAK {
        match serve(client, models[(seq % 2) as usize], seq, false, TIMEOUT) {
            Ok(true) => ok += 1,
            Ok(false) => wrong += 1,
            Err(_) => errors += 1,
        }
        // A heartbeat now and then: CPU0's MPU self test watches it advance.
        if seq.is_multiple_of(100) {
            let _ = client.ping(TIMEOUT);
        }
    }
    report.set(Word::SoakOk, ok);
    report.set(Word::SoakWrong, wrong);
    report.set(Word::SoakErrors, errors);

    let failed = serve(client, models[1], 1, true, TIMEOUT);
    report.set(Word::NpuError, status(failed));

    let late = serve(client, models[0], 2, false, Timeout::NoWait);
    report.set(Word::Timeout, status(late));
    let recovered = serve(client, models[0], 3, false, TIMEOUT);
    report.set(Word::Recovered, u32::from(recovered == Ok(true)));
    report.set(Word::Discarded1, client.stats().discarded);

    // Leave a request in flight and restart: its reply reaches the next life.
    let _ = serve(client, models[1], 4, false, Timeout::NoWait);
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
            TIMEOUT,
        ) {
            Ok(true) => ok += 1,
            _ => errors += 1,
        }
    }
    report.set(Word::RejoinOk, ok);
    report.set(Word::RejoinErrors, errors);
    report.set(Word::Discarded2, client.stats().discarded);
    report.set(Word::Done, p::DONE);
}
