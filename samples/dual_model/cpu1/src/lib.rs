//! dual_model, CPU1: attach to CPU0's service, look both models up by name,
//! and alternate requests at the 20 Hz sensor cadence, rendering each
//! camera frame or MFCC window straight into a shared exchange slot
//! (no private copy: a 96x96x3 frame would not fit twice in 64 KB). A 1 Hz
//! `STATUS_REQ` heartbeat measures the round trip, which the client
//! publishes in the control block for CPU0's `syn ipc status`.
//!
//! With `CONFIG_SYNAPTIC_CPU_INTERPRETER` it instead looks up the real
//! networks and sends the four shipped test inputs (from CPU1's flash,
//! converted to int8 straight into the slot) once, each waiting for its
//! answer, then keeps only the heartbeat.
//!
//! CPU1 has no console; what it does shows on CPU0's. No floating point.
#![no_std]

use dual_model_models as models;
use synaptic_abi::Priority;
use synaptic_ipc::Timeout;
use synaptic_zephyr::client;
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
use zephyr::sys::uptime_get;
use zephyr::time::{sleep, Duration};

/// Wait for each answer at most this long.
const TIMEOUT: Timeout = Timeout::Millis(200);

#[no_mangle]
extern "C" fn rust_main() {
    let Ok((client, _first)) = client::attach(Timeout::Millis(200)) else {
        // Nothing to report to without a link: CPU0 shows the link down.
        return;
    };
    #[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
    real_inputs(client);
    #[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
    synthetic_traffic(client);
}

/// Real models: the four shipped inputs once, then the heartbeat.
#[cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)]
fn real_inputs(client: &client::ZephyrClient) {
    use models::real;
    // The interpreter runs person detection in seconds of emulated time.
    const REAL_TIMEOUT: Timeout = Timeout::Millis(300_000);
    let mut output = [0u8; 16];
    for (model, input, _) in &real::INPUTS {
        let Ok(handle) = client.model_lookup(model, TIMEOUT) else {
            continue;
        };
        let len = input.len();
        // The image takes the frame slot; a feature window any slot it fits.
        let reserved = if len > real::SPEECH_LEN {
            client.session(REAL_TIMEOUT)
        } else {
            client.reserve(len, REAL_TIMEOUT)
        };
        if let Ok(mut session) = reserved {
            let staged = session.infer_input();
            if let Some(slot) = staged.get_mut(..len) {
                real::to_int8(input, slot);
                // Errors show on CPU0's status view.
                let _ = session.infer(handle, len, &mut output, Priority::Normal, REAL_TIMEOUT);
            }
        }
    }
    loop {
        sleep(Duration::millis_at_least(u64::from(models::HEARTBEAT_MS)));
        let _ = client.ping(TIMEOUT);
    }
}

/// Stub models: alternate frames and MFCC windows at the sensor cadence.
#[cfg(not(CONFIG_SYNAPTIC_CPU_INTERPRETER))]
fn synthetic_traffic(client: &client::ZephyrClient) {
    let (Ok(face), Ok(kws)) = (
        client.model_lookup(models::FACE, TIMEOUT),
        client.model_lookup(models::KWS, TIMEOUT),
    ) else {
        return;
    };
    let face_len = models::FACE_LEN;
    let kws_len = models::KWS_LEN;
    let mut output = [0u8; 16];
    let mut last_heartbeat = uptime_get();
    let mut seq: u32 = 0;
    loop {
        let started = uptime_get();
        // Errors are counted by both sides (CPU0's status view shows them);
        // the cadence goes on regardless.
        // Frames take the frame slot; an MFCC window the smallest free slot.
        let frame = seq.is_multiple_of(2);
        let reserved = if frame {
            client.session(TIMEOUT)
        } else {
            client.reserve(kws_len, TIMEOUT)
        };
        if let Ok(mut session) = reserved {
            let input = session.infer_input();
            let _ = if frame {
                models::render_frame(seq / 2, &mut input[..face_len]);
                session.infer(face, face_len, &mut output, Priority::RealTime, TIMEOUT)
            } else {
                models::render_mfcc(seq / 2, &mut input[..kws_len]);
                session.infer(kws, kws_len, &mut output, Priority::Normal, TIMEOUT)
            };
        }
        seq = seq.wrapping_add(1);
        if uptime_get() - last_heartbeat >= i64::from(models::HEARTBEAT_MS) {
            let _ = client.ping(TIMEOUT);
            last_heartbeat = uptime_get();
        }
        let spent = (uptime_get() - started).clamp(0, i64::from(models::PERIOD_MS)) as u64;
        sleep(Duration::millis_at_least(
            u64::from(models::PERIOD_MS) - spent,
        ));
    }
}
