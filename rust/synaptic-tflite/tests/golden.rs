//! Every output byte of the interpreter against TFLite's reference kernels
//! (LiteRT, `OpResolverType.BUILTIN_REF`), for the shipped test inputs and the
//! pseudo-random inputs of `scripts/golden.py`: 0 differing bytes.

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
    let (mut compared, mut differing, mut lines) = (0, 0, 0);
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
        interpreter.invoke().expect("invoke");
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
    eprintln!(
        "{name}: {lines} inputs, {compared} output bytes compared, {differing} differing; arena {} B",
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
