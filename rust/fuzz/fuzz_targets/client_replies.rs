//! CPU1's client against a buggy CPU0: the fuzzer pushes replies on ring
//! CPU0→CPU1 (with ids and slot offsets it may borrow from the requests
//! CPU1 really sent) and writes slots' result words, between client calls
//! (inferences polled or sleeping, pings, lookups, drains).
//!
//! Checked: the client never panics; a result it hands a caller is never
//! longer than the slot's output (nor the caller's buffer); and its slot
//! states stay consistent: once the real CPU0 has caught up, a
//! well-behaved inference gives the stub NPU's output.
#![no_main]

use libfuzzer_sys::fuzz_target;
use synaptic_abi::{region::ring_offset, Direction, Priority, RING_SLOTS_OFFSET};
use synaptic_fuzz::client_replies::*;
use synaptic_fuzz::Input;
use synaptic_ipc::Timeout;
use synaptic_serve::loopback::{Loopback, RegionBuffer, FACE, KWS, RING};
use synaptic_serve::{ClientError, Wait};

const MAX_OPS: usize = 64;

fuzz_target!(|data: &[u8]| {
    let mut buffer = RegionBuffer::new();
    let mut cores = Loopback::new(buffer.bytes()).expect("loopback");
    buggy_cpu0(&mut cores, Input::new(data));
    later_exchange_works(&mut cores);
});

/// The id of the `back`-th last request CPU1 pushed (0: the last).
fn sent_id(cores: &Loopback<'_>, back: u32) -> u32 {
    let ring = ring_offset::<RING>(Direction::Cpu1ToCpu0);
    let mut word = [0u8; 4];
    cores.read_shared(ring, &mut word);
    let index = u32::from_le_bytes(word).wrapping_sub(1).wrapping_sub(back) as usize % RING;
    cores.read_shared(ring + RING_SLOTS_OFFSET + 20 * index, &mut word);
    u32::from_le_bytes(word)
}

fn wait(choice: u8) -> Wait {
    if choice.is_multiple_of(2) {
        Wait::Poll
    } else {
        Wait::Interrupt
    }
}

fn buggy_cpu0(cores: &mut Loopback<'_>, mut input: Input<'_>) {
    let region = cores.region();
    input.run(MAX_OPS, TAGS, |tag, input| {
        match tag {
            PUSH_REPLY => {
                let (id_choice, slot_choice) = (input.u8()?, input.u8()?);
                let mut msg = input.message()?;
                if id_choice != 0 {
                    // 1: the last request's id, 2: the next one's, 255: the
                    // one before the last, ...
                    let last = sent_id(cores, 0);
                    msg.msg_id = last
                        .wrapping_add(i32::from(id_choice as i8) as u32)
                        .wrapping_sub(1);
                }
                if slot_choice != 0 {
                    let k = usize::from(slot_choice - 1) % region.slot_count();
                    msg.payload_offset = region.slot_offset(k).expect("slot") as u32;
                }
                let _ = cores.cpu0_push(msg);
            }
            WRITE_RESULT => {
                let (slot, output_len, status) = (input.u8()?, input.u32()?, input.u32()?);
                let k = usize::from(slot) % region.slot_count();
                let offset = region.slot_offset(k).expect("slot");
                cores.write_shared(offset + 40, &output_len.to_le_bytes());
                cores.write_shared(offset + 44, &status.to_le_bytes());
            }
            INFER => {
                let (model, how, timeout) = (input.u8()?, input.u8()?, input.u8()?);
                infer(cores, model, wait(how), u32::from(timeout % 8));
            }
            PING => {
                let how = input.u8()?;
                let client = cores.client().expect("attached");
                let _ = client.ping_with(wait(how), Timeout::Millis(1));
            }
            DISPATCH => {
                cores.step_cpu1();
            }
            LOOKUP => {
                let client = cores.client().expect("attached");
                let _ = client.model_lookup("kws", Timeout::Millis(1));
            }
            _ => unreachable!("tag modulo TAGS"),
        }
        Some(())
    });
}

/// One inference through the client; the result is checked against the
/// slot's and the buffer's size.
fn infer(cores: &Loopback<'_>, model: u8, wait: Wait, timeout_ms: u32) {
    let (handle, spec) = if model.is_multiple_of(2) {
        (cores.kws(), KWS)
    } else {
        (cores.face(), FACE)
    };
    let client = cores.client().expect("attached");
    let Ok(mut session) = client.reserve(spec.input_len(), Timeout::NoWait) else {
        return;
    };
    let capacity = cores
        .region()
        .exchange(session.slot())
        .expect("slot")
        .output_capacity();
    session.infer_input()[..spec.input_len()].fill(model);
    let mut output = [0u8; 16];
    let read = |result: &[u8]| {
        assert!(
            result.len() <= capacity,
            "{} bytes from a {capacity}-byte output",
            result.len()
        );
        let n = result.len().min(output.len());
        output[..n].copy_from_slice(&result[..n]);
        result.len()
    };
    let result = session.infer_then(
        handle,
        spec.input_len(),
        Priority::Normal,
        wait,
        Timeout::Millis(timeout_ms),
        read,
    );
    if let Err(ClientError::OutputTooSmall { .. }) = result {
        panic!("infer_then never reports OutputTooSmall");
    }
}

/// Once the real CPU0 has answered what CPU1 sent, a well-behaved
/// inference works and gives the stub NPU's output.
fn later_exchange_works(cores: &mut Loopback<'_>) {
    for _ in 0..8 {
        cores.step();
    }
    let kws = cores.kws();
    let input: Vec<u8> = (0..KWS.input_len()).map(|i| (i % 13) as u8).collect();
    let mut output = [0u8; 12];
    let result = cores.infer(kws, &input, &mut output);
    assert_eq!(
        result,
        Ok(KWS.output),
        "a well-behaved exchange after the buggy CPU0"
    );
    assert_eq!(output.to_vec(), cores.expected_output(kws, &input));
}
