//! The frozen `syn_*` C API over the synaptic runtime.
//!
//! C applications written against the reference headers (`syn_api.h`,
//! `syn_mem.h`, `syn_model.h`, `syn_infer.h`, `syn_process.h`,
//! `syn_hal_npu.h`, `syn_hal_dsp.h`, `syn_prof.h`) compile against this
//! module unchanged: same names, signatures, struct layouts, enum values and
//! return convention (0 or a positive count on success, a negative errno on
//! failure; NULL pointers and out-of-range arguments give `-EINVAL`, never a
//! fault). The headers are generated from this crate by cbindgen
//! (`scripts/check-capi.sh`).
//!
//! Structure:
//!
//! * [`types`]: the C structs, enums and constants, layouts pinned.
//! * [`mod@platform`]: the lock, clock and console the platform provides
//!   ([`Platform`], bound with [`platform!`]).
//! * `state`: the one global runtime instance (arena, registry, pipeline
//!   pool, scheduler, stub NPU, profiler), reachable only under the lock.
//! * one module per header for the `extern "C"` functions: [`api`], [`mem`],
//!   [`model`], [`infer`], [`process`], [`npu`], [`dsp`], [`prof`].
//!
//! Limits: capacities are the constants below; the arena `syn_init()`
//! creates is [`ARENA_SIZE`] bytes of static memory. Jobs run on the thread
//! that calls `syn_infer_wait()` or `syn_infer_run_sync()` (there is no
//! scheduler thread); C stage functions run with the runtime lock held and
//! get `-EBUSY` from any `syn_*` call that needs it (the DSP functions and
//! the built-in processors do not). The IPC functions of `syn_ipc.h` are
//! not part of this crate; its types are ([`types::syn_ipc_msg_t`]).
#![no_std]
#![allow(non_camel_case_types, non_upper_case_globals)]

#[cfg(test)]
extern crate std;

pub mod api;
pub mod dsp;
pub mod infer;
pub mod mem;
pub mod model;
pub mod npu;
pub mod platform;
pub mod process;
pub mod prof;
mod state;
pub mod types;

#[cfg(test)]
mod tests;

use core::ffi::{c_char, c_int};

use synaptic_abi::Errno;

pub use platform::{Platform, Reentered};

/// Bytes of the static arena `syn_init()` creates (scratch pool included).
pub const ARENA_SIZE: usize = 10 * 1024;
/// Bytes of the arena's scratch pool.
pub const SCRATCH_SIZE: usize = 2 * 1024;
/// Bytes of intermediate-tensor memory shared by the job slots (each slot
/// gets two buffers of `WORK_SIZE / (2 * MAX_JOBS)` bytes).
pub const WORK_SIZE: usize = 8 * 1024;
/// Registered models at once.
pub const MAX_MODELS: usize = 8;
/// Pipelines at once (`syn_infer_run_sync()` borrows one while it runs).
pub const MAX_PIPELINES: usize = 4;
/// Steps per pipeline, the model included.
pub const MAX_STAGES: usize = 8;
/// Jobs at once: queued, running, or finished and not yet collected.
pub const MAX_JOBS: usize = 4;
/// Persistent tensors from `syn_mem_tensor_alloc()` alive at once.
pub const MAX_PERSISTENT_TENSORS: usize = 16;
/// Largest model input the stub NPU takes, bytes.
pub const STUB_NPU_INPUT: usize = 1024;
/// Largest model output the stub NPU produces, bytes.
pub const STUB_NPU_OUTPUT: usize = 256;
/// Time the stub NPU takes per inference, microseconds (busy-waited).
pub const STUB_NPU_LATENCY_US: u64 = 1000;
/// Largest image `syn_hal_npu_load_model()` accepts, bytes.
pub const MAX_RAW_MODEL_SIZE: usize = 256 * 1024;
/// Output bytes of a model loaded from a raw image through the HAL (which
/// carries no metadata): a 10-class int8 classifier, as in the reference.
pub const RAW_MODEL_OUTPUT: usize = 10;

/// `-errno` as the C API returns it.
pub(crate) const fn neg(e: Errno) -> c_int {
    e.negative()
}

/// What a call made from inside a locked callback returns.
pub(crate) const BUSY: c_int = neg(Errno::Busy);

/// The `&str` in a fixed C `char` array, up to its NUL.
///
/// # Errors
///
/// [`Errno::Inval`] without a NUL in the array or when not UTF-8.
pub(crate) fn array_str(chars: &[c_char]) -> Result<&str, Errno> {
    // SAFETY: c_char and u8 have the same size and alignment, and every
    // bit pattern is valid for both; the slice covers the same memory.
    let bytes = unsafe { core::slice::from_raw_parts(chars.as_ptr().cast::<u8>(), chars.len()) };
    let len = bytes.iter().position(|&b| b == 0).ok_or(Errno::Inval)?;
    core::str::from_utf8(&bytes[..len]).map_err(|_| Errno::Inval)
}

/// A C string of at most `max` bytes before its NUL.
///
/// # Errors
///
/// [`Errno::Inval`] for NULL, for no NUL within `max + 1` bytes, or when not UTF-8.
///
/// # Safety
///
/// `ptr` is NULL or points to a NUL-terminated string (or to at least
/// `max + 1` readable bytes).
pub(crate) unsafe fn c_str<'a>(ptr: *const c_char, max: usize) -> Result<&'a str, Errno> {
    if ptr.is_null() {
        return Err(Errno::Inval);
    }
    let mut len = 0;
    // SAFETY: the caller guarantees the bytes up to the NUL (or max + 1
    // bytes) are readable; the loop stops at the first NUL.
    while unsafe { *ptr.add(len) } != 0 {
        len += 1;
        if len > max {
            return Err(Errno::Inval);
        }
    }
    // SAFETY: the `len` bytes before the NUL were just read, so they are
    // readable; they stay unchanged for the call (C contract).
    let bytes = unsafe { core::slice::from_raw_parts(ptr.cast::<u8>(), len) };
    core::str::from_utf8(bytes).map_err(|_| Errno::Inval)
}
