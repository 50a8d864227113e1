//! tflite_golden: the int8 TFLite interpreter (`synaptic-tflite`) on CPU0 of
//! `mps2/an521`, against the outputs of TFLite's reference kernels.
//!
//! Both real models (`models/*.tflite`, in flash), the shipped test inputs
//! (`models/inputs/*.u8`) and the committed golden outputs
//! (`models/golden/<model>.txt`, the very file the host test reads) are
//! embedded. Each shipped input runs once; every output byte must equal the
//! golden line of that input: `tflite_golden: <model>/<input> PASS` with
//! the scores, or `FAIL` with both byte strings.
//!
//! Then the four MLPerf Tiny networks (`models/networks/*.tflite`) run the
//! first [`NETWORK_INPUTS`] pseudo-random inputs of their `.expect` files,
//! generated here as the host test `tests/networks.rs` does
//! (`scripts/opgolden.py`'s convention): the FNV-1a 64 of every graph output
//! must equal the one LiteRT's reference kernels gave,
//! `tflite_golden: <network>/<k> PASS`, or `FAIL` with both hashes.
//!
//! Per model and network: `k_cycle_get_32` ticks per inference (emulated:
//! QEMU's `-icount`, so the figure is deterministic), per multiply-accumulate
//! of its convolution and fully-connected layers, and the arena the plan
//! needs; then one more run of each network prints every operator's
//! cycles (`profile <network> op <index> <cycles>`), to find where the
//! time goes. scripts/peer-bench.sh sets these figures beside TFLite
//! Micro's with CMSIS-NN measured in the same run on the same core.
#![no_std]

use synaptic_tflite::{ElementType, Error, Interpreter, Model};
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

/// An MLPerf Tiny network with its `.expect` file: per pseudo-random input
/// `k`, a line `<k> <hash>...` with the FNV-1a 64 of each graph output.
struct Network {
    name: &'static str,
    model: &'static [u8],
    expect: &'static str,
}

const NETWORKS: [Network; 5] = [
    Network {
        name: "vww",
        model: include_bytes!("../../../models/networks/vww.tflite"),
        expect: include_str!("../../../models/networks/vww.tflite.expect"),
    },
    Network {
        name: "resnet8",
        model: include_bytes!("../../../models/networks/resnet8.tflite"),
        expect: include_str!("../../../models/networks/resnet8.tflite.expect"),
    },
    Network {
        name: "dscnn",
        model: include_bytes!("../../../models/networks/dscnn.tflite"),
        expect: include_str!("../../../models/networks/dscnn.tflite.expect"),
    },
    Network {
        name: "autoencoder",
        model: include_bytes!("../../../models/networks/autoencoder.tflite"),
        expect: include_str!("../../../models/networks/autoencoder.tflite.expect"),
    },
    Network {
        name: "speech_v2",
        model: include_bytes!("../../../models/networks/speech_v2.tflite"),
        expect: include_str!("../../../models/networks/speech_v2.tflite.expect"),
    },
];

/// The generated models of one operator family (`models/ops/<family>`,
/// `scripts/opgen.py`) with LiteRT's output hashes.
struct Family {
    name: &'static str,
    models: [Network; 10],
}

/// `models/ops/<family>/<family>_00.tflite` .. `_09` and their `.expect`.
macro_rules! family {
    ($name:literal: $($index:literal)*) => {
        Family {
            name: $name,
            models: [$(Network {
                name: concat!($name, "_", $index),
                model: include_bytes!(concat!(
                    "../../../models/ops/", $name, "/", $name, "_", $index, ".tflite"
                )),
                expect: include_str!(concat!(
                    "../../../models/ops/", $name, "/", $name, "_", $index, ".tflite.expect"
                )),
            }),*],
        }
    };
}

/// The families whose kernels have DSP-extension paths: every input the
/// host's property test runs (`rust/synaptic-tflite/tests/ops.rs`), here
/// through the kernels of the core this image is built for.
const FAMILIES: [Family; 4] = [
    family!("conv_2d": "00" "01" "02" "03" "04" "05" "06" "07" "08" "09"),
    family!("depthwise_conv_2d": "00" "01" "02" "03" "04" "05" "06" "07" "08" "09"),
    family!("fully_connected_per_channel": "00" "01" "02" "03" "04" "05" "06" "07" "08" "09"),
    family!("fully_connected_per_tensor": "00" "01" "02" "03" "04" "05" "06" "07" "08" "09"),
];

/// Inputs per generated model (their `.expect` files hold 128).
const FAMILY_INPUTS: u32 = 128;

/// Inputs `k = 0..NETWORK_INPUTS` of each network run here (the host test
/// runs all 200): three inputs of each take about 1.9 G emulated cycles in
/// all, ResNet-8 360 M per inference.
const NETWORK_INPUTS: u32 = 3;

/// The largest output this test compares byte by byte.
const MAX_OUTPUT: usize = 16;

/// Arena for whichever model runs; the largest plan (vww) needs 87,936 B.
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

/// `scripts/opgolden.py`'s input `k` for graph input `i` (the host tests'
/// `input_bytes`), written into `slot`: xorshift32, a float32 tensor gets
/// `(next() >> 8) * 2^-21 - 4` little-endian per element, any other one
/// byte per step.
fn fill_input(k: u32, i: u32, element: ElementType, slot: &mut [u8]) {
    /// 2^-21.
    const STEP: f32 = 1.0 / (1u32 << 21) as f32;
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
        ElementType::Float32 => {
            for value in slot.chunks_exact_mut(4) {
                let v = (next() >> 8) as f32 * STEP - 4.0;
                value.copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => slot.iter_mut().for_each(|b| *b = next() as u8),
    }
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// The hashes of input `k` in an `.expect` file, or `None` without its line.
fn expected_hashes(expect: &str, k: u32) -> Option<core::str::SplitAsciiWhitespace<'_>> {
    expect
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let mut fields = line.split_ascii_whitespace();
            (fields.next()?.parse::<u32>().ok()? == k).then_some(fields)
        })
}

/// Parses `bytes` and plans it in `arena`, then hands the interpreter to
/// `run`; a FAIL line and `false` when either step refuses.
fn with_interpreter(
    name: &str,
    bytes: &[u8],
    arena: &mut [u8],
    run: impl FnOnce(&mut Interpreter<'_, '_>) -> bool,
) -> bool {
    let model = match Model::parse(bytes) {
        Ok(model) => model,
        Err(e) => {
            printkln!("tflite_golden: {} FAIL parse: {}", name, e);
            return false;
        }
    };
    match Interpreter::new(&model, arena) {
        Ok(mut interpreter) => run(&mut interpreter),
        Err(e) => {
            printkln!("tflite_golden: {} FAIL plan: {}", name, e);
            false
        }
    }
}

/// One more inference, printing each operator's emulated cycles.
fn profile(name: &str, interpreter: &mut Interpreter<'_, '_>) {
    let mut last = cycles();
    let result = interpreter.invoke_observed(|k, _| {
        let now = cycles();
        printkln!(
            "tflite_golden: profile {} op {} {}",
            name,
            k,
            now.wrapping_sub(last)
        );
        // The printing is not the next operator's.
        last = cycles();
    });
    if let Err(e) = result {
        printkln!("tflite_golden: {} FAIL profile run: {}", name, e);
    }
}

/// One `invoke` and the emulated cycles it took.
fn timed_invoke(interpreter: &mut Interpreter<'_, '_>) -> (Result<(), Error>, u32) {
    let start = cycles();
    let result = interpreter.invoke();
    (result, cycles().wrapping_sub(start))
}

/// The summary line: mean cycles of `runs` inferences that took `total`,
/// per MAC, and the arena the plan needs.
fn summary(name: &str, interpreter: &Interpreter<'_, '_>, total: u64, runs: u64) {
    let per_inference = total / runs.max(1);
    let macs = interpreter.model().macs().max(1);
    // Cycles per MAC with two decimals, in integers (no float formatting).
    let centi = per_inference * 100 / macs;
    printkln!(
        "tflite_golden: {}: {} emulated cycles/inference, {} MACs, {}.{:02} emulated cycles/MAC, arena {} B",
        name,
        per_inference,
        macs,
        centi / 100,
        centi % 100,
        interpreter.arena_required()
    );
}

/// Runs every shipped input of `case`; returns whether all matched.
fn run(case: &Case, arena: &mut [u8]) -> bool {
    with_interpreter(case.name, case.model, arena, |interpreter| {
        let mut ok = true;
        let mut total: u64 = 0;
        for &(input, data) in case.inputs {
            let slot = match interpreter.input_mut(0) {
                Ok(slot) if slot.len() == data.len() => slot,
                _ => {
                    printkln!("tflite_golden: {}/{} FAIL input size", case.name, input);
                    return false;
                }
            };
            for (s, &b) in slot.iter_mut().zip(data) {
                *s = b ^ 0x80;
            }
            let (result, spent) = timed_invoke(interpreter);
            total += u64::from(spent);
            if let Err(e) = result {
                printkln!("tflite_golden: {}/{} FAIL invoke: {}", case.name, input, e);
                ok = false;
                continue;
            }
            let got = match interpreter.output(0) {
                Ok(got) => got,
                Err(e) => {
                    printkln!("tflite_golden: {}/{} FAIL output: {}", case.name, input, e);
                    ok = false;
                    continue;
                }
            };
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
        summary(case.name, interpreter, total, case.inputs.len() as u64);
        profile(case.name, interpreter);
        ok
    })
}

/// Fills every graph input of `interpreter` with input `k`.
fn fill_inputs(interpreter: &mut Interpreter<'_, '_>, k: u32) -> Result<(), Error> {
    let model = interpreter.model();
    for i in 0..model.input_count() {
        let element = model.input(i)?.element_type();
        fill_input(k, i as u32, element, interpreter.input_mut(i)?);
    }
    Ok(())
}

/// Compares the hash of every output with `want` (one per graph output),
/// printing a FAIL line per difference; returns how many outputs matched,
/// `None` after a FAIL.
fn check_outputs<'e>(
    name: &str,
    k: u32,
    interpreter: &Interpreter<'_, '_>,
    want: impl Iterator<Item = &'e str>,
) -> Option<usize> {
    let outputs = interpreter.model().output_count();
    let mut ok = true;
    let mut hashes = 0;
    for (o, want) in want.enumerate() {
        hashes += 1;
        let want = match u64::from_str_radix(want, 16) {
            Ok(value) if want.len() == 16 => value,
            _ => {
                printkln!("tflite_golden: {}/{} FAIL expect line malformed", name, k);
                return None;
            }
        };
        let got = match interpreter.output(o) {
            Ok(bytes) => fnv1a64(bytes),
            Err(e) => {
                printkln!("tflite_golden: {}/{} FAIL output {}: {}", name, k, o, e);
                return None;
            }
        };
        if got != want {
            printkln!(
                "tflite_golden: {}/{} FAIL output {}: FNV-1a 64 {:016x}, LiteRT {:016x}",
                name,
                k,
                o,
                got,
                want
            );
            ok = false;
        }
    }
    if hashes != outputs {
        printkln!(
            "tflite_golden: {}/{} FAIL {} hashes for {} outputs",
            name,
            k,
            hashes,
            outputs
        );
        return None;
    }
    ok.then_some(hashes)
}

/// Runs inputs `0..NETWORK_INPUTS` of `network`; returns whether all matched.
fn run_network(network: &Network, arena: &mut [u8]) -> bool {
    with_interpreter(network.name, network.model, arena, |interpreter| {
        let mut ok = true;
        let mut total: u64 = 0;
        let mut runs: u64 = 0;
        for k in 0..NETWORK_INPUTS {
            let Some(want) = expected_hashes(network.expect, k) else {
                printkln!("tflite_golden: {}/{} FAIL no expect line", network.name, k);
                ok = false;
                continue;
            };
            if let Err(e) = fill_inputs(interpreter, k) {
                printkln!("tflite_golden: {}/{} FAIL input: {}", network.name, k, e);
                ok = false;
                continue;
            }
            let (result, spent) = timed_invoke(interpreter);
            total += u64::from(spent);
            runs += 1;
            if let Err(e) = result {
                printkln!("tflite_golden: {}/{} FAIL invoke: {}", network.name, k, e);
                ok = false;
                continue;
            }
            match check_outputs(network.name, k, interpreter, want) {
                Some(n) => printkln!(
                    "tflite_golden: {}/{} PASS (0 of {} output hashes differ from LiteRT's), {} emulated cycles",
                    network.name,
                    k,
                    n,
                    spent
                ),
                None => ok = false,
            }
        }
        summary(network.name, interpreter, total, runs);
        profile(network.name, interpreter);
        ok
    })
}

/// Runs every input of every model of `family`; one line for the family,
/// a FAIL line per differing output.
fn run_family(family: &Family, arena: &mut [u8]) -> bool {
    let (mut inputs, mut differing) = (0u32, 0u32);
    for model in &family.models {
        let ran = with_interpreter(model.name, model.model, arena, |interpreter| {
            for k in 0..FAMILY_INPUTS {
                let Some(want) = expected_hashes(model.expect, k) else {
                    printkln!("tflite_golden: {}/{} FAIL no expect line", model.name, k);
                    return false;
                };
                let same = fill_inputs(interpreter, k).is_ok()
                    && interpreter.invoke().is_ok()
                    && check_outputs(model.name, k, interpreter, want).is_some();
                inputs += 1;
                differing += u32::from(!same);
            }
            true
        });
        if !ran {
            differing += 1;
        }
    }
    let verdict = if differing == 0 { "PASS" } else { "FAIL" };
    printkln!(
        "tflite_golden: ops/{} {} ({} models, {} inputs, {} differing from LiteRT)",
        family.name,
        verdict,
        family.models.len(),
        inputs,
        differing
    );
    differing == 0
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
    for network in &NETWORKS {
        ok &= run_network(network, arena);
    }
    for family in &FAMILIES {
        ok &= run_family(family, arena);
    }
    extern "C" {
        fn thread_analyzer_print(cpu: u32);
    }
    // SAFETY: Zephyr's thread analyzer (CONFIG_THREAD_ANALYZER), called
    // from a thread on CPU 0 of this single-core image; it only reads the
    // threads' stacks.
    unsafe { thread_analyzer_print(0) };
    printkln!("tflite_golden: {}", if ok { "PASS" } else { "FAIL" });
}
