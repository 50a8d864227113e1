//! The TFLite interpreter's model parser, planner and (bounded) invoke under
//! hostile model bytes.
//!
//! The first byte picks the model: 0 takes the rest as the whole file (the
//! corpus has one such seed per operator family of `models/ops`, `op-*`);
//! 1 and 2 patch the shipped micro-speech or person-detection model with
//! the rest, read as 4-byte patches (`u16` position scaled over the file,
//! one mode byte, one value byte: set a byte, xor a byte, or write one of a
//! few hostile words). Checked beyond "no panic, no out-of-bounds access":
//! an accepted model fits the arena it was given, its input and output
//! have the byte lengths of their tensors, and a run is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use synaptic_tflite::{Interpreter, Model};

const MICRO_SPEECH: &[u8] = include_bytes!("../../../models/micro_speech.tflite");
const PERSON_DETECT: &[u8] = include_bytes!("../../../models/person_detect.tflite");
const ARENA: usize = 128 * 1024;
/// Multiply-accumulates beyond which a run is skipped (the micro-speech
/// model needs about 340,000).
const MAX_WORK: u64 = 2_000_000;
const HOSTILE: [u32; 8] = [
    0xFFFF_FFFF,
    0x7FFF_FFFF,
    0x8000_0000,
    0x0001_0000,
    0xFFFF,
    1024,
    128,
    0,
];

fn patched(base: &[u8], patches: &[u8]) -> Vec<u8> {
    let mut bytes = base.to_vec();
    for p in patches.chunks_exact(4) {
        let at = usize::from(u16::from_le_bytes([p[0], p[1]])) * bytes.len() / 65_536;
        let (mode, value) = (p[2], p[3]);
        match mode % 3 {
            0 => bytes[at] = value,
            1 => bytes[at] ^= value,
            _ => {
                let at = at.min(bytes.len() - 4) & !3;
                let word = HOSTILE[usize::from(value) % HOSTILE.len()];
                bytes[at..at + 4].copy_from_slice(&word.to_le_bytes());
            }
        }
    }
    bytes
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let bytes = match which % 3 {
        0 => rest.to_vec(),
        1 => patched(MICRO_SPEECH, rest),
        _ => patched(PERSON_DETECT, rest),
    };
    let Ok(model) = Model::parse(&bytes) else {
        return;
    };
    let mut arena = vec![0u8; ARENA];
    let Ok(mut interpreter) = Interpreter::new(&model, &mut arena) else {
        return;
    };
    assert!(interpreter.arena_required() <= ARENA);
    for i in 0..model.input_count() {
        let input_len = interpreter.input_mut(i).map(|s| s.len());
        assert_eq!(input_len.ok(), model.input(i).ok().map(|t| t.byte_len()));
    }
    if model.work() > MAX_WORK {
        return;
    }
    // An input's bytes may be reused once it is consumed, so every input is
    // written before each run.
    let fill = |interpreter: &mut Interpreter| {
        for i in 0..model.input_count() {
            for (j, b) in interpreter.input_mut(i).unwrap().iter_mut().enumerate() {
                *b = (j as u8).wrapping_mul(37).wrapping_add(i as u8);
            }
        }
    };
    fill(&mut interpreter);
    if interpreter.invoke().is_err() {
        return;
    }
    let outputs = |interpreter: &Interpreter| -> Vec<Vec<u8>> {
        (0..model.output_count())
            .map(|o| interpreter.output(o).unwrap().to_vec())
            .collect()
    };
    let first = outputs(&interpreter);
    for (o, bytes) in first.iter().enumerate() {
        assert_eq!(Some(bytes.len()), model.output(o).ok().map(|t| t.byte_len()));
    }
    fill(&mut interpreter);
    interpreter
        .invoke()
        .expect("a second run of the same model succeeds");
    assert_eq!(outputs(&interpreter), first, "runs are deterministic");
});
