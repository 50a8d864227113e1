//! Pre- and post-processing: image resize and normalisation, int8
//! (de)quantisation, MFCC, int8 softmax, argmax, top-k and non-maximum
//! suppression, plus their pipeline stage wrappers ([`stages`]).
//!
//! Conventions and limits:
//!
//! * Images are interleaved `H x W x C` bytes.
//! * Quantised values follow `real = scale * (q - zero_point)`.
//! * `Float32` tensors are little-endian `f32` in byte buffers.
//! * MFCC uses a Hamming window, HTK mel scale, natural log of
//!   `energy + 1e-6`, and an orthonormal DCT-II; the FFT is at most
//!   [`MFCC_MAX_FFT`] points and the filterbank at most [`MFCC_MAX_MEL`]
//!   bands. The default configuration turns one second of 16 kHz audio into
//!   49 frames of 10 coefficients.
//! * Top-k and NMS keep a deterministic order: higher score first, lower
//!   index first on ties.

use synaptic_abi::Errno;

use crate::arena::{ArenaError, DType};
use crate::dsp::{self, DspError};

/// Largest FFT an MFCC frame may use.
pub const MFCC_MAX_FFT: usize = 1024;
/// Largest mel filterbank.
pub const MFCC_MAX_MEL: usize = 64;

/// Errors of the processing functions and stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProcessError {
    /// An input is empty.
    Empty,
    /// A slice length disagrees with the dimensions.
    LengthMismatch {
        /// Length required.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// The output buffer is too small.
    OutputTooSmall {
        /// Bytes or elements needed.
        needed: usize,
        /// Bytes or elements available.
        actual: usize,
    },
    /// A dimension is zero or the shape is not what the step expects.
    InvalidDimensions,
    /// The tensor's element type is not what the step expects.
    WrongDtype {
        /// Type expected.
        expected: DType,
        /// Type given.
        actual: DType,
    },
    /// A configuration value is out of range (zero scale, bad MFCC geometry...).
    InvalidConfig,
    /// The stage was given a configuration for another stage.
    ConfigMismatch,
    /// A DSP kernel failed.
    Dsp(DspError),
}

impl ProcessError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            ProcessError::OutputTooSmall { .. } => Errno::NoBufs,
            ProcessError::Dsp(e) => e.to_errno(),
            _ => Errno::Inval,
        }
    }
}

impl From<DspError> for ProcessError {
    fn from(e: DspError) -> Self {
        ProcessError::Dsp(e)
    }
}

impl From<ArenaError> for ProcessError {
    fn from(_: ArenaError) -> Self {
        ProcessError::InvalidDimensions
    }
}

fn same_len(expected: usize, actual: usize) -> Result<(), ProcessError> {
    if expected == actual {
        Ok(())
    } else {
        Err(ProcessError::LengthMismatch { expected, actual })
    }
}

// ---------------------------------------------------------------- images

/// Dimensions of an interleaved image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageDims {
    /// Pixels per row.
    pub width: usize,
    /// Rows.
    pub height: usize,
    /// Channels per pixel.
    pub channels: usize,
}

impl ImageDims {
    /// Bytes of an 8-bit image of these dimensions.
    pub const fn len(&self) -> usize {
        self.width * self.height * self.channels
    }

    /// Whether any dimension is zero.
    pub const fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Interpolation of [`resize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResizeMethod {
    /// Nearest neighbour (pixel centres, `src = floor((dst + 0.5) * in / out)`).
    Nearest,
    /// Bilinear with half-pixel centres and edge clamping, rounded to nearest.
    Bilinear,
    /// Bilinear with the corners aligned (`src = dst * (in - 1) / (out - 1)`,
    /// so the four corner pixels are kept exactly), rounded to nearest: the
    /// reference implementation's C resize.
    BilinearCorners,
}

/// Resizes an 8-bit image, up or down, to `to` (channels must match).
///
/// # Errors
///
/// [`ProcessError::InvalidDimensions`] for a zero dimension or a channel
/// change; [`ProcessError::LengthMismatch`] when a buffer is not exactly its
/// image's size.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::process::{resize, ImageDims, ResizeMethod};
/// let src = [10u8, 20, 30, 40];
/// let mut dst = [0u8; 16];
/// let d = |w, h| ImageDims { width: w, height: h, channels: 1 };
/// resize(&src, d(2, 2), &mut dst, d(4, 4), ResizeMethod::Nearest).unwrap();
/// assert_eq!(&dst[..4], &[10, 10, 20, 20]);
/// ```
pub fn resize(
    input: &[u8],
    from: ImageDims,
    output: &mut [u8],
    to: ImageDims,
    method: ResizeMethod,
) -> Result<(), ProcessError> {
    if from.is_empty() || to.is_empty() || from.channels != to.channels {
        return Err(ProcessError::InvalidDimensions);
    }
    same_len(from.len(), input.len())?;
    same_len(to.len(), output.len())?;
    let c = from.channels;
    let px = |x: usize, y: usize, ch: usize| f32::from(input[(y * from.width + x) * c + ch]);
    for y in 0..to.height {
        for x in 0..to.width {
            let out = &mut output[(y * to.width + x) * c..][..c];
            match method {
                ResizeMethod::Nearest => {
                    let sx = ((2 * x + 1) * from.width / (2 * to.width)).min(from.width - 1);
                    let sy = ((2 * y + 1) * from.height / (2 * to.height)).min(from.height - 1);
                    out.copy_from_slice(&input[(sy * from.width + sx) * c..][..c]);
                }
                ResizeMethod::Bilinear | ResizeMethod::BilinearCorners => {
                    let corners = method == ResizeMethod::BilinearCorners;
                    let map = |d: usize, n_in: usize, n_out: usize| {
                        let s = if corners {
                            if n_out > 1 {
                                d as f32 * (n_in - 1) as f32 / (n_out - 1) as f32
                            } else {
                                0.0
                            }
                        } else {
                            (d as f32 + 0.5) * n_in as f32 / n_out as f32 - 0.5
                        };
                        let s = s.clamp(0.0, (n_in - 1) as f32);
                        let i0 = s as usize;
                        let i1 = (i0 + 1).min(n_in - 1);
                        (i0, i1, s - i0 as f32)
                    };
                    let (x0, x1, fx) = map(x, from.width, to.width);
                    let (y0, y1, fy) = map(y, from.height, to.height);
                    for (ch, o) in out.iter_mut().enumerate() {
                        let top = px(x0, y0, ch) * (1.0 - fx) + px(x1, y0, ch) * fx;
                        let bottom = px(x0, y1, ch) * (1.0 - fx) + px(x1, y1, ch) * fx;
                        let v = top * (1.0 - fy) + bottom * fy;
                        *o = libm::roundf(v).clamp(0.0, 255.0) as u8;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Per-channel normalisation of an interleaved 8-bit image:
/// `output[i] = (input[i] - mean[c]) / std[c]` with `c = i % mean.len()`.
///
/// # Errors
///
/// [`ProcessError::InvalidConfig`] when `mean` is empty, `std` differs in
/// length or holds a zero; [`ProcessError::LengthMismatch`] when the buffers
/// differ or are not whole pixels.
pub fn normalize_channels(
    input: &[u8],
    output: &mut [f32],
    mean: &[f32],
    std: &[f32],
) -> Result<(), ProcessError> {
    if mean.is_empty() || mean.len() != std.len() || std.contains(&0.0) {
        return Err(ProcessError::InvalidConfig);
    }
    same_len(input.len(), output.len())?;
    if input.len() % mean.len() != 0 {
        return Err(ProcessError::LengthMismatch {
            expected: input.len() - input.len() % mean.len(),
            actual: input.len(),
        });
    }
    for (i, (o, &x)) in output.iter_mut().zip(input).enumerate() {
        let c = i % mean.len();
        *o = (f32::from(x) - mean[c]) / std[c];
    }
    Ok(())
}

// ---------------------------------------------------------------- quantisation

/// Affine quantisation: `real = scale * (q - zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuantParams {
    /// Step size; positive and finite.
    pub scale: f32,
    /// The quantised value of real zero.
    pub zero_point: i32,
}

impl QuantParams {
    fn check(self) -> Result<(), ProcessError> {
        if self.scale > 0.0 && self.scale.is_finite() {
            Ok(())
        } else {
            Err(ProcessError::InvalidConfig)
        }
    }

    /// One real value to int8 (round half away from zero, saturate).
    pub fn quantize(self, x: f32) -> i8 {
        let q = libm::roundf(x / self.scale) as i32 + self.zero_point;
        dsp::saturate_i8(q)
    }

    /// One int8 value to real.
    pub fn dequantize(self, q: i8) -> f32 {
        self.scale * (i32::from(q) - self.zero_point) as f32
    }
}

/// Quantises `input` into `output`.
///
/// # Errors
///
/// [`ProcessError::InvalidConfig`] for a non-positive scale;
/// [`ProcessError::LengthMismatch`].
pub fn quantize(input: &[f32], output: &mut [i8], q: QuantParams) -> Result<(), ProcessError> {
    q.check()?;
    same_len(input.len(), output.len())?;
    for (o, &x) in output.iter_mut().zip(input) {
        *o = q.quantize(x);
    }
    Ok(())
}

/// Dequantises `input` into `output`.
///
/// # Errors
///
/// [`ProcessError::InvalidConfig`] for a non-positive scale;
/// [`ProcessError::LengthMismatch`].
pub fn dequantize(input: &[i8], output: &mut [f32], q: QuantParams) -> Result<(), ProcessError> {
    q.check()?;
    same_len(input.len(), output.len())?;
    for (o, &x) in output.iter_mut().zip(input) {
        *o = q.dequantize(x);
    }
    Ok(())
}

// ---------------------------------------------------------------- MFCC

/// MFCC geometry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MfccConfig {
    /// Samples per second.
    pub sample_rate: u32,
    /// Samples per frame.
    pub frame_len: usize,
    /// Samples between frame starts.
    pub frame_step: usize,
    /// FFT points (power of two, at least `frame_len`, at most [`MFCC_MAX_FFT`]).
    pub fft_len: usize,
    /// Mel bands (at most [`MFCC_MAX_MEL`]).
    pub mel_bands: usize,
    /// Cepstral coefficients kept per frame (at most `mel_bands`).
    pub coefficients: usize,
    /// Lowest filterbank frequency, Hz.
    pub low_hz: f32,
    /// Highest filterbank frequency, Hz (at most half the sample rate).
    pub high_hz: f32,
}

impl Default for MfccConfig {
    /// Keyword spotting: 40 ms frames every 20 ms at 16 kHz, 1024-point FFT,
    /// 40 mel bands from 20 Hz to 4 kHz, 10 coefficients (49 x 10 for 1 s).
    fn default() -> Self {
        MfccConfig {
            sample_rate: 16_000,
            frame_len: 640,
            frame_step: 320,
            fft_len: 1024,
            mel_bands: 40,
            coefficients: 10,
            low_hz: 20.0,
            high_hz: 4_000.0,
        }
    }
}

impl MfccConfig {
    fn check(&self) -> Result<(), ProcessError> {
        let ok = self.sample_rate > 0
            && self.frame_len > 0
            && self.frame_step > 0
            && self.fft_len.is_power_of_two()
            && self.fft_len >= self.frame_len
            && self.fft_len <= MFCC_MAX_FFT
            && self.mel_bands > 0
            && self.mel_bands <= MFCC_MAX_MEL
            && self.coefficients > 0
            && self.coefficients <= self.mel_bands
            && self.low_hz >= 0.0
            && self.low_hz < self.high_hz
            && self.high_hz <= self.sample_rate as f32 / 2.0;
        if ok {
            Ok(())
        } else {
            Err(ProcessError::InvalidConfig)
        }
    }

    /// Frames produced from `samples` samples (0 if shorter than a frame).
    pub fn frames(&self, samples: usize) -> usize {
        if samples < self.frame_len || self.frame_step == 0 {
            0
        } else {
            1 + (samples - self.frame_len) / self.frame_step
        }
    }
}

/// Hertz to mel (HTK: `2595 log10(1 + f / 700)`).
pub fn hz_to_mel(hz: f32) -> f32 {
    2595.0 * libm::log10f(1.0 + hz / 700.0)
}

/// Mel to hertz, the inverse of [`hz_to_mel`].
pub fn mel_to_hz(mel: f32) -> f32 {
    700.0 * (libm::powf(10.0, mel / 2595.0) - 1.0)
}

/// Mel filterbank energies of one frame (`frame.len() == config.frame_len`)
/// into `mel` (`config.mel_bands` values, before the log).
///
/// # Errors
///
/// [`ProcessError::InvalidConfig`]; [`ProcessError::LengthMismatch`].
pub fn mel_energies(
    frame: &[i16],
    config: &MfccConfig,
    mel: &mut [f32],
) -> Result<(), ProcessError> {
    config.check()?;
    same_len(config.frame_len, frame.len())?;
    same_len(config.mel_bands, mel.len())?;
    let mut work = [0f32; MFCC_MAX_FFT + MFCC_MAX_FFT / 2 + 1];
    mel_energies_with(|i| frame[i], config, mel, &mut work)
}

fn mel_energies_with(
    sample: impl Fn(usize) -> i16,
    config: &MfccConfig,
    mel: &mut [f32],
    work: &mut [f32],
) -> Result<(), ProcessError> {
    let fft_len = config.fft_len;
    let half = fft_len / 2;
    let needed = fft_len + half + 1;
    if work.len() < needed {
        return Err(ProcessError::OutputTooSmall {
            needed,
            actual: work.len(),
        });
    }
    let (buf, power) = work.split_at_mut(fft_len);
    let power = &mut power[..=half];
    buf.fill(0.0);
    let n = config.frame_len;
    for (i, b) in buf[..n].iter_mut().enumerate() {
        let s = sample(i);
        let w = if n > 1 {
            0.54 - 0.46 * libm::cosf(2.0 * core::f32::consts::PI * i as f32 / (n - 1) as f32)
        } else {
            1.0
        };
        *b = f32::from(s) / 32768.0 * w;
    }
    let bins = dsp::rfft_f32(buf)?;
    power[0] = bins[0].re * bins[0].re;
    power[half] = bins[0].im * bins[0].im;
    for k in 1..half {
        power[k] = bins[k].norm_sqr();
    }
    let low = hz_to_mel(config.low_hz);
    let high = hz_to_mel(config.high_hz);
    let step = (high - low) / (config.mel_bands + 1) as f32;
    let bin_hz = config.sample_rate as f32 / fft_len as f32;
    for (m, e) in mel.iter_mut().enumerate() {
        let left = mel_to_hz(low + step * m as f32);
        let centre = mel_to_hz(low + step * (m + 1) as f32);
        let right = mel_to_hz(low + step * (m + 2) as f32);
        let mut acc = 0.0;
        for (k, &p) in power.iter().enumerate() {
            let f = k as f32 * bin_hz;
            let w = if f > left && f <= centre {
                (f - left) / (centre - left)
            } else if f > centre && f < right {
                (right - f) / (right - centre)
            } else {
                0.0
            };
            acc += w * p;
        }
        *e = acc;
    }
    Ok(())
}

/// MFCC of 16-bit PCM `samples` into `output`, frame-major
/// (`frames x coefficients`); returns the number of frames.
///
/// # Errors
///
/// [`ProcessError::InvalidConfig`]; [`ProcessError::Empty`] when shorter
/// than one frame; [`ProcessError::OutputTooSmall`].
///
/// # Examples
///
/// ```
/// use synaptic_runtime::process::{mfcc, MfccConfig};
/// let audio = [0i16; 16_000];
/// let mut out = [0f32; 490];
/// assert_eq!(mfcc(&audio, &MfccConfig::default(), &mut out), Ok(49));
/// ```
pub fn mfcc(
    samples: &[i16],
    config: &MfccConfig,
    output: &mut [f32],
) -> Result<usize, ProcessError> {
    let mut work = [0f32; MFCC_MAX_FFT + MFCC_MAX_FFT / 2 + 1 + MFCC_MAX_MEL];
    mfcc_with(|i| samples[i], samples.len(), config, output, &mut work)
}

/// `f32`s of working memory [`mfcc_with`] needs for `config`: the FFT
/// buffer, the power spectrum and the mel energies
/// (`fft_len + fft_len / 2 + 1 + mel_bands`).
pub const fn mfcc_work_len(config: &MfccConfig) -> usize {
    config.fft_len + config.fft_len / 2 + 1 + config.mel_bands
}

/// [`mfcc`] over `len` samples read through `sample`, with the caller's
/// working memory (at least [`mfcc_work_len`] `f32`s, e.g. from the arena's
/// scratch pool) instead of about 6 KB of stack; the stack it needs beyond
/// that is a few hundred bytes.
///
/// # Errors
///
/// As [`mfcc`]; [`ProcessError::OutputTooSmall`] also when `work` is too
/// small.
pub fn mfcc_with(
    sample: impl Fn(usize) -> i16,
    len: usize,
    config: &MfccConfig,
    output: &mut [f32],
    work: &mut [f32],
) -> Result<usize, ProcessError> {
    config.check()?;
    let frames = config.frames(len);
    if frames == 0 {
        return Err(ProcessError::Empty);
    }
    let needed = frames * config.coefficients;
    if output.len() < needed {
        return Err(ProcessError::OutputTooSmall {
            needed,
            actual: output.len(),
        });
    }
    let bands = config.mel_bands;
    if work.len() < mfcc_work_len(config) {
        return Err(ProcessError::OutputTooSmall {
            needed: mfcc_work_len(config),
            actual: work.len(),
        });
    }
    let (mel, work) = work.split_at_mut(bands);
    for (f, out) in output[..needed]
        .chunks_exact_mut(config.coefficients)
        .enumerate()
    {
        let start = f * config.frame_step;
        mel_energies_with(|i| sample(start + i), config, mel, work)?;
        for e in mel.iter_mut() {
            *e = libm::logf(*e + 1e-6);
        }
        for (k, c) in out.iter_mut().enumerate() {
            let mut acc = 0.0;
            for (m, &e) in mel.iter().enumerate() {
                acc += e * libm::cosf(
                    core::f32::consts::PI * k as f32 * (m as f32 + 0.5) / bands as f32,
                );
            }
            let norm = if k == 0 {
                1.0 / bands as f32
            } else {
                2.0 / bands as f32
            };
            *c = acc * libm::sqrtf(norm);
        }
    }
    Ok(frames)
}

// ---------------------------------------------------------------- classification

/// Softmax of int8 logits: dequantised with `input`, computed in `f32`,
/// written with the TFLite output convention `scale = 1/256`,
/// `zero_point = -128` (probability `p` becomes `round(256 p) - 128`,
/// saturated).
///
/// # Errors
///
/// [`ProcessError::InvalidConfig`]; [`ProcessError::Empty`];
/// [`ProcessError::LengthMismatch`].
pub fn softmax_int8(input: &[i8], q: QuantParams, output: &mut [i8]) -> Result<(), ProcessError> {
    q.check()?;
    if input.is_empty() {
        return Err(ProcessError::Empty);
    }
    same_len(input.len(), output.len())?;
    let max = input.iter().copied().max().unwrap_or(0);
    let mut sum = 0.0;
    for &x in input {
        sum += libm::expf(q.scale * f32::from(i16::from(x) - i16::from(max)));
    }
    for (o, &x) in output.iter_mut().zip(input) {
        let p = libm::expf(q.scale * f32::from(i16::from(x) - i16::from(max))) / sum;
        *o = dsp::saturate_i8(libm::roundf(p * 256.0) as i32 - 128);
    }
    Ok(())
}

/// Output quantisation of [`softmax_int8`].
pub const SOFTMAX_OUTPUT: QuantParams = QuantParams {
    scale: 1.0 / 256.0,
    zero_point: -128,
};

/// One class and its score.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Classification {
    /// Class index.
    pub class_id: u16,
    /// Score (dequantised for int8 inputs).
    pub score: f32,
}

/// Index of the highest score; the first on ties.
///
/// # Errors
///
/// [`ProcessError::Empty`].
pub fn argmax(scores: &[i8]) -> Result<usize, ProcessError> {
    dsp::argmax_i8(scores)
        .map(|(i, _)| i)
        .map_err(|_| ProcessError::Empty)
}

/// The `out.len()` best scores, best first (ties: lower index first); returns
/// how many were written (`min(out.len(), scores.len())`).
///
/// # Errors
///
/// [`ProcessError::Empty`] when `scores` is empty; [`ProcessError::InvalidConfig`]
/// when `out` is empty or there are more than 65,536 classes.
pub fn top_k(scores: &[f32], out: &mut [Classification]) -> Result<usize, ProcessError> {
    if scores.is_empty() {
        return Err(ProcessError::Empty);
    }
    if out.is_empty() || scores.len() > usize::from(u16::MAX) + 1 {
        return Err(ProcessError::InvalidConfig);
    }
    let mut n = 0;
    for (i, &s) in scores.iter().enumerate() {
        if s.is_nan() {
            continue;
        }
        // Insertion point: after every entry with score >= s (keeps index order on ties).
        let pos = out[..n].iter().position(|c| s > c.score).unwrap_or(n);
        if pos >= out.len() {
            continue;
        }
        let end = if n < out.len() { n } else { n - 1 };
        out.copy_within(pos..end, pos + 1);
        out[pos] = Classification {
            class_id: i as u16,
            score: s,
        };
        n = (n + 1).min(out.len());
    }
    Ok(n)
}

// ---------------------------------------------------------------- detection

/// An axis-aligned box with a score and class.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BBox {
    /// Left edge.
    pub x_min: f32,
    /// Top edge.
    pub y_min: f32,
    /// Right edge.
    pub x_max: f32,
    /// Bottom edge.
    pub y_max: f32,
    /// Confidence.
    pub score: f32,
    /// Class index.
    pub class_id: u16,
}

impl BBox {
    /// Area (0 for an inverted box).
    pub fn area(&self) -> f32 {
        (self.x_max - self.x_min).max(0.0) * (self.y_max - self.y_min).max(0.0)
    }
}

/// Intersection over union, in `[0, 1]` (0 when both are empty).
pub fn iou(a: &BBox, b: &BBox) -> f32 {
    let w = (a.x_max.min(b.x_max) - a.x_min.max(b.x_min)).max(0.0);
    let h = (a.y_max.min(b.y_max) - a.y_min.max(b.y_min)).max(0.0);
    let inter = w * h;
    let union = a.area() + b.area() - inter;
    if union <= 0.0 {
        0.0
    } else {
        inter / union
    }
}

/// Non-maximum suppression thresholds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NmsConfig {
    /// A box overlapping a kept box by more than this IoU is suppressed.
    pub iou_threshold: f32,
    /// Boxes scoring below this are dropped first.
    pub score_threshold: f32,
    /// Suppress only boxes of the same class.
    pub per_class: bool,
}

/// Greedy NMS: visits boxes best first (ties: lower index first), keeps a box
/// unless it overlaps an already kept one by more than the IoU threshold;
/// writes kept boxes best first into `out` and returns how many (at most
/// `out.len()`). Uses no memory beyond `out`.
///
/// # Errors
///
/// [`ProcessError::InvalidConfig`] when the IoU threshold is outside `[0, 1]`.
pub fn nms(boxes: &[BBox], config: &NmsConfig, out: &mut [BBox]) -> Result<usize, ProcessError> {
    nms_with(boxes.len(), |i| boxes[i], config, out)
}

/// [`nms`] over `n` boxes read through `box_at` (for callers whose boxes
/// are in another layout: no copy of them is needed).
///
/// # Errors
///
/// As [`nms`].
pub fn nms_with(
    n: usize,
    box_at: impl Fn(usize) -> BBox,
    config: &NmsConfig,
    out: &mut [BBox],
) -> Result<usize, ProcessError> {
    if !(0.0..=1.0).contains(&config.iou_threshold) {
        return Err(ProcessError::InvalidConfig);
    }
    // (score, index) of the previous visit; the next is the best strictly after it.
    let mut last: Option<(f32, usize)> = None;
    let mut kept = 0;
    while kept < out.len() {
        let mut next: Option<(f32, usize)> = None;
        for i in 0..n {
            let b = box_at(i);
            if b.score.is_nan() || b.score < config.score_threshold {
                continue;
            }
            let after_last = last.is_none_or(|(s, j)| b.score < s || (b.score == s && i > j));
            let before_next = next.is_none_or(|(s, j)| b.score > s || (b.score == s && i < j));
            if after_last && before_next {
                next = Some((b.score, i));
            }
        }
        let Some((_, i)) = next else { break };
        last = next;
        let candidate = box_at(i);
        let suppressed = out[..kept].iter().any(|k| {
            (!config.per_class || k.class_id == candidate.class_id)
                && iou(k, &candidate) > config.iou_threshold
        });
        if !suppressed {
            out[kept] = candidate;
            kept += 1;
        }
    }
    Ok(kept)
}

pub mod stages {
    //! The built-in processors as pipeline stages: each is a [`StageFn`]
    //! that reads a tensor, writes its result into a byte buffer and returns
    //! the result's descriptor. Each checks that its [`StageConfig`] variant
    //! and the input dtype are the ones it expects.

    use super::*;
    use crate::arena::{Shape, TensorMeta, TensorRef};

    /// Largest `k` of [`top_k_stage`].
    pub const MAX_TOP_K: usize = 16;
    /// Most boxes [`nms_stage`] reads.
    pub const MAX_NMS_BOXES: usize = 128;
    /// `f32` values per box in [`nms_stage`] tensors: x_min, y_min, x_max, y_max, score, class.
    pub const BOX_FIELDS: usize = 6;

    /// A stage: `(input, output bytes, config) -> output descriptor`.
    pub type StageFn =
        fn(&TensorRef<'_>, &mut [u8], &StageConfig) -> Result<TensorMeta, ProcessError>;

    /// Configuration of a stage; built-in stages each take one variant.
    #[derive(Clone, Copy, Debug, PartialEq)]
    #[non_exhaustive]
    pub enum StageConfig {
        /// No configuration.
        None,
        /// [`resize_stage`]: target size and method.
        Resize {
            /// Target width.
            width: u16,
            /// Target height.
            height: u16,
            /// Interpolation.
            method: ResizeMethod,
        },
        /// [`normalize_stage`]: per-channel mean and standard deviation.
        Normalize {
            /// Channel means.
            mean: [f32; 4],
            /// Channel standard deviations.
            std: [f32; 4],
            /// Channels used (1 to 4).
            channels: u8,
        },
        /// [`quantize_stage`].
        Quantize(QuantParams),
        /// [`dequantize_stage`].
        Dequantize(QuantParams),
        /// [`mfcc_stage`].
        Mfcc(MfccConfig),
        /// [`softmax_stage`]: quantisation of the int8 logits.
        Softmax(QuantParams),
        /// [`top_k_stage`]: `k`, and the quantisation of int8 scores (`None`: raw values).
        TopK {
            /// Classes kept (1 to [`MAX_TOP_K`]).
            k: u8,
            /// Dequantisation of int8 scores.
            quant: Option<QuantParams>,
        },
        /// [`nms_stage`].
        Nms(NmsConfig),
        /// Free-form words for application stages.
        Custom([u32; 4]),
    }

    fn expect_dtype(t: &TensorRef<'_>, dtype: DType) -> Result<(), ProcessError> {
        if t.meta().dtype == dtype {
            Ok(())
        } else {
            Err(ProcessError::WrongDtype {
                expected: dtype,
                actual: t.meta().dtype,
            })
        }
    }

    fn output_for(out: &mut [u8], meta: TensorMeta) -> Result<&mut [u8], ProcessError> {
        let needed = meta.byte_len();
        if out.len() < needed {
            return Err(ProcessError::OutputTooSmall {
                needed,
                actual: out.len(),
            });
        }
        Ok(&mut out[..needed])
    }

    fn f32_at(bytes: &[u8], i: usize) -> f32 {
        let mut b = [0u8; 4];
        b.copy_from_slice(&bytes[i * 4..i * 4 + 4]);
        f32::from_le_bytes(b)
    }

    fn put_f32(bytes: &mut [u8], i: usize, v: f32) {
        bytes[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
    }

    /// `UInt8`/`Int8` `[H, W, C]` (or `[H, W]`) to the same type `[h, w, C]`.
    ///
    /// # Errors
    ///
    /// Wrong config, dtype or rank; [`resize`]'s errors.
    pub fn resize_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::Resize {
            width,
            height,
            method,
        } = *config
        else {
            return Err(ProcessError::ConfigMismatch);
        };
        let meta = input.meta();
        if !matches!(meta.dtype, DType::UInt8 | DType::Int8) {
            return Err(ProcessError::WrongDtype {
                expected: DType::UInt8,
                actual: meta.dtype,
            });
        }
        let dims = meta.shape.dims();
        let (h, w, c) = match *dims {
            [h, w] => (h, w, 1),
            [h, w, c] => (h, w, c),
            _ => return Err(ProcessError::InvalidDimensions),
        };
        let from = ImageDims {
            width: w as usize,
            height: h as usize,
            channels: c as usize,
        };
        let to = ImageDims {
            width: usize::from(width),
            height: usize::from(height),
            channels: c as usize,
        };
        let out_meta = TensorMeta::new(
            meta.dtype,
            Shape::new(&[u32::from(height), u32::from(width), c])?,
        );
        resize(
            input.data(),
            from,
            output_for(output, out_meta)?,
            to,
            method,
        )?;
        Ok(out_meta)
    }

    /// `UInt8` image to `Float32` of the same shape, `(x - mean[c]) / std[c]`.
    ///
    /// # Errors
    ///
    /// Wrong config or dtype; [`normalize_channels`]'s errors.
    pub fn normalize_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::Normalize {
            mean,
            std,
            channels,
        } = *config
        else {
            return Err(ProcessError::ConfigMismatch);
        };
        expect_dtype(input, DType::UInt8)?;
        let c = usize::from(channels);
        if c == 0 || c > 4 || std[..c].contains(&0.0) || input.data().len() % c != 0 {
            return Err(ProcessError::InvalidConfig);
        }
        let out_meta = TensorMeta::new(DType::Float32, input.meta().shape);
        let out = output_for(output, out_meta)?;
        for (i, &x) in input.data().iter().enumerate() {
            put_f32(out, i, (f32::from(x) - mean[i % c]) / std[i % c]);
        }
        Ok(out_meta)
    }

    /// `Float32` to `Int8` of the same shape.
    ///
    /// # Errors
    ///
    /// Wrong config or dtype; invalid scale.
    pub fn quantize_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::Quantize(q) = *config else {
            return Err(ProcessError::ConfigMismatch);
        };
        q.check()?;
        expect_dtype(input, DType::Float32)?;
        let out_meta = TensorMeta::new(DType::Int8, input.meta().shape);
        let out = output_for(output, out_meta)?;
        for (i, o) in out.iter_mut().enumerate() {
            *o = q.quantize(f32_at(input.data(), i)) as u8;
        }
        Ok(out_meta)
    }

    /// `Int8` to `Float32` of the same shape.
    ///
    /// # Errors
    ///
    /// Wrong config or dtype; invalid scale.
    pub fn dequantize_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::Dequantize(q) = *config else {
            return Err(ProcessError::ConfigMismatch);
        };
        q.check()?;
        expect_dtype(input, DType::Int8)?;
        let out_meta = TensorMeta::new(DType::Float32, input.meta().shape);
        let out = output_for(output, out_meta)?;
        for (i, &x) in input.data().iter().enumerate() {
            put_f32(out, i, q.dequantize(x as i8));
        }
        Ok(out_meta)
    }

    /// `Int16` PCM `[N]` to `Float32` `[frames, coefficients]`.
    ///
    /// # Errors
    ///
    /// Wrong config or dtype; [`mfcc`]'s errors.
    pub fn mfcc_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::Mfcc(cfg) = *config else {
            return Err(ProcessError::ConfigMismatch);
        };
        expect_dtype(input, DType::Int16)?;
        cfg.check()?;
        let data = input.data();
        let len = data.len() / 2;
        let frames = cfg.frames(len);
        if frames == 0 {
            return Err(ProcessError::Empty);
        }
        let out_meta = TensorMeta::new(
            DType::Float32,
            Shape::new(&[frames as u32, cfg.coefficients as u32])?,
        );
        let out = output_for(output, out_meta)?;
        let mut row = [0f32; MFCC_MAX_MEL];
        let mut work = [0f32; MFCC_MAX_FFT + MFCC_MAX_FFT / 2 + 1 + MFCC_MAX_MEL];
        let coeffs = cfg.coefficients;
        for f in 0..frames {
            let start = f * cfg.frame_step;
            let sample = |i: usize| {
                let j = (start + i) * 2;
                i16::from_le_bytes([data[j], data[j + 1]])
            };
            mfcc_with(sample, cfg.frame_len, &cfg, &mut row[..coeffs], &mut work)?;
            for (k, &v) in row[..coeffs].iter().enumerate() {
                put_f32(out, f * coeffs + k, v);
            }
        }
        Ok(out_meta)
    }

    /// `Int8` logits to `Int8` probabilities ([`SOFTMAX_OUTPUT`] quantisation).
    ///
    /// # Errors
    ///
    /// Wrong config or dtype; [`softmax_int8`]'s errors.
    pub fn softmax_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::Softmax(q) = *config else {
            return Err(ProcessError::ConfigMismatch);
        };
        expect_dtype(input, DType::Int8)?;
        let out_meta = input.meta();
        let out = output_for(output, out_meta)?;
        let mut logits = [0i8; 256];
        let mut probs = [0i8; 256];
        let n = input.data().len();
        if n > logits.len() {
            return Err(ProcessError::InvalidDimensions);
        }
        for (l, &b) in logits.iter_mut().zip(input.data()) {
            *l = b as i8;
        }
        softmax_int8(&logits[..n], q, &mut probs[..n])?;
        for (o, &p) in out.iter_mut().zip(&probs[..n]) {
            *o = p as u8;
        }
        Ok(out_meta)
    }

    /// `Int8` or `Float32` scores `[N]` to `Float32` `[k, 2]` rows of
    /// `(class id, score)`, best first.
    ///
    /// # Errors
    ///
    /// Wrong config or dtype; `k` outside 1..=[`MAX_TOP_K`]; more than
    /// 65,536 scores ([`ProcessError::InvalidConfig`], as [`top_k`]: class
    /// ids are `u16`); [`top_k`]'s errors.
    pub fn top_k_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::TopK { k, quant } = *config else {
            return Err(ProcessError::ConfigMismatch);
        };
        let k = usize::from(k);
        if k == 0 || k > MAX_TOP_K {
            return Err(ProcessError::InvalidConfig);
        }
        let mut best = [Classification {
            class_id: 0,
            score: 0.0,
        }; MAX_TOP_K];
        let mut n = 0;
        let data = input.data();
        let elements = input.meta().shape.elements();
        if elements > usize::from(u16::MAX) + 1 {
            // Chunk offsets would wrap in the u16 class ids.
            return Err(ProcessError::InvalidConfig);
        }
        // Stream scores in chunks so no full float copy is needed.
        let mut chunk = [0f32; 64];
        let mut base = 0;
        while base < elements {
            let len = (elements - base).min(chunk.len());
            for (j, c) in chunk[..len].iter_mut().enumerate() {
                *c = match input.meta().dtype {
                    DType::Int8 => {
                        let q = data[base + j] as i8;
                        quant.map_or(f32::from(q), |p| p.dequantize(q))
                    }
                    DType::Float32 => f32_at(data, base + j),
                    other => {
                        return Err(ProcessError::WrongDtype {
                            expected: DType::Float32,
                            actual: other,
                        })
                    }
                };
            }
            let mut part = [Classification {
                class_id: 0,
                score: 0.0,
            }; MAX_TOP_K];
            let m = top_k(&chunk[..len], &mut part[..k])?;
            // Merge: re-rank the union of `best` and this chunk's winners.
            let mut merged = [Classification {
                class_id: 0,
                score: 0.0,
            }; 2 * MAX_TOP_K];
            merged[..n].copy_from_slice(&best[..n]);
            for (slot, p) in merged[n..n + m].iter_mut().zip(&part[..m]) {
                *slot = Classification {
                    class_id: p.class_id + base as u16,
                    score: p.score,
                };
            }
            let mut scores = [0f32; 2 * MAX_TOP_K];
            for (s, c) in scores.iter_mut().zip(&merged[..n + m]) {
                *s = c.score;
            }
            let mut order = [Classification {
                class_id: 0,
                score: 0.0,
            }; MAX_TOP_K];
            let kept = top_k(&scores[..n + m], &mut order[..k])?;
            for (b, o) in best.iter_mut().zip(&order[..kept]) {
                *b = merged[usize::from(o.class_id)];
            }
            n = kept;
            base += len;
        }
        let out_meta = TensorMeta::new(DType::Float32, Shape::new(&[n as u32, 2])?);
        let out = output_for(output, out_meta)?;
        for (i, c) in best[..n].iter().enumerate() {
            put_f32(out, 2 * i, f32::from(c.class_id));
            put_f32(out, 2 * i + 1, c.score);
        }
        Ok(out_meta)
    }

    /// `Float32` `[N, 6]` boxes to `Float32` `[M, 6]` kept boxes, best first
    /// (at most [`MAX_NMS_BOXES`] in, as many out as fit the output buffer).
    ///
    /// # Errors
    ///
    /// Wrong config, dtype or shape; [`nms`]'s errors;
    /// [`ProcessError::Empty`] when no box survives (a tensor has no zero dimension).
    pub fn nms_stage(
        input: &TensorRef<'_>,
        output: &mut [u8],
        config: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        let StageConfig::Nms(cfg) = *config else {
            return Err(ProcessError::ConfigMismatch);
        };
        expect_dtype(input, DType::Float32)?;
        let shape = input.meta().shape;
        let [n, fields] = *shape.dims() else {
            return Err(ProcessError::InvalidDimensions);
        };
        if fields as usize != BOX_FIELDS || n as usize > MAX_NMS_BOXES {
            return Err(ProcessError::InvalidDimensions);
        }
        let n = n as usize;
        let data = input.data();
        let mut boxes = [BBox::default(); MAX_NMS_BOXES];
        for (i, b) in boxes[..n].iter_mut().enumerate() {
            let f = |k| f32_at(data, i * BOX_FIELDS + k);
            *b = BBox {
                x_min: f(0),
                y_min: f(1),
                x_max: f(2),
                y_max: f(3),
                score: f(4),
                class_id: f(5) as u16,
            };
        }
        let capacity = (output.len() / (BOX_FIELDS * 4)).min(MAX_NMS_BOXES);
        let mut kept = [BBox::default(); MAX_NMS_BOXES];
        let m = nms(&boxes[..n], &cfg, &mut kept[..capacity])?;
        if m == 0 {
            return Err(ProcessError::Empty);
        }
        let out_meta = TensorMeta::new(DType::Float32, Shape::new(&[m as u32, BOX_FIELDS as u32])?);
        let out = output_for(output, out_meta)?;
        for (i, b) in kept[..m].iter().enumerate() {
            let fields = [
                b.x_min,
                b.y_min,
                b.x_max,
                b.y_max,
                b.score,
                f32::from(b.class_id),
            ];
            for (k, v) in fields.into_iter().enumerate() {
                put_f32(out, i * BOX_FIELDS + k, v);
            }
        }
        Ok(out_meta)
    }
}

#[cfg(test)]
mod tests {
    use super::stages::*;
    use super::*;
    use crate::arena::{Shape, TensorMeta, TensorRef};

    fn dims(w: usize, h: usize, c: usize) -> ImageDims {
        ImageDims {
            width: w,
            height: h,
            channels: c,
        }
    }

    fn f32s<const N: usize>(bytes: &[u8]) -> [f32; N] {
        let mut out = [0f32; N];
        for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        out
    }

    #[test]
    fn resize_nearest_upscales_by_replication() {
        let src = [1u8, 2, 3, 4];
        let mut dst = [0u8; 16];
        resize(
            &src,
            dims(2, 2, 1),
            &mut dst,
            dims(4, 4, 1),
            ResizeMethod::Nearest,
        )
        .unwrap();
        assert_eq!(dst, [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
    }

    #[test]
    fn resize_nearest_downscales_and_keeps_channels() {
        // 4x1 RGB, halve the width: pixels 1 and 3 (centres at 1.0 and 3.0).
        let src = [0u8, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32];
        let mut dst = [0u8; 6];
        resize(
            &src,
            dims(4, 1, 3),
            &mut dst,
            dims(2, 1, 3),
            ResizeMethod::Nearest,
        )
        .unwrap();
        assert_eq!(dst, [10, 11, 12, 30, 31, 32]);
    }

    #[test]
    fn resize_bilinear_corners_keeps_the_corners() {
        let d = |w, h| ImageDims {
            width: w,
            height: h,
            channels: 1,
        };
        let src = [10u8, 30, 50, 70];
        let mut up = [0u8; 16];
        resize(
            &src,
            d(2, 2),
            &mut up,
            d(4, 4),
            ResizeMethod::BilinearCorners,
        )
        .unwrap();
        assert_eq!([up[0], up[3], up[12], up[15]], [10, 30, 50, 70]);
        assert_eq!(up[5], 30); // (1/3, 1/3) of the way: exactly 30
        let big: [u8; 16] = core::array::from_fn(|i| (i * 16) as u8);
        let mut down = [0u8; 4];
        resize(
            &big,
            d(4, 4),
            &mut down,
            d(2, 2),
            ResizeMethod::BilinearCorners,
        )
        .unwrap();
        assert_eq!(down, [big[0], big[3], big[12], big[15]]);
        let mut one = [0u8; 1];
        resize(
            &src,
            d(2, 2),
            &mut one,
            d(1, 1),
            ResizeMethod::BilinearCorners,
        )
        .unwrap();
        assert_eq!(one, [10]);
    }

    #[test]
    fn resize_bilinear_interpolates_and_preserves_constants() {
        let src = [0u8, 100];
        let mut dst = [0u8; 4];
        resize(
            &src,
            dims(2, 1, 1),
            &mut dst,
            dims(4, 1, 1),
            ResizeMethod::Bilinear,
        )
        .unwrap();
        // Half-pixel centres: source x = -0.25 (clamped 0), 0.25, 0.75, 1.25 (clamped 1).
        assert_eq!(dst, [0, 25, 75, 100]);
        let flat = [77u8; 5 * 3 * 2];
        let mut out = [0u8; 2 * 7 * 2];
        resize(
            &flat,
            dims(5, 3, 2),
            &mut out,
            dims(7, 2, 2),
            ResizeMethod::Bilinear,
        )
        .unwrap();
        assert!(out.iter().all(|&v| v == 77));
        let mut down = [0u8; 1];
        resize(
            &[0, 100, 100, 200],
            dims(2, 2, 1),
            &mut down,
            dims(1, 1, 1),
            ResizeMethod::Bilinear,
        )
        .unwrap();
        assert_eq!(down, [100]);
    }

    #[test]
    fn resize_rejects_bad_geometry() {
        let mut dst = [0u8; 4];
        assert_eq!(
            resize(
                &[0; 4],
                dims(2, 2, 1),
                &mut dst,
                dims(0, 2, 1),
                ResizeMethod::Nearest
            ),
            Err(ProcessError::InvalidDimensions)
        );
        assert_eq!(
            resize(
                &[0; 3],
                dims(2, 2, 1),
                &mut dst,
                dims(2, 2, 1),
                ResizeMethod::Nearest
            ),
            Err(ProcessError::LengthMismatch {
                expected: 4,
                actual: 3
            })
        );
        assert_eq!(
            resize(
                &[0; 4],
                dims(2, 2, 1),
                &mut dst,
                dims(1, 1, 4),
                ResizeMethod::Nearest
            ),
            Err(ProcessError::InvalidDimensions)
        );
    }

    #[test]
    fn normalize_channels_per_channel_mean_and_std() {
        let mut out = [0f32; 4];
        normalize_channels(&[128, 0, 255, 64], &mut out, &[128.0, 0.0], &[64.0, 2.0]).unwrap();
        assert_eq!(out, [0.0, 0.0, 1.984375, 32.0]);
        assert_eq!(
            normalize_channels(&[1, 2], &mut out[..2], &[0.0], &[0.0]),
            Err(ProcessError::InvalidConfig)
        );
        assert!(matches!(
            normalize_channels(&[1, 2, 3], &mut out[..3], &[0.0; 2], &[1.0; 2]),
            Err(ProcessError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn quantize_round_trip_and_saturation() {
        let q = QuantParams {
            scale: 0.5,
            zero_point: -10,
        };
        let mut qs = [0i8; 5];
        quantize(&[0.0, 1.0, -1.25, 1000.0, -1000.0], &mut qs, q).unwrap();
        assert_eq!(qs, [-10, -8, -13, 127, -128]);
        let mut back = [0f32; 3];
        dequantize(&qs[..3], &mut back, q).unwrap();
        assert_eq!(back, [0.0, 1.0, -1.5]);
        let bad = QuantParams {
            scale: 0.0,
            zero_point: 0,
        };
        assert_eq!(
            quantize(&[1.0], &mut qs[..1], bad),
            Err(ProcessError::InvalidConfig)
        );
    }

    #[test]
    fn mel_scale_round_trips() {
        assert!((hz_to_mel(1000.0) - 1000.0).abs() < 0.5);
        for hz in [0.0f32, 20.0, 440.0, 4000.0, 8000.0] {
            assert!((mel_to_hz(hz_to_mel(hz)) - hz).abs() < 0.05 * (1.0 + hz / 100.0));
        }
    }

    #[test]
    fn mfcc_of_one_second_is_49_by_10() {
        let cfg = MfccConfig::default();
        assert_eq!(cfg.frames(16_000), 49);
        let mut audio = [0i16; 16_000];
        for (i, s) in audio.iter_mut().enumerate() {
            let phase = (i % 32) as f32 / 32.0;
            *s = (libm::sinf(2.0 * core::f32::consts::PI * phase) * 8000.0) as i16;
        }
        let mut out = [0f32; 490];
        assert_eq!(mfcc(&audio, &cfg, &mut out), Ok(49));
        assert!(out.iter().all(|v| v.is_finite()));
        // 500 Hz repeats every 32 samples, so every 320-sample hop sees the same frame.
        for f in 1..49 {
            for k in 0..10 {
                assert!((out[f * 10 + k] - out[k]).abs() < 1e-3 * (1.0 + out[k].abs()));
            }
        }
        let mut short = [0f32; 480];
        assert_eq!(
            mfcc(&audio, &cfg, &mut short),
            Err(ProcessError::OutputTooSmall {
                needed: 490,
                actual: 480
            })
        );
        assert_eq!(
            mfcc(&audio[..639], &cfg, &mut out),
            Err(ProcessError::Empty)
        );
    }

    #[test]
    fn mfcc_energy_peaks_in_the_band_of_the_tone_and_c0_tracks_loudness() {
        let cfg = MfccConfig::default();
        let tone = |amp: f32, hz: f32| {
            let mut f = [0i16; 640];
            for (i, s) in f.iter_mut().enumerate() {
                *s = (libm::sinf(2.0 * core::f32::consts::PI * hz * i as f32 / 16_000.0) * amp)
                    as i16;
            }
            f
        };
        let mut mel = [0f32; 40];
        mel_energies(&tone(8000.0, 1000.0), &cfg, &mut mel).unwrap();
        let (peak, _) = crate::dsp::argmax_f32(&mel).unwrap();
        // Band centres are equally spaced in mel from 20 Hz to 4 kHz.
        let low = hz_to_mel(20.0);
        let step = (hz_to_mel(4000.0) - low) / 41.0;
        let centre = mel_to_hz(low + step * (peak + 1) as f32);
        assert!(
            (centre - 1000.0).abs() < 80.0,
            "peak band centre {centre} Hz"
        );
        let mut loud = [0f32; 10];
        let mut quiet = [0f32; 10];
        mfcc(&tone(8000.0, 1000.0), &cfg, &mut loud).unwrap();
        mfcc(&tone(800.0, 1000.0), &cfg, &mut quiet).unwrap();
        // 20 dB quieter: every log-mel value drops by ln(100), so c0 by sqrt(40) * ln(100).
        let expected = libm::sqrtf(40.0) * libm::logf(100.0);
        assert!(
            ((loud[0] - quiet[0]) - expected).abs() < 0.5,
            "{}",
            loud[0] - quiet[0]
        );
    }

    #[test]
    fn mfcc_rejects_bad_configs() {
        let mut out = [0f32; 490];
        let audio = [0i16; 1000];
        for cfg in [
            MfccConfig {
                fft_len: 600,
                ..MfccConfig::default()
            },
            MfccConfig {
                fft_len: 2048,
                ..MfccConfig::default()
            },
            MfccConfig {
                coefficients: 41,
                ..MfccConfig::default()
            },
            MfccConfig {
                high_hz: 9000.0,
                ..MfccConfig::default()
            },
            MfccConfig {
                frame_step: 0,
                ..MfccConfig::default()
            },
        ] {
            assert_eq!(
                mfcc(&audio, &cfg, &mut out),
                Err(ProcessError::InvalidConfig)
            );
        }
    }

    #[test]
    fn softmax_int8_known_values() {
        let q = QuantParams {
            scale: 1.0,
            zero_point: 0,
        };
        let mut out = [0i8; 2];
        softmax_int8(&[5, 5], q, &mut out).unwrap();
        assert_eq!(out, [0, 0]); // 0.5 -> round(128) - 128
        softmax_int8(&[100, 0], q, &mut out).unwrap();
        assert_eq!(out, [127, -128]); // 1.0 saturates, ~0 is the bottom
        let mut three = [0i8; 3];
        softmax_int8(&[1, 2, 3], q, &mut three).unwrap();
        // 0.0900, 0.2447, 0.6652 -> 23, 63, 170 -> -105, -65, 42
        assert_eq!(three, [-105, -65, 42]);
        assert!((SOFTMAX_OUTPUT.dequantize(three[2]) - 0.665).abs() < 1.0 / 256.0);
    }

    #[test]
    fn argmax_and_top_k_order() {
        assert_eq!(argmax(&[1, 9, 3, 9]), Ok(1));
        assert_eq!(argmax(&[]), Err(ProcessError::Empty));
        let mut out = [Classification {
            class_id: 0,
            score: 0.0,
        }; 3];
        let n = top_k(&[0.1, 0.5, 0.3, 0.5, 0.9, f32::NAN], &mut out).unwrap();
        assert_eq!(n, 3);
        let ids: [u16; 3] = [out[0].class_id, out[1].class_id, out[2].class_id];
        assert_eq!(ids, [4, 1, 3]);
        assert_eq!(out[0].score, 0.9);
        let mut many = [Classification {
            class_id: 0,
            score: 0.0,
        }; 5];
        assert_eq!(top_k(&[2.0, 1.0], &mut many), Ok(2));
        assert_eq!(top_k(&[], &mut many), Err(ProcessError::Empty));
    }

    fn bbox(x: f32, y: f32, w: f32, h: f32, score: f32, class_id: u16) -> BBox {
        BBox {
            x_min: x,
            y_min: y,
            x_max: x + w,
            y_max: y + h,
            score,
            class_id,
        }
    }

    #[test]
    fn iou_known_values() {
        let a = bbox(0.0, 0.0, 2.0, 2.0, 1.0, 0);
        assert_eq!(iou(&a, &a), 1.0);
        assert_eq!(iou(&a, &bbox(1.0, 0.0, 2.0, 2.0, 1.0, 0)), 2.0 / 6.0);
        assert_eq!(iou(&a, &bbox(5.0, 5.0, 1.0, 1.0, 1.0, 0)), 0.0);
        assert_eq!(iou(&a, &bbox(0.5, 0.5, 1.0, 1.0, 1.0, 0)), 0.25);
        let empty = BBox::default();
        assert_eq!(iou(&empty, &empty), 0.0);
    }

    #[test]
    fn nms_suppresses_overlaps_and_low_scores() {
        let boxes = [
            bbox(0.0, 0.0, 10.0, 10.0, 0.8, 0),
            bbox(1.0, 1.0, 10.0, 10.0, 0.9, 0), // overlaps the first by 0.68
            bbox(20.0, 20.0, 5.0, 5.0, 0.7, 0),
            bbox(40.0, 40.0, 5.0, 5.0, 0.2, 0), // below the score threshold
            bbox(0.0, 0.0, 10.0, 10.0, 0.6, 1), // other class, same place
        ];
        let mut out = [BBox::default(); 8];
        let cfg = NmsConfig {
            iou_threshold: 0.5,
            score_threshold: 0.3,
            per_class: false,
        };
        let n = nms(&boxes, &cfg, &mut out).unwrap();
        assert_eq!(n, 2);
        assert_eq!((out[0].score, out[1].score), (0.9, 0.7));
        let per_class = NmsConfig {
            per_class: true,
            ..cfg
        };
        assert_eq!(nms(&boxes, &per_class, &mut out), Ok(3));
        assert_eq!(out[2].class_id, 1);
        let loose = NmsConfig {
            iou_threshold: 0.7,
            ..cfg
        };
        assert_eq!(nms(&boxes, &loose, &mut out), Ok(3));
        assert_eq!(nms(&boxes, &cfg, &mut out[..1]), Ok(1));
        let bad = NmsConfig {
            iou_threshold: 1.5,
            ..cfg
        };
        assert_eq!(
            nms(&boxes, &bad, &mut out),
            Err(ProcessError::InvalidConfig)
        );
    }

    #[test]
    fn stages_chain_resize_normalize_quantize() {
        let img = [0u8, 64, 128, 255];
        let input = TensorRef::wrap(
            TensorMeta::new(DType::UInt8, Shape::new(&[2, 2, 1]).unwrap()),
            &img,
        )
        .unwrap();
        let mut a = [0u8; 64];
        let cfg = StageConfig::Resize {
            width: 1,
            height: 1,
            method: ResizeMethod::Nearest,
        };
        let m = resize_stage(&input, &mut a, &cfg).unwrap();
        assert_eq!(m.shape.dims(), &[1, 1, 1]);
        assert_eq!(a[0], 255);
        let cfg = StageConfig::Normalize {
            mean: [127.5; 4],
            std: [127.5; 4],
            channels: 1,
        };
        let mut b = [0u8; 64];
        let m = normalize_stage(&input, &mut b, &cfg).unwrap();
        assert_eq!(m.dtype, DType::Float32);
        let v: [f32; 4] = f32s(&b[..16]);
        assert_eq!((v[0], v[3]), (-1.0, 1.0));
        let floats = TensorRef::wrap(m, &b[..16]).unwrap();
        let mut c = [0u8; 4];
        let q = StageConfig::Quantize(QuantParams {
            scale: 1.0 / 127.0,
            zero_point: 0,
        });
        quantize_stage(&floats, &mut c, &q).unwrap();
        assert_eq!(c.map(|x| x as i8), [-127, -63, 0, 127]);
        // Wrong config variant, wrong dtype, short output.
        assert_eq!(
            resize_stage(&input, &mut a, &q),
            Err(ProcessError::ConfigMismatch)
        );
        assert!(matches!(
            quantize_stage(&input, &mut c, &q),
            Err(ProcessError::WrongDtype { .. })
        ));
        assert!(matches!(
            normalize_stage(&input, &mut c, &cfg),
            Err(ProcessError::OutputTooSmall {
                needed: 16,
                actual: 4
            })
        ));
    }

    #[test]
    fn mfcc_and_top_k_stages() {
        let mut pcm = [0u8; 32_000];
        for (i, c) in pcm.chunks_exact_mut(2).enumerate() {
            let s = (libm::sinf(i as f32 * 0.3) * 4000.0) as i16;
            c.copy_from_slice(&s.to_le_bytes());
        }
        let input =
            TensorRef::wrap(TensorMeta::vector(DType::Int16, 16_000).unwrap(), &pcm).unwrap();
        let mut out = [0u8; 490 * 4];
        let m = mfcc_stage(&input, &mut out, &StageConfig::Mfcc(MfccConfig::default())).unwrap();
        assert_eq!(m.shape.dims(), &[49, 10]);
        // Same as the slice API.
        let mut samples = [0i16; 16_000];
        for (s, c) in samples.iter_mut().zip(pcm.chunks_exact(2)) {
            *s = i16::from_le_bytes([c[0], c[1]]);
        }
        let mut direct = [0f32; 490];
        mfcc(&samples, &MfccConfig::default(), &mut direct).unwrap();
        let staged: [f32; 490] = f32s(&out);
        assert_eq!(staged, direct);

        let mut scores = [0u8; 100];
        scores[70] = 90;
        scores[3] = 50;
        scores[99] = 50;
        let input =
            TensorRef::wrap(TensorMeta::vector(DType::Int8, 100).unwrap(), &scores).unwrap();
        let mut out = [0u8; 24];
        let cfg = StageConfig::TopK { k: 3, quant: None };
        let m = top_k_stage(&input, &mut out, &cfg).unwrap();
        assert_eq!(m.shape.dims(), &[3, 2]);
        let v: [f32; 6] = f32s(&out);
        assert_eq!(v, [70.0, 90.0, 3.0, 50.0, 99.0, 50.0]);
    }

    #[test]
    fn top_k_stage_refuses_more_classes_than_u16_ids_name() {
        let mut scores = std::vec![0u8; 65_537];
        scores[65_536] = 100;
        let input =
            TensorRef::wrap(TensorMeta::vector(DType::Int8, 65_537).unwrap(), &scores).unwrap();
        let mut out = [0u8; 8];
        let cfg = StageConfig::TopK { k: 1, quant: None };
        assert_eq!(
            top_k_stage(&input, &mut out, &cfg),
            Err(ProcessError::InvalidConfig)
        );
        // 65,536 scores still work, the last class included.
        let input = TensorRef::wrap(
            TensorMeta::vector(DType::Int8, 65_536).unwrap(),
            &scores[1..],
        )
        .unwrap();
        top_k_stage(&input, &mut out, &cfg).unwrap();
        let v: [f32; 2] = f32s(&out);
        assert_eq!(v, [65_535.0, 100.0]);
    }

    #[test]
    fn nms_stage_reads_and_writes_box_rows() {
        let rows: [[f32; 6]; 3] = [
            [0.0, 0.0, 10.0, 10.0, 0.5, 2.0],
            [0.0, 0.0, 10.0, 9.0, 0.9, 2.0],
            [50.0, 50.0, 60.0, 60.0, 0.4, 1.0],
        ];
        let mut bytes = [0u8; 72];
        for (i, v) in rows.iter().flatten().enumerate() {
            bytes[i * 4..i * 4 + 4].copy_from_slice(&v.to_le_bytes());
        }
        let input = TensorRef::wrap(
            TensorMeta::new(DType::Float32, Shape::new(&[3, 6]).unwrap()),
            &bytes,
        )
        .unwrap();
        let mut out = [0u8; 72];
        let cfg = StageConfig::Nms(NmsConfig {
            iou_threshold: 0.5,
            score_threshold: 0.1,
            per_class: true,
        });
        let m = nms_stage(&input, &mut out, &cfg).unwrap();
        assert_eq!(m.shape.dims(), &[2, 6]);
        let v: [f32; 12] = f32s(&out);
        assert_eq!(&v[..6], &rows[1]);
        assert_eq!(&v[6..], &rows[2]);
    }
}
