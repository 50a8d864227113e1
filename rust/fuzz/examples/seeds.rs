//! Writes the committed seed corpus (`corpus/<target>/`): a handful of
//! meaningful inputs per target, built with the encoders the targets
//! decode with, and request_path's regression inputs (`regression-*`:
//! inputs that once failed its liveness phase). The libFuzzer-found
//! `regression-colliding-reply-id` and `regression-previous-life-reply`
//! (request_path) and `regression-depth-multiplier-overflow` (model) are
//! kept as found, not rewritten here.
//!
//! ```text
//! cd rust/fuzz && cargo run --example seeds
//! ```
//!
//! Rerunning rewrites the same files (the seeds are deterministic).

use std::fs;
use std::path::Path;

use synaptic_abi::{
    Message, LAYOUT_VERSION, MAGIC, MSG_TYPE_INFER_REQ, MSG_TYPE_INFER_RESP, MSG_TYPE_STATUS_RESP,
};
use synaptic_fuzz::{client_replies as cr, message_bytes, request_path as rp};

fn write(dir: &Path, name: &str, bytes: &[u8]) {
    fs::create_dir_all(dir).expect("create corpus directory");
    fs::write(dir.join(name), bytes).expect("write seed");
}

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = root.join("corpus");
    request_path(&corpus.join("request_path"));
    ring(&corpus.join("ring"));
    attach(&corpus.join("attach"));
    exchange_header(&corpus.join("exchange_header"));
    client_replies(&corpus.join("client_replies"));
    capi(&corpus.join("capi"));
    model(&corpus.join("model"));
    store(&corpus.join("store"));
    signed_container(&corpus.join("signed_container"));
    regressions(&root.join("corpus").join("request_path"));
}

fn request_path(dir: &Path) {
    // Well-formed traffic: a status, a kws inference served, a lookup.
    let mut good = Vec::new();
    rp::push_request(&mut good, 3, 0, 0, 1, 0);
    rp::push_request(&mut good, 0, 1, 0, 1, 0);
    good.push(rp::STEP);
    rp::push_request(&mut good, 2, 2, 0, 1, 0);
    good.extend([rp::STEP, rp::POP, rp::POP, rp::POP]);
    write(dir, "well-formed", &good);
    // Requests that must be refused: input too long, wrong handle, a name
    // without NUL, a payload offset in the middle of a slot, a bad type.
    let mut refused = Vec::new();
    rp::push_request(&mut refused, 0, 1, 100, 1, 0);
    rp::push_request(&mut refused, 1, 0, 0, 2, 0);
    rp::push_request(&mut refused, 2, 3, -1, 1, 1);
    rp::push_raw(
        &mut refused,
        &Message {
            msg_id: 7,
            msg_type: MSG_TYPE_INFER_REQ,
            priority: 1,
            payload_len: 554,
            payload_offset: 1100,
            ..Message::default()
        },
    );
    rp::push_raw(
        &mut refused,
        &Message {
            msg_id: 8,
            msg_type: 9,
            ..Message::default()
        },
    );
    refused.extend([rp::STEP, rp::STEP]);
    write(dir, "refused", &refused);
    // The same slot twice before CPU0 serves it (-EBUSY), then served.
    let mut busy = Vec::new();
    rp::push_request(&mut busy, 0, 2, 0, 1, 1);
    rp::push_request(&mut busy, 0, 2, 0, 1, 1);
    busy.extend([rp::STEP_CPU0, rp::STEP_CPU0, rp::POP, rp::POP]);
    write(dir, "busy-slot", &busy);
    // A header rewritten after the push, before CPU0 reads it.
    let mut race = Vec::new();
    rp::push_request(&mut race, 0, 1, 0, 1, 0);
    rp::write_slot(&mut race, 1, 36, &0xFFFF_FFF0u32.to_le_bytes());
    race.push(rp::STEP_CPU0);
    write(dir, "header-after-push", &race);
    // A flood: more requests than the ring holds, then drains.
    let mut flood = Vec::new();
    for k in 0..20u8 {
        rp::push_request(&mut flood, 3, k, 0, 0, 1);
    }
    flood.extend([rp::STEP_CPU0, rp::STEP_CPU0]);
    write(dir, "flood", &flood);
}

fn ring(dir: &Path) {
    // Consumer side: pushes, pops, a head far ahead, a reboot.
    let mut consumer = vec![0u8];
    consumer.extend(0u32.to_le_bytes());
    consumer.extend([0, 1, 0, 2, 3, 3, 4, 1]);
    consumer.extend(100u32.to_le_bytes());
    consumer.extend([3, 5, 0, 9, 3]);
    write(dir, "consumer", &consumer);
    // Consumer side across the u32 wrap.
    let mut wrap = vec![0u8];
    wrap.extend((u32::MAX - 1).to_le_bytes());
    wrap.extend([0, 1, 0, 2, 0, 3, 3, 3, 3, 3]);
    write(dir, "consumer-wrap", &wrap);
    // Producer side: fill, a pop, a tail behind and ahead, a reboot.
    let mut producer = vec![1u8];
    producer.extend(0u32.to_le_bytes());
    producer.extend([
        0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 1, 0, 6, 4, 3, 0x7F, 0, 7, 4, 5,
    ]);
    write(dir, "producer", &producer);
}

fn attach(dir: &Path) {
    // The good block patched one word at a time: version, then magic.
    let mut version = vec![1u8, 1];
    version.extend(1u32.to_le_bytes());
    write(dir, "old-version", &version);
    let mut magic = vec![1u8, 0];
    magic.extend(MAGIC.swap_bytes().to_le_bytes());
    write(dir, "bad-magic", &magic);
    let mut same = vec![1u8, 1];
    same.extend(LAYOUT_VERSION.to_le_bytes());
    write(dir, "rewritten-valid", &same);
    // A plausible control block over the raw bytes, and ring indices.
    let mut raw = vec![0u8];
    for word in [
        MAGIC,
        LAYOUT_VERSION,
        16,
        48_448,
        1,
        0,
        0,
        0,
        0,
        0,
        4,
        4096,
        1024,
        0,
        0,
        0,
    ] {
        raw.extend(word.to_le_bytes());
    }
    raw.extend(7u32.to_le_bytes());
    write(dir, "raw-block", &raw);
}

fn exchange_header(dir: &Path) {
    let mut header = [0u8; 64];
    header[0..4].copy_from_slice(&0x0001_0000u32.to_le_bytes());
    header[4..7].copy_from_slice(b"kws");
    header[36..40].copy_from_slice(&490u32.to_le_bytes());
    header[40..44].copy_from_slice(&4u32.to_le_bytes());
    header[44..48].copy_from_slice(&4096u32.to_le_bytes());
    header[48..52].copy_from_slice(&1024u32.to_le_bytes());
    let mut seed = vec![1u8];
    seed.extend(header);
    seed.extend(1088u32.to_le_bytes());
    seed.extend(message_bytes(&Message {
        msg_type: MSG_TYPE_INFER_REQ,
        priority: 1,
        payload_len: 554,
        payload_offset: 1088 + 31_808,
        ..Message::default()
    }));
    write(dir, "kws-header", &seed);
    let mut long = vec![0u8];
    let mut header = [b'x'; 64];
    header[36..40].copy_from_slice(&u32::MAX.to_le_bytes());
    long.extend(header);
    long.extend(u32::MAX.to_le_bytes());
    long.extend([0xFF; 20]);
    write(dir, "unterminated", &long);
}

fn client_replies(dir: &Path) {
    // A reply with the next request's id before an inference: delivered.
    let mut early = Vec::new();
    let reply = Message {
        msg_type: MSG_TYPE_INFER_RESP,
        priority: 1,
        status: 12,
        ..Message::default()
    };
    cr::push_reply(&mut early, 2, 2, &reply);
    cr::infer(&mut early, 0, 0, 2);
    write(dir, "early-reply", &early);
    // A length beyond the slot's output, then a remote errno.
    let mut long = Vec::new();
    cr::push_reply(
        &mut long,
        2,
        2,
        &Message {
            status: 5000,
            ..reply
        },
    );
    cr::infer(&mut long, 0, 0, 2);
    cr::push_reply(
        &mut long,
        2,
        2,
        &Message {
            status: -5,
            ..reply
        },
    );
    cr::infer(&mut long, 0, 0, 2);
    cr::write_result(&mut long, 1, u32::MAX, -1);
    write(dir, "bad-lengths", &long);
    // A timeout, then a late reply for it, a stray status, a dispatch.
    let mut late = Vec::new();
    cr::infer(&mut late, 1, 1, 1);
    cr::push_reply(
        &mut late,
        1,
        1,
        &Message {
            status: 16,
            ..reply
        },
    );
    cr::push_reply(
        &mut late,
        0,
        0,
        &Message {
            msg_id: 99,
            msg_type: MSG_TYPE_STATUS_RESP,
            status: 0,
            ..reply
        },
    );
    late.push(cr::DISPATCH);
    late.extend([cr::PING, 0, cr::LOOKUP]);
    write(dir, "late-and-stray", &late);
}

fn capi(dir: &Path) {
    // Register a model, build a pipeline over it, run and submit.
    let op = |tag: u8, args: [u8; 12]| {
        let mut v = vec![tag];
        v.extend(args);
        v
    };
    let mut flow = Vec::new();
    flow.extend(op(5, [16, 0, 0, 0, 0, 0, 0, 3, 10, 0, 0, 0]));
    flow.extend(op(18, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    flow.extend(op(18, [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0]));
    flow.extend(op(18, [0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0]));
    flow.extend(op(19, [0, 0, 0, 0, 0, 16, 0, 0, 1, 2, 1, 0]));
    flow.extend(op(20, [0, 0, 0, 0, 0, 16, 0, 0, 1, 0, 1, 1]));
    flow.extend(op(21, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    flow.extend(op(21, [0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]));
    write(dir, "model-pipeline-job", &flow);
    // The DSP helpers, with NULLs and odd lengths.
    let mut dsp = Vec::new();
    for tag in 0..5u8 {
        dsp.extend(op(tag, [1, 2, 3, 4, 0, 8, 0, 4, 4, 0, 0, 0]));
        dsp.extend(op(tag, [1, 2, 3, 4, 3, 7, 0, 0, 3, 0, 0, 0]));
    }
    write(dir, "dsp", &dsp);
    // Memory: alloc, init, scratch, stats, NPU calls.
    let mut mem = Vec::new();
    mem.extend(op(13, [0, 0, 0, 0, 0, 0, 0, 2, 4, 4, 0, 0]));
    mem.extend(op(15, [0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]));
    mem.extend(op(16, [64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    mem.extend(op(17, [0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]));
    mem.extend(op(14, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    for k in 0..6u8 {
        mem.extend(op(22, [0, 0, 0, 0, 0, 64, 0, k, 0, 16, 0, 0]));
    }
    mem.extend(op(23, [3, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0]));
    write(dir, "memory-npu-prof", &mem);
}

/// Inputs that failed `request_path`'s liveness check: a CPU0 that did not
/// republish the words it owns after CPU1 corrupted them (a single write of
/// one control-block word each; ABI v5 added the park request, which a
/// rebooted CPU1 held for without end); a version no serving device can run
/// made active. (A bogus CPU0 ring index, by contrast, costs a
/// resynchronisation and a lost message; the liveness check's retries
/// absorb it.)
fn regressions(dir: &Path) {
    // A park request a previous life wrote: the next life's doorbell
    // interrupt held for it (interrupts masked) until CPU0 released it,
    // which it never would.
    let mut park = Vec::new();
    rp::write_control(&mut park, 14, 0x5eed);
    park.push(rp::INTERRUPT);
    write(dir, "regression-park-request", &park);
    // A sound update, then one whose input is float32 for a model the NPU
    // serves as int8, then a rollback to before the first.
    let mut unrunnable = Vec::new();
    rp::update(&mut unrunnable, 0, 1, 0, 0);
    rp::update(&mut unrunnable, 1, 2, 0, 0);
    rp::update(&mut unrunnable, 3, 3, 0, 0);
    unrunnable.push(rp::ROLLBACK);
    write(dir, "regression-unrunnable-update", &unrunnable);
    // The control block's magic: refused for ever before CPU0 repaired it.
    let mut magic = Vec::new();
    rp::write(&mut magic, 0, &[0xFF; 4]);
    write(dir, "regression-control-magic", &magic);
    // `cpu0_ready` (word 4) cleared: CPU1 waited for a CPU0 that is up.
    let mut ready = Vec::new();
    rp::write(&mut ready, 16, &[0; 4]);
    write(dir, "regression-control-cpu0-ready", &ready);
}

fn model(dir: &Path) {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models");
    let micro_speech = fs::read(models.join("micro_speech.tflite")).expect("micro_speech.tflite");
    // Mode 0: a whole file, the real micro-speech model as it ships.
    write(
        dir,
        "micro-speech-whole",
        &[[0u8].as_slice(), &micro_speech].concat(),
    );
    // Mode 1 and 2: the shipped models, unpatched and with a few patches
    // (a set byte, a flipped byte, a hostile word) near the tables.
    write(dir, "micro-speech-unpatched", &[1]);
    write(dir, "person-detect-unpatched", &[2]);
    write(
        dir,
        "micro-speech-patched",
        &[
            1, 0x10, 0x00, 0, 0xFF, 0x00, 0x02, 1, 0x80, 0x40, 0xFF, 2, 3,
        ],
    );
    write(
        dir,
        "person-detect-patched",
        &[2, 0x00, 0x01, 2, 0, 0xF0, 0xFF, 1, 0x01, 0x80, 0xFF, 0, 0],
    );
}

fn signed_container(dir: &Path) {
    use synaptic_fuzz::signed_container::{
        build, flip, resign_op, write as write_field, RawSetup, Setup, FIX_HEADER_CRC,
        FIX_PAYLOAD_CRC, MALLEATE, SIGNED_PAYLOAD,
    };
    // Keys A and B trusted, signatures required; counter 3, version 5.
    let setup = Setup {
        policy: 7,
        security: 3,
        version: 5,
        signer: 1,
        name: 0,
        payload_len: 300,
        pattern: 1,
        chunks: 2,
        block: 2,
    };
    let seed = |setup: Setup, ops: &[u8]| {
        let mut out = Vec::new();
        setup.encode(&mut out);
        out.extend_from_slice(ops);
        out
    };
    let p256 = Setup {
        signer: 2,
        chunks: 1,
        block: 3,
        ..setup
    };
    // As built, no mutation: accepted; unsigned where required;
    // unsigned where allowed; signed by key C; below the counter; signed
    // by C where no key is trusted (only its payload digest is checked).
    let with = |signer, policy, version| Setup {
        signer,
        policy,
        version,
        ..setup
    };
    let unmutated = [
        ("valid-ed25519", setup),
        ("valid-p256", p256),
        ("unsigned-required", with(0, 7, 5)),
        ("unsigned-allowed", with(0, 3, 5)),
        ("untrusted-key-c", with(3, 7, 5)),
        ("downgrade", with(1, 7, 2)),
        ("no-keys-signed-by-c", with(4, 0, 5)),
    ];
    for (name, setup) in unmutated {
        write(dir, name, &seed(setup, &[]));
    }
    // A payload bit flipped after signing: its CRC refuses it at finish.
    // With both CRCs fixed the header has changed (it holds the payload
    // CRC): signed again over the stale payload digest, the digest
    // refuses it at finish; signed again over the payload, accepted.
    let mut tampered = Vec::new();
    flip(&mut tampered, SIGNED_PAYLOAD as u16 + 10, 3);
    write(dir, "tampered-payload", &seed(setup, &tampered));
    tampered.extend([FIX_PAYLOAD_CRC, FIX_HEADER_CRC]);
    let mut stale = tampered.clone();
    resign_op(&mut stale, 0, 1);
    write(dir, "resigned-stale-digest", &seed(setup, &stale));
    resign_op(&mut tampered, 0, 0);
    write(dir, "tampered-resigned", &seed(setup, &tampered));
    // The version raised after signing, the header CRC fixed: the
    // signature refuses it from the preamble.
    let mut header = Vec::new();
    write_field(&mut header, 5, 9);
    header.push(FIX_HEADER_CRC);
    write(dir, "tampered-header", &seed(p256, &header));
    // ECDSA's twin signature (r, n - s) of the same digest is valid.
    write(dir, "malleated-p256", &seed(p256, &[MALLEATE]));
    // Raw mode: the bytes of two valid containers.
    for (name, setup) in [("raw-valid-ed25519", setup), ("raw-valid-p256", p256)] {
        let mut raw = Vec::new();
        RawSetup {
            policy: 7,
            security: 3,
            chunks: 2,
            block: 1,
        }
        .encode(&mut raw);
        raw.extend_from_slice(&build(&setup));
        write(dir, name, &raw);
    }
}

fn store(dir: &Path) {
    use synaptic_fuzz::store::image;
    // Mode 0: a whole valid store image; mode 1: the same with no patch and
    // with a torn registry word and a flipped payload byte.
    write(dir, "valid-image", &[[0u8].as_slice(), &image()].concat());
    write(dir, "patched-none", &[1]);
    write(
        dir,
        "patched-registry-and-payload",
        &[1, 20, 0, 0x55, 0x40, 6, 0xAA],
    );
}
