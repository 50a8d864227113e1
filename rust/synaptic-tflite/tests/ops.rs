//! Every single-operator model of `models/ops/` (made by `scripts/opgen.py`
//! with TensorFlow's converter: random shapes, strides, paddings,
//! dilations, activations and quantisation) against LiteRT's reference
//! kernels on 128 pseudo-random inputs each (`scripts/opgolden.py` records
//! the FNV-1a 64 of every output): 0 differing outputs for every family the
//! interpreter runs; every family it does not run is refused as
//! unsupported, by name, never as a malformed model.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use synaptic_tflite::{ElementType, Error, Interpreter, Model};

/// Families the interpreter does not run yet: their models must be refused
/// as unsupported (operator or feature), and nothing else.
const PENDING: &[&str] = &[
    "hard_swish",
    "leaky_relu",
    "logistic",
    "mean",
    "prelu",
    "split",
    "strided_slice",
    "svdf",
    "tanh",
    "transpose",
    "transpose_conv",
    "unidirectional_sequence_lstm",
    "conv_2d_16x8",
    "depthwise_conv_2d_16x8",
    "fully_connected_16x8",
    "add_16x8",
];

fn ops_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/ops")
}

/// `scripts/opgolden.py`'s input `k` for graph input `i`, `bytes` long.
fn input_bytes(k: u32, i: u32, element: ElementType, bytes: usize) -> Vec<u8> {
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

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

#[derive(Default, Debug)]
struct Tally {
    models: usize,
    inputs: usize,
    differing: usize,
    refused: usize,
    first_failure: Option<String>,
}

/// Runs one model over its recorded inputs.
fn check_model(path: &Path, tally: &mut Tally) {
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
            tally.first_failure.get_or_insert(format!("{name}: {e}"));
            assert!(
                matches!(
                    e,
                    Error::UnsupportedOperator { .. } | Error::UnsupportedFeature { .. }
                ),
                "{name}: refused as {e:?}, not as unsupported"
            );
            return;
        }
    };
    let mut arena = vec![0u8; 512 * 1024];
    let mut interpreter = Interpreter::new(&model, &mut arena).expect("arena suffices");
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
                tally
                    .first_failure
                    .get_or_insert(format!("{name}: input {k} output {o}: {got}, LiteRT {want}"));
            }
        }
    }
}

#[test]
fn every_operator_family_matches_litert_on_random_inputs() {
    let mut families: BTreeMap<String, Tally> = BTreeMap::new();
    let mut entries: Vec<PathBuf> = std::fs::read_dir(ops_dir())
        .expect("models/ops")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    entries.sort();
    for dir in entries {
        let family = dir.file_name().unwrap().to_string_lossy().into_owned();
        let tally = families.entry(family).or_default();
        let mut models: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "tflite"))
            .collect();
        models.sort();
        for m in models {
            check_model(&m, tally);
        }
    }
    let mut failures = Vec::new();
    println!("family                          models  inputs  differing  refused");
    for (family, t) in &families {
        println!(
            "{family:<30} {:>7} {:>7} {:>10} {:>8}",
            t.models, t.inputs, t.differing, t.refused
        );
        let pending = PENDING.contains(&family.as_str());
        if pending {
            if t.refused != t.models {
                failures.push(format!(
                    "{family}: listed as pending but {} of {} models run ({} differing outputs): \
                     move it out of PENDING",
                    t.models - t.refused,
                    t.models,
                    t.differing
                ));
            }
        } else if t.refused > 0 || t.differing > 0 || t.inputs < 1000 {
            failures.push(format!(
                "{family}: {} refused, {} differing outputs over {} inputs (first: {})",
                t.refused,
                t.differing,
                t.inputs,
                t.first_failure.as_deref().unwrap_or("-")
            ));
        }
    }
    assert!(!families.is_empty(), "no model families under models/ops");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
