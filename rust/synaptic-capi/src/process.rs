//! The built-in processors of `syn_infer.h` (configured with the structs of
//! `syn_process.h`), exported as C function pointers.
//!
//! Each is an ordinary C stage function: the application passes the
//! exported pointer to `syn_pipeline_add_preprocess()` /
//! `_add_postprocess()` or calls it directly. They follow the reference's
//! tensor conventions, computed by the runtime's processing functions:
//!
//! | processor | input | output |
//! |---|---|---|
//! | `syn_preprocess_image_resize` | uint8/int8 `[1,H,W,C]` or `[H,W,C]` (rank 2 refused, as the reference) | same dtype and rank, `h x w` (bilinear, corners aligned as the reference's) |
//! | `syn_preprocess_image_normalize` | uint8/int8, last dimension = `channels` | float32, same shape |
//! | `syn_preprocess_quantize_int8` | float32 | int8, same shape |
//! | `syn_preprocess_audio_mfcc` | float32 (full scale ±1.0) or int16 PCM | float32 `[frames, num_coeffs]`, `frames = samples / frame_len` |
//! | `syn_postprocess_softmax` | int8 (dequantised with an optional `syn_dequantize_config_t`) or float32 | float32 probabilities, same shape |
//! | `syn_postprocess_argmax` | int8 or float32 | one `syn_classification_t` |
//! | `syn_postprocess_top_k` | int8 or float32 scores | `k` `syn_classification_t`, best first |
//! | `syn_postprocess_nms` | float32 `syn_bbox_t` records (at most 64) | the kept records, best first, per class |
//! | `syn_postprocess_dequantize` | int8 | float32, same shape |
//!
//! Element counts come from the input's shape (or from `size` when `ndim`
//! is 0). `out->size` is the output capacity on entry; too small gives
//! `-ENOMEM`, any other bad argument `-EINVAL`. Input and output buffers
//! must not overlap. The processors keep no state and take no lock.

use core::ffi::{c_int, c_void};

use synaptic_abi::Errno;
use synaptic_runtime::arena::{DType, TensorMeta, TensorRef};
use synaptic_runtime::process::stages::{self, StageConfig, StageFn};
use synaptic_runtime::process::{
    self as runtime, BBox, ImageDims, MfccConfig, NmsConfig, ProcessError, QuantParams,
    ResizeMethod, MFCC_MAX_FFT, MFCC_MAX_MEL,
};

use crate::mem::meta_of;
use crate::neg;
use crate::types::{
    syn_bbox_t, syn_classification_t, syn_dequantize_config_t, syn_mfcc_config_t, syn_nms_config_t,
    syn_normalize_config_t, syn_postprocess_fn_t, syn_preprocess_fn_t, syn_quantize_config_t,
    syn_resize_config_t, syn_tensor_t, syn_topk_config_t, RawDtype,
};

/// Most boxes `syn_postprocess_nms` reads (the reference's limit).
pub const MAX_NMS_BOXES: usize = 64;
/// Kept boxes `syn_postprocess_nms` holds on the stack; more (a larger
/// `max_boxes`) come from the scratch pool.
const NMS_STACK_BOXES: usize = 16;
/// Largest `k` of `syn_postprocess_top_k`.
pub const MAX_TOP_K: usize = 16;

const _: () = assert!(MAX_TOP_K <= stages::MAX_TOP_K);

/// The input of a processor.
struct Input<'a> {
    desc: syn_tensor_t,
    meta: TensorMeta,
    data: &'a [u8],
}

/// Reads and checks both descriptors and lends out their buffers.
///
/// # Safety
///
/// `input` is NULL or valid for reads with `data` valid for reads of `size`
/// bytes; `output` is NULL or valid for reads with `data` valid for writes
/// of `size` bytes.
unsafe fn buffers<'a>(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
) -> Result<(Input<'a>, &'a mut [u8]), Errno> {
    if input.is_null() || output.is_null() {
        return Err(Errno::Inval);
    }
    // SAFETY: non-null and valid for reads (contract); every field of
    // syn_tensor_t is valid for any bit pattern.
    let (desc, out) = unsafe { (input.read(), output.read()) };
    if desc.data.is_null() || out.data.is_null() {
        return Err(Errno::Inval);
    }
    let meta = meta_of(&desc)?;
    let len = meta.byte_len();
    let (a, b) = (desc.data as usize, out.data as usize);
    if a < b.saturating_add(out.size) && b < a.saturating_add(len) {
        return Err(Errno::Inval);
    }
    // SAFETY: `data` is valid for `size >= len` bytes (contract, meta_of
    // checked the length); `out.data` for `out.size` bytes; the two ranges
    // are disjoint (checked above), so the slices do not alias.
    let (data, out_bytes) = unsafe {
        (
            core::slice::from_raw_parts(desc.data.cast::<u8>(), len),
            core::slice::from_raw_parts_mut(out.data.cast::<u8>(), out.size),
        )
    };
    Ok((Input { desc, meta, data }, out_bytes))
}

/// Writes the result's geometry into the output descriptor.
///
/// # Safety
///
/// `output` is valid for writes.
unsafe fn finish(output: *mut syn_tensor_t, size: usize, dtype: DType, dims: &[u32]) {
    // SAFETY: valid for reads and writes (contract); any bit pattern is a
    // valid syn_tensor_t, so the reference is to a valid value.
    let t = unsafe { &mut *output };
    t.size = size;
    t.dtype = RawDtype::of(dtype);
    t.ndim = dims.len() as u8;
    t.shape = [0; 4];
    t.shape[..dims.len()].copy_from_slice(dims);
}

/// The C shape of a descriptor (its dimensions, or `[elements]`).
fn c_dims(input: &Input<'_>) -> ([u32; 4], usize) {
    if input.desc.ndim == 0 {
        let dims = input.meta.shape.dims();
        let mut out = [0; 4];
        out[..dims.len()].copy_from_slice(dims);
        (out, dims.len())
    } else {
        (input.desc.shape, usize::from(input.desc.ndim))
    }
}

fn errno_of(e: ProcessError) -> Errno {
    match e {
        ProcessError::OutputTooSmall { .. } => Errno::NoMem,
        _ => Errno::Inval,
    }
}

/// Runs a runtime stage whose output has the input's shape, then reports
/// `dtype` and the input's C shape.
///
/// # Safety
///
/// As [`buffers`].
unsafe fn same_shape(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    stage: StageFn,
    config: StageConfig,
) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    let view = TensorRef::wrap(input_buf.meta, input_buf.data).map_err(|_| Errno::Inval)?;
    let meta = stage(&view, out, &config).map_err(errno_of)?;
    let (dims, rank) = c_dims(&input_buf);
    // SAFETY: `output` is valid for writes (contract), and `out`, the slice
    // over its data, is no longer used.
    unsafe { finish(output, meta.byte_len(), meta.dtype, &dims[..rank]) };
    Ok(())
}

/// Defines the C stage `$name` (the `syn_preprocess_fn_t` /
/// `syn_postprocess_fn_t` signature), which runs `$imp` and returns 0 or
/// its negative errno.
macro_rules! c_stage {
    ($name:ident => $imp:ident) => {
        unsafe extern "C" fn $name(
            input: *const syn_tensor_t,
            output: *mut syn_tensor_t,
            cfg: *const c_void,
        ) -> c_int {
            // SAFETY: the stage contract of syn_infer.h (forwarded).
            rc(unsafe { $imp(input, output, cfg) })
        }
    };
}

fn rc(result: Result<(), Errno>) -> c_int {
    match result {
        Ok(()) => 0,
        Err(e) => neg(e),
    }
}

/// Reads a config struct.
///
/// # Safety
///
/// `config` is NULL or valid for reads of a `T`.
unsafe fn config<T: Copy>(config: *const c_void) -> Result<T, Errno> {
    if config.is_null() {
        return Err(Errno::Inval);
    }
    // SAFETY: non-null and valid for reads of a T (contract); the config
    // structs hold only integers and floats, valid for any bit pattern, and
    // C gives no alignment promise beyond the type's, so read unaligned.
    Ok(unsafe { config.cast::<T>().read_unaligned() })
}

fn f32_at(bytes: &[u8], i: usize) -> f32 {
    let mut b = [0u8; 4];
    b.copy_from_slice(&bytes[4 * i..4 * i + 4]);
    f32::from_le_bytes(b)
}

// ------------------------------------------------------------------ resize

c_stage!(image_resize => image_resize_impl);

unsafe fn image_resize_impl(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    let cfg: syn_resize_config_t = unsafe { config(cfg) }?;
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    if cfg.w == 0 || cfg.h == 0 || !matches!(input_buf.meta.dtype, DType::UInt8 | DType::Int8) {
        return Err(Errno::Inval);
    }
    let (dims, rank) = c_dims(&input_buf);
    // Images only, as the reference: a rank-2 tensor is refused.
    let (h, w, c) = match &dims[..rank] {
        [1, h, w, c] | [h, w, c] => (*h, *w, *c),
        _ => return Err(Errno::Inval),
    };
    if c == 0 || c > 4 {
        return Err(Errno::Inval);
    }
    let from = ImageDims {
        width: w as usize,
        height: h as usize,
        channels: c as usize,
    };
    let to = ImageDims {
        width: usize::from(cfg.w),
        height: usize::from(cfg.h),
        channels: c as usize,
    };
    if out.len() < to.len() {
        return Err(Errno::NoMem);
    }
    runtime::resize(
        &input_buf.data[..from.len()],
        from,
        &mut out[..to.len()],
        to,
        ResizeMethod::BilinearCorners,
    )
    .map_err(errno_of)?;
    let (oh, ow) = (u32::from(cfg.h), u32::from(cfg.w));
    let shape: &[u32] = match rank {
        4 => &[1, oh, ow, c],
        _ => &[oh, ow, c],
    };
    // SAFETY: valid for writes (contract); `out` is no longer used.
    unsafe { finish(output, to.len(), input_buf.meta.dtype, shape) };
    Ok(())
}

// ------------------------------------------------------------------ normalize

c_stage!(image_normalize => image_normalize_impl);

unsafe fn image_normalize_impl(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    let cfg: syn_normalize_config_t = unsafe { config(cfg) }?;
    let c = usize::from(cfg.channels);
    if c == 0 || c > 4 || cfg.std[..c].contains(&0.0) {
        return Err(Errno::Inval);
    }
    let stage_config = StageConfig::Normalize {
        mean: cfg.mean,
        std: cfg.std,
        channels: cfg.channels,
    };
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    let last = *input_buf.meta.shape.dims().last().ok_or(Errno::Inval)?;
    if last as usize != c {
        return Err(Errno::Inval);
    }
    match input_buf.meta.dtype {
        DType::UInt8 => {
            // SAFETY: forwarded contract (the buffers above are not used again).
            return unsafe { same_shape(input, output, stages::normalize_stage, stage_config) };
        }
        DType::Int8 => {}
        _ => return Err(Errno::Inval),
    }
    let needed = input_buf.data.len() * 4;
    if out.len() < needed {
        return Err(Errno::NoMem);
    }
    for (i, &b) in input_buf.data.iter().enumerate() {
        let v = (f32::from(b as i8) - cfg.mean[i % c]) / cfg.std[i % c];
        out[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    }
    let (dims, rank) = c_dims(&input_buf);
    // SAFETY: valid for writes (contract); `out` is no longer used.
    unsafe { finish(output, needed, DType::Float32, &dims[..rank]) };
    Ok(())
}

// ------------------------------------------------------------------ (de)quantise

unsafe extern "C" fn quantize_int8(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    let params = unsafe { config::<syn_quantize_config_t>(cfg) }.map(|q| QuantParams {
        scale: q.scale,
        zero_point: q.zero_point,
    });
    // SAFETY: the stage contract of syn_infer.h (forwarded).
    rc(unsafe {
        quant_stage(
            input,
            output,
            params,
            stages::quantize_stage,
            StageConfig::Quantize,
        )
    })
}

unsafe extern "C" fn dequantize(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> c_int {
    // SAFETY: forwarded contract.
    let params = unsafe { config::<syn_dequantize_config_t>(cfg) }.map(|q| QuantParams {
        scale: q.scale,
        zero_point: q.zero_point,
    });
    // SAFETY: the stage contract of syn_infer.h (forwarded).
    rc(unsafe {
        quant_stage(
            input,
            output,
            params,
            stages::dequantize_stage,
            StageConfig::Dequantize,
        )
    })
}

/// Quantise and dequantise: same parameters, same shape in and out.
///
/// # Safety
///
/// The stage contract of syn_infer.h: `input` and `output` point to valid
/// tensors whose data may be read and written respectively.
unsafe fn quant_stage(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    params: Result<QuantParams, Errno>,
    stage: StageFn,
    wrap: fn(QuantParams) -> StageConfig,
) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    params.and_then(|params| unsafe { same_shape(input, output, stage, wrap(params)) })
}

// ------------------------------------------------------------------ MFCC

c_stage!(audio_mfcc => audio_mfcc_impl);

unsafe fn audio_mfcc_impl(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    let cfg: syn_mfcc_config_t = unsafe { config(cfg) }?;
    let frame_len = usize::from(cfg.frame_len);
    let (mel, coeffs) = (usize::from(cfg.num_mel), usize::from(cfg.num_coeffs));
    if cfg.sample_rate_hz == 0
        || !frame_len.is_power_of_two()
        || !(8..=MFCC_MAX_FFT).contains(&frame_len)
        || mel == 0
        || mel > MFCC_MAX_MEL
        || coeffs == 0
        || coeffs > mel
    {
        return Err(Errno::Inval);
    }
    let mfcc = MfccConfig {
        sample_rate: cfg.sample_rate_hz,
        frame_len,
        frame_step: frame_len,
        fft_len: frame_len,
        mel_bands: mel,
        coefficients: coeffs,
        low_hz: 0.0,
        high_hz: cfg.sample_rate_hz as f32 / 2.0,
    };
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    let data = input_buf.data;
    let sample: fn(&[u8], usize) -> i16 = match input_buf.meta.dtype {
        DType::Int16 => |d, i| i16::from_le_bytes([d[2 * i], d[2 * i + 1]]),
        DType::Float32 => |d, i| {
            let v = libm::roundf(f32_at(d, i) * 32768.0);
            v.clamp(f32::from(i16::MIN), f32::from(i16::MAX)) as i16
        },
        _ => return Err(Errno::Inval),
    };
    let samples = input_buf.meta.shape.elements();
    let frames = samples / frame_len;
    if frames == 0 {
        return Err(Errno::Inval);
    }
    let needed = frames * coeffs * 4;
    if out.len() < needed {
        return Err(Errno::NoMem);
    }
    // Working memory (FFT buffer, power spectrum, mel energies and one
    // output row, up to 6.6 KB) comes from the scratch pool, so the stage
    // needs well under 2 KB of stack.
    let work_len = runtime::mfcc_work_len(&mfcc) + coeffs;
    crate::mem::with_scratch(work_len * 4, |bytes| {
        // SAFETY: f32 is valid for any bit pattern; the prefix check below
        // refuses a misaligned pool (it is ALIGN-aligned, so never).
        let (pre, work, _) = unsafe { bytes.align_to_mut::<f32>() };
        if !pre.is_empty() || work.len() < work_len {
            return Err(Errno::NoMem);
        }
        let (row, work) = work.split_at_mut(coeffs);
        for f in 0..frames {
            let at = |i: usize| sample(data, f * frame_len + i);
            runtime::mfcc_with(at, frame_len, &mfcc, row, work).map_err(errno_of)?;
            for (k, v) in row.iter().enumerate() {
                let at = 4 * (f * coeffs + k);
                out[at..at + 4].copy_from_slice(&v.to_le_bytes());
            }
        }
        Ok(())
    })??;
    // SAFETY: valid for writes (contract); `out` is no longer used.
    unsafe {
        finish(
            output,
            needed,
            DType::Float32,
            &[frames as u32, coeffs as u32],
        )
    };
    Ok(())
}

// ------------------------------------------------------------------ classification

/// Score `i` of an int8 or float32 input, int8 optionally dequantised.
fn score(input: &Input<'_>, i: usize, quant: Option<syn_dequantize_config_t>) -> f32 {
    match input.meta.dtype {
        DType::Float32 => f32_at(input.data, i),
        _ => {
            let q = input.data[i] as i8;
            quant.map_or(f32::from(q), |c| {
                (f32::from(q) - c.zero_point as f32) * c.scale
            })
        }
    }
}

fn scores_dtype(input: &Input<'_>) -> Result<(), Errno> {
    match input.meta.dtype {
        DType::Int8 | DType::Float32 => Ok(()),
        _ => Err(Errno::Inval),
    }
}

c_stage!(softmax => softmax_impl);

unsafe fn softmax_impl(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> Result<(), Errno> {
    let quant = if cfg.is_null() {
        None
    } else {
        // SAFETY: forwarded contract (an optional syn_dequantize_config_t).
        Some(unsafe { config::<syn_dequantize_config_t>(cfg) }?)
    };
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    scores_dtype(&input_buf)?;
    let count = input_buf.meta.shape.elements();
    let needed = count * 4;
    if out.len() < needed {
        return Err(Errno::NoMem);
    }
    // SAFETY: every bit pattern is a valid f32; align_to_mut only yields
    // the aligned middle part, and its alignment is checked below.
    let (head, values, _) = unsafe { out[..needed].align_to_mut::<f32>() };
    if !head.is_empty() || values.len() != count {
        return Err(Errno::Inval);
    }
    for (i, v) in values.iter_mut().enumerate() {
        *v = score(&input_buf, i, quant);
    }
    crate::dsp::softmax_in_place(values);
    let (dims, rank) = c_dims(&input_buf);
    // SAFETY: valid for writes (contract); `out` is no longer used.
    unsafe { finish(output, needed, DType::Float32, &dims[..rank]) };
    Ok(())
}

/// Writes classification records into `out`.
fn put_classifications(out: &mut [u8], records: &[syn_classification_t]) {
    for (r, chunk) in records.iter().zip(out.chunks_exact_mut(8)) {
        chunk[..4].copy_from_slice(&r.index.to_ne_bytes());
        chunk[4..].copy_from_slice(&r.score.to_ne_bytes());
    }
}

unsafe extern "C" fn argmax(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> c_int {
    let _ = cfg;
    // SAFETY: the stage contract of syn_infer.h (forwarded).
    rc(unsafe { argmax_impl(input, output) })
}

unsafe fn argmax_impl(input: *const syn_tensor_t, output: *mut syn_tensor_t) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    scores_dtype(&input_buf)?;
    let size = core::mem::size_of::<syn_classification_t>();
    if out.len() < size {
        return Err(Errno::NoMem);
    }
    let best = match input_buf.meta.dtype {
        DType::Int8 => {
            // SAFETY: i8 and u8 have the same layout; same bytes, read-only.
            let values = unsafe {
                core::slice::from_raw_parts(
                    input_buf.data.as_ptr().cast::<i8>(),
                    input_buf.data.len(),
                )
            };
            synaptic_runtime::dsp::argmax_i8(values)
                .map_err(|_| Errno::Inval)?
                .0
        }
        _ => {
            let count = input_buf.meta.shape.elements();
            let mut best = (0, f32::NEG_INFINITY);
            for i in 0..count {
                let v = f32_at(input_buf.data, i);
                if v > best.1 {
                    best = (i, v);
                }
            }
            best.0
        }
    };
    let record = syn_classification_t {
        index: u32::try_from(best).map_err(|_| Errno::Inval)?,
        score: score(&input_buf, best, None),
    };
    put_classifications(out, &[record]);
    // SAFETY: valid for writes (contract); `out` is no longer used.
    unsafe { finish(output, size, DType::Float32, &[1]) };
    Ok(())
}

c_stage!(top_k => top_k_impl);

unsafe fn top_k_impl(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    let cfg: syn_topk_config_t = unsafe { config(cfg) }?;
    let k = usize::from(cfg.k);
    if k == 0 || k > MAX_TOP_K {
        return Err(Errno::Inval);
    }
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    scores_dtype(&input_buf)?;
    let view = TensorRef::wrap(input_buf.meta, input_buf.data).map_err(|_| Errno::Inval)?;
    let mut rows = [0u8; MAX_TOP_K * 2 * 4];
    let meta = stages::top_k_stage(
        &view,
        &mut rows,
        &StageConfig::TopK {
            k: cfg.k,
            quant: None,
        },
    )
    .map_err(errno_of)?;
    let n = meta.shape.dims()[0] as usize;
    let size = n * core::mem::size_of::<syn_classification_t>();
    if out.len() < size {
        return Err(Errno::NoMem);
    }
    let mut records = [syn_classification_t::default(); MAX_TOP_K];
    for (i, r) in records[..n].iter_mut().enumerate() {
        *r = syn_classification_t {
            index: f32_at(&rows, 2 * i) as u32,
            score: f32_at(&rows, 2 * i + 1),
        };
    }
    put_classifications(out, &records[..n]);
    // SAFETY: valid for writes (contract); `out` is no longer used.
    unsafe { finish(output, size, DType::Float32, &[n as u32]) };
    Ok(())
}

// ------------------------------------------------------------------ NMS

c_stage!(nms => nms_impl);

unsafe fn nms_impl(
    input: *const syn_tensor_t,
    output: *mut syn_tensor_t,
    cfg: *const c_void,
) -> Result<(), Errno> {
    // SAFETY: forwarded contract.
    let cfg: syn_nms_config_t = unsafe { config(cfg) }?;
    // SAFETY: forwarded contract.
    let (input_buf, out) = unsafe { buffers(input, output) }?;
    const RECORD: usize = core::mem::size_of::<syn_bbox_t>();
    let len = input_buf.data.len();
    if cfg.max_boxes == 0 || input_buf.meta.dtype != DType::Float32 || len % RECORD != 0 {
        return Err(Errno::Inval);
    }
    let n = len / RECORD;
    if n > MAX_NMS_BOXES {
        return Err(Errno::Inval);
    }
    let box_at = |i: usize| {
        let f = |k| f32_at(input_buf.data, 6 * i + k);
        BBox {
            x_min: f(0),
            y_min: f(1),
            x_max: f(2),
            y_max: f(3),
            score: f(4),
            class_id: f(5) as u16,
        }
    };
    let capacity = usize::from(cfg.max_boxes)
        .min(out.len() / RECORD)
        .min(MAX_NMS_BOXES);
    let config = NmsConfig {
        iou_threshold: cfg.iou_threshold,
        score_threshold: cfg.score_threshold,
        per_class: true,
    };
    // The kept boxes: on the stack up to NMS_STACK_BOXES, beyond that in
    // the scratch pool (the stage stays well under 1 KB of stack).
    let run = |kept: &mut [BBox], out: &mut [u8]| -> Result<usize, Errno> {
        let m = runtime::nms_with(n, box_at, &config, kept).map_err(errno_of)?;
        for (b, chunk) in kept[..m].iter().zip(out.chunks_exact_mut(RECORD)) {
            let fields = [
                b.x_min,
                b.y_min,
                b.x_max,
                b.y_max,
                b.score,
                f32::from(b.class_id),
            ];
            for (v, bytes) in fields.iter().zip(chunk.chunks_exact_mut(4)) {
                bytes.copy_from_slice(&v.to_ne_bytes());
            }
        }
        Ok(m)
    };
    let m = if capacity <= NMS_STACK_BOXES {
        let mut kept = [BBox::default(); NMS_STACK_BOXES];
        run(&mut kept[..capacity], out)?
    } else {
        let bytes = capacity * core::mem::size_of::<BBox>() + core::mem::align_of::<BBox>();
        crate::mem::with_scratch(bytes, |raw| {
            // SAFETY: BBox is plain data (f32s and a u16) whose every
            // field is valid for any bit pattern, and the padding bytes
            // are never read; `align_to_mut` only hands out the aligned middle.
            let (_, kept, _) = unsafe { raw.align_to_mut::<BBox>() };
            if kept.len() < capacity {
                return Err(Errno::NoMem);
            }
            run(&mut kept[..capacity], out)
        })??
    };
    // SAFETY: valid for writes (contract); `out` is no longer used.
    unsafe { finish(output, m * RECORD, DType::Float32, &[m as u32, 6]) };
    Ok(())
}

// ------------------------------------------------------------------ exports

/// Bilinear image resize (config: `syn_resize_config_t`).
#[no_mangle]
pub static mut syn_preprocess_image_resize: syn_preprocess_fn_t = Some(image_resize);
/// Per-channel normalisation to float32 (config: `syn_normalize_config_t`).
#[no_mangle]
pub static mut syn_preprocess_image_normalize: syn_preprocess_fn_t = Some(image_normalize);
/// float32 to int8 quantisation (config: `syn_quantize_config_t`).
#[no_mangle]
pub static mut syn_preprocess_quantize_int8: syn_preprocess_fn_t = Some(quantize_int8);
/// MFCC features (config: `syn_mfcc_config_t`).
#[no_mangle]
pub static mut syn_preprocess_audio_mfcc: syn_preprocess_fn_t = Some(audio_mfcc);
/// Softmax to float32 probabilities (config: optional `syn_dequantize_config_t`).
#[no_mangle]
pub static mut syn_postprocess_softmax: syn_postprocess_fn_t = Some(softmax);
/// The best class as one `syn_classification_t` (no config).
#[no_mangle]
pub static mut syn_postprocess_argmax: syn_postprocess_fn_t = Some(argmax);
/// The `k` best classes (config: `syn_topk_config_t`).
#[no_mangle]
pub static mut syn_postprocess_top_k: syn_postprocess_fn_t = Some(top_k);
/// Per-class non-maximum suppression of `syn_bbox_t` records (config: `syn_nms_config_t`).
#[no_mangle]
pub static mut syn_postprocess_nms: syn_postprocess_fn_t = Some(nms);
/// int8 to float32 (config: `syn_dequantize_config_t`).
#[no_mangle]
pub static mut syn_postprocess_dequantize: syn_postprocess_fn_t = Some(dequantize);
