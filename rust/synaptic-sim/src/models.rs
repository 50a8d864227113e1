//! The models the simulated CPU0 serves, and the stub NPU's documented pure
//! function as the reference every output is checked against.
//!
//! Inputs are filled from a xorshift sequence seeded by the request, so
//! each request differs from the last (a stale output cannot pass) and the
//! fill is cheap enough for a debug-build soak.

use synaptic_runtime::npu::{stub_output, test_input};
use synaptic_runtime::registry::ModelHandle;

/// Seed of the simulated stub NPU.
pub const SEED: u32 = 0x5359_4E33;

/// A model the simulated CPU0 registers and exports: the host entry
/// point's ([`synaptic_serve::loopback`]), so both stand up the same two.
pub use synaptic_serve::loopback::{LoopbackModel as SimModel, FACE, KWS};

/// Fill `input` with the deterministic tensor of request `seq`
/// (`synaptic_runtime::npu::test_input`).
pub fn fill_input(seq: u32, input: &mut [u8]) {
    test_input(seq, input);
}

/// What the stub NPU answers for `input` on `model` (its documented pure
/// function of seed, model id and input).
pub fn expected_output(model: ModelHandle, input: &[u8], output_len: usize) -> Vec<u8> {
    let mut out = vec![0u8; output_len];
    stub_output(SEED, model.raw(), input, &mut out);
    out
}
