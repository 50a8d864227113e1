//! Host benchmark of the interpreter, for `valgrind --tool=callgrind`:
//! parses and plans a model once, then runs `invoke` N times, each through
//! [`synaptic_tflite_bench_invoke`], the one symbol callgrind collects
//! (`--toggle-collect=synaptic_tflite_bench_invoke`), so the count is the
//! invokes' instructions only (parsing, planning and the input copies are
//! outside). `scripts/bench.sh` divides the total by N and compares it with
//! TFLite's reference kernels measured in the same run
//! (`scripts/tflite_ref_bench.py`).
//!
//! ```text
//! cargo build --release -p synaptic-tflite --example bench
//! valgrind --tool=callgrind --toggle-collect=synaptic_tflite_bench_invoke \
//!     target/release/examples/bench <model.tflite> <input.u8> <N>
//! ```
//!
//! The input file holds unsigned bytes (`models/inputs/*.u8`); the model
//! gets `byte ^ 0x80`, as in the golden tests. It prints the output bytes in
//! hex and the multiply-accumulates of one inference.

use std::process::ExitCode;

use synaptic_tflite::{Interpreter, Model};

/// One inference: the only code callgrind counts.
#[no_mangle]
#[inline(never)]
pub fn synaptic_tflite_bench_invoke(interpreter: &mut Interpreter<'_, '_>) {
    interpreter.invoke().expect("invoke");
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let [_, model_path, input_path, n] = &args[..] else {
        eprintln!("usage: bench <model.tflite> <input.u8> <invokes>");
        return ExitCode::FAILURE;
    };
    let bytes = std::fs::read(model_path).expect("model file");
    let input: Vec<u8> = std::fs::read(input_path)
        .expect("input file")
        .iter()
        .map(|b| b ^ 0x80)
        .collect();
    let n: usize = n.parse().expect("invokes: a number");
    let model = Model::parse(&bytes).expect("model parses");
    let mut arena = vec![0u8; 512 * 1024];
    let mut interpreter = Interpreter::new(&model, &mut arena).expect("arena suffices");
    for _ in 0..n {
        // The planner may reuse the input's bytes: write it before each run.
        interpreter
            .input_mut(0)
            .expect("input")
            .copy_from_slice(&input);
        synaptic_tflite_bench_invoke(&mut interpreter);
    }
    let out: String = interpreter
        .output(0)
        .expect("output")
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    println!(
        "bench: {} invokes, output {out}, macs {}, arena {} B",
        n,
        model.macs(),
        interpreter.arena_required()
    );
    ExitCode::SUCCESS
}
