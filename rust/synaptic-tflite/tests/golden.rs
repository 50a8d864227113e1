//! Every output byte of the interpreter against TFLite's reference kernels
//! (LiteRT, `OpResolverType.BUILTIN_REF`), for the shipped test inputs and the
//! pseudo-random inputs of `scripts/golden.py`: 0 differing bytes. For the
//! shipped inputs every operator's output (all intermediate tensors) is
//! compared too, through its length and FNV-1a 64 hash.

use std::path::PathBuf;

use synaptic_tflite::{Interpreter, Model};

fn models_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models")
}

fn read(path: &str) -> Vec<u8> {
    std::fs::read(models_dir().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `scripts/golden.py`'s random input `k`: low bytes of xorshift32.
fn random_input(k: u32, n: usize) -> Vec<u8> {
    let mut x = 0x9E37_79B9u32.wrapping_mul(k + 1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs every golden line of `name`; returns (bytes compared, bytes differing).
fn check_model(name: &str, shipped: &[(&str, &str)]) -> (usize, usize) {
    let bytes = read(&format!("{name}.tflite"));
    let model = Model::parse(&bytes).expect("model parses");
    let mut arena = vec![0u8; 256 * 1024];
    let mut interpreter = Interpreter::new(&model, &mut arena).expect("arena suffices");
    let golden = String::from_utf8(read(&format!("golden/{name}.txt"))).unwrap();
    let layers = String::from_utf8(read(&format!("golden/{name}.layers.txt"))).unwrap();
    let (mut compared, mut differing, mut lines) = (0, 0, 0);
    let (mut layer_bytes, mut layers_differing, mut layers_checked) = (0, 0, 0);
    for line in golden.lines() {
        let (label, want) = line.split_once(' ').expect("golden line: <name> <hex>");
        let n = interpreter.input_mut(0).unwrap().len();
        let input = match shipped.iter().find(|(l, _)| *l == label) {
            Some((_, file)) => read(file).iter().map(|b| b ^ 0x80).collect(),
            None => {
                let k: u32 = label.strip_prefix("random").unwrap().parse().unwrap();
                random_input(k, n)
            }
        };
        interpreter.input_mut(0).unwrap().copy_from_slice(&input);
        // (operator, length, hash) of every operator's output.
        let mut seen = Vec::new();
        interpreter
            .invoke_observed(|k, bytes| seen.push((k, bytes.len(), fnv1a64(bytes))))
            .expect("invoke");
        for layer in layers
            .lines()
            .filter(|l| l.split(' ').next() == Some(label))
        {
            let f: Vec<&str> = layer.split(' ').collect();
            let k: usize = f[1].parse().unwrap();
            let len: usize = f[2].parse().unwrap();
            let hash = u64::from_str_radix(f[3], 16).unwrap();
            let (_, got_len, got_hash) = seen[k];
            assert_eq!(got_len, len, "{name}/{label}: operator {k} output length");
            if got_hash != hash {
                eprintln!("{name}/{label}: operator {k} output differs from the reference");
                layers_differing += 1;
            }
            layer_bytes += len;
            layers_checked += 1;
        }
        let got = hex(interpreter.output(0).unwrap());
        assert_eq!(got.len(), want.len(), "{name}/{label}: output length");
        let d = got
            .as_bytes()
            .chunks(2)
            .zip(want.as_bytes().chunks(2))
            .filter(|(a, b)| a != b)
            .count();
        if d != 0 {
            eprintln!("{name}/{label}: got {got}, reference {want}");
        }
        compared += got.len() / 2;
        differing += d;
        lines += 1;
    }
    assert!(
        lines >= shipped.len() + 16,
        "{name}: golden file incomplete"
    );
    assert_eq!(
        layers_checked,
        shipped.len() * model.operator_count(),
        "{name}: layer file incomplete"
    );
    assert_eq!(layers_differing, 0, "{name}: intermediate tensors differ");
    eprintln!(
        "{name}: {lines} inputs, {compared} output bytes compared, {differing} differing; \
         {layers_checked} operator outputs ({layer_bytes} bytes) of the shipped inputs, \
         {layers_differing} differing; arena {} B",
        interpreter.arena_required()
    );
    (compared, differing)
}

#[test]
fn person_detect_is_bit_exact() {
    let (compared, differing) = check_model(
        "person_detect",
        &[
            ("person", "inputs/person.u8"),
            ("no_person", "inputs/no_person.u8"),
        ],
    );
    assert!(compared > 0);
    assert_eq!(differing, 0);
}

#[test]
fn micro_speech_is_bit_exact() {
    let (compared, differing) = check_model(
        "micro_speech",
        &[("yes", "inputs/yes.u8"), ("no", "inputs/no.u8")],
    );
    assert!(compared > 0);
    assert_eq!(differing, 0);
}

/// A sliced run (one operator or a few output rows of a convolution per
/// call, the interpreter dropped and resumed from its checkpoint between
/// calls) gives the golden output, the same as `invoke`.
#[test]
fn sliced_runs_resumed_from_checkpoints_are_bit_exact() {
    for (name, shipped) in [
        ("person_detect", ["person", "no_person"]),
        ("micro_speech", ["yes", "no"]),
    ] {
        let bytes = read(&format!("{name}.tflite"));
        let model = Model::parse(&bytes).expect("model parses");
        let golden = String::from_utf8(read(&format!("golden/{name}.txt"))).unwrap();
        let mut arena = vec![0u8; 256 * 1024];
        for label in shipped {
            let want = golden
                .lines()
                .find_map(|l| l.strip_prefix(label).and_then(|r| r.strip_prefix(' ')))
                .expect("golden line");
            let input: Vec<u8> = read(&format!("inputs/{label}.u8"))
                .iter()
                .map(|b| b ^ 0x80)
                .collect();
            let mut interpreter = Interpreter::new(&model, &mut arena).unwrap();
            interpreter.input_mut(0).unwrap().copy_from_slice(&input);
            let mut checkpoint = interpreter.checkpoint();
            assert_eq!(checkpoint.next_operator(), 0);
            let mut slices = 0;
            while !checkpoint.is_done() {
                let mut resumed = Interpreter::resume(&model, &mut arena, checkpoint).unwrap();
                let done = resumed.step().unwrap();
                checkpoint = resumed.checkpoint();
                assert_eq!(done, checkpoint.is_done());
                slices += 1;
            }
            // A slice is one operator, or STEP_ROWS output rows of a
            // convolution: more slices than operators.
            assert_eq!(slices, model.step_count().unwrap(), "{name}");
            assert!(
                slices > model.operator_count(),
                "{name}: {slices} slices for {} operators",
                model.operator_count()
            );
            let mut resumed = Interpreter::resume(&model, &mut arena, checkpoint).unwrap();
            // Done: a further step runs nothing.
            assert!(resumed.step().unwrap());
            assert_eq!(hex(resumed.output(0).unwrap()), want, "{name}/{label}");
            // The whole run, once more, agrees.
            resumed.rewind();
            resumed.input_mut(0).unwrap().copy_from_slice(&input);
            resumed.invoke().unwrap();
            assert_eq!(hex(resumed.output(0).unwrap()), want, "{name}/{label}");
        }
        // A checkpoint is refused by another model or a short arena.
        let interpreter = Interpreter::new(&model, &mut arena).unwrap();
        let checkpoint = interpreter.checkpoint();
        let needed = interpreter.arena_required();
        let mut short = vec![0u8; needed - 1];
        assert!(matches!(
            Interpreter::resume(&model, &mut short, checkpoint),
            Err(synaptic_tflite::Error::ArenaTooSmall { .. })
        ));
        let other = read(if name == "micro_speech" {
            "person_detect.tflite"
        } else {
            "micro_speech.tflite"
        });
        let other = Model::parse(&other).unwrap();
        assert!(Interpreter::resume(&other, &mut arena, checkpoint).is_err());
    }
}
