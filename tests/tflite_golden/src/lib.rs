//! tflite_golden: the int8 TFLite interpreter (`synaptic-tflite`) on CPU0 of
//! `mps2/an521`, against the golden outputs of TFLite's reference kernels.
//!
//! Both real models (`models/*.tflite`, in flash), the shipped test inputs
//! (`models/inputs/*.u8`) and the committed golden outputs
//! (`models/golden/<model>.txt`, the very file the host test reads) are
//! embedded. Each shipped input runs once; every output byte must equal the
//! golden line of that input: `tflite_golden: <model>/<input> PASS` with
//! the scores, or `FAIL` with both byte strings. Then per model:
//! `k_cycle_get_32` ticks per inference (emulated: QEMU's `-icount`, so the
//! figure is deterministic), per multiply-accumulate of its convolution and
//! fully-connected layers, and the arena the plan needs next to TFLite
//! Micro's published arena for the person detector (136 KiB).
#![no_std]

use synaptic_tflite::{Interpreter, Model};
use zephyr::printkln;
use zephyr::raw;

/// A model with its shipped inputs and golden outputs.
struct Case {
    name: &'static str,
    model: &'static [u8],
    golden: &'static str,
    labels: &'static [&'static str],
    inputs: &'static [(&'static str, &'static [u8])],
}

const CASES: [Case; 2] = [
    Case {
        name: "person_detect",
        model: include_bytes!("../../../models/person_detect.tflite"),
        golden: include_str!("../../../models/golden/person_detect.txt"),
        labels: &["no_person", "person"],
        inputs: &[
            ("person", include_bytes!("../../../models/inputs/person.u8")),
            (
                "no_person",
                include_bytes!("../../../models/inputs/no_person.u8"),
            ),
        ],
    },
    Case {
        name: "micro_speech",
        model: include_bytes!("../../../models/micro_speech.tflite"),
        golden: include_str!("../../../models/golden/micro_speech.txt"),
        labels: &["silence", "unknown", "yes", "no"],
        inputs: &[
            ("yes", include_bytes!("../../../models/inputs/yes.u8")),
            ("no", include_bytes!("../../../models/inputs/no.u8")),
        ],
    },
];

/// TFLite Micro's published arena for its person_detection example, bytes.
const TFLM_PERSON_ARENA: usize = 136 * 1024;
/// The largest output this test compares.
const MAX_OUTPUT: usize = 16;

/// Arena for whichever model runs; the person detector's plan needs 77 KB.
static mut ARENA: [u8; 96 * 1024] = [0; 96 * 1024];

fn cycles() -> u32 {
    // SAFETY: k_cycle_get_32 only reads the system timer.
    unsafe { raw::k_cycle_get_32() }
}

/// The golden output bytes of `input` in `golden` (`<name> <hex>` lines).
fn golden_bytes(golden: &str, input: &str, out: &mut [u8; MAX_OUTPUT]) -> Option<usize> {
    let hex = golden.lines().find_map(|line| {
        let (name, hex) = line.split_once(' ')?;
        (name == input).then_some(hex.trim())
    })?;
    let n = hex.len() / 2;
    if hex.len() % 2 != 0 || n > MAX_OUTPUT {
        return None;
    }
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let digit = |c: u8| (c as char).to_digit(16);
        out[i] = (digit(pair[0])? * 16 + digit(pair[1])?) as u8;
    }
    Some(n)
}

/// Runs every input of `case`; returns whether all matched.
fn run(case: &Case, arena: &mut [u8]) -> bool {
    let model = match Model::parse(case.model) {
        Ok(model) => model,
        Err(e) => {
            printkln!("tflite_golden: {} FAIL parse: {}", case.name, e);
            return false;
        }
    };
    let mut interpreter = match Interpreter::new(&model, arena) {
        Ok(interpreter) => interpreter,
        Err(e) => {
            printkln!("tflite_golden: {} FAIL plan: {}", case.name, e);
            return false;
        }
    };
    let mut ok = true;
    let mut total: u64 = 0;
    for &(input, data) in case.inputs {
        let slot = interpreter.input_mut(0).expect("the model has one input");
        if slot.len() != data.len() {
            printkln!("tflite_golden: {}/{} FAIL input size", case.name, input);
            return false;
        }
        for (s, &b) in slot.iter_mut().zip(data) {
            *s = b ^ 0x80;
        }
        let start = cycles();
        let result = interpreter.invoke();
        let spent = cycles().wrapping_sub(start);
        total += u64::from(spent);
        if let Err(e) = result {
            printkln!("tflite_golden: {}/{} FAIL invoke: {}", case.name, input, e);
            ok = false;
            continue;
        }
        let got = interpreter.output(0).expect("the model has one output");
        let mut want = [0u8; MAX_OUTPUT];
        let Some(n) = golden_bytes(case.golden, input, &mut want) else {
            printkln!("tflite_golden: {}/{} FAIL no golden line", case.name, input);
            ok = false;
            continue;
        };
        let differing = if got.len() == n {
            got.iter().zip(&want[..n]).filter(|(a, b)| a != b).count()
        } else {
            n.max(got.len())
        };
        if differing == 0 {
            printkln!(
                "tflite_golden: {}/{} PASS (0 of {} bytes differ), {} emulated cycles",
                case.name,
                input,
                n,
                spent
            );
        } else {
            printkln!(
                "tflite_golden: {}/{} FAIL ({} of {} bytes differ): got {:02x?}, golden {:02x?}",
                case.name,
                input,
                differing,
                n,
                got,
                &want[..n]
            );
            ok = false;
        }
        for (label, &score) in case.labels.iter().zip(got) {
            printkln!("tflite_golden:   {} {}", label, score as i8);
        }
    }
    let per_inference = total / case.inputs.len() as u64;
    let macs = model.macs().max(1);
    // Cycles per MAC with two decimals, in integers (no float formatting).
    let centi = per_inference * 100 / macs;
    printkln!(
        "tflite_golden: {}: {} emulated cycles/inference, {} MACs, {}.{:02} emulated cycles/MAC, arena {} B",
        case.name,
        per_inference,
        macs,
        centi / 100,
        centi % 100,
        interpreter.arena_required()
    );
    if case.name == "person_detect" {
        printkln!(
            "tflite_golden: person_detect arena {} B vs TFLite Micro's published {} B ({}%)",
            interpreter.arena_required(),
            TFLM_PERSON_ARENA,
            interpreter.arena_required() * 100 / TFLM_PERSON_ARENA
        );
    }
    ok
}

/// Entry point called by zephyr-lang-rust's `main()`.
#[no_mangle]
extern "C" fn rust_main() {
    // SAFETY: rust_main runs once, on the main thread, and this is the only
    // reference to ARENA ever made.
    let arena: &mut [u8] = unsafe { &mut *core::ptr::addr_of_mut!(ARENA) };
    printkln!("tflite_golden: k_cycle_get_32 ticks, emulated (QEMU -icount)");
    let mut ok = true;
    for case in &CASES {
        ok &= run(case, arena);
    }
    printkln!("tflite_golden: {}", if ok { "PASS" } else { "FAIL" });
}
