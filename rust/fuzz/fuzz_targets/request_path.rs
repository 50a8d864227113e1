//! CPU0's request path over a region whose bytes the fuzzer writes.
//!
//! The region lies flush against an inaccessible page, with another before
//! the mapping, so an access outside it crashes. The input is a program
//! (`synaptic_fuzz::request_path`): writes anywhere in the region (the
//! control block's words, ABI v4's park handshake included, by name), raw
//! and plausible requests pushed as a hostile CPU1, CPU0 steps, reply
//! pops, CPU1's doorbell interrupt with its park hold (as the firmware's;
//! CPU0 steps while it spins), model updates streamed into CPU0's store
//! (sound, damaged, cut short, or of a version no serving device can run),
//! rollbacks and reboots.
//! Then, with feature `liveness` (on by default), a well-behaved CPU1
//! reboots and must get one correct inference within a bounded number of
//! steps ([`cpu1_reboots_into_a_correct_inference`]).
#![no_main]

use std::cell::RefCell;

use libfuzzer_sys::fuzz_target;
use synaptic_abi::{Message, MSG_TYPE_INFER_REQ, MSG_TYPE_MODEL_LOAD, MSG_TYPE_STATUS_REQ};
use synaptic_fuzz::request_path::*;
use synaptic_fuzz::{Guarded, Input};
use synaptic_serve::loopback::{Loopback, LoopbackOptions, FACE, KWS, REGION_SIZE};
use synaptic_serve::protocol::{infer_payload_len, LOOKUP_PAYLOAD_LEN};
use synaptic_serve::update::StoreUpdates;
use synaptic_store::ota::Ota;
use synaptic_store::{Layout, MemFlash, Store};

/// Operations per input at most (keeps every run short).
const MAX_OPS: usize = 256;

/// Bytes of CPU0's model store (16 sectors of 4 KiB: two models, two
/// versions each, and the registry).
const STORE_FLASH: usize = 64 * 1024;

thread_local! {
    static REGION: RefCell<Guarded> = RefCell::new(Guarded::new(REGION_SIZE));
}

fuzz_target!(|data: &[u8]| {
    REGION.with(|region| {
        let mut region = region.borrow_mut();
        let mut flash_bytes = vec![0xFFu8; STORE_FLASH];
        let flash = MemFlash::new(&mut flash_bytes, 4096, 4);
        let layout = Layout::new(&flash, 2, 8192).expect("layout");
        let (mut store, _) = Store::<_, 2>::open(flash, layout).expect("a blank store");
        let mut ota = Ota::new();
        let mut updates = StoreUpdates::new(&mut store, &mut ota);
        let options = LoopbackOptions {
            updates: Some(&mut updates),
            ..LoopbackOptions::default()
        };
        let mut cores = Loopback::with_options(region.bytes(), options).expect("loopback");
        hostile_cpu1(&mut cores, Input::new(data));
        let held = cores.held_slots();
        assert!(held < 1 << cores.region().slot_count(), "held {held:#x}");
        #[cfg(feature = "liveness")]
        cpu1_reboots_into_a_correct_inference(&mut cores);
    });
});

/// Run the fuzzer's program as a hostile CPU1 (and CPU0's steps).
fn hostile_cpu1(cores: &mut Loopback<'_>, mut input: Input<'_>) {
    let region = cores.region();
    input.run(MAX_OPS, TAGS, |tag, input| {
        match tag {
            WRITE => {
                let (offset, len) = (input.u16()?, input.u8()?);
                let bytes = input.bytes(usize::from(len % 64))?;
                cores.write_shared(usize::from(offset) % region.size(), bytes);
            }
            WRITE_SLOT => {
                let (slot, offset, len) = (input.u8()?, input.u8()?, input.u8()?);
                let bytes = input.bytes(usize::from(len % 64))?;
                let base = slot_offset(cores, slot);
                cores.write_shared(base + usize::from(offset), bytes);
            }
            PUSH_RAW => {
                let _ = cores.cpu1_push(input.message()?);
            }
            PUSH_REQUEST => push_request(cores, input.bytes(6)?),
            STEP_CPU0 => {
                cores.step_cpu0();
            }
            STEP => {
                cores.step();
            }
            POP => {
                let _ = cores.cpu1_pop();
            }
            WRITE_CONTROL => {
                let (word, value) = (input.u8()?, input.u32()?);
                let offset = 4 * usize::from(word % 16);
                cores.write_shared(offset, &value.to_le_bytes());
            }
            INTERRUPT => {
                cores.cpu1_interrupt();
            }
            UPDATE => {
                let (kind, version) = (input.u8()?, input.u8()?);
                let (damage, xor) = (input.u16()?, input.u8()?);
                if let Some(bytes) = container(kind, version, damage, xor) {
                    let _ = cores.update_model("kws", &bytes);
                }
            }
            ROLLBACK => {
                let _ = cores.rollback_model();
            }
            REBOOT => {
                let _ = cores.reboot_cpu1();
            }
            _ => unreachable!("tag modulo TAGS"),
        }
        Some(())
    });
}

fn slot_offset(cores: &Loopback<'_>, slot: u8) -> usize {
    let region = cores.region();
    region
        .slot_offset(usize::from(slot) % region.slot_count())
        .expect("a slot of the geometry")
}

/// Stage a header the way CPU1 would, give or take the fuzzer's changes,
/// and push the request naming it.
fn push_request(cores: &mut Loopback<'_>, args: &[u8]) {
    let [kind, slot, delta, priority, flags, model_word] = args.try_into().expect("six bytes");
    let region = cores.region();
    let index = usize::from(slot) % region.slot_count();
    let exchange = region.exchange(index).expect("a slot of the geometry");
    let offset = exchange.offset();
    let (msg_type, payload_len) = match kind % 4 {
        0 | 1 => {
            let (model, spec) = if kind % 4 == 0 {
                (cores.kws(), KWS)
            } else {
                (cores.face(), FACE)
            };
            let len = (spec.input_len() as i64 + i64::from(delta as i8)).max(0) as u32;
            let handle = if model_word == 0 {
                model.raw()
            } else {
                model.raw() ^ u32::from(model_word) << 16
            };
            // The model word at +0, input_len at +36 (the name in between
            // is left as it is).
            cores.write_shared(offset, &handle.to_le_bytes());
            cores.write_shared(offset + 36, &len.to_le_bytes());
            let payload =
                infer_payload_len(len as usize, exchange.input_capacity()).unwrap_or(u16::MAX);
            (MSG_TYPE_INFER_REQ, payload)
        }
        2 => {
            let mut name = [0u8; 32];
            let text: &[u8] = match model_word % 3 {
                0 => b"kws",
                1 => b"face",
                _ => b"none",
            };
            name[..text.len()].copy_from_slice(text);
            if (delta as i8) < 0 {
                name = [b'x'; 32]; // not NUL-terminated
            }
            cores.write_shared(offset + 4, &name);
            (MSG_TYPE_MODEL_LOAD, LOOKUP_PAYLOAD_LEN)
        }
        _ => (MSG_TYPE_STATUS_REQ, 0),
    };
    let msg = Message {
        msg_id: u32::from(slot) << 8 | u32::from(kind),
        msg_type,
        priority: priority % 4,
        payload_len,
        payload_offset: if msg_type == MSG_TYPE_STATUS_REQ {
            0
        } else {
            offset as u32
        },
        timestamp_us: 0,
        status: i32::from(flags % 4),
    };
    let _ = cores.cpu1_push(msg);
}

/// CPU1 reboots with the entry point and, as a well-behaved client, must
/// get one correct inference (the stub NPU's output for the version that
/// serves it now) within a bounded number of steps; anything else is a
/// finding: a hold that never ends hangs here, and a version its device
/// cannot run, had it been activated, fails every inference.
///
/// # Panics
///
/// When the attach is refused or no attempt gives the right output.
#[cfg(feature = "liveness")]
fn cpu1_reboots_into_a_correct_inference(cores: &mut Loopback<'_>) {
    const ATTEMPTS: usize = 3;
    const STEPS_BETWEEN: usize = 4;
    if let Err(e) = cores.reboot_cpu1() {
        panic!("liveness: a rebooted CPU1 cannot attach: {e:?}");
    }
    let kws = cores.kws();
    let input: Vec<u8> = (0..KWS.input_len()).map(|i| (i % 251) as u8).collect();
    let mut last = None;
    for _ in 0..ATTEMPTS {
        let mut output = [0u8; 12];
        // An activation CPU0 still had queued may swap the version during
        // the call: the output is that of the version serving before it or
        // after it.
        let before = cores.expected_output(kws, &input);
        match cores.infer(kws, &input, &mut output) {
            Ok(len) => {
                assert_eq!(len, KWS.output, "liveness: wrong output length");
                let after = cores.expected_output(kws, &input);
                assert!(
                    output.to_vec() == before || output.to_vec() == after,
                    "liveness: wrong output {output:?}, expected {before:?} or {after:?}"
                );
                return;
            }
            Err(e) => last = Some(e),
        }
        for _ in 0..STEPS_BETWEEN {
            cores.step();
        }
    }
    panic!(
        "liveness: no correct inference in {ATTEMPTS} attempts (last: {last:?}); CPU0 {:?}",
        cores.cpu0_stats()
    );
}
