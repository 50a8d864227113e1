//! The int8 kernels: TFLite's reference integer kernels re-derived loop for
//! loop, so that every output byte equals theirs.
//!
//! Tensors are NHWC byte slices (int8 as two's-complement bytes); biases are
//! little-endian int32; requantisation multipliers come as
//! `(multiplier, shift)` pairs of little-endian int32 in `channels`. The
//! slices were sized from the validated shapes, and every access goes
//! through `get`, so a kernel can fail but not index out of bounds.
//! Accumulation wraps on overflow, where C++ would have undefined behaviour;
//! sums are regrouped where that is exact modulo 2^32 (each function says
//! how), so the bytes are the reference's.
//!
//! The 16x8 kernels (`conv16`, `depthwise_conv16`, `fully_connected16`:
//! int16 activations as little-endian pairs, int8 weights, int32 or int64
//! biases) are separate functions that leave the int8 loops as they were;
//! they follow the reference loops as written, accumulating in an `i64`
//! (exact: the int32 variant's wrapping sum is its low 32 bits).

use core::ops::Range;

use crate::model::Geometry;
use crate::quant::{
    clamp, multiply_by_quantized_multiplier, multiply_by_quantized_multiplier_i64,
    multiply_by_quantized_multiplier_once, scale_as_double, unpack_double, Multiplier, Requant,
};
use crate::Error;

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

#[inline]
fn byte(slice: &[u8], index: usize) -> Result<i32, Error> {
    slice.get(index).map(|&b| i32::from(b as i8)).ok_or(SHAPE)
}

#[inline]
fn word(slice: &[u8], index: usize) -> Result<i32, Error> {
    let b = slice.get(4 * index..4 * index + 4).ok_or(SHAPE)?;
    Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// One requantisation multiplier.
#[inline]
fn channel(channels: &[u8], index: usize) -> Result<(i32, i32), Error> {
    Ok((word(channels, 2 * index)?, word(channels, 2 * index + 1)?))
}

/// Quantisation constants shared by convolution and fully-connected layers.
pub(crate) struct Requantize<'a> {
    pub input_offset: i32,
    pub output_offset: i32,
    pub act_min: i32,
    pub act_max: i32,
    pub channels: &'a [u8],
}

impl<'a> Requantize<'a> {
    /// The requantisation of a layer from `input` to `output` quantisation
    /// with its fused `activation`, over per-channel multipliers
    /// `channels`.
    pub(crate) fn new(
        input: crate::model::Quantization,
        output: crate::model::Quantization,
        activation: crate::model::Activation,
        channels: &'a [u8],
    ) -> Self {
        let (act_min, act_max) = crate::quant::activation_range(activation, output);
        Requantize {
            input_offset: -input.zero_point,
            output_offset: output.zero_point,
            act_min,
            act_max,
            channels,
        }
    }

    #[inline(always)]
    fn finish(&self, acc: i32, multiplier: Multiplier) -> u8 {
        self.store(multiplier.apply(acc))
    }

    /// The output byte of a requantised accumulator.
    #[inline(always)]
    fn store(&self, scaled: i32) -> u8 {
        self.clamp(scaled.wrapping_add(self.output_offset))
    }

    /// The output byte of a requantised accumulator with the output
    /// offset added.
    #[inline(always)]
    fn clamp(&self, value: i32) -> u8 {
        clamp(value, self.act_min, self.act_max) as i8 as u8
    }
}

/// Input coordinate of a window tap, if inside the image.
#[inline]
fn tap(origin: isize, step: usize, k: usize, size: usize) -> Option<usize> {
    let p = origin + (step * k) as isize;
    (p >= 0 && (p as usize) < size).then_some(p as usize)
}

/// The convolutions take the DSP extension's packed paths: on a core with
/// it, and on the host with the `packed-kernels` feature (the same
/// arithmetic in portable Rust, so the host's property tests run them).
const PACKED: bool = cfg!(any(synaptic_dsp, feature = "packed-kernels"));

/// Output channels whose bias, multiplier and filter sum a convolution
/// decodes at once (on the stack, 1 KB).
const BLOCK: usize = 64;

/// `Σ x * w` over two int8 rows. Every product fits an i32 and the sum
/// wraps, so any order gives the reference's value.
#[inline(always)]
fn dot(x: &[u8], w: &[u8]) -> i32 {
    x.iter().zip(w).fold(0i32, |acc, (&a, &b)| {
        acc.wrapping_add(i32::from(a as i8) * i32::from(b as i8))
    })
}

/// `Σ x * w` of one int8 input row with four filter rows at once (every
/// product fits an i32 and the sums wrap, so any order gives the
/// reference's value): each input
/// value is loaded once for four accumulators.
// Not inlined: on Cortex-M its four accumulators and five pointers then
// stay in registers (inlined into a large caller they spill every step).
#[inline(never)]
fn dot4(x: &[u8], w: [&[u8]; 4]) -> [i32; 4] {
    let mut acc = [0i32; 4];
    for ((((&x, &w0), &w1), &w2), &w3) in x.iter().zip(w[0]).zip(w[1]).zip(w[2]).zip(w[3]) {
        let x = i32::from(x as i8);
        acc[0] = acc[0].wrapping_add(x * i32::from(w0 as i8));
        acc[1] = acc[1].wrapping_add(x * i32::from(w1 as i8));
        acc[2] = acc[2].wrapping_add(x * i32::from(w2 as i8));
        acc[3] = acc[3].wrapping_add(x * i32::from(w3 as i8));
    }
    acc
}

/// `Σ w` over an int8 row.
#[inline(always)]
fn sum(w: &[u8]) -> i32 {
    w.iter()
        .fold(0i32, |acc, &b| acc.wrapping_add(i32::from(b as i8)))
}

/// The taps `k` of a window axis that fall inside the image, as a range
/// (taps inside form one interval).
#[inline]
fn taps(origin: isize, step: usize, count: usize, size: usize) -> core::ops::Range<usize> {
    let mut first = 0;
    while first < count && tap(origin, step, first, size).is_none() {
        first += 1;
    }
    let mut end = first;
    while end < count && tap(origin, step, end, size).is_some() {
        end += 1;
    }
    first..end
}

/// Bias, multiplier and (for convolutions) whole-filter sum of the output
/// channels `first..first + n`.
struct Block {
    bias: [i32; BLOCK],
    multiplier: [Multiplier; BLOCK],
    filter_sum: [i32; BLOCK],
    /// `bias + input_offset * filter_sum`: what a whole window adds to
    /// `Σ w * x`.
    whole: [i32; BLOCK],
    /// The multipliers with the output offset, as [`Requant`]s, when
    /// every multiplier of the block has one (`fast`).
    requant: [Requant; BLOCK],
    fast: bool,
}

impl Block {
    fn new() -> Self {
        Self {
            bias: [0; BLOCK],
            multiplier: [Multiplier::default(); BLOCK],
            filter_sum: [0; BLOCK],
            whole: [0; BLOCK],
            requant: [Requant::default(); BLOCK],
            fast: false,
        }
    }

    /// Output byte of block channel `j` from `Σ w * x` of a whole window.
    #[inline(always)]
    fn finish(&self, q: &Requantize<'_>, j: usize, dot: i32) -> u8 {
        self.finish_whole(q, j, dot.wrapping_add(self.whole[j]))
    }

    /// Output byte of block channel `j` from its whole accumulator (bias
    /// included).
    #[inline(always)]
    fn finish_whole(&self, q: &Requantize<'_>, j: usize, acc: i32) -> u8 {
        if PACKED && self.fast {
            q.clamp(self.requant[j].apply(acc))
        } else {
            q.store(self.multiplier[j].apply(acc))
        }
    }

    /// The output bytes `out` of one lane of `acc` (per block channel,
    /// `Σ w * x` of a whole window plus [`whole`](Self::whole)).
    fn finish_lane<const L: usize>(
        &self,
        q: &Requantize<'_>,
        acc: &[[i32; L]],
        lane: usize,
        out: &mut [u8],
    ) {
        let lane = lane.min(L - 1);
        if !(PACKED && self.fast) {
            for ((o, a), &m) in out.iter_mut().zip(acc).zip(&self.multiplier) {
                *o = q.store(m.apply(a[lane]));
            }
        } else if (q.act_min, q.act_max) == (-128, 127) {
            crate::dsp::requantize_lane(acc, lane, &self.requant, out);
        } else {
            for ((o, a), r) in out.iter_mut().zip(acc).zip(&self.requant) {
                *o = q.clamp(r.apply(a[lane]));
            }
        }
    }

    /// The whole-filter sums of the block's channels (`k` bytes each),
    /// after [`load`](Self::load).
    fn sum_filters(
        &mut self,
        first: usize,
        n: usize,
        filter: &[u8],
        k: usize,
        q: &Requantize<'_>,
    ) -> Result<(), Error> {
        for j in 0..n {
            let f = filter
                .get((first + j) * k..(first + j + 1) * k)
                .ok_or(SHAPE)?;
            self.filter_sum[j] = sum(f);
            self.whole[j] =
                self.bias[j].wrapping_add(self.filter_sum[j].wrapping_mul(q.input_offset));
        }
        Ok(())
    }

    fn load(
        &mut self,
        first: usize,
        n: usize,
        bias: Option<&[u8]>,
        q: &Requantize<'_>,
    ) -> Result<(), Error> {
        for j in 0..n {
            self.bias[j] = match bias {
                Some(bias) => word(bias, first + j)?,
                None => 0,
            };
            let (m, shift) = channel(q.channels, first + j)?;
            self.multiplier[j] = Multiplier::new(m, shift);
        }
        // The portable kernels keep the two-step requantisation: smaller
        // code for the cores without the DSP extension.
        self.fast = PACKED;
        for (r, &m) in self
            .requant
            .iter_mut()
            .zip(&self.multiplier[..n])
            .filter(|_| PACKED)
        {
            match Requant::new(m, q.output_offset) {
                Some(fast) => *r = fast,
                None => self.fast = false,
            }
        }
        Ok(())
    }
}

/// The output rows of batch `b` among `rows` (a convolution's rows counted
/// over every batch, `b * out_h + oy`): a sliced run computes some rows
/// of the output at a time.
fn rows_of(b: usize, g: &Geometry, rows: &Range<usize>) -> Range<usize> {
    let first = b * g.out_h;
    let lo = rows.start.saturating_sub(first).min(g.out_h);
    let hi = rows.end.saturating_sub(first).min(g.out_h);
    lo..hi.max(lo)
}

/// `reference_integer_ops::ConvPerChannel`.
///
/// The reference accumulates `Σ w * (x + input_offset)` over the taps
/// inside the image; this computes `Σ w * x + input_offset * Σ w`, equal
/// modulo 2^32 (where both wrap), with `Σ w` of the whole filter computed
/// once per output channel for windows that lie wholly inside the image.
/// On a core with the DSP extension, two neighbouring windows inside the
/// image are computed together, two channels at a time (`dsp::dot`).
pub(crate) fn conv(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    conv_with::<PACKED>(g, input, filter, bias, q, output, rows)
}

/// [`conv`], with (`PACKED`) or without the paired windows of the DSP
/// extension (both are built on the host, whose tests compare them).
pub(crate) fn conv_with<const PACKED: bool>(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let per_channel = g.filter_h * g.filter_w * g.in_c;
    // The zero point fills the taps outside the image: an int8 one.
    let zero_point = -i64::from(q.input_offset);
    if PACKED && per_channel <= WINDOW && (-128..=127).contains(&zero_point) {
        return conv_windows(g, input, filter, bias, q, output, rows);
    }
    let mut block = Block::new();
    let mut first = 0;
    while first < g.out_c {
        let n = BLOCK.min(g.out_c - first);
        block.load(first, n, bias, q)?;
        block.sum_filters(first, n, filter, per_channel, q)?;
        let layer = ConvBlock {
            g,
            input,
            filter,
            q,
            block: &block,
            first,
            n,
        };
        for b in 0..g.batches {
            for oy in rows_of(b, g, &rows) {
                let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
                let ys = taps(origin_y, g.dilation_h, g.filter_h, g.in_h);
                let mut ox = 0;
                while ox < g.out_w {
                    if PACKED && ox + 1 < g.out_w && layer.pair(b, oy, ox, ys.clone(), output)? {
                        ox += 2;
                    } else {
                        layer.pixel(b, oy, ox, ys.clone(), output)?;
                        ox += 1;
                    }
                }
            }
        }
        first += n;
    }
    Ok(())
}

/// Most bytes of one window (`filter_h * filter_w * in_c`) that
/// [`conv_windows`] copies out (two windows on the stack, 2 KB: a 3x3
/// filter over 64 channels fits, 576 bytes).
const WINDOW: usize = 1024;

/// Split words [`conv_windows`] holds at a time (512 bytes on the stack):
/// a pass over `2 * PASS / L` bytes of `L` windows.
const PASS: usize = 128;

/// [`conv`] on the DSP extension for filters of at most [`WINDOW`] bytes:
/// each window is one contiguous row of `filter_h * filter_w * in_c`
/// bytes, like its filter (the input pixel itself for a pointwise window
/// inside the image, else copied out, taps outside the image filled with
/// the input's zero point, whose term `x + input_offset` is 0 as the
/// reference's skipped taps are), so every output is one dot product over
/// the whole filter, several windows at a time: their words split into
/// int16 pairs once (`dsp::interleave`), each filter word split once for
/// all (`dsp::dot_windows`). Four windows where they fit the copies (at
/// most `WINDOW / 2` bytes each), else two.
fn conv_windows(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let k = g.filter_h * g.filter_w * g.in_c;
    if 2 * k <= WINDOW {
        conv_windows_of::<4>(g, input, filter, bias, q, output, rows)
    } else {
        conv_windows_of::<2>(g, input, filter, bias, q, output, rows)
    }
}

/// [`conv_windows`], `L` windows at a time (2 or 4), the output pixels
/// taken in order across row ends. Where fewer than `L` are left, the
/// last is repeated and its copies not stored.
#[inline(never)]
fn conv_windows_of<const L: usize>(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let k = g.filter_h * g.filter_w * g.in_c;
    let zero = (-q.input_offset) as i8 as u8;
    let mut copies = [0u8; 2 * WINDOW];
    let mut split = [0u32; PASS];
    let mut acc = [[0i32; L]; BLOCK];
    let mut block = Block::new();
    let pass = 2 * PASS / L;
    let mut first = 0;
    while first < g.out_c {
        let n = BLOCK.min(g.out_c - first);
        block.load(first, n, bias, q)?;
        block.sum_filters(first, n, filter, k, q)?;
        let filters = filter.get(first * k..(first + n) * k).ok_or(SHAPE)?;
        for b in 0..g.batches {
            // The batch's output pixels in the rows asked for, `L` at a
            // time across row ends.
            let rows = rows_of(b, g, &rows);
            let pixels = rows.start * g.out_w..rows.end * g.out_w;
            let mut p = pixels.start;
            while p < pixels.end {
                let count = L.min(pixels.end - p);
                let mut windows: [&[u8]; L] = [&[]; L];
                let mut copy = copies.chunks_exact_mut(2 * WINDOW / L);
                for (i, x) in windows.iter_mut().enumerate() {
                    let copy = copy.next().ok_or(SHAPE)?.get_mut(..k).ok_or(SHAPE)?;
                    let at = p + i.min(count - 1);
                    *x = window(g, input, zero, b, at / g.out_w, at % g.out_w, copy)?;
                }
                let acc = &mut acc[..n];
                for (a, &w) in acc.iter_mut().zip(&block.whole) {
                    *a = [w; L];
                }
                // The windows' words split once per pass, then every
                // filter of the block over them.
                let words = k / 4 * 4;
                let mut start = 0;
                while start < words {
                    let end = (start + pass).min(words);
                    let split = &mut split[..L * (end - start) / 4 * 2];
                    crate::dsp::interleave(windows.map(|x| &x[start..end]), split);
                    for (a, f) in acc.iter_mut().zip(filters.chunks_exact(k)) {
                        let w = f.get(start..end).ok_or(SHAPE)?;
                        *a = crate::dsp::dot_windows(split, w, *a);
                    }
                    start = end;
                }
                for t in words..k {
                    for (a, f) in acc.iter_mut().zip(filters.chunks_exact(k)) {
                        let w = byte(f, t)?;
                        for (a, x) in a.iter_mut().zip(windows) {
                            *a = a.wrapping_add(byte(x, t)? * w);
                        }
                    }
                }
                for lane in 0..count {
                    let at = (b * g.out_h * g.out_w + p + lane) * g.out_c + first;
                    let out = output.get_mut(at..at + n).ok_or(SHAPE)?;
                    block.finish_lane(q, acc, lane, out);
                }
                p += count;
            }
        }
        first += n;
    }
    Ok(())
}

/// The window of output pixel `(b, oy, ox)` as one row of `copy.len()`
/// bytes: the input pixel itself for a pointwise window inside the image,
/// else copied into `copy`, taps outside the image `zero`.
fn window<'x>(
    g: &Geometry,
    input: &'x [u8],
    zero: u8,
    b: usize,
    oy: usize,
    ox: usize,
    copy: &'x mut [u8],
) -> Result<&'x [u8], Error> {
    let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
    let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
    let pixel = |iy: usize, ix: usize| ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
    if g.filter_h == 1 && g.filter_w == 1 {
        if let (Some(iy), Some(ix)) = (tap(origin_y, 0, 0, g.in_h), tap(origin_x, 0, 0, g.in_w)) {
            let at = pixel(iy, ix);
            return input.get(at..at + g.in_c).ok_or(SHAPE);
        }
    }
    let row = g.filter_w * g.in_c;
    let xs = taps(origin_x, g.dilation_w, g.filter_w, g.in_w);
    // The taps inside the image, as bytes of a window row.
    let (lo, hi) = (xs.start * g.in_c, xs.end * g.in_c);
    for (fy, dst) in copy.chunks_exact_mut(row).enumerate() {
        let Some(iy) = tap(origin_y, g.dilation_h, fy, g.in_h) else {
            crate::dsp::fill_bytes(dst, zero);
            continue;
        };
        if g.dilation_w == 1 && xs.len() == g.filter_w {
            // The window's row lies in one stretch of the input row.
            let at = pixel(iy, origin_x as usize);
            crate::dsp::copy_bytes(dst, input.get(at..at + row).ok_or(SHAPE)?);
            continue;
        }
        if g.dilation_w == 1 {
            // The taps inside lie in one stretch of the input row.
            crate::dsp::fill_bytes(dst.get_mut(..lo).ok_or(SHAPE)?, zero);
            if hi > lo {
                let at = pixel(iy, (origin_x + xs.start as isize) as usize);
                let src = input.get(at..at + hi - lo).ok_or(SHAPE)?;
                crate::dsp::copy_bytes(dst.get_mut(lo..hi).ok_or(SHAPE)?, src);
            }
            crate::dsp::fill_bytes(dst.get_mut(hi..).ok_or(SHAPE)?, zero);
            continue;
        }
        for (fx, dst) in dst.chunks_exact_mut(g.in_c).enumerate() {
            match tap(origin_x, g.dilation_w, fx, g.in_w) {
                Some(ix) => {
                    let at = pixel(iy, ix);
                    crate::dsp::copy_bytes(dst, input.get(at..at + g.in_c).ok_or(SHAPE)?);
                }
                None => crate::dsp::fill_bytes(dst, zero),
            }
        }
    }
    Ok(copy)
}

/// One block of a convolution's output channels, `first..first + n`.
struct ConvBlock<'a> {
    g: &'a Geometry,
    input: &'a [u8],
    filter: &'a [u8],
    q: &'a Requantize<'a>,
    block: &'a Block,
    first: usize,
    n: usize,
}

impl ConvBlock<'_> {
    /// The input row `iy` of the window starting at column `ix`:
    /// `filter_w * in_c` bytes (contiguous at dilation 1).
    fn window_row(&self, b: usize, iy: usize, ix: usize) -> Result<&[u8], Error> {
        let g = self.g;
        let base = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
        self.input
            .get(base..base + g.filter_w * g.in_c)
            .ok_or(SHAPE)
    }

    /// Row `fy` of output channel `oc`'s filter.
    fn filter_row(&self, oc: usize, fy: usize) -> Result<&[u8], Error> {
        let g = self.g;
        let row = g.filter_w * g.in_c;
        let at = oc * g.filter_h * row + fy * row;
        self.filter.get(at..at + row).ok_or(SHAPE)
    }

    /// The outputs of the windows at `ox` and `ox + 1`, if both lie wholly
    /// inside the image at dilation 1 along x (else `false`, nothing
    /// written): every filter row is one contiguous dot product, two
    /// windows by two channels at a time.
    fn pair(
        &self,
        b: usize,
        oy: usize,
        ox: usize,
        ys: Range<usize>,
        output: &mut [u8],
    ) -> Result<bool, Error> {
        let g = self.g;
        let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
        let next_x = origin_x + g.stride_w as isize;
        let whole = |origin| taps(origin, 1, g.filter_w, g.in_w).len() == g.filter_w;
        if g.dilation_w != 1 || ys.len() != g.filter_h || !whole(origin_x) || !whole(next_x) {
            return Ok(false);
        }
        let (ix0, ix1) = (origin_x as usize, next_x as usize);
        let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
        let at0 = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c + self.first;
        let at1 = at0 + g.out_c;
        let mut j = 0;
        while j < self.n {
            // An odd last channel is computed twice, once thrown away.
            let (oc0, oc1) = (self.first + j, self.first + (j + 1).min(self.n - 1));
            let mut acc = [0i32; 4];
            for fy in ys.clone() {
                let iy = (origin_y + (g.dilation_h * fy) as isize) as usize;
                let (x0, x1) = (self.window_row(b, iy, ix0)?, self.window_row(b, iy, ix1)?);
                let (w0, w1) = (self.filter_row(oc0, fy)?, self.filter_row(oc1, fy)?);
                acc = crate::dsp::dot2x2(x0, x1, w0, w1, acc);
            }
            for (c, k) in (j..self.n.min(j + 2)).enumerate() {
                *output.get_mut(at0 + k).ok_or(SHAPE)? = self.block.finish(self.q, k, acc[c]);
                *output.get_mut(at1 + k).ok_or(SHAPE)? = self.block.finish(self.q, k, acc[2 + c]);
            }
            j += 2;
        }
        Ok(true)
    }

    /// The outputs of the window at `ox`, any geometry.
    fn pixel(
        &self,
        b: usize,
        oy: usize,
        ox: usize,
        ys: Range<usize>,
        output: &mut [u8],
    ) -> Result<(), Error> {
        let (g, q, block, first, n) = (self.g, self.q, self.block, self.first, self.n);
        let per_channel = g.filter_h * g.filter_w * g.in_c;
        let row = g.filter_w * g.in_c;
        let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
        let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
        let xs = taps(origin_x, g.dilation_w, g.filter_w, g.in_w);
        let whole = ys.len() == g.filter_h && xs.len() == g.filter_w;
        let at = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c + first;
        let out = output.get_mut(at..at + n).ok_or(SHAPE)?;
        // Pointwise windows inside the image: one input pixel for four
        // channels at a time; the rest below.
        let mut done = 0;
        if g.filter_h == 1 && g.filter_w == 1 && whole {
            let iy = tap(origin_y, 0, 0, g.in_h).ok_or(SHAPE)?;
            let ix = tap(origin_x, 0, 0, g.in_w).ok_or(SHAPE)?;
            let base = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
            let pixel = self.input.get(base..base + g.in_c).ok_or(SHAPE)?;
            let filters = self
                .filter
                .get(first * per_channel..(first + n) * per_channel)
                .ok_or(SHAPE)?;
            let c = g.in_c;
            for (k, (o, f)) in out
                .chunks_exact_mut(4)
                .zip(filters.chunks_exact(4 * c))
                .enumerate()
            {
                let w = [&f[..c], &f[c..2 * c], &f[2 * c..3 * c], &f[3 * c..]];
                let d = dot4(pixel, w);
                for (i, (o, d)) in o.iter_mut().zip(d).enumerate() {
                    *o = block.finish(q, 4 * k + i, d);
                }
            }
            done = n / 4 * 4;
        }
        for (j, o) in out.iter_mut().enumerate().skip(done) {
            let oc = first + j;
            let f = self
                .filter
                .get(oc * per_channel..(oc + 1) * per_channel)
                .ok_or(SHAPE)?;
            let mut acc: i32 = 0;
            let mut filter_sum: i32 = 0;
            for fy in ys.clone() {
                let iy = (origin_y + (g.dilation_h * fy) as isize) as usize;
                for fx in xs.clone() {
                    let ix = (origin_x + (g.dilation_w * fx) as isize) as usize;
                    let base = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
                    let pixel = self.input.get(base..base + g.in_c).ok_or(SHAPE)?;
                    let fb = fy * row + fx * g.in_c;
                    let weights = f.get(fb..fb + g.in_c).ok_or(SHAPE)?;
                    acc = acc.wrapping_add(dot(pixel, weights));
                    if !whole {
                        filter_sum = filter_sum.wrapping_add(sum(weights));
                    }
                }
            }
            if whole {
                filter_sum = block.filter_sum[j];
            }
            let acc = acc
                .wrapping_add(filter_sum.wrapping_mul(q.input_offset))
                .wrapping_add(block.bias[j]);
            *o = q.finish(acc, block.multiplier[j]);
        }
        Ok(())
    }
}

/// `reference_integer_ops::DepthwiseConvPerChannel`.
///
/// Channels are processed in blocks, tap by tap, so that the inner loop
/// runs over contiguous channels of one input pixel and one filter row; each
/// channel's accumulator sees the same terms as the reference's. On a core
/// with the DSP extension, windows inside the image at depth multiplier 1
/// take four channels per multiply-accumulate step (`depthwise_window`), as
/// `Σ w * x + input_offset * Σ w` (equal modulo 2^32).
pub(crate) fn depthwise_conv(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    depthwise_conv_with::<PACKED>(g, input, filter, bias, q, output, rows)
}

/// Most filter bytes [`depthwise_as_conv`] transposes (on the stack).
const TRANSPOSED: usize = 1024;

/// A depthwise convolution of one input channel (a network's first layer,
/// depth multiplier = output channels) is the convolution whose filter
/// is its own transposed, `[tap][channel]` to `[channel][tap]`: every
/// output is `Σ w * (x + input_offset)` over the same taps either way, so
/// it runs as [`conv_windows`] does.
#[inline(never)]
fn depthwise_as_conv(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let taps = g.filter_h * g.filter_w;
    let mut transposed = [0u8; TRANSPOSED];
    for c in 0..g.out_c {
        for t in 0..taps {
            *transposed.get_mut(c * taps + t).ok_or(SHAPE)? =
                *filter.get(t * g.out_c + c).ok_or(SHAPE)?;
        }
    }
    let conv = Geometry {
        depth_multiplier: 1,
        ..*g
    };
    conv_with::<true>(
        &conv,
        input,
        &transposed[..taps * g.out_c],
        bias,
        q,
        output,
        rows,
    )
}

/// Most taps of a window whose rows [`depthwise_window`] holds at once.
const WINDOW_TAPS: usize = 25;

/// Where each tap of a depthwise window inside the image reads, relative
/// to the window's top left input pixel and to the filter's first tap:
/// `(input offset, filter offset)` in bytes, increasing.
fn tap_offsets(g: &Geometry, offsets: &mut [(u32, u32); WINDOW_TAPS]) -> Result<usize, Error> {
    let taps = g.filter_h * g.filter_w;
    for (t, o) in offsets.iter_mut().enumerate().take(taps) {
        let (fy, fx) = (t / g.filter_w, t % g.filter_w);
        let x = (g.dilation_h * fy * g.in_w + g.dilation_w * fx) * g.in_c;
        let w = t * g.out_c;
        *o = (
            u32::try_from(x).map_err(|_| SHAPE)?,
            u32::try_from(w).map_err(|_| SHAPE)?,
        );
    }
    Ok(taps)
}

/// The outputs of channels `first..first + out.len()` of one depthwise
/// window at depth multiplier 1, `Σ w * x` plus `block.whole`: `x` and
/// `w` start at the window's first tap and channel `first`, and tap `(o,
/// p)` of `offsets` reads `x[o..]` and `w[p..]` (offsets increasing). Four
/// channels at a time over every tap (`dsp::mac_taps`, the accumulators in
/// registers), into lane 0 of `lanes`, then one requantisation pass
/// ([`Block::finish_lane`]).
#[inline(never)]
fn depthwise_window(
    (x, w, offsets): (&[u8], &[u8], &[(u32, u32)]),
    block: &Block,
    q: &Requantize<'_>,
    lanes: &mut [[i32; 2]; BLOCK],
    out: &mut [u8],
) -> Result<(), Error> {
    let n = out.len();
    let lanes = lanes.get_mut(..n).ok_or(SHAPE)?;
    let whole = block.whole.get(..n).ok_or(SHAPE)?;
    let quads = n / 4 * 4;
    for (c, (l, init)) in lanes
        .chunks_exact_mut(4)
        .zip(whole.chunks_exact(4))
        .enumerate()
    {
        let (at, init) = (4 * c.., [init[0], init[1], init[2], init[3]]);
        let acc = crate::dsp::mac_taps(x.get(at.clone()), w.get(at), offsets, init).ok_or(SHAPE)?;
        for (l, a) in l.iter_mut().zip(acc) {
            l[0] = a;
        }
    }
    for (j, l) in lanes.iter_mut().enumerate().skip(quads) {
        l[0] = offsets.iter().try_fold(whole[j], |a, &(ox, ow)| {
            let (ox, ow) = (ox as usize + j, ow as usize + j);
            Ok::<i32, Error>(a.wrapping_add(byte(x, ox)? * byte(w, ow)?))
        })?;
    }
    block.finish_lane(q, lanes, 0, out);
    Ok(())
}

/// [`depthwise_conv`], with (`PACKED`) or without the DSP extension's
/// four-channel steps (both are built on the host, whose tests compare
/// them).
pub(crate) fn depthwise_conv_with<const PACKED: bool>(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let dm = g.depth_multiplier;
    if dm == 0 {
        return Err(SHAPE);
    }
    if PACKED && g.in_c == 1 && g.filter_h * g.filter_w * g.out_c <= TRANSPOSED {
        return depthwise_as_conv(g, input, filter, bias, q, output, rows);
    }
    depthwise_blocks::<PACKED>(g, input, filter, bias, q, output, rows)
}

/// [`depthwise_conv_with`] by blocks of channels. Not inlined: its frame
/// (the block's records and accumulators) is not on the stack while
/// [`depthwise_as_conv`] runs.
#[inline(never)]
fn depthwise_blocks<const PACKED: bool>(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let dm = g.depth_multiplier;
    // The zero point fills the taps of a window outside the image: an int8
    // one.
    let zero_point = -i64::from(q.input_offset);
    let packed = PACKED
        && dm == 1
        && g.filter_h * g.filter_w <= WINDOW_TAPS
        && (-128..=127).contains(&zero_point);
    let mut offsets = [(0, 0); WINDOW_TAPS];
    let tap_count = if packed {
        tap_offsets(g, &mut offsets)?
    } else {
        0
    };
    // A window reaching outside the image, copied tap by tap (`n` bytes
    // each, the zero point outside), and where its taps are in the copy.
    let mut copy = [0u8; WINDOW_TAPS * BLOCK];
    let mut copy_offsets = [(0, 0); WINDOW_TAPS];
    let mut lanes = [[0i32; 2]; BLOCK];
    let mut block = Block::new();
    let mut acc = [0i32; BLOCK];
    let mut first = 0;
    while first < g.out_c {
        // Whole groups of `dm` channels (one input channel each) where a
        // group fits a block, else part of one group.
        let n = if dm <= BLOCK {
            (BLOCK / dm * dm).min(g.out_c - first)
        } else {
            BLOCK.min(dm - first % dm).min(g.out_c - first)
        };
        block.load(first, n, bias, q)?;
        if packed {
            for (t, (c, &(_, w))) in copy_offsets.iter_mut().zip(&offsets).enumerate() {
                *c = ((t * n) as u32, w);
            }
            // Σ w over the taps of each channel, for whole windows.
            for j in 0..n {
                let taps = g.filter_h * g.filter_w;
                let sum = (0..taps).try_fold(0i32, |s, t| {
                    Ok::<i32, Error>(s.wrapping_add(byte(filter, t * g.out_c + first + j)?))
                })?;
                block.whole[j] = block.bias[j].wrapping_add(sum.wrapping_mul(q.input_offset));
            }
        }
        for b in 0..g.batches {
            for oy in rows_of(b, g, &rows) {
                let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
                let ys = taps(origin_y, g.dilation_h, g.filter_h, g.in_h);
                for ox in 0..g.out_w {
                    let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
                    let xs = taps(origin_x, g.dilation_w, g.filter_w, g.in_w);
                    let at = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c + first;
                    if packed {
                        let out = output.get_mut(at..at + n).ok_or(SHAPE)?;
                        let w = filter.get(first..).ok_or(SHAPE)?;
                        if ys.len() == g.filter_h && xs.len() == g.filter_w {
                            let (iy, ix) = (origin_y as usize, origin_x as usize);
                            let base = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + first;
                            let x = input.get(base..).ok_or(SHAPE)?;
                            let window = (x, w, &offsets[..tap_count]);
                            depthwise_window(window, &block, q, &mut lanes, out)?;
                        } else {
                            let zero = zero_point as i8 as u8;
                            let copy = copy.get_mut(..tap_count * n).ok_or(SHAPE)?;
                            for (t, tap_copy) in copy.chunks_exact_mut(n).enumerate() {
                                let (fy, fx) = (t / g.filter_w, t % g.filter_w);
                                let iy = tap(origin_y, g.dilation_h, fy, g.in_h);
                                match (iy, tap(origin_x, g.dilation_w, fx, g.in_w)) {
                                    (Some(iy), Some(ix)) => {
                                        let base =
                                            ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + first;
                                        let pixel = input.get(base..base + n).ok_or(SHAPE)?;
                                        crate::dsp::copy_bytes(tap_copy, pixel);
                                    }
                                    _ => crate::dsp::fill_bytes(tap_copy, zero),
                                }
                            }
                            let taps = &copy_offsets[..tap_count];
                            depthwise_window((copy, w, taps), &block, q, &mut lanes, out)?;
                        }
                        continue;
                    }
                    let acc = &mut acc[..n];
                    acc.copy_from_slice(&block.bias[..n]);
                    for fy in ys.clone() {
                        let iy = (origin_y + (g.dilation_h * fy) as isize) as usize;
                        for fx in xs.clone() {
                            let ix = (origin_x + (g.dilation_w * fx) as isize) as usize;
                            let base = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
                            let pixel = input.get(base..base + g.in_c).ok_or(SHAPE)?;
                            let fb = (fy * g.filter_w + fx) * g.out_c + first;
                            let weights = filter.get(fb..fb + n).ok_or(SHAPE)?;
                            if dm == 1 {
                                let x = pixel.get(first..first + n).ok_or(SHAPE)?;
                                for ((a, &x), &w) in acc.iter_mut().zip(x).zip(weights) {
                                    let x = i32::from(x as i8) + q.input_offset;
                                    *a = a.wrapping_add(i32::from(w as i8).wrapping_mul(x));
                                }
                            } else {
                                // One input value per group of `group`
                                // channels (blocks never straddle a group).
                                let group = dm.min(n);
                                let x0 = first / dm;
                                let x = pixel.get(x0..x0 + n / group).ok_or(SHAPE)?;
                                for (i, &x) in x.iter().enumerate() {
                                    let x = i32::from(x as i8) + q.input_offset;
                                    let lo = i * group;
                                    let accs = acc.get_mut(lo..lo + group).ok_or(SHAPE)?;
                                    let w = weights.get(lo..lo + group).ok_or(SHAPE)?;
                                    for (a, &w) in accs.iter_mut().zip(w) {
                                        *a = a.wrapping_add(i32::from(w as i8).wrapping_mul(x));
                                    }
                                }
                            }
                        }
                    }
                    let out = output.get_mut(at..at + n).ok_or(SHAPE)?;
                    for (j, (o, &a)) in out.iter_mut().zip(acc.iter()).enumerate() {
                        *o = block.finish_whole(q, j, a);
                    }
                }
            }
        }
        first += n;
    }
    Ok(())
}

/// `reference_integer_ops::FullyConnected` (per-tensor or per-channel).
///
/// On a core with the DSP extension (`PACKED`), `Σ (w + filter_offset) *
/// (x + input_offset)` is computed as `Σ w * (x + input_offset) +
/// filter_offset * Σ (x + input_offset)`, equal modulo 2^32: the input
/// row plus its offset is split into int16 pairs once per pass
/// (`dsp::split_offset`), and every unit's weights run over it two units
/// at a time (`dsp::dot_split_rows`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn fully_connected(
    batches: usize,
    depth: usize,
    units: usize,
    input: &[u8],
    filter: &[u8],
    filter_offset: i32,
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
) -> Result<(), Error> {
    if PACKED {
        let layer = (batches, depth, units);
        return fully_connected_packed(layer, input, filter, filter_offset, bias, q, output);
    }
    let per_channel = q.channels.len() > 8;
    for b in 0..batches {
        let row = input.get(b * depth..(b + 1) * depth).ok_or(SHAPE)?;
        for u in 0..units {
            let weights = filter.get(u * depth..(u + 1) * depth).ok_or(SHAPE)?;
            let mut acc: i32 = 0;
            for (&x, &w) in row.iter().zip(weights) {
                let x = i32::from(x as i8) + q.input_offset;
                let w = i32::from(w as i8) + filter_offset;
                acc = acc.wrapping_add(w.wrapping_mul(x));
            }
            let acc = acc.wrapping_add(bias_of(bias, u)?);
            *output.get_mut(b * units + u).ok_or(SHAPE)? =
                fully_connected_output(acc, u, per_channel, q)?;
        }
    }
    Ok(())
}

/// Bias `u`, or 0 without one.
#[inline(always)]
fn bias_of(bias: Option<&[u8]>, u: usize) -> Result<i32, Error> {
    bias.map_or(Ok(0), |bias| word(bias, u))
}

/// Unit `u`'s output byte from its accumulated `Σ (w + filter_offset) * (x
/// + input_offset)` plus bias: LiteRT's fully-connected requantisation,
/// which rounds once (see `quant`).
#[inline(always)]
fn fully_connected_output(
    acc: i32,
    u: usize,
    per_channel: bool,
    q: &Requantize<'_>,
) -> Result<u8, Error> {
    let (m, shift) = channel(q.channels, if per_channel { u } else { 0 })?;
    Ok(q.store(multiply_by_quantized_multiplier_once(acc, m, shift)))
}

/// [`fully_connected`] on the DSP extension; `layer` is `(batches, depth,
/// units)`.
pub(crate) fn fully_connected_packed(
    layer: (usize, usize, usize),
    input: &[u8],
    filter: &[u8],
    filter_offset: i32,
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
) -> Result<(), Error> {
    let (batches, depth, units) = layer;
    let per_channel = q.channels.len() > 8;
    let words = depth / 4 * 4;
    let mut split = [0u32; PASS / 2];
    let mut acc = [[0i32; 1]; BLOCK];
    // Outputs in int8's whole range (offset an int8 zero point): the
    // DSP extension's requantisation loop (`SSAT`).
    let full = (q.act_min, q.act_max) == (-128, 127) && (-128..=127).contains(&q.output_offset);
    for b in 0..batches {
        let row = input.get(b * depth..(b + 1) * depth).ok_or(SHAPE)?;
        // `filter_offset * Σ (x + input_offset)`: 0 without a filter offset
        // (per-channel weights have none).
        let offset_term = if filter_offset == 0 {
            0
        } else {
            let row_sum = row.iter().fold(0i32, |s, &x| {
                s.wrapping_add(i32::from(x as i8) + q.input_offset)
            });
            filter_offset.wrapping_mul(row_sum)
        };
        let mut first = 0;
        while first < units {
            let n = BLOCK.min(units - first);
            let acc = &mut acc[..n];
            for (j, a) in acc.iter_mut().enumerate() {
                *a = [bias_of(bias, first + j)?.wrapping_add(offset_term)];
            }
            let rows = filter.get(first * depth..).ok_or(SHAPE)?;
            let mut start = 0;
            while start < words {
                let end = (start + PASS).min(words);
                let split = &mut split[..(end - start) / 2];
                crate::dsp::split_offset(&row[start..end], q.input_offset, split);
                let rows = rows.get(start..).ok_or(SHAPE)?;
                crate::dsp::dot_split_rows(split, rows, depth, acc.as_flattened_mut())
                    .ok_or(SHAPE)?;
                start = end;
            }
            for (j, [a]) in acc.iter_mut().enumerate() {
                let u = first + j;
                for t in words..depth {
                    let x = byte(row, t)? + q.input_offset;
                    *a = a.wrapping_add(byte(filter, u * depth + t)?.wrapping_mul(x));
                }
            }
            let out = output
                .get_mut(b * units + first..b * units + first + n)
                .ok_or(SHAPE)?;
            // The block's channel records (one for all, per tensor).
            let records = if per_channel {
                q.channels.get(8 * first..8 * (first + n))
            } else {
                q.channels.get(..8)
            }
            .ok_or(SHAPE)?;
            let once = records.chunks_exact(8).all(|c| {
                let shift = i32::from_le_bytes([c[4], c[5], c[6], c[7]]);
                (shift.wrapping_neg().wrapping_sub(1) as u32) < 23
            });
            if once && full {
                let acc = acc.as_flattened();
                crate::dsp::requantize_once(acc, records, per_channel, q.output_offset, out);
            } else {
                for (j, (o, [a])) in out.iter_mut().zip(acc.iter()).enumerate() {
                    *o = fully_connected_output(*a, first + j, per_channel, q)?;
                }
            }
            first += n;
        }
    }
    Ok(())
}

/// An int16 element (little-endian) of a 16x8 tensor.
#[inline]
fn half(slice: &[u8], index: usize) -> Result<i32, Error> {
    let b = slice.get(2 * index..2 * index + 2).ok_or(SHAPE)?;
    Ok(i32::from(i16::from_le_bytes([b[0], b[1]])))
}

/// An int64 bias (little-endian).
#[inline]
fn long(slice: &[u8], index: usize) -> Result<i64, Error> {
    let b = slice.get(8 * index..8 * index + 8).ok_or(SHAPE)?;
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(b);
    Ok(i64::from_le_bytes(bytes))
}

/// Stores an int16 output element.
#[inline]
fn put_half(slice: &mut [u8], index: usize, value: i32) -> Result<(), Error> {
    let b = slice.get_mut(2 * index..2 * index + 2).ok_or(SHAPE)?;
    b.copy_from_slice(&(value as i16).to_le_bytes());
    Ok(())
}

/// `Σ x * w` of an int16 row (little-endian pairs) and an int8 row: every
/// product fits an `i32`; the `i64` sum is exact.
#[inline]
fn dot16(x: &[u8], w: &[u8]) -> i64 {
    x.chunks_exact(2).zip(w).fold(0i64, |acc, (x, &w)| {
        acc + i64::from(i32::from(i16::from_le_bytes([x[0], x[1]])) * i32::from(w as i8))
    })
}

/// Quantisation of a 16x8 layer (int16 activations and outputs with zero
/// point 0, int8 weights): the output clamp, the per-channel records, and
/// the accumulator its bias type selects.
pub(crate) struct Requantize16<'a> {
    pub act_min: i32,
    pub act_max: i32,
    /// Convolutions: `(multiplier, shift)` per channel; fully-connected
    /// layers: a packed double scale (`quant::pack_double`).
    pub channels: &'a [u8],
    /// An int64 bias and accumulator; else int32 (wrapping, as C++'s).
    pub wide: bool,
}

impl<'a> Requantize16<'a> {
    /// The requantisation of a 16x8 layer to `output` with its fused
    /// `activation` (`CalculateActivationRangeQuantized` over int16).
    pub(crate) fn new(
        output: crate::model::Quantization,
        activation: crate::model::Activation,
        channels: &'a [u8],
        wide: bool,
    ) -> Self {
        let (act_min, act_max) = crate::quant::activation_range_in(
            activation,
            output,
            i32::from(i16::MIN),
            i32::from(i16::MAX),
        );
        Requantize16 {
            act_min,
            act_max,
            channels,
            wide,
        }
    }

    /// `Σ w * x` of channel `c` plus its bias, in the reference's
    /// accumulator type (an int32 accumulation is the low 32 bits of the
    /// exact sum, sign-extended).
    #[inline]
    fn accumulator(&self, sum: i64, bias: Option<&[u8]>, c: usize) -> Result<i64, Error> {
        Ok(match (bias, self.wide) {
            (Some(b), true) => sum.wrapping_add(long(b, c)?),
            (Some(b), false) => i64::from((sum as i32).wrapping_add(word(b, c)?)),
            (None, true) => sum,
            (None, false) => i64::from(sum as i32),
        })
    }

    /// A convolution's output of channel `c`: the int64 or int32
    /// `MultiplyByQuantizedMultiplier` (their roundings: see `quant`),
    /// then the clamp (no output offset: zero point 0).
    #[inline]
    fn conv_output(&self, sum: i64, bias: Option<&[u8]>, c: usize) -> Result<i32, Error> {
        let acc = self.accumulator(sum, bias, c)?;
        let (m, shift) = channel(self.channels, c)?;
        let scaled = if self.wide {
            multiply_by_quantized_multiplier_i64(acc, m, shift)
        } else {
            multiply_by_quantized_multiplier(acc as i32, m, shift)
        };
        Ok(clamp(scaled, self.act_min, self.act_max))
    }
}

/// `reference_integer_ops::ConvPerChannel` for 16x8 (its `AccumScalar`
/// template, int64 or int32 by the bias type): `Σ w * x` over the taps
/// inside the image (no input offset: zero point 0), plus the bias,
/// `MultiplyByQuantizedMultiplier` of that width, clamp. Rows as
/// [`conv`].
pub(crate) fn conv16(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize16<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let per_channel = g.filter_h * g.filter_w * g.in_c;
    let row = g.filter_w * g.in_c;
    for b in 0..g.batches {
        for oy in rows_of(b, g, &rows) {
            let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
            let ys = taps(origin_y, g.dilation_h, g.filter_h, g.in_h);
            for ox in 0..g.out_w {
                let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
                let xs = taps(origin_x, g.dilation_w, g.filter_w, g.in_w);
                let at = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c;
                for oc in 0..g.out_c {
                    let f = filter
                        .get(oc * per_channel..(oc + 1) * per_channel)
                        .ok_or(SHAPE)?;
                    let mut sum: i64 = 0;
                    for fy in ys.clone() {
                        let iy = (origin_y + (g.dilation_h * fy) as isize) as usize;
                        for fx in xs.clone() {
                            let ix = (origin_x + (g.dilation_w * fx) as isize) as usize;
                            let base = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
                            let pixel = input.get(2 * base..2 * (base + g.in_c)).ok_or(SHAPE)?;
                            let fb = fy * row + fx * g.in_c;
                            sum += dot16(pixel, f.get(fb..fb + g.in_c).ok_or(SHAPE)?);
                        }
                    }
                    put_half(output, at + oc, q.conv_output(sum, bias, oc)?)?;
                }
            }
        }
    }
    Ok(())
}

/// `reference_integer_ops::DepthwiseConvPerChannel` for 16x8 (int64
/// accumulator and bias, the only bias LiteRT's 16x8 depthwise takes):
/// `Σ w * x` over the taps inside the image, plus the bias, the int64
/// `MultiplyByQuantizedMultiplier`, clamp. Rows as [`conv`].
pub(crate) fn depthwise_conv16(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize16<'_>,
    output: &mut [u8],
    rows: Range<usize>,
) -> Result<(), Error> {
    let dm = g.depth_multiplier.max(1);
    for b in 0..g.batches {
        for oy in rows_of(b, g, &rows) {
            let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
            let ys = taps(origin_y, g.dilation_h, g.filter_h, g.in_h);
            for ox in 0..g.out_w {
                let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
                let xs = taps(origin_x, g.dilation_w, g.filter_w, g.in_w);
                let at = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c;
                for oc in 0..g.out_c {
                    let ic = oc / dm;
                    let mut sum: i64 = 0;
                    for fy in ys.clone() {
                        let iy = (origin_y + (g.dilation_h * fy) as isize) as usize;
                        for fx in xs.clone() {
                            let ix = (origin_x + (g.dilation_w * fx) as isize) as usize;
                            let x = half(input, ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ic)?;
                            let w = byte(filter, (fy * g.filter_w + fx) * g.out_c + oc)?;
                            sum += i64::from(w * x);
                        }
                    }
                    put_half(output, at + oc, q.conv_output(sum, bias, oc)?)?;
                }
            }
        }
    }
    Ok(())
}

/// `reference_integer_ops::FullyConnected` / `FullyConnectedPerChannel`
/// for 16x8, the overloads with float scales that LiteRT's reference
/// FULLY_CONNECTED calls: `Σ (w + filter_offset) * x` in the bias's type
/// (int64 or int32), plus the bias, then `round(double(acc) * scale)`
/// (`quant::scale_as_double`: the double product rounded to nearest,
/// halves away from zero), clamp.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fully_connected16(
    batches: usize,
    depth: usize,
    units: usize,
    input: &[u8],
    filter: &[u8],
    filter_offset: i32,
    bias: Option<&[u8]>,
    q: &Requantize16<'_>,
    output: &mut [u8],
) -> Result<(), Error> {
    let per_channel = q.channels.len() > 8;
    for b in 0..batches {
        let row = input.get(2 * b * depth..2 * (b + 1) * depth).ok_or(SHAPE)?;
        for u in 0..units {
            let weights = filter.get(u * depth..(u + 1) * depth).ok_or(SHAPE)?;
            let sum = row.chunks_exact(2).zip(weights).fold(0i64, |acc, (x, &w)| {
                let x = i32::from(i16::from_le_bytes([x[0], x[1]]));
                acc + i64::from((i32::from(w as i8) + filter_offset) * x)
            });
            let acc = q.accumulator(sum, bias, u)?;
            let scale = unpack_double(channel(q.channels, if per_channel { u } else { 0 })?);
            let v = clamp(scale_as_double(acc, scale), q.act_min, q.act_max);
            put_half(output, b * units + u, v)?;
        }
    }
    Ok(())
}

/// `reference_integer_ops::AveragePool` (`average`) or `MaxPool`.
pub(crate) fn pool(
    g: &Geometry,
    average: bool,
    act_min: i32,
    act_max: i32,
    input: &[u8],
    output: &mut [u8],
) -> Result<(), Error> {
    pool_with::<PACKED>(g, average, act_min, act_max, input, output)
}

/// [`pool`], with (`PACKED`) or without the DSP extension's averages.
fn pool_with<const PACKED: bool>(
    g: &Geometry,
    average: bool,
    act_min: i32,
    act_max: i32,
    input: &[u8],
    output: &mut [u8],
) -> Result<(), Error> {
    if PACKED && average && g.filter_h * g.filter_w <= 256 {
        return average_pool_packed(g, act_min, act_max, input, output);
    }
    let mut out = 0;
    for b in 0..g.batches {
        for oy in 0..g.out_h {
            let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
            // The window clipped to the image, as the reference computes it.
            let y_start = (-origin_y).max(0) as usize;
            let y_end = (g.in_h as isize - origin_y).clamp(0, g.filter_h as isize) as usize;
            for ox in 0..g.out_w {
                let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
                let x_start = (-origin_x).max(0) as usize;
                let x_end = (g.in_w as isize - origin_x).clamp(0, g.filter_w as isize) as usize;
                for c in 0..g.out_c {
                    let mut acc: i32 = if average { 0 } else { i32::from(i8::MIN) };
                    let mut count: i32 = 0;
                    for fy in y_start..y_end {
                        let iy = (origin_y + fy as isize) as usize;
                        for fx in x_start..x_end {
                            let ix = (origin_x + fx as isize) as usize;
                            let x = byte(input, ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + c)?;
                            if average {
                                acc = acc.wrapping_add(x);
                                count += 1;
                            } else {
                                acc = acc.max(x);
                            }
                        }
                    }
                    let y = output.get_mut(out).ok_or(SHAPE)?;
                    if !average {
                        *y = clamp(acc, act_min, act_max) as i8 as u8;
                    } else if count == 0 {
                        return Err(Error::Internal("average pool over an empty window"));
                    } else {
                        *y = self::average(acc, count, act_min, act_max);
                    }
                    out += 1;
                }
            }
        }
    }
    Ok(())
}

/// The reference's average: `sum / count` rounded to the closest integer,
/// halves away from zero, clamped.
#[inline(always)]
fn average(sum: i32, count: i32, act_min: i32, act_max: i32) -> u8 {
    let rounded = if sum > 0 {
        (sum + count / 2) / count
    } else {
        (sum - count / 2) / count
    };
    clamp(rounded, act_min, act_max) as i8 as u8
}

/// [`pool`]'s average on the DSP extension, for windows of at most 256
/// taps: four channels at a time, summed as int16 halves (`SXTAB16`, two
/// instructions a tap; exact, as `|Σ| <= 128 * 256`), the rest one by one.
#[inline(never)]
fn average_pool_packed(
    g: &Geometry,
    act_min: i32,
    act_max: i32,
    input: &[u8],
    output: &mut [u8],
) -> Result<(), Error> {
    let mut out = output.chunks_exact_mut(g.out_c.max(1));
    for b in 0..g.batches {
        for oy in 0..g.out_h {
            let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
            let ys = taps(origin_y, 1, g.filter_h, g.in_h);
            for ox in 0..g.out_w {
                let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
                let xs = taps(origin_x, 1, g.filter_w, g.in_w);
                let count = (ys.len() * xs.len()) as i32;
                if count == 0 {
                    return Err(Error::Internal("average pool over an empty window"));
                }
                let out = out.next().ok_or(SHAPE)?;
                // The window's pixels, as byte offsets of their channel 0.
                let pixels = || {
                    let xs = xs.clone();
                    ys.clone().flat_map(move |fy| {
                        let iy = (origin_y + fy as isize) as usize;
                        xs.clone().map(move |fx| {
                            let ix = (origin_x + fx as isize) as usize;
                            ((b * g.in_h + iy) * g.in_w + ix) * g.in_c
                        })
                    })
                };
                let quads = g.out_c / 4 * 4;
                for (c, o) in out[..quads].chunks_exact_mut(4).enumerate() {
                    let x = input.get(4 * c..).ok_or(SHAPE)?;
                    let (even, odd) = crate::dsp::sum4(x, pixels()).ok_or(SHAPE)?;
                    let sums = [
                        even as i16,
                        odd as i16,
                        (even >> 16) as i16,
                        (odd >> 16) as i16,
                    ];
                    for (o, s) in o.iter_mut().zip(sums) {
                        *o = average(i32::from(s), count, act_min, act_max);
                    }
                }
                for (c, o) in out.iter_mut().enumerate().skip(quads) {
                    let sum =
                        pixels().try_fold(0i32, |s, p| Ok::<_, Error>(s + byte(input, p + c)?))?;
                    *o = average(sum, count, act_min, act_max);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec::Vec;

    /// A xorshift32 stream from `seed`: `next(n)` is in `0..n`.
    fn random(mut s: u32) -> impl FnMut(u32) -> usize {
        move |n| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % n) as usize
        }
    }

    /// The reference kernels' loops as they read (and as this crate ran
    /// them before the regrouping): `Σ w * (x + input_offset)` over the
    /// taps inside the image, then bias, then requantisation.
    fn reference(
        g: &Geometry,
        depthwise: bool,
        x: &[u8],
        f: &[u8],
        bias: &[u8],
        q: &Requantize<'_>,
    ) -> Vec<u8> {
        let mut out = std::vec![0u8; g.batches * g.out_h * g.out_w * g.out_c];
        for b in 0..g.batches {
            for oy in 0..g.out_h {
                for ox in 0..g.out_w {
                    for oc in 0..g.out_c {
                        let mut acc = 0i32;
                        for fy in 0..g.filter_h {
                            let Some(iy) = tap(
                                (oy * g.stride_h) as isize - g.pad_h as isize,
                                g.dilation_h,
                                fy,
                                g.in_h,
                            ) else {
                                continue;
                            };
                            for fx in 0..g.filter_w {
                                let Some(ix) = tap(
                                    (ox * g.stride_w) as isize - g.pad_w as isize,
                                    g.dilation_w,
                                    fx,
                                    g.in_w,
                                ) else {
                                    continue;
                                };
                                let pixel = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
                                let mac = |xi: usize, wi: usize| {
                                    i32::from(f[wi] as i8)
                                        .wrapping_mul(i32::from(x[xi] as i8) + q.input_offset)
                                };
                                if depthwise {
                                    let ic = oc / g.depth_multiplier;
                                    acc = acc.wrapping_add(mac(
                                        pixel + ic,
                                        (fy * g.filter_w + fx) * g.out_c + oc,
                                    ));
                                } else {
                                    for ic in 0..g.in_c {
                                        let wi = ((oc * g.filter_h + fy) * g.filter_w + fx)
                                            * g.in_c
                                            + ic;
                                        acc = acc.wrapping_add(mac(pixel + ic, wi));
                                    }
                                }
                            }
                        }
                        acc = acc.wrapping_add(word(bias, oc).unwrap());
                        let at = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c + oc;
                        let (m, shift) = channel(q.channels, oc).unwrap();
                        out[at] = q.finish(acc, Multiplier::new(m, shift));
                    }
                }
            }
        }
        out
    }

    /// The DSP extension's fully-connected path against the reference
    /// formula on random layers: depths of every remainder, unit counts
    /// across blocks, batches, per-tensor weights with a zero point and
    /// per-channel ones, narrow activation ranges, scales of every size.
    #[test]
    fn packed_fully_connected_equals_the_reference_formula() {
        let mut next = random(0x1b87_3593);
        for case in 0..1500 {
            let (batches, depth, units) = (1 + next(3), 1 + next(300), 1 + next(150));
            let per_channel = case % 2 == 0;
            let x: Vec<u8> = (0..batches * depth).map(|_| next(256) as u8).collect();
            let w: Vec<u8> = (0..units * depth).map(|_| next(256) as u8).collect();
            let bias: Vec<u8> = (0..units)
                .flat_map(|_| ((next(200_001) as i32) - 100_000).to_le_bytes())
                .collect();
            let channels: Vec<u8> = (0..if per_channel { units } else { 1 })
                .flat_map(|_| {
                    let exponent = -32 + next(if case % 7 == 0 { 40 } else { 16 }) as i32;
                    let (m, sh) =
                        crate::quant::quantize_ratio(1 + next(1 << 20) as u64, exponent, 3);
                    [m.to_le_bytes(), sh.to_le_bytes()].concat()
                })
                .collect();
            let output_offset = next(256) as i32 - 128;
            let (act_min, act_max) = if case % 3 == 0 {
                (
                    output_offset,
                    (output_offset + 1 + next(90) as i32).min(127),
                )
            } else {
                (-128, 127)
            };
            let q = Requantize {
                input_offset: next(256) as i32 - 128,
                output_offset,
                act_min,
                act_max,
                channels: &channels,
            };
            let filter_offset = if per_channel {
                0
            } else {
                next(256) as i32 - 128
            };
            let mut want = std::vec![0u8; batches * units];
            for b in 0..batches {
                for u in 0..units {
                    let mut acc = word(&bias, u).unwrap();
                    for t in 0..depth {
                        let xv = i32::from(x[b * depth + t] as i8) + q.input_offset;
                        let wv = i32::from(w[u * depth + t] as i8) + filter_offset;
                        acc = acc.wrapping_add(xv * wv);
                    }
                    let (m, shift) = channel(&channels, if per_channel { u } else { 0 }).unwrap();
                    let v = multiply_by_quantized_multiplier_once(acc, m, shift) + output_offset;
                    want[b * units + u] = clamp(v, act_min, act_max) as i8 as u8;
                }
            }
            let mut got = std::vec![0u8; want.len()];
            let layer = (batches, depth, units);
            fully_connected_packed(layer, &x, &w, filter_offset, Some(&bias), &q, &mut got)
                .unwrap();
            assert_eq!(got, want, "case {case}: {layer:?}");
        }
    }

    /// Average pooling, with and without the DSP extension's sums, against
    /// the reference loop on random geometries, windows up to 256 taps.
    #[test]
    fn packed_average_pool_equals_the_reference_loop() {
        let mut next = random(0x4f1b_bcdd);
        for case in 0..3000 {
            let big = case % 10 == 0;
            let mut g = Geometry {
                batches: 1 + next(2),
                in_h: 1 + next(if big { 20 } else { 7 }),
                in_w: 1 + next(if big { 20 } else { 7 }),
                in_c: 1 + next(70),
                filter_h: 1 + next(if big { 16 } else { 4 }),
                filter_w: 1 + next(if big { 16 } else { 4 }),
                stride_h: 1 + next(3),
                stride_w: 1 + next(3),
                pad_h: next(2),
                pad_w: next(2),
                depth_multiplier: 1,
                ..Geometry::default()
            };
            g.out_c = g.in_c;
            g.out_h = 1 + (g.in_h + 2 * g.pad_h).saturating_sub(g.filter_h) / g.stride_h;
            g.out_w = 1 + (g.in_w + 2 * g.pad_w).saturating_sub(g.filter_w) / g.stride_w;
            // Windows wholly in the padding have no taps: not a geometry
            // the parser lets through.
            if g.pad_h >= g.filter_h || g.pad_w >= g.filter_w {
                continue;
            }
            // Extreme inputs now and then: sums at the int16 halves' limits.
            let fill = next(3);
            let x: Vec<u8> = (0..g.batches * g.in_h * g.in_w * g.in_c)
                .map(|_| [next(256) as u8, 0x80, 0x7f][if case % 5 == 0 { fill } else { 0 }])
                .collect();
            let (act_min, act_max) = if case % 3 == 0 {
                (-20, 90)
            } else {
                (-128, 127)
            };
            let mut want = std::vec![0u8; g.batches * g.out_h * g.out_w * g.out_c];
            let mut got = want.clone();
            pool_with::<false>(&g, true, act_min, act_max, &x, &mut want).unwrap();
            pool_with::<true>(&g, true, act_min, act_max, &x, &mut got).unwrap();
            assert_eq!(got, want, "case {case}: {g:?}");
        }
    }

    /// Random geometries (padding, strides, dilations, odd channel counts,
    /// depth multipliers above the block size): the kernels equal the
    /// reference loops byte for byte.
    #[test]
    fn kernels_equal_the_reference_loops() {
        let mut next = random(0x2545_f491);
        for case in 0..4000 {
            let depthwise = case % 2 == 1;
            let dm = if depthwise {
                [1, 1, 3, 8, 70][next(5)]
            } else {
                1
            };
            let in_c = if depthwise && dm > 1 {
                1 + next(3)
            } else {
                1 + next(70)
            };
            let mut g = Geometry {
                batches: 1 + next(2),
                in_h: 1 + next(7),
                in_w: 1 + next(7),
                in_c,
                out_c: if depthwise { in_c * dm } else { 1 + next(70) },
                filter_h: 1 + next(3),
                filter_w: 1 + next(3),
                stride_h: 1 + next(2),
                stride_w: 1 + next(2),
                dilation_h: 1 + next(2),
                dilation_w: 1 + next(2),
                pad_h: next(2),
                pad_w: next(2),
                depth_multiplier: dm,
                ..Geometry::default()
            };
            g.out_h = 1 + next(g.in_h as u32 + 1);
            g.out_w = 1 + next(g.in_w as u32 + 1);
            let bytes = |n: usize, next: &mut dyn FnMut(u32) -> usize| -> Vec<u8> {
                (0..n).map(|_| next(256) as u8).collect()
            };
            let x = bytes(g.batches * g.in_h * g.in_w * g.in_c, &mut next);
            let f_len = if depthwise {
                g.filter_h * g.filter_w * g.out_c
            } else {
                g.out_c * g.filter_h * g.filter_w * g.in_c
            };
            let f = bytes(f_len, &mut next);
            let bias: Vec<u8> = (0..g.out_c)
                .flat_map(|_| ((next(20_001) as i32) - 10_000).to_le_bytes())
                .collect();
            // Scales mostly below 1/2 (a right shift), in one case of
            // eight up to 2^10 (no right shift, or a left one).
            let large = case % 8 == 0;
            let channels: Vec<u8> = (0..g.out_c)
                .flat_map(|_| {
                    let exponent = if large {
                        -30 + next(21) as i32
                    } else {
                        -20 - next(12) as i32
                    };
                    let (m, sh) =
                        crate::quant::quantize_ratio(1 + next(1 << 20) as u64, exponent, 3);
                    [m.to_le_bytes(), sh.to_le_bytes()].concat()
                })
                .collect();
            let output_offset = next(256) as i32 - 128;
            // Every third case a narrower activation range (as ReLU and
            // ReLU6 give).
            let (act_min, act_max) = if case % 3 == 0 {
                (
                    output_offset,
                    (output_offset + 1 + next(80) as i32).min(127),
                )
            } else {
                (-128, 127)
            };
            let q = Requantize {
                input_offset: next(256) as i32 - 128,
                output_offset,
                act_min,
                act_max,
                channels: &channels,
            };
            let want = reference(&g, depthwise, &x, &f, &bias, &q);
            // Both builds' kernels: the portable ones and the DSP
            // extension's (whose instructions are portable Rust here).
            for packed in [false, true] {
                let run = |rows: Range<usize>, out: &mut [u8]| {
                    if depthwise && packed {
                        depthwise_conv_with::<true>(&g, &x, &f, Some(&bias), &q, out, rows)
                            .unwrap();
                    } else if depthwise {
                        depthwise_conv_with::<false>(&g, &x, &f, Some(&bias), &q, out, rows)
                            .unwrap();
                    } else if packed {
                        conv_with::<true>(&g, &x, &f, Some(&bias), &q, out, rows).unwrap();
                    } else {
                        conv_with::<false>(&g, &x, &f, Some(&bias), &q, out, rows).unwrap();
                    }
                };
                let all = g.batches * g.out_h;
                let mut got = std::vec![0u8; want.len()];
                run(0..all, &mut got);
                assert_eq!(got, want, "case {case} (packed {packed}): {g:?}");
                // The same rows in slices (as a sliced run computes them),
                // slice length 1 to 3, across batch boundaries.
                let mut sliced = std::vec![0u8; want.len()];
                let step = 1 + case % 3;
                for start in (0..all).step_by(step) {
                    run(start..(start + step).min(all), &mut sliced);
                }
                assert_eq!(
                    sliced, want,
                    "case {case} (packed {packed}) in slices of {step}: {g:?}"
                );
            }
        }
    }
}
