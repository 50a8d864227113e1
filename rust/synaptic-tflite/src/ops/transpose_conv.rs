//! TRANSPOSE_CONV on int8 activations with int8 weights (per-channel or
//! per-tensor scales) and an optional int32 bias.
//!
//! Repeats `transpose_conv.cc` (kReference) and
//! `reference_integer_ops::TransposeConv`:
//!
//! * the output's shape is the constant int32 `output_shape` input;
//! * the padding is `ComputePaddingHeightWidth` of the *output* image
//!   (dilation 1): `out = ComputeOutSize(padding, H, filter, stride)`, then
//!   `max(0, (out - 1) * stride + filter - H) / 2` (the `offset` it also
//!   computes is not read by the reference kernel);
//! * input pixel `(iy, ix)` scatters `(x + input_offset) * w[oc, fy, fx, ic]`
//!   onto output pixel `(iy * stride_h - pad_h + fy, ix * stride_w - pad_w +
//!   fx)` when it lies inside the output, into an int32 scratch buffer;
//! * each accumulator plus `bias[oc]` is requantised by
//!   `MultiplyByQuantizedMultiplier` (the int32 form: gemmlowp's
//!   `SaturatingRoundingDoublingHighMul` then `RoundingDivideByPOT`, two
//!   roundings, as the convolutions), offset by the output zero point and
//!   clamped to the fused activation's range
//!   (`CalculateActivationRangeQuantized`).
//!
//! The per-channel multipliers are `PopulateConvolutionQuantizationParams`'s
//! `QuantizeMultiplier(double(input_scale) * double(filter_scale[c]) /
//! double(output_scale))`, computed in integers by `quant::product_ratio`.
//!
//! This interpreter has no scratch buffer: each output element gathers the
//! input taps that the reference scatters onto it. Every term is the
//! reference's and the int32 sum wraps (where C++ would overflow), so the
//! accumulator is the reference's whatever the order.

use super::Prepared;
use super::{operands, Context, Op};
use crate::model::{ElementType, Model};
use crate::quant::{clamp, multiply_by_quantized_multiplier, product_ratio};
use crate::schema::options;
use crate::Error;

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// Most output channels with per-channel scales (their multipliers are kept
/// in the prepared operator; per-tensor scales have one for every channel).
pub(crate) const MAX_CHANNELS: usize = 32;

/// A prepared TRANSPOSE_CONV. Sizes are `u16` to keep the operator small
/// (larger dimensions are refused).
#[derive(Clone, Copy, Debug)]
pub(crate) struct TransposeConv {
    batches: u16,
    in_h: u16,
    in_w: u16,
    in_c: u16,
    out_h: u16,
    out_w: u16,
    out_c: u16,
    filter_h: u16,
    filter_w: u16,
    stride_h: u16,
    stride_w: u16,
    pad_h: u16,
    pad_w: u16,
    /// Whether a bias is the third kernel input.
    bias: bool,
    /// 1 (per-tensor) or `out_c` (per-channel).
    channels: u8,
    input_offset: i32,
    output_offset: i32,
    act_min: i32,
    act_max: i32,
    multipliers: [i32; MAX_CHANNELS],
    shifts: [i8; MAX_CHANNELS],
}

/// `ComputePaddingWithOffset` after `ComputeOutSize` (dilation 1) for an
/// image of `image` pixels, as `ComputePaddingHeightWidth` calls them with
/// the transposed convolution's output size: the leading padding.
fn padding(same: bool, image: usize, filter: usize, stride: usize) -> Option<usize> {
    let (image, filter, stride) = (image as i64, filter as i64, stride as i64);
    if stride == 0 {
        return None;
    }
    // C++ integer division truncates toward zero, as Rust's does.
    let out = if same {
        (image + stride - 1) / stride
    } else {
        (image + stride - filter) / stride
    };
    let total = ((out - 1) * stride + filter - image).max(0);
    usize::try_from(total / 2).ok()
}

fn small(c: &Context<'_, '_>, v: usize) -> Result<u16, Error> {
    u16::try_from(v).map_err(|_| c.unsupported("a dimension above 65535"))
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(3, 4, 1)?;
    let (_, shape) = c.input(0)?;
    let (filter_t, filter) = c.input(1)?;
    let (input_t, input) = c.input(2)?;
    let bias_t = if c.input_count() == 4 {
        c.model.operand(c.index, c.inputs, 3)?
    } else {
        None
    };
    let (_, output) = c.output(0)?;
    match input.element_type() {
        ElementType::Int8 => {}
        ElementType::Int16 => return Err(c.unsupported("int16 activations")),
        _ => return Err(c.unsupported("activations other than int8")),
    }
    let in_q = c.quantization(&input, ElementType::Int8)?;
    let out_q = c.quantization(&output, ElementType::Int8)?;

    let opts = c
        .options(options::TRANSPOSE_CONV)?
        .ok_or(c.invalid("missing options"))?;
    use options::transpose_conv as o;
    let same = Model::padding(c.index, opts.i8(o::PADDING, 0)?)? == crate::model::Padding::Same;
    let stride_w = Model::positive(c.index, opts.i32(o::STRIDE_W, 0)?, "stride")?;
    let stride_h = Model::positive(c.index, opts.i32(o::STRIDE_H, 0)?, "stride")?;
    let activation = Model::activation(c.index, opts.i8(o::FUSED_ACTIVATION, 0)?)?;

    // The output shape: a constant int32 vector of four, the output's.
    if shape.element_type() != ElementType::Int32 || shape.shape().dims().len() != 1 {
        return Err(c.invalid("output shape not an int32 vector"));
    }
    if shape.data.is_none() {
        return Err(c.unsupported("a computed output shape"));
    }
    let mut sizes = [0i32; 4];
    if c.constant_ints(&shape, &mut sizes)? != 4 {
        return Err(c.invalid("output shape not of four dimensions"));
    }
    let (is, fs, os) = (
        input.shape().dims(),
        filter.shape().dims(),
        output.shape().dims(),
    );
    if is.len() != 4 || fs.len() != 4 || os.len() != 4 {
        return Err(c.invalid("tensors not of rank 4"));
    }
    if sizes
        .iter()
        .zip(os)
        .any(|(&s, &d)| usize::try_from(s).ok() != Some(d))
    {
        return Err(c.invalid("output tensor not of the output shape"));
    }
    let [batches, in_h, in_w, in_c] = [is[0], is[1], is[2], is[3]];
    let [out_c, filter_h, filter_w] = [fs[0], fs[1], fs[2]];
    let [out_h, out_w] = [os[1], os[2]];
    if os[0] != batches || fs[3] != in_c || os[3] != out_c {
        return Err(c.invalid("filter, input and output shapes disagree"));
    }
    let pad_h = padding(same, out_h, filter_h, stride_h).ok_or(c.invalid("padding"))?;
    let pad_w = padding(same, out_w, filter_w, stride_w).ok_or(c.invalid("padding"))?;

    // Weights (scales along dimension 0, zero points 0) and bias.
    let (scales, _) = c.model.filter_scales(c.index, &filter, 0, false)?;
    let mut kernel_inputs = [input_t, filter_t, 0];
    let mut count = 2;
    if let Some(t) = bias_t {
        let b = c.model.tensor(t)?;
        if b.data.is_none() {
            return Err(c.unsupported("a computed bias"));
        }
        c.model.bias(c.index, Some(t), out_c)?;
        kernel_inputs[2] = t;
        count = 3;
    }

    let channels = scales.len();
    if channels > MAX_CHANNELS {
        return Err(c.unsupported("more than 32 output channels with per-channel scales"));
    }
    let mut multipliers = [0i32; MAX_CHANNELS];
    let mut shifts = [0i8; MAX_CHANNELS];
    for k in 0..channels {
        let (m, s) = product_ratio(in_q.scale, scales.f32(k)?, out_q.scale)
            .ok_or(c.invalid("scale not positive finite"))?;
        if s > 30 {
            return Err(c.unsupported("requantisation multiplier of 2^30 or more"));
        }
        multipliers[k] = m;
        shifts[k] = s as i8;
    }
    let (act_min, act_max) = crate::quant::activation_range(activation, out_q);
    let op = TransposeConv {
        batches: small(c, batches)?,
        in_h: small(c, in_h)?,
        in_w: small(c, in_w)?,
        in_c: small(c, in_c)?,
        out_h: small(c, out_h)?,
        out_w: small(c, out_w)?,
        out_c: small(c, out_c)?,
        filter_h: small(c, filter_h)?,
        filter_w: small(c, filter_w)?,
        stride_h: small(c, stride_h)?,
        stride_w: small(c, stride_w)?,
        pad_h: small(c, pad_h)?,
        pad_w: small(c, pad_w)?,
        bias: count == 3,
        channels: channels as u8,
        input_offset: -in_q.zero_point,
        output_offset: out_q.zero_point,
        act_min,
        act_max,
        multipliers,
        shifts,
    };
    Ok(c.prepared(operands(&kernel_inputs[..count])?, Op::TransposeConv(op)))
}

/// The input index along one axis whose tap `f` lands on output index
/// `out` (`in * stride - pad + f == out`), if any.
#[inline]
fn source(out: usize, f: usize, stride: usize, pad: usize, size: usize) -> Option<usize> {
    let t = (out + pad).checked_sub(f)?;
    if t % stride != 0 {
        return None;
    }
    let i = t / stride;
    (i < size).then_some(i)
}

/// `Σ (x + input_offset) * w` over an input pixel and a filter row,
/// wrapping.
#[inline]
fn dot(x: &[u8], w: &[u8], input_offset: i32) -> i32 {
    x.iter().zip(w).fold(0i32, |acc, (&x, &w)| {
        acc.wrapping_add((i32::from(x as i8) + input_offset) * i32::from(w as i8))
    })
}

impl TransposeConv {
    pub(crate) fn work(&self) -> Option<u64> {
        [
            self.batches,
            self.in_h,
            self.in_w,
            self.in_c,
            self.filter_h,
            self.filter_w,
            self.out_c,
        ]
        .iter()
        .try_fold(1u64, |acc, &f| acc.checked_mul(u64::from(f)))
    }

    /// The requantisation multiplier of output channel `oc`.
    fn multiplier(&self, oc: usize) -> Result<(i32, i32), Error> {
        let k = if self.channels == 1 { 0 } else { oc };
        match (self.multipliers.get(k), self.shifts.get(k)) {
            (Some(&m), Some(&s)) => Ok((m, i32::from(s))),
            _ => Err(SHAPE),
        }
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        if o != 0 {
            return Err(Error::Internal("TRANSPOSE_CONV has one output"));
        }
        let x = inputs.first().copied().ok_or(SHAPE)?;
        let w = inputs.get(1).copied().ok_or(SHAPE)?;
        let bias = if self.bias {
            Some(inputs.get(2).copied().ok_or(SHAPE)?)
        } else {
            None
        };
        let d = |v: u16| usize::from(v);
        let (in_h, in_w, in_c) = (d(self.in_h), d(self.in_w), d(self.in_c));
        let (out_h, out_w, out_c) = (d(self.out_h), d(self.out_w), d(self.out_c));
        let (filter_h, filter_w) = (d(self.filter_h), d(self.filter_w));
        let (stride_h, stride_w) = (d(self.stride_h), d(self.stride_w));
        let (pad_h, pad_w) = (d(self.pad_h), d(self.pad_w));
        if stride_h == 0 || stride_w == 0 || y.len() != d(self.batches) * out_h * out_w * out_c {
            return Err(SHAPE);
        }
        let mut pixels = y.chunks_exact_mut(out_c.max(1));
        for b in 0..d(self.batches) {
            for oy in 0..out_h {
                for ox in 0..out_w {
                    let out = pixels.next().ok_or(SHAPE)?;
                    for (oc, out) in out.iter_mut().enumerate() {
                        let mut acc = 0i32;
                        for fy in 0..filter_h {
                            let Some(iy) = source(oy, fy, stride_h, pad_h, in_h) else {
                                continue;
                            };
                            for fx in 0..filter_w {
                                let Some(ix) = source(ox, fx, stride_w, pad_w, in_w) else {
                                    continue;
                                };
                                let at = ((b * in_h + iy) * in_w + ix) * in_c;
                                let pixel = x.get(at..at + in_c).ok_or(SHAPE)?;
                                let at = ((oc * filter_h + fy) * filter_w + fx) * in_c;
                                let weights = w.get(at..at + in_c).ok_or(SHAPE)?;
                                acc = acc.wrapping_add(dot(pixel, weights, self.input_offset));
                            }
                        }
                        if let Some(bias) = bias {
                            let b = bias.get(4 * oc..4 * oc + 4).ok_or(SHAPE)?;
                            acc = acc.wrapping_add(i32::from_le_bytes([b[0], b[1], b[2], b[3]]));
                        }
                        let (m, s) = self.multiplier(oc)?;
                        let scaled = multiply_by_quantized_multiplier(acc, m, s);
                        *out = clamp(
                            scaled.wrapping_add(self.output_offset),
                            self.act_min,
                            self.act_max,
                        ) as i8 as u8;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{padding, TransposeConv, MAX_CHANNELS};
    use crate::quant::{clamp, multiply_by_quantized_multiplier};
    use std::vec::Vec;

    /// Multiplier 1.0: `(2^30, 1)`.
    const ONE: (i32, i32) = (1 << 30, 1);

    /// An operator of one batch; `(h, w, c)` triples, `(filter_h,
    /// filter_w)`, `(stride_h, stride_w)`, `(pad_h, pad_w)`.
    fn op(
        input: (u16, u16, u16),
        output: (u16, u16, u16),
        filter: (u16, u16),
        stride: (u16, u16),
        pad: (u16, u16),
        multipliers: &[(i32, i32)],
    ) -> TransposeConv {
        let mut t = TransposeConv {
            batches: 1,
            in_h: input.0,
            in_w: input.1,
            in_c: input.2,
            out_h: output.0,
            out_w: output.1,
            out_c: output.2,
            filter_h: filter.0,
            filter_w: filter.1,
            stride_h: stride.0,
            stride_w: stride.1,
            pad_h: pad.0,
            pad_w: pad.1,
            bias: false,
            channels: multipliers.len() as u8,
            input_offset: 0,
            output_offset: 0,
            act_min: -128,
            act_max: 127,
            multipliers: [0; MAX_CHANNELS],
            shifts: [0; MAX_CHANNELS],
        };
        for (k, &(m, s)) in multipliers.iter().enumerate() {
            t.multipliers[k] = m;
            t.shifts[k] = s as i8;
        }
        t
    }

    fn bytes(v: &[i8]) -> Vec<u8> {
        v.iter().map(|&b| b as u8).collect()
    }

    fn run(t: &TransposeConv, inputs: &[&[u8]]) -> Vec<i8> {
        let n = usize::from(t.batches)
            * usize::from(t.out_h)
            * usize::from(t.out_w)
            * usize::from(t.out_c);
        let mut y = std::vec![0u8; n];
        t.run(inputs, 0, &mut y).unwrap();
        y.iter().map(|&b| b as i8).collect()
    }

    #[test]
    fn padding_of_the_output_image() {
        // SAME: out = ceil(H / stride), total = (out - 1) * stride + filter - H.
        assert_eq!(padding(true, 4, 3, 2), Some(0)); // total 1: the odd pixel is the offset
        assert_eq!(padding(true, 5, 3, 2), Some(1)); // total 2
        assert_eq!(padding(true, 4, 4, 1), Some(1)); // total 3
        assert_eq!(padding(true, 12, 4, 3), Some(0)); // out 4, total 1
                                                      // VALID: out = (H + stride - filter) / stride, truncated toward zero.
        assert_eq!(padding(false, 5, 3, 2), Some(0));
        assert_eq!(padding(false, 6, 4, 2), Some(0));
        assert_eq!(padding(false, 1, 3, 1), Some(0)); // out -1, total 0
        assert_eq!(padding(false, 7, 3, 1), Some(0));
        assert_eq!(padding(true, 7, 3, 0), None);
    }

    #[test]
    fn stride_two_valid() {
        // x = [1, 2] down one column, w = [1, 10, 50], stride 2, VALID,
        // output height (2 - 1) * 2 + 3 = 5, no padding: y[2 iy + fy] +=
        // x[iy] * w[fy].
        let t = op((2, 1, 1), (5, 1, 1), (3, 1), (2, 1), (0, 0), &[ONE]);
        let (x, w) = (bytes(&[1, 2]), bytes(&[1, 10, 50]));
        assert_eq!(run(&t, &[&x, &w]), [1, 10, 52, 20, 100]);
        assert_eq!(t.work(), Some(2 * 3));
    }

    #[test]
    fn stride_two_same_with_padding() {
        // Output height 5, filter 3, stride 2, SAME: pad 1, so y[2 iy - 1 +
        // fy] += x[iy] * w[fy]; the taps at -1 and 5 fall outside.
        let pad = padding(true, 5, 3, 2).unwrap() as u16;
        let t = op((3, 1, 1), (5, 1, 1), (3, 1), (2, 1), (pad, 0), &[ONE]);
        let (x, w) = (bytes(&[1, 2, 3]), bytes(&[1, 10, 50]));
        assert_eq!(run(&t, &[&x, &w]), [10, 52, 20, 103, 30]);
        // Output height 4 (pad 0): the reference drops what lands on 4.
        let pad = padding(true, 4, 3, 2).unwrap() as u16;
        let t = op((2, 1, 1), (4, 1, 1), (3, 1), (2, 1), (pad, 0), &[ONE]);
        let x = bytes(&[1, 2]);
        assert_eq!(run(&t, &[&x, &w]), [1, 10, 52, 20]);
    }

    #[test]
    fn offsets_bias_channels_and_clamp() {
        // One input pixel of two channels (zero point 3: bytes 4, 1 are 1,
        // -2), a 1x2 filter of two output channels, stride 1, output 1x2.
        let mut t = op(
            (1, 1, 2),
            (1, 2, 2),
            (1, 2),
            (1, 1),
            (0, 0),
            &[ONE, (1 << 30, 0)],
        );
        t.input_offset = -3;
        t.output_offset = -5;
        t.bias = true;
        t.act_min = -10;
        t.act_max = 100;
        let x = bytes(&[4, 1]);
        // w[oc][fx][ic]: oc 0 = [[10, 1], [-20, 3]], oc 1 = [[7, 0], [0, 9]].
        let w = bytes(&[10, 1, -20, 3, 7, 0, 0, 9]);
        let bias: Vec<u8> = [100i32, -4].iter().flat_map(|b| b.to_le_bytes()).collect();
        // oc 0: x0 = 1*10 + -2*1 + 100 = 108 -> 103 -> clamped to 100;
        //       x1 = 1*-20 + -2*3 + 100 = 74 -> 69.
        // oc 1 (times 0.5): x0 = 7 - 4 = 3 -> 1.5 -> 2 -> -3;
        //       x1 = -18 - 4 = -22 -> -11 -> -16 -> clamped to -10.
        assert_eq!(run(&t, &[&x, &w, &bias]), [100, -3, 69, -10]);
    }

    /// The reference's scatter into an int32 scratch buffer, then the
    /// requantisation: the gathering kernel gives the same bytes.
    #[test]
    fn gather_equals_the_reference_scatter() {
        let mut s = 0x9e37_79b9u32;
        let mut next = move |n: u32| {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            (s % n) as usize
        };
        for case in 0..300 {
            let (in_h, in_w, in_c) = (1 + next(5), 1 + next(5), 1 + next(6));
            let (fh, fw) = (1 + next(4), 1 + next(4));
            let (sh, sw) = (1 + next(3), 1 + next(3));
            let out_c = 1 + next(MAX_CHANNELS as u32);
            let same = next(2) == 0;
            // The converter's output size, give or take a pixel.
            let oh = ((in_h - 1) * sh + fh).saturating_sub(next(2)).max(1);
            let ow = ((in_w - 1) * sw + fw).saturating_sub(next(2)).max(1);
            let (ph, pw) = (
                padding(same, oh, fh, sh).unwrap(),
                padding(same, ow, fw, sw).unwrap(),
            );
            let batches = 1 + next(2);
            let per_channel = next(2) == 0;
            let multipliers: Vec<(i32, i32)> = (0..if per_channel { out_c } else { 1 })
                .map(|_| {
                    crate::quant::quantize_ratio(1 + next(1 << 20) as u64, -22 - next(6) as i32, 3)
                })
                .collect();
            let mut t = op(
                (in_h as u16, in_w as u16, in_c as u16),
                (oh as u16, ow as u16, out_c as u16),
                (fh as u16, fw as u16),
                (sh as u16, sw as u16),
                (ph as u16, pw as u16),
                &multipliers,
            );
            t.batches = batches as u16;
            t.input_offset = next(256) as i32 - 128;
            t.output_offset = next(256) as i32 - 128;
            t.bias = next(2) == 0;
            let x: Vec<u8> = (0..batches * in_h * in_w * in_c)
                .map(|_| next(256) as u8)
                .collect();
            let w: Vec<u8> = (0..out_c * fh * fw * in_c)
                .map(|_| next(256) as u8)
                .collect();
            let bias: Vec<i32> = (0..out_c).map(|_| next(200_001) as i32 - 100_000).collect();
            let bias_bytes: Vec<u8> = bias.iter().flat_map(|b| b.to_le_bytes()).collect();

            let mut scratch = std::vec![0i32; batches * oh * ow * out_c];
            for b in 0..batches {
                for iy in 0..in_h {
                    for ix in 0..in_w {
                        for ic in 0..in_c {
                            for fy in 0..fh {
                                for fx in 0..fw {
                                    for oc in 0..out_c {
                                        let oy = (iy * sh + fy) as isize - ph as isize;
                                        let ox = (ix * sw + fx) as isize - pw as isize;
                                        if oy < 0
                                            || ox < 0
                                            || oy >= oh as isize
                                            || ox >= ow as isize
                                        {
                                            continue;
                                        }
                                        let xv = i32::from(
                                            x[((b * in_h + iy) * in_w + ix) * in_c + ic] as i8,
                                        );
                                        let wv = i32::from(
                                            w[((oc * fh + fy) * fw + fx) * in_c + ic] as i8,
                                        );
                                        let at = ((b * oh + oy as usize) * ow + ox as usize)
                                            * out_c
                                            + oc;
                                        scratch[at] =
                                            scratch[at].wrapping_add((xv + t.input_offset) * wv);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            let want: Vec<i8> = scratch
                .iter()
                .enumerate()
                .map(|(i, &acc)| {
                    let oc = i % out_c;
                    let acc = if t.bias {
                        acc.wrapping_add(bias[oc])
                    } else {
                        acc
                    };
                    let (m, sft) = multipliers[if per_channel { oc } else { 0 }];
                    let v = multiply_by_quantized_multiplier(acc, m, sft);
                    clamp(v + t.output_offset, -128, 127) as i8
                })
                .collect();
            let got = if t.bias {
                run(&t, &[&x, &w, &bias_bytes])
            } else {
                run(&t, &[&x, &w])
            };
            assert_eq!(got, want, "case {case}");
        }
    }
}
