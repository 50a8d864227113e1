//! Host tests of the C API: they call the `extern "C"` functions directly,
//! as C does, and check return codes and effects (including every
//! `-EINVAL` path). The runtime is global, so the tests run one at a time
//! (`host::fresh`), each from the power-on state.

mod host;

mod api_tests;
mod dsp_tests;
mod infer_tests;
mod mem_tests;
mod model_tests;
mod npu_tests;
mod process_tests;

use core::ffi::{c_char, c_int, c_void};

use synaptic_abi::Errno;

use crate::types::*;

/// The stub NPU's output for `input` on C model handle `model` (0: a raw
/// image) under the rule this build selects (`crate::STUB_REFERENCE_OUTPUT`).
fn expected_output(model: syn_model_handle_t, input: &[u8], output: &mut [u8]) {
    if crate::STUB_REFERENCE_OUTPUT {
        synaptic_runtime::npu::reference_output(input, output);
    } else {
        // The registry's raw handle (the NPU's model id) behind a default
        // C handle; 0 is the raw image.
        let id = if model == 0 {
            0
        } else {
            model.wrapping_sub(1).wrapping_add(1 << 16)
        };
        synaptic_runtime::npu::stub_output(0, id, input, output);
    }
}

/// `-errno` as an int.
fn err(e: Errno) -> c_int {
    e.negative()
}

/// A C `char[N]` holding `s` and a NUL.
fn c_chars<const N: usize>(s: &str) -> [c_char; N] {
    let mut out = [0 as c_char; N];
    for (o, b) in out.iter_mut().zip(s.bytes()) {
        *o = b as c_char;
    }
    out
}

/// Metadata of an int8 vector-in, vector-out model.
fn model_info(name: &str, input_size: u32, output_size: u32) -> syn_model_info_t {
    syn_model_info_t {
        name: c_chars(name),
        version: c_chars("1.0.0"),
        input_size,
        output_size,
        flash_size: 64,
        sram_required: 4096,
        input_dtype: RawDtype::of(synaptic_runtime::arena::DType::Int8),
        output_dtype: RawDtype::of(synaptic_runtime::arena::DType::Int8),
        ..syn_model_info_t::ZERO
    }
}

/// Registers a model and returns its handle (asserting success).
fn register(info: &syn_model_info_t) -> syn_model_handle_t {
    let mut h = SYN_MODEL_INVALID;
    // SAFETY: both pointers are to live locals.
    let rc = unsafe { crate::model::syn_model_register(info, &mut h) };
    assert_eq!(rc, 0, "register");
    assert_ne!(h, SYN_MODEL_INVALID);
    h
}

/// A descriptor over a byte buffer.
fn tensor(data: &mut [u8], dtype: synaptic_runtime::arena::DType, shape: &[u32]) -> syn_tensor_t {
    let mut t = syn_tensor_t {
        data: data.as_mut_ptr().cast::<c_void>(),
        size: data.len(),
        dtype: RawDtype::of(dtype),
        ndim: shape.len() as u8,
        ..syn_tensor_t::EMPTY
    };
    t.shape[..shape.len()].copy_from_slice(shape);
    t
}

/// The bytes a descriptor points to.
///
/// # Safety
///
/// `t.data` is valid for reads of `t.size` bytes.
unsafe fn bytes_of(t: &syn_tensor_t) -> &[u8] {
    // SAFETY: forwarded contract.
    unsafe { core::slice::from_raw_parts(t.data.cast::<u8>(), t.size) }
}
