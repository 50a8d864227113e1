//! What the tests comparing with LiteRT share: `scripts/opgolden.py`'s
//! inputs and `.expect` files, and one model's run over them.

use std::path::Path;

use synaptic_tflite::{ElementType, Error, Interpreter, Model};

/// `scripts/opgolden.py`'s input `k` for graph input `i`, `bytes` long.
pub fn input_bytes(k: u32, i: u32, element: ElementType, bytes: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9u32
        .wrapping_mul(k + 1)
        .wrapping_add(0x7F4A_7C15u32.wrapping_mul(i + 1));
    if x == 0 {
        x = 1;
    }
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    match element {
        ElementType::Float32 => (0..bytes / 4)
            .flat_map(|_| ((next() >> 8) as f32 * 2f32.powi(-21) - 4.0).to_le_bytes())
            .collect(),
        _ => (0..bytes).map(|_| next() as u8).collect(),
    }
}

pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

#[derive(Default, Debug)]
pub struct Tally {
    pub models: usize,
    pub inputs: usize,
    pub differing: usize,
    pub refused: usize,
    /// Refusals reported as something else than unsupported (a malformed
    /// or inconsistent model): always a failure.
    pub misreported: usize,
    /// Refusals the caller expects (and checked to be unsupported).
    pub refused_by_design: usize,
    pub first_failure: Option<String>,
    /// The largest arena one of the models needed, bytes.
    pub arena: usize,
}

/// Runs one model over its recorded inputs.
pub fn check_model(path: &Path, tally: &mut Tally) {
    let bytes = std::fs::read(path).unwrap();
    let expect_path = path.with_file_name(format!(
        "{}.expect",
        path.file_name().unwrap().to_string_lossy()
    ));
    let expect = std::fs::read_to_string(&expect_path)
        .unwrap_or_else(|e| panic!("{}: {e}", expect_path.display()));
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    tally.models += 1;
    let model = match Model::parse(&bytes) {
        Ok(m) => m,
        Err(e) => {
            tally.refused += 1;
            let unsupported = matches!(
                e,
                Error::UnsupportedOperator { .. } | Error::UnsupportedFeature { .. }
            );
            if !unsupported {
                tally.misreported += 1;
            }
            tally.first_failure.get_or_insert(format!("{name}: {e:?}"));
            return;
        }
    };
    let needed = match Interpreter::new(&model, &mut []) {
        Err(Error::ArenaTooSmall { needed, .. }) => needed,
        other => panic!("{name}: an empty arena gave {:?}", other.err()),
    };
    let mut arena = vec![0u8; needed];
    let mut interpreter = Interpreter::new(&model, &mut arena).expect("the arena it asked for");
    tally.arena = tally.arena.max(interpreter.arena_required());
    // The plan made without an arena is the same.
    let mut scratch = vec![0u8; 16 * model.tensor_count()];
    assert_eq!(
        Interpreter::arena_needed(&model, &mut scratch).ok(),
        Some(interpreter.arena_required()),
        "{name}: arena_needed"
    );
    for line in expect.lines().filter(|l| !l.starts_with('#')) {
        let mut fields = line.split(' ');
        let k: u32 = fields.next().unwrap().parse().unwrap();
        for i in 0..model.input_count() {
            let element = model.input(i).unwrap().element_type();
            let input = interpreter.input_mut(i).unwrap();
            let data = input_bytes(k, i as u32, element, input.len());
            input.copy_from_slice(&data);
        }
        interpreter.invoke().unwrap();
        tally.inputs += 1;
        for (o, want) in fields.enumerate() {
            let got = format!("{:016x}", fnv1a64(interpreter.output(o).unwrap()));
            if got != want {
                tally.differing += 1;
                tally.first_failure.get_or_insert(format!(
                    "{name}: input {k} output {o}: {got}, LiteRT {want}"
                ));
            }
        }
    }
}
