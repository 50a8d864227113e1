//! The models the simulated CPU0 serves, and the stub NPU's documented pure
//! function as the reference every output is checked against.
//!
//! Inputs are filled from a xorshift sequence seeded by the request, so
//! each request differs from the last (a stale output cannot pass) and the
//! fill is cheap enough for a debug-build soak.

use synaptic_runtime::npu::{stub_output, test_input};
use synaptic_runtime::registry::{ModelDesc, ModelHandle};

/// Seed of the simulated stub NPU.
pub const SEED: u32 = 0x5359_4E33;

/// A model the simulated CPU0 registers and exports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimModel {
    /// Registry name.
    pub name: &'static str,
    /// Input shape (int8).
    pub input: &'static [u32],
    /// Output elements (int8).
    pub output: usize,
}

/// A 96x96x3 int8 face model: the largest tensor the slot takes.
pub const FACE: SimModel = SimModel {
    name: "face",
    input: &[96, 96, 3],
    output: 16,
};

/// A 49x10 int8 keyword-spotting model (MFCC frames in, 12 classes out).
pub const KWS: SimModel = SimModel {
    name: "kws",
    input: &[49, 10],
    output: 12,
};

impl SimModel {
    /// Input bytes.
    pub fn input_len(&self) -> usize {
        self.input.iter().map(|&d| d as usize).product()
    }

    /// The registry description.
    ///
    /// # Panics
    ///
    /// Never for the shapes above.
    pub fn desc(&self) -> ModelDesc<'static> {
        ModelDesc::int8(self.name, self.input, self.output).expect("shape")
    }
}

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
