//! `syn_prof.h`: inference profiling.
//!
//! Every job that finishes successfully is recorded while profiling is on
//! (`syn_init()` turns it on): its time in pre-processing, on the NPU and in
//! post-processing, submit-to-completion total, and peak working memory.
//! Per-layer tracing needs a layered model; the stub NPU runs a model as one
//! step, so those two functions return `-ENOTSUP`.

use core::ffi::c_int;

use synaptic_abi::Errno;
use synaptic_runtime::prof::InferenceProfile;

use crate::platform::{self, PlatformClock};
use crate::state;
use crate::types::syn_prof_result_t;
use crate::{neg, BUSY};

fn saturate(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn result_of(p: &InferenceProfile) -> syn_prof_result_t {
    syn_prof_result_t {
        total_us: saturate(p.total_us),
        preprocess_us: saturate(p.preprocess_us),
        npu_us: saturate(p.npu_us),
        postprocess_us: saturate(p.postprocess_us),
        ipc_overhead_us: saturate(p.ipc_us),
        mem_peak_bytes: u32::try_from(p.memory_peak).unwrap_or(u32::MAX),
        npu_utilization_pct: p.npu_utilization_permille / 10,
    }
}

/// Starts recording (and a new summary window).
///
/// Returns 0.
#[no_mangle]
pub extern "C" fn syn_prof_enable() -> c_int {
    state::with(|s| {
        s.profiler.enable(&PlatformClock);
        0
    })
    .unwrap_or(BUSY)
}

/// Stops recording; the last result stays readable.
///
/// Returns 0.
#[no_mangle]
pub extern "C" fn syn_prof_disable() -> c_int {
    state::with(|s| {
        s.profiler.disable();
        0
    })
    .unwrap_or(BUSY)
}

/// Copies the profile of the last recorded inference.
///
/// Returns 0, `-EINVAL` for NULL, `-ENOENT` before the first recorded inference.
///
/// # Safety
///
/// `result` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_prof_get_last(result: *mut syn_prof_result_t) -> c_int {
    if result.is_null() {
        return neg(Errno::Inval);
    }
    match state::with(|s| s.profiler.last()) {
        Err(_) => BUSY,
        Ok(None) => neg(Errno::NoEnt),
        Ok(Some(p)) => {
            // SAFETY: non-null and valid for writes (contract).
            unsafe { result.write(result_of(&p)) };
            0
        }
    }
}

/// Prints the last inference's profile and the summary since profiling
/// was enabled on the console.
#[no_mangle]
pub extern "C" fn syn_prof_print_summary() {
    let Ok((last, summary)) = state::with(|s| (s.profiler.last(), s.profiler.summary())) else {
        return;
    };
    let Some(p) = last else {
        platform::print(format_args!("profile: no inference recorded"));
        return;
    };
    let r = result_of(&p);
    platform::print(format_args!(
        "profile: total {} us = preprocess {} us + npu {} us + postprocess {} us (+ queueing), ipc {} us, memory peak {} B, npu utilisation {}%",
        r.total_us,
        r.preprocess_us,
        r.npu_us,
        r.postprocess_us,
        r.ipc_overhead_us,
        r.mem_peak_bytes,
        r.npu_utilization_pct
    ));
    platform::print(format_args!("profile summary: {summary}"));
}

/// Per-layer tracing (not available: the stub NPU runs a model as one step).
///
/// Returns `-ENOTSUP`.
#[no_mangle]
pub extern "C" fn syn_prof_enable_layer_trace() -> c_int {
    neg(Errno::NotSup)
}

/// Time of one layer of the last inference (not available).
///
/// Returns `-EINVAL` for NULL, otherwise writes 0 and returns `-ENOTSUP`.
///
/// # Safety
///
/// `us` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_prof_get_layer_time(layer_index: u32, us: *mut u32) -> c_int {
    let _ = layer_index;
    if us.is_null() {
        return neg(Errno::Inval);
    }
    // SAFETY: non-null and valid for writes (contract).
    unsafe { us.write(0) };
    neg(Errno::NotSup)
}
