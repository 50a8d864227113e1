//! `syn_hal_npu.h`: the NPU hardware abstraction, over the runtime's
//! deterministic stub NPU (the same instance pipelines run on).
//!
//! Behaviour of the stub behind this HAL:
//!
//! * Output is a pure function of the input: with
//!   `CONFIG_SYNAPTIC_STUB_REFERENCE_OUTPUT` (the default) the reference's
//!   rule, all 0 but byte `sum(input) % output length` = 127; otherwise the
//!   runtime's hash of model and input (see `synaptic_runtime::npu`); each invoke busy-waits
//!   [`crate::STUB_NPU_LATENCY_US`].
//! * `syn_hal_npu_load_model()` takes a raw image, which carries no tensor
//!   metadata: the stub treats it as a 10-class int8 classifier
//!   ([`crate::RAW_MODEL_OUTPUT`] bytes out) whose input is whatever
//!   `syn_hal_npu_set_input()` gives (up to [`crate::STUB_NPU_INPUT`]
//!   bytes). Registered models (`syn_model_load()`, pipelines) replace it.
//! * `syn_hal_npu_get_output()` reads a non-zero `*size` as the capacity of
//!   `data` (a buffer too small gives `-ENOBUFS`) and writes back the
//!   output's length; `*size == 0` is the reference's convention (`*size`
//!   only an output, `data` assumed to hold the whole output, unchecked).
//! * `syn_hal_npu_invoke_async()` with a NULL callback gives `-ENOTSUP`
//!   (the reference's stub has no asynchronous path); with one, it
//!   completes before it returns: it runs the
//!   inference, releases the runtime lock and calls the callback, so the
//!   callback may call `syn_hal_npu_get_output()`.
//! * A failed invoke leaves the device in `SYN_NPU_STATE_ERROR`;
//!   `syn_hal_npu_resume()` returns it to idle (as it does from suspend).

use core::ffi::{c_int, c_void, CStr};

use synaptic_abi::Errno;
use synaptic_runtime::arena::{DType, TensorMeta};
use synaptic_runtime::npu::{NpuDevice, NpuError, NpuModel, NpuState};

use crate::state::{self, State};
use crate::types::{syn_npu_caps_t, syn_npu_done_cb_t, syn_npu_state_t};
use crate::{neg, BUSY, MAX_RAW_MODEL_SIZE, RAW_MODEL_OUTPUT, STUB_NPU_INPUT};

/// Name `syn_hal_npu_get_caps()` reports.
const NAME: &CStr = c"stub";

/// Model id of a raw image loaded through the HAL (0 is never a registry handle).
const RAW_MODEL_ID: u32 = 0;

/// The C HAL's errno for a device error.
fn hal_errno(e: NpuError) -> c_int {
    neg(match e {
        NpuError::WrongState(NpuState::Off) | NpuError::NoModel => Errno::Perm,
        NpuError::WrongState(NpuState::Busy) => Errno::Busy,
        NpuError::ModelTooLarge => Errno::NoMem,
        e => e.to_errno(),
    })
}

/// The raw-image model with an input of `input_len` bytes.
fn raw_model(input_len: usize) -> Result<NpuModel, NpuError> {
    let input = TensorMeta::vector(DType::UInt8, input_len).map_err(|_| NpuError::NoInput)?;
    let output =
        TensorMeta::vector(DType::Int8, RAW_MODEL_OUTPUT).map_err(|_| NpuError::NoOutput)?;
    Ok(NpuModel {
        id: RAW_MODEL_ID,
        input,
        output,
        flash_offset: 0,
        flash_size: 0,
        image: &[],
    })
}

/// Powers the NPU up.
///
/// Returns 0, or `-EALREADY` when it is already on.
#[no_mangle]
pub extern "C" fn syn_hal_npu_init() -> c_int {
    state::with(|s| match s.npu.init() {
        Ok(()) => 0,
        Err(_) => neg(Errno::Already),
    })
    .unwrap_or(BUSY)
}

/// Powers the NPU down; the resident model is dropped.
#[no_mangle]
pub extern "C" fn syn_hal_npu_deinit() {
    let _ = state::with(|s| {
        let State {
            registry,
            npu,
            raw_model,
            ..
        } = s;
        if let Some(h) = registry.loaded() {
            let _ = registry.unload(h, npu);
        }
        *raw_model = None;
        npu.deinit();
    });
}

/// Describes the NPU.
///
/// Returns 0, or `-EINVAL` for NULL.
///
/// # Safety
///
/// `caps` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_npu_get_caps(caps: *mut syn_npu_caps_t) -> c_int {
    if caps.is_null() {
        return neg(Errno::Inval);
    }
    let Ok(c) = state::with(|s| s.npu.capabilities()) else {
        return BUSY;
    };
    let value = syn_npu_caps_t {
        name: NAME.as_ptr(),
        max_ops_per_sec: 0,
        scratch_size: 0,
        supported_dtypes: c.dtype_mask,
        // Invokes complete before syn_hal_npu_invoke_async returns.
        supports_async: false,
    };
    // SAFETY: non-null and valid for writes (contract).
    unsafe { caps.write(value) };
    0
}

/// The NPU's state (`SYN_NPU_STATE_IDLE` also while powered down).
#[no_mangle]
pub extern "C" fn syn_hal_npu_get_state() -> syn_npu_state_t {
    match state::with(|s| s.npu.state()) {
        Ok(NpuState::Busy) | Err(_) => syn_npu_state_t::SYN_NPU_STATE_BUSY,
        Ok(NpuState::Error) => syn_npu_state_t::SYN_NPU_STATE_ERROR,
        Ok(NpuState::Suspended) => syn_npu_state_t::SYN_NPU_STATE_SUSPENDED,
        Ok(NpuState::Off | NpuState::Idle) => syn_npu_state_t::SYN_NPU_STATE_IDLE,
    }
}

/// Makes a raw model image resident (see syn_hal_npu.h).
///
/// Returns 0, `-EINVAL` for NULL or a zero size, `-EPERM` before
/// `syn_hal_npu_init()`, `-EBUSY` while busy, `-ENOMEM` for an image
/// larger than `SYN_CAPI_MAX_RAW_MODEL_SIZE`.
///
/// # Safety
///
/// `model_data` is NULL or valid for reads of `model_size` bytes.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_npu_load_model(model_data: *const u8, model_size: usize) -> c_int {
    if model_data.is_null() || model_size == 0 {
        return neg(Errno::Inval);
    }
    if model_size > MAX_RAW_MODEL_SIZE {
        return neg(Errno::NoMem);
    }
    state::with(|s| {
        let State {
            registry,
            npu,
            raw_model: raw,
            ..
        } = s;
        match npu.state() {
            NpuState::Off => return neg(Errno::Perm),
            NpuState::Busy => return neg(Errno::Busy),
            _ => {}
        }
        let model = match raw_model(1) {
            Ok(m) => m,
            Err(e) => return hal_errno(e),
        };
        if let Some(h) = registry.loaded() {
            let _ = registry.unload(h, npu);
        }
        match npu.load_model(&model) {
            Ok(()) => {
                *raw = Some(model);
                0
            }
            Err(e) => hal_errno(e),
        }
    })
    .unwrap_or(BUSY)
}

/// Copies input `index` (only 0 exists) into the NPU.
///
/// Returns 0, `-EINVAL` for NULL, a zero size, an index other than 0 or a
/// size the resident registered model does not take, `-EPERM` before init
/// or without a model, `-EBUSY` while busy, `-ENOMEM` for more than
/// `SYN_CAPI_STUB_NPU_INPUT` bytes.
///
/// # Safety
///
/// `data` is NULL or valid for reads of `size` bytes.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_npu_set_input(
    index: u8,
    data: *const c_void,
    size: usize,
) -> c_int {
    if data.is_null() || size == 0 || index != 0 {
        return neg(Errno::Inval);
    }
    if size > STUB_NPU_INPUT {
        return neg(Errno::NoMem);
    }
    // SAFETY: non-null and valid for reads of `size` bytes (contract).
    let bytes = unsafe { core::slice::from_raw_parts(data.cast::<u8>(), size) };
    state::with(|s| {
        let State {
            npu,
            raw_model: raw,
            ..
        } = s;
        if let Some(model) = raw.as_mut() {
            if model.input.byte_len() != size && npu.loaded_model() == Some(RAW_MODEL_ID) {
                // The raw image takes any input length: restate it.
                match raw_model(size).and_then(|m| npu.load_model(&m).map(|()| m)) {
                    Ok(m) => *model = m,
                    Err(e) => return hal_errno(e),
                }
            }
        }
        match npu.set_input(bytes) {
            Ok(()) => 0,
            Err(e) => hal_errno(e),
        }
    })
    .unwrap_or(BUSY)
}

/// Runs the resident model on the staged input and waits for it.
///
/// Returns 0, `-EPERM` before init or without a model, `-EINVAL` without
/// an input, `-EBUSY` while busy, `-EIO` when the inference fails (the
/// device is then in `SYN_NPU_STATE_ERROR`).
#[no_mangle]
pub extern "C" fn syn_hal_npu_invoke() -> c_int {
    state::with(|s| match s.npu.invoke() {
        Ok(_) => 0,
        Err(e) => hal_errno(e),
    })
    .unwrap_or(BUSY)
}

/// Runs the resident model and reports completion through `cb` (before
/// returning; see syn_hal_npu.h).
///
/// Returns 0 when the inference ran (`cb` then got its status), `-ENOTSUP`
/// for a NULL callback (as the reference's stub), or the errors of `syn_hal_npu_invoke()` that occur
/// before the inference starts (then `cb` is not called).
///
/// # Safety
///
/// `cb` is NULL or a function that accepts `user_data`.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_npu_invoke_async(
    cb: syn_npu_done_cb_t,
    user_data: *mut c_void,
) -> c_int {
    // The reference's stub has no asynchronous path and says so for any
    // call; ours runs one when given a callback.
    let Some(cb) = cb else {
        return neg(Errno::NotSup);
    };
    let ran = state::with(|s| match s.npu.invoke() {
        Ok(_) => Ok(0),
        Err(NpuError::DeviceFault) => Ok(neg(Errno::Io)),
        Err(e) => Err(hal_errno(e)),
    });
    match ran {
        Err(_) => BUSY,
        Ok(Err(rc)) => rc,
        Ok(Ok(status)) => {
            // SAFETY: the application's callback with its own pointer
            // (contract); the runtime lock is released, so it may call the API.
            unsafe { cb(status, user_data) };
            0
        }
    }
}

/// Copies output `index` (only 0 exists) of the last successful invoke and
/// writes its length to `*size`.
///
/// `*size` on entry: 0 is the reference's convention, where `*size` is
/// only an output and `data` must hold the whole output (the resident
/// model's output size, at most `SYN_CAPI_STUB_NPU_OUTPUT` bytes; 10 for a
/// raw image). That convention cannot be checked: a buffer smaller than
/// the output is overrun. Any other value is the capacity of `data` and is
/// checked (`-ENOBUFS` when too small), which is the safe way to call it.
///
/// Returns 0, `-EINVAL` for NULL or an index other than 0, `-EPERM` before
/// init or without a model, `-EBUSY` while busy, `-ENOENT` when no invoke
/// succeeded since the input or model changed, `-ENOBUFS` when a non-zero
/// `*size` is too small.
///
/// # Safety
///
/// `size` is NULL or valid for reads and writes; `data` is NULL or valid
/// for writes of `*size` bytes, or, when `*size` is 0, of the output's
/// length.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_npu_get_output(
    index: u8,
    data: *mut c_void,
    size: *mut usize,
) -> c_int {
    if data.is_null() || size.is_null() || index != 0 {
        return neg(Errno::Inval);
    }
    // SAFETY: non-null and valid for reads (contract).
    let capacity = unsafe { size.read() };
    let result = state::with(|s| {
        let capacity = if capacity == 0 {
            // The reference's convention: the buffer holds the output.
            match s.npu.get_output(&mut []) {
                Err(NpuError::OutputTooSmall { needed, .. }) => needed,
                other => return other,
            }
        } else {
            capacity
        };
        // SAFETY: `data` is valid for writes of `capacity` bytes (contract,
        // the output's length when `*size` was 0) and nothing else refers
        // to it during the call.
        let out = unsafe { core::slice::from_raw_parts_mut(data.cast::<u8>(), capacity) };
        s.npu.get_output(out)
    });
    match result {
        Err(_) => BUSY,
        Ok(Err(e)) => hal_errno(e),
        Ok(Ok(n)) => {
            // SAFETY: non-null and valid for writes (contract).
            unsafe { size.write(n) };
            0
        }
    }
}

/// Gates the NPU's clocks; the model stays resident.
///
/// Returns 0 (also when already suspended), `-EPERM` before init, `-EBUSY`
/// while busy, `-EIO` in the error state.
#[no_mangle]
pub extern "C" fn syn_hal_npu_suspend() -> c_int {
    state::with(|s| match s.npu.state() {
        NpuState::Suspended => 0,
        _ => match s.npu.suspend() {
            Ok(()) => 0,
            Err(e) => hal_errno(e),
        },
    })
    .unwrap_or(BUSY)
}

/// Returns the NPU to idle from suspend or from the error state.
///
/// Returns 0, `-EPERM` before init, `-EINVAL` when neither suspended nor
/// in error.
#[no_mangle]
pub extern "C" fn syn_hal_npu_resume() -> c_int {
    state::with(|s| match s.npu.state() {
        NpuState::Off => neg(Errno::Perm),
        NpuState::Suspended => s.npu.resume().map_or_else(hal_errno, |()| 0),
        NpuState::Error => s.npu.clear_error().map_or_else(hal_errno, |()| 0),
        NpuState::Idle | NpuState::Busy => neg(Errno::Inval),
    })
    .unwrap_or(BUSY)
}
