//! The int8 kernels: TFLite's reference integer kernels re-derived loop for
//! loop, so that every output byte equals theirs.
//!
//! Tensors are NHWC byte slices (int8 as two's-complement bytes); biases are
//! little-endian int32; requantisation multipliers come as
//! `(multiplier, shift)` pairs of little-endian int32 in `channels`. The
//! slices were sized from the validated shapes, and every access goes
//! through `get`, so a kernel can fail but not index out of bounds.
//! Accumulation wraps on overflow, where C++ would have undefined behaviour.

use crate::model::Geometry;
use crate::quant::{clamp, expf, multiply_by_quantized_multiplier};
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

impl Requantize<'_> {
    #[inline]
    fn finish(&self, acc: i32, multiplier: (i32, i32)) -> u8 {
        let scaled = multiply_by_quantized_multiplier(acc, multiplier.0, multiplier.1);
        clamp(
            scaled.wrapping_add(self.output_offset),
            self.act_min,
            self.act_max,
        ) as i8 as u8
    }
}

/// Input coordinate of a window tap, if inside the image.
#[inline]
fn tap(origin: isize, step: usize, k: usize, size: usize) -> Option<usize> {
    let p = origin + (step * k) as isize;
    (p >= 0 && (p as usize) < size).then_some(p as usize)
}

/// `reference_integer_ops::ConvPerChannel`.
pub(crate) fn conv(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
) -> Result<(), Error> {
    let mut out = 0;
    for b in 0..g.batches {
        for oy in 0..g.out_h {
            let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
            for ox in 0..g.out_w {
                let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
                for oc in 0..g.out_c {
                    let mut acc: i32 = 0;
                    for fy in 0..g.filter_h {
                        let Some(iy) = tap(origin_y, g.dilation_h, fy, g.in_h) else {
                            continue;
                        };
                        for fx in 0..g.filter_w {
                            let Some(ix) = tap(origin_x, g.dilation_w, fx, g.in_w) else {
                                continue;
                            };
                            let in_base = ((b * g.in_h + iy) * g.in_w + ix) * g.in_c;
                            let f_base = ((oc * g.filter_h + fy) * g.filter_w + fx) * g.in_c;
                            let pixel = input.get(in_base..in_base + g.in_c).ok_or(SHAPE)?;
                            let weights = filter.get(f_base..f_base + g.in_c).ok_or(SHAPE)?;
                            for (&x, &w) in pixel.iter().zip(weights) {
                                let x = i32::from(x as i8) + q.input_offset;
                                acc = acc.wrapping_add(i32::from(w as i8).wrapping_mul(x));
                            }
                        }
                    }
                    if let Some(bias) = bias {
                        acc = acc.wrapping_add(word(bias, oc)?);
                    }
                    *output.get_mut(out).ok_or(SHAPE)? = q.finish(acc, channel(q.channels, oc)?);
                    out += 1;
                }
            }
        }
    }
    Ok(())
}

/// `reference_integer_ops::DepthwiseConvPerChannel`.
pub(crate) fn depthwise_conv(
    g: &Geometry,
    input: &[u8],
    filter: &[u8],
    bias: Option<&[u8]>,
    q: &Requantize<'_>,
    output: &mut [u8],
) -> Result<(), Error> {
    for b in 0..g.batches {
        for oy in 0..g.out_h {
            let origin_y = (oy * g.stride_h) as isize - g.pad_h as isize;
            for ox in 0..g.out_w {
                let origin_x = (ox * g.stride_w) as isize - g.pad_w as isize;
                for ic in 0..g.in_c {
                    for m in 0..g.depth_multiplier {
                        let oc = ic * g.depth_multiplier + m;
                        let mut acc: i32 = 0;
                        for fy in 0..g.filter_h {
                            let Some(iy) = tap(origin_y, g.dilation_h, fy, g.in_h) else {
                                continue;
                            };
                            for fx in 0..g.filter_w {
                                let Some(ix) = tap(origin_x, g.dilation_w, fx, g.in_w) else {
                                    continue;
                                };
                                let x =
                                    byte(input, ((b * g.in_h + iy) * g.in_w + ix) * g.in_c + ic)?;
                                let w = byte(filter, (fy * g.filter_w + fx) * g.out_c + oc)?;
                                acc = acc.wrapping_add(w.wrapping_mul(x + q.input_offset));
                            }
                        }
                        if let Some(bias) = bias {
                            acc = acc.wrapping_add(word(bias, oc)?);
                        }
                        let at = ((b * g.out_h + oy) * g.out_w + ox) * g.out_c + oc;
                        *output.get_mut(at).ok_or(SHAPE)? = q.finish(acc, channel(q.channels, oc)?);
                    }
                }
            }
        }
    }
    Ok(())
}

/// `reference_integer_ops::FullyConnected` (per-tensor or per-channel).
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
            if let Some(bias) = bias {
                acc = acc.wrapping_add(word(bias, u)?);
            }
            let multiplier = channel(q.channels, if per_channel { u } else { 0 })?;
            *output.get_mut(b * units + u).ok_or(SHAPE)? = q.finish(acc, multiplier);
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
                    if average {
                        if count == 0 {
                            return Err(Error::Internal("average pool over an empty window"));
                        }
                        // Round to the closest integer, halves away from zero.
                        acc = if acc > 0 {
                            (acc + count / 2) / count
                        } else {
                            (acc - count / 2) / count
                        };
                    }
                    *output.get_mut(out).ok_or(SHAPE)? = clamp(acc, act_min, act_max) as i8 as u8;
                    out += 1;
                }
            }
        }
    }
    Ok(())
}

/// TFLite's int8 softmax (`optimized_ops::Softmax` with the float table of
/// `PopulateSoftmaxLookupTable`, which is what LiteRT runs for int8 with the
/// reference resolver too): `exp(-input_scale * beta * (max - x))` per
/// element, normalised in float, rounded, offset by the output zero point.
/// The table entries are computed on the fly (the same values, no 1 KB table).
#[allow(clippy::too_many_arguments)]
pub(crate) fn softmax(
    rows: usize,
    depth: usize,
    input_scale: f32,
    beta: f32,
    output_scale: f32,
    output_zero_point: i32,
    input: &[u8],
    output: &mut [u8],
) -> Result<(), Error> {
    let scale = -input_scale * beta;
    let entry = |max: i32, x: i32| expf(scale * (max - x) as f32);
    for r in 0..rows {
        let row = input.get(r * depth..(r + 1) * depth).ok_or(SHAPE)?;
        let out = output.get_mut(r * depth..(r + 1) * depth).ok_or(SHAPE)?;
        let max = row
            .iter()
            .map(|&b| i32::from(b as i8))
            .fold(i32::from(i8::MIN), i32::max);
        let mut sum = 0.0_f32;
        for &b in row {
            sum += entry(max, i32::from(b as i8));
        }
        let inverse = 1.0 / (sum * output_scale);
        for (o, &b) in out.iter_mut().zip(row) {
            let p = entry(max, i32::from(b as i8)) * inverse;
            let q = (libm::roundf(p) as i32).saturating_add(output_zero_point);
            *o = clamp(q, i32::from(i8::MIN), i32::from(i8::MAX)) as i8 as u8;
        }
    }
    Ok(())
}
