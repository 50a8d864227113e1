//! `syn_hal_dsp.h`: DSP kernels over the runtime's implementations.
//!
//! These functions keep no state and take no lock, so pipeline stages
//! (which run with the runtime lock held) may call them.
//!
//! * `syn_hal_dsp_fft_f32()` transforms `len` complex points stored as
//!   interleaved `re, im` floats (`2 * len` floats); `in == out` works in
//!   place. `len` is a power of two from 2 to [`MAX_FFT_POINTS`].
//! * `syn_hal_dsp_mat_mult_q15()` multiplies the `rows x cols` matrix `a`
//!   by the vector `b` (`cols` entries) into `out` (`rows` entries); each
//!   sum is rounded half up and saturated (the runtime's Q15 rounding).
//! * `syn_hal_dsp_softmax_f32()` and `syn_hal_dsp_normalize_int8()` accept
//!   `in == out`; any other overlap of input and output is `-EINVAL`.

use core::ffi::c_int;
use core::ops::Range;

use synaptic_abi::Errno;
use synaptic_runtime::dsp::{self, Complex32};

use crate::neg;

/// Longest FFT, in complex points (the reference's limit).
pub const MAX_FFT_POINTS: usize = 1024;

fn span<T>(ptr: *const T, len: usize) -> Range<usize> {
    let start = ptr as usize;
    start..start.saturating_add(len.saturating_mul(core::mem::size_of::<T>()))
}

fn overlap(a: &Range<usize>, b: &Range<usize>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Initialises the DSP (nothing to do for the software kernels).
///
/// Returns 0.
#[no_mangle]
pub extern "C" fn syn_hal_dsp_init() -> c_int {
    0
}

/// `out[i] = saturate_int8(trunc(in[i] * scale) + zero_point)`.
///
/// Returns 0, or `-EINVAL` for NULL, `len == 0`, or a partial overlap.
///
/// # Safety
///
/// `in` is NULL or valid for reads of `len` bytes; `out` is NULL or valid
/// for writes of `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_dsp_normalize_int8(
    r#in: *const u8,
    out: *mut i8,
    len: usize,
    scale: f32,
    zero_point: i32,
) -> c_int {
    if r#in.is_null() || out.is_null() || len == 0 {
        return neg(Errno::Inval);
    }
    let same = core::ptr::eq(r#in, out.cast::<u8>());
    if !same && overlap(&span(r#in, len), &span(out, len)) {
        return neg(Errno::Inval);
    }
    for i in 0..len {
        // SAFETY: i < len and both buffers hold len bytes (contract); element
        // by element reads and writes are defined even when in == out.
        unsafe {
            let x = r#in.add(i).read();
            let v = ((f32::from(x) * scale) as i32).saturating_add(zero_point);
            out.add(i).write(dsp::saturate_i8(v));
        }
    }
    0
}

/// Numerically stable softmax, `exp(x - max) / sum`.
///
/// Returns 0, or `-EINVAL` for NULL, `len == 0`, misaligned pointers or a
/// partial overlap.
///
/// # Safety
///
/// `in` is NULL or valid for reads of `len` floats; `out` is NULL or valid
/// for writes of `len` floats.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_dsp_softmax_f32(
    r#in: *const f32,
    out: *mut f32,
    len: usize,
) -> c_int {
    if r#in.is_null() || out.is_null() || len == 0 || !r#in.is_aligned() || !out.is_aligned() {
        return neg(Errno::Inval);
    }
    if core::ptr::eq(r#in, out) {
        // SAFETY: valid for reads and writes of len aligned floats (contract,
        // checked alignment); this is the only reference to them.
        let values = unsafe { core::slice::from_raw_parts_mut(out, len) };
        softmax_in_place(values);
        return 0;
    }
    if overlap(&span(r#in, len), &span(out, len)) {
        return neg(Errno::Inval);
    }
    // SAFETY: aligned, valid for len floats each (contract), and disjoint
    // (checked above), so the shared and the exclusive slice do not alias.
    let (input, output) = unsafe {
        (
            core::slice::from_raw_parts(r#in, len),
            core::slice::from_raw_parts_mut(out, len),
        )
    };
    match dsp::softmax_f32(input, output) {
        Ok(()) => 0,
        Err(e) => neg(e.to_errno()),
    }
}

/// The runtime's softmax formula over one buffer.
pub(crate) fn softmax_in_place(values: &mut [f32]) {
    let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for v in values.iter_mut() {
        *v = libm::expf(*v - max);
        sum += *v;
    }
    for v in values.iter_mut() {
        *v /= sum;
    }
}

/// Index of the largest value (the first on ties).
///
/// Returns 0 and writes the index, or `-EINVAL` for NULL or `len == 0`.
///
/// # Safety
///
/// `data` is NULL or valid for reads of `len` bytes; `index` is NULL or
/// valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_dsp_argmax(data: *const i8, len: usize, index: *mut u32) -> c_int {
    if data.is_null() || index.is_null() || len == 0 {
        return neg(Errno::Inval);
    }
    // SAFETY: valid for reads of len bytes (contract).
    let values = unsafe { core::slice::from_raw_parts(data, len) };
    match dsp::argmax_i8(values) {
        Ok((i, _)) => {
            // SAFETY: non-null and valid for writes (contract).
            unsafe { index.write(u32::try_from(i).unwrap_or(u32::MAX)) };
            0
        }
        Err(e) => neg(e.to_errno()),
    }
}

/// Forward complex FFT of `len` points (see syn_hal_dsp.h).
///
/// Returns 0, or `-EINVAL` for NULL, a length that is not a power of two in
/// 2..1024, misaligned pointers or a partial overlap.
///
/// # Safety
///
/// `in` is NULL or valid for reads of `2 * len` floats; `out` is NULL or
/// valid for reads and writes of `2 * len` floats.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_dsp_fft_f32(r#in: *const f32, out: *mut f32, len: usize) -> c_int {
    if r#in.is_null()
        || out.is_null()
        || !len.is_power_of_two()
        || !(2..=MAX_FFT_POINTS).contains(&len)
        || !r#in.is_aligned()
        || !out.is_aligned()
    {
        return neg(Errno::Inval);
    }
    let floats = 2 * len;
    if !core::ptr::eq(r#in, out) {
        if overlap(&span(r#in, floats), &span(out, floats)) {
            return neg(Errno::Inval);
        }
        // SAFETY: both valid for 2 * len floats (contract) and disjoint (checked).
        unsafe { core::ptr::copy_nonoverlapping(r#in, out, floats) };
    }
    const _: () = assert!(core::mem::size_of::<Complex32>() == 2 * core::mem::size_of::<f32>());
    const _: () = assert!(core::mem::align_of::<Complex32>() == core::mem::align_of::<f32>());
    // SAFETY: `out` is aligned for f32, hence for Complex32 (same alignment,
    // asserted), and holds 2 * len floats = len Complex32 (`re, im` pairs,
    // #[repr(C)]); this is the only reference to it during the call.
    let points = unsafe { core::slice::from_raw_parts_mut(out.cast::<Complex32>(), len) };
    match dsp::fft_f32(points) {
        Ok(()) => 0,
        Err(_) => neg(Errno::Inval),
    }
}

/// Q15 matrix-vector product (see syn_hal_dsp.h).
///
/// Returns 0, or `-EINVAL` for NULL, a zero dimension, misaligned pointers
/// or an `out` that overlaps `a` or `b`.
///
/// # Safety
///
/// `a` is NULL or valid for reads of `rows * cols` values, `b` of `cols`
/// values; `out` is NULL or valid for writes of `rows` values.
#[no_mangle]
pub unsafe extern "C" fn syn_hal_dsp_mat_mult_q15(
    a: *const i16,
    b: *const i16,
    out: *mut i16,
    rows: u16,
    cols: u16,
) -> c_int {
    if a.is_null()
        || b.is_null()
        || out.is_null()
        || rows == 0
        || cols == 0
        || !a.is_aligned()
        || !b.is_aligned()
        || !out.is_aligned()
    {
        return neg(Errno::Inval);
    }
    let (m, k) = (usize::from(rows), usize::from(cols));
    let out_span = span(out, m);
    if overlap(&out_span, &span(a, m * k)) || overlap(&out_span, &span(b, k)) {
        return neg(Errno::Inval);
    }
    // SAFETY: aligned and valid for the stated counts (contract); `out` is
    // disjoint from `a` and `b` (checked), so the slices do not alias.
    let (a, b, out) = unsafe {
        (
            core::slice::from_raw_parts(a, m * k),
            core::slice::from_raw_parts(b, k),
            core::slice::from_raw_parts_mut(out, m),
        )
    };
    match dsp::mat_mult_q15(a, b, out, m, k, 1) {
        Ok(()) => 0,
        Err(e) => neg(e.to_errno()),
    }
}
