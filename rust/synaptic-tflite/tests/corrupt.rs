//! Hostile model bytes give an error, never a panic or an out-of-bounds
//! read: truncations, flipped bytes and out-of-range words written over both
//! real models, each parsed, planned and (boundedly) run.

use std::path::PathBuf;

use synaptic_tflite::{Error, Interpreter, Model};

fn model(name: &str) -> Vec<u8> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../../models/{name}.tflite"));
    std::fs::read(path).unwrap()
}

struct Rng(u32);

impl Rng {
    fn next(&mut self) -> u32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 17;
        self.0 ^= self.0 << 5;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        self.next() as usize % n
    }
}

#[derive(Default, Debug)]
struct Outcomes {
    rejected: usize,
    planned: usize,
    invoked: usize,
}

/// Parse, plan and, for the first few that get that far, invoke.
fn exercise(
    bytes: &[u8],
    arena: &mut [u8],
    outcomes: &mut Outcomes,
    invoke_budget: usize,
) -> Result<(), Error> {
    let result = (|| {
        let model = Model::parse(bytes)?;
        let mut interpreter = Interpreter::new(&model, arena)?;
        outcomes.planned += 1;
        if outcomes.invoked < invoke_budget && model.work() < 20_000_000 {
            outcomes.invoked += 1;
            interpreter.invoke()?;
            let _ = interpreter.output(0)?;
        }
        Ok(())
    })();
    if result.is_err() {
        outcomes.rejected += 1;
    }
    result
}

fn walk(name: &str, truncation_step: usize) {
    let original = model(name);
    let mut arena = vec![0u8; 256 * 1024];
    let mut outcomes = Outcomes::default();
    let mut cases = 0;

    // Truncations: every length up to 512, then every `truncation_step`.
    let lengths = (0..512).chain((512..original.len()).step_by(truncation_step));
    for len in lengths {
        cases += 1;
        let r = exercise(&original[..len], &mut arena, &mut outcomes, 0);
        assert!(r.is_err(), "{name}: truncated to {len} bytes was accepted");
    }

    // Flipped bytes, one to four at a time, anywhere.
    let mut rng = Rng(0x5EED_0001);
    for _ in 0..300 {
        cases += 1;
        let mut bytes = original.clone();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            bytes[at] ^= 1 << rng.below(8);
        }
        let _ = exercise(&bytes, &mut arena, &mut outcomes, 8);
    }

    // Out-of-range words (offsets, lengths, indices) over the flatbuffer's
    // tables, which sit outside the big weight buffers: at the start and the
    // end of the file.
    let hostile = [
        0xFFFF_FFFF,
        0x7FFF_FFFF,
        0x8000_0000,
        0x0001_0000,
        0x0000_FFFF,
        1024,
        255,
        7,
        0,
    ];
    let table_regions = [
        0..original.len().min(4096),
        original.len().saturating_sub(16_384)..original.len(),
    ];
    for _ in 0..400 {
        cases += 1;
        let mut bytes = original.clone();
        let region = table_regions[rng.below(2)].clone();
        let at = (region.start + rng.below(region.len() - 4)) & !3;
        let value: u32 = hostile[rng.below(hostile.len())];
        bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let _ = exercise(&bytes, &mut arena, &mut outcomes, 8);
    }

    eprintln!("{name}: {cases} corruptions: {outcomes:?}");
    assert!(
        outcomes.rejected > cases / 2,
        "{name}: most corruptions should be refused"
    );
}

#[test]
fn corrupted_micro_speech_never_panics() {
    walk("micro_speech", 7);
}

#[test]
fn corrupted_person_detect_never_panics() {
    walk("person_detect", 997);
}

#[test]
fn garbage_is_refused() {
    let mut rng = Rng(0xBAD5_EED5);
    let mut arena = vec![0u8; 4096];
    for len in [0usize, 3, 8, 16, 64, 1000] {
        for _ in 0..50 {
            let mut bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            if len >= 8 {
                bytes[4..8].copy_from_slice(b"TFL3");
            }
            let r = Model::parse(&bytes).and_then(|m| Interpreter::new(&m, &mut arena).map(|_| ()));
            assert!(r.is_err());
        }
    }
}

#[test]
fn a_short_arena_reports_what_works() {
    let bytes = model("person_detect");
    let model = Model::parse(&bytes).unwrap();
    let mut small = vec![0u8; 10_000];
    let Err(Error::ArenaTooSmall { needed, available }) = Interpreter::new(&model, &mut small)
    else {
        panic!("10 KB must be too small for person detection");
    };
    assert_eq!(available, 10_000);
    // `needed` works (here an upper bound: the bookkeeping did not fit).
    let mut arena = vec![0u8; needed];
    let exact = Interpreter::new(&model, &mut arena)
        .unwrap()
        .arena_required();
    assert!(exact <= needed);
    // One byte short of the exact plan is refused with the exact figure.
    let mut short = vec![0u8; exact - 1];
    assert_eq!(
        Interpreter::new(&model, &mut short).err(),
        Some(Error::ArenaTooSmall {
            needed: exact,
            available: exact - 1
        })
    );
    let mut fits = vec![0u8; exact];
    assert!(Interpreter::new(&model, &mut fits).is_ok());
}
