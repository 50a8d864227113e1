//! LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU and PRELU on int8 (int16 is
//! refused: TFLite runs it through other, fixed-point kernels).
//!
//! Arithmetic of LiteRT's reference kernels (`activations.cc` registered
//! with `kReference`), bit for bit:
//! * LOGISTIC and TANH (`SigmoidPrepare`/`TanhPrepare` fill a 256-entry
//!   table with `LUTPopulate<int8_t>`, `SigmoidEval`/`TanhEval` look the
//!   input bytes up in it): entry `v` is `f(input_scale * float(v -
//!   input_zero_point))`, multiplied by the float `1 / output_scale`,
//!   rounded half away from zero (`TfLiteRound`), plus the output zero point
//!   in float, converted to `int32` and clamped to int8, where `f` is `1.0f /
//!   (1.0f + expf(-x))` or `tanhf(x)`, all in single precision. `expf` is
//!   [`crate::quant::expf`] and `tanhf` is glibc's (fdlibm's `s_tanhf.c` over
//!   `s_expm1f.c`, repeated below), the libm the reference outputs were made
//!   with. The entries are computed when an element needs them (all 256 at
//!   once, on the stack, for tensors of more than 256 elements), so the
//!   prepared operator holds no table. LOGISTIC requires an output scale of
//!   exactly 1/256, as TFLite does.
//! * LEAKY_RELU (`reference_ops::QuantizeLeakyRelu`): `x - input_zero_point`
//!   scaled by `MultiplyByQuantizedMultiplier` (gemmlowp's double rounding)
//!   with the identity multiplier `input_scale / output_scale` when
//!   non-negative, else with `|input_scale * alpha / output_scale|` and the
//!   result negated for a negative alpha; plus the output zero point,
//!   clamped. `LeakyReluPrepare` forms both multipliers in float and passes
//!   the float to `QuantizeMultiplier`.
//! * PRELU (`reference_ops::Prelu`, `BroadcastPrelu4DSlow`): `x -
//!   input_zero_point` scaled by `input_scale / output_scale` when
//!   non-negative, else `(x - input_zero_point) * (alpha - alpha_zero_point)`
//!   scaled by `input_scale * alpha_scale / output_scale` (both formed in
//!   float by `PreluPrepare`), plus the output zero point, clamped. The alpha
//!   tensor broadcasts to the input's shape (NumPy rules, up to
//!   [`MAX_RANK`] dimensions), element by element, so the loop order does not
//!   matter.
//! * HARD_SWISH (`reference_ops::HardSwish` with `HardSwishParams`): the
//!   int16 fixed-point pipeline of gemmlowp's 16-bit
//!   `SaturatingRoundingDoublingHighMul`, `RoundingDivideByPOT` and the
//!   kernel's truncating `SaturatingDoublingHighMul`, with
//!   `HardSwishPrepare`'s multipliers: `QuantizeMultiplier` of the floats
//!   `(input_scale / 128) / output_scale` (exponent at most 0, else TFLite
//!   refuses the model) and `(input_scale / 128) / (3 / 32768)`, each
//!   significand then rounded to 16 bits (`DownScaleInt32ToInt16Multiplier`).
//!
//! `QuantizeMultiplier` of a float is [`quantize_ratio`] on the float's exact
//! significand and exponent (integer arithmetic; only the float products and
//! quotients the reference forms are computed in single precision, in
//! `prepare`).

use super::Prepared;
use super::{extended, int8, operands, Context, Op};
use crate::model::ElementType;
use crate::quant::{clamp, expf, multiply_by_quantized_multiplier, quantize_ratio, split};
use crate::schema::{builtin, options};
use crate::{Error, MAX_RANK};

/// The parameters of `LUTPopulate<int8_t>`.
#[derive(Clone, Copy, Debug)]
struct Table {
    input_scale: f32,
    input_zero_point: i32,
    /// `1 / output_scale`, in float.
    inverse_scale: f32,
    output_zero_point: i32,
}

/// `LeakyReluParams` of an int8 LEAKY_RELU.
#[derive(Clone, Copy, Debug)]
struct LeakyRelu {
    input_zero_point: i32,
    output_zero_point: i32,
    identity: (i32, i32),
    /// Negative for a negative alpha.
    alpha: (i32, i32),
}

/// `HardSwishParams` of an int8 HARD_SWISH.
#[derive(Clone, Copy, Debug)]
struct HardSwish {
    input_zero_point: i32,
    output_zero_point: i32,
    output_multiplier: i16,
    output_exponent: i32,
    reluish_multiplier: i16,
    reluish_exponent: i32,
}

/// `PreluParams` of an int8 PRELU, with the broadcast of alpha.
#[derive(Clone, Copy, Debug)]
struct Prelu {
    /// Output (and input) dimensions, right-aligned to [`MAX_RANK`].
    dims: [usize; MAX_RANK],
    /// Element strides of alpha along the output's dimensions (0 where
    /// broadcast).
    alpha_strides: [usize; MAX_RANK],
    input_offset: i32,
    alpha_offset: i32,
    output_offset: i32,
    /// For non-negative offset inputs: `input_scale / output_scale`.
    identity: (i32, i32),
    /// For negative ones: `input_scale * alpha_scale / output_scale`.
    alpha: (i32, i32),
}

#[derive(Clone, Copy, Debug)]
enum Kernel {
    Logistic(Table),
    Tanh(Table),
    LeakyRelu(LeakyRelu),
    HardSwish(HardSwish),
    Prelu(Prelu),
}

/// A prepared operator of this module.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Activation {
    elements: usize,
    kernel: Kernel,
}

/// `QuantizeMultiplier(double(m))` of a finite float, negative too (the
/// significand rounded half away from zero, so symmetric: a float's 24-bit
/// significand never rounds up to 2^31). `None` for infinities and NaN.
fn quantize_float(m: f32) -> Option<(i32, i32)> {
    if m == 0.0 {
        return Some((0, 0));
    }
    let (mantissa, exponent) = split(m)?;
    let (q, shift) = quantize_ratio(mantissa, exponent, 1);
    Some(if m < 0.0 { (-q, shift) } else { (q, shift) })
}

/// `DownScaleInt32ToInt16Multiplier`.
fn downscale(multiplier: i32) -> i16 {
    const ROUNDING: i32 = 1 << 15;
    if multiplier >= i32::MAX - ROUNDING {
        return i16::MAX;
    }
    ((multiplier + ROUNDING) >> 16) as i16
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    let prelu = c.code == builtin::PRELU;
    if prelu {
        c.arity(2, 2, 1)?;
    } else {
        c.arity(1, 1, 1)?;
    }
    let (t, input) = c.input(0)?;
    let (_, output) = c.output(0)?;
    if input.element_type != ElementType::Int8 {
        return Err(c.unsupported("element types other than int8"));
    }
    let qi = c.quantization(&input, ElementType::Int8)?;
    let qo = c.quantization(&output, ElementType::Int8)?;
    let elements = input.shape.elements();
    if output.shape.elements() != elements {
        return Err(c.invalid("input and output sizes differ"));
    }
    let unsupported_scale = || c.unsupported("scales whose ratio TFLite's multipliers cannot hold");
    // Double-rounding `MultiplyByQuantizedMultiplier` shifts left by at
    // most 30 without overflowing.
    let usable = |m: Option<(i32, i32)>| match m {
        Some(m) if m.1 <= 30 => Ok(m),
        _ => Err(unsupported_scale()),
    };
    let table = Table {
        input_scale: qi.scale,
        input_zero_point: qi.zero_point,
        inverse_scale: 1.0 / qo.scale,
        output_zero_point: qo.zero_point,
    };
    let kernel = match c.code {
        builtin::LOGISTIC => {
            // `SigmoidPrepare`: `output->params.scale == 1. / 256`.
            if qo.scale != 1.0 / 256.0 {
                return Err(c.invalid("LOGISTIC output scale other than 1/256"));
            }
            Kernel::Logistic(table)
        }
        builtin::TANH => Kernel::Tanh(table),
        builtin::LEAKY_RELU => {
            let alpha = match c.options(options::LEAKY_RELU)? {
                Some(t) => t.f32(options::leaky_relu::ALPHA, 0.0)?,
                None => 0.0,
            };
            if !alpha.is_finite() {
                return Err(c.unsupported("an alpha that is not finite"));
            }
            Kernel::LeakyRelu(LeakyRelu {
                input_zero_point: qi.zero_point,
                output_zero_point: qo.zero_point,
                identity: usable(quantize_float(qi.scale / qo.scale))?,
                alpha: usable(quantize_float(qi.scale * alpha / qo.scale))?,
            })
        }
        builtin::HARD_SWISH => {
            c.options(options::HARD_SWISH)?;
            let hires_input_scale = (1.0f32 / 128.0) * qi.scale;
            let reluish_scale = 3.0f32 / 32768.0;
            let (output_multiplier, output_exponent) =
                quantize_float(hires_input_scale / qo.scale).ok_or_else(unsupported_scale)?;
            if output_exponent > 0 {
                return Err(c.invalid("HARD_SWISH output scale below input scale / 128"));
            }
            let (reluish_multiplier, reluish_exponent) =
                quantize_float(hires_input_scale / reluish_scale).ok_or_else(unsupported_scale)?;
            if reluish_exponent > 31 {
                return Err(unsupported_scale());
            }
            Kernel::HardSwish(HardSwish {
                input_zero_point: qi.zero_point,
                output_zero_point: qo.zero_point,
                output_multiplier: downscale(output_multiplier),
                output_exponent,
                reluish_multiplier: downscale(reluish_multiplier),
                reluish_exponent,
            })
        }
        builtin::PRELU => {
            let (ta, alpha) = c.input(1)?;
            if alpha.element_type != ElementType::Int8 {
                return Err(c.unsupported("an alpha of another element type than the input"));
            }
            let qa = alpha
                .quantization()
                .ok_or(c.unsupported("an alpha quantised per channel"))?;
            if !(qa.scale.is_finite() && qa.scale > 0.0 && (-128..=127).contains(&qa.zero_point)) {
                return Err(c.invalid("alpha scale or zero point out of range"));
            }
            let (d_in, d_alpha, d_out) =
                (input.shape.dims(), alpha.shape.dims(), output.shape.dims());
            // The output is the broadcast shape, which must be the input's.
            if d_out != d_in || d_alpha.len() > d_in.len() {
                return Err(c.invalid("PRELU output shape is not the input's"));
            }
            let bad = || c.unsupported("more dimensions than the largest rank");
            let (ea, dims) = (
                extended(d_alpha).ok_or_else(bad)?,
                extended(d_in).ok_or_else(bad)?,
            );
            let mut alpha_strides = [0usize; MAX_RANK];
            let mut stride = 1;
            for d in (0..MAX_RANK).rev() {
                alpha_strides[d] = if ea[d] == dims[d] {
                    stride
                } else if ea[d] == 1 {
                    0
                } else {
                    return Err(c.invalid("alpha does not broadcast to the input"));
                };
                stride *= ea[d];
            }
            let prelu = Prelu {
                dims,
                alpha_strides,
                input_offset: -qi.zero_point,
                alpha_offset: -qa.zero_point,
                output_offset: qo.zero_point,
                identity: usable(quantize_float(qi.scale / qo.scale))?,
                alpha: usable(quantize_float(qi.scale * qa.scale / qo.scale))?,
            };
            let activation = Activation {
                elements,
                kernel: Kernel::Prelu(prelu),
            };
            return Ok(c.prepared(operands(&[t, ta])?, Op::Activation(activation)));
        }
        _ => return Err(c.unsupported("element types other than int8")),
    };
    let activation = Activation { elements, kernel };
    Ok(c.prepared(operands(&[t])?, Op::Activation(activation)))
}

impl Table {
    /// `LUTPopulateInt8`'s entry for the stored int8 value `v`.
    fn entry(&self, transform: fn(f32) -> f32, v: i32) -> u8 {
        let dequantized = self.input_scale * (v - self.input_zero_point) as f32;
        let rescaled = libm::roundf(transform(dequantized) * self.inverse_scale);
        // Out of `int32`'s range (an output scale below about 2^-31),
        // LiteRT's conversion saturates, as Rust's `as` does.
        let quantized = (rescaled + self.output_zero_point as f32) as i32;
        clamp(quantized, i32::from(i8::MIN), i32::from(i8::MAX)) as i8 as u8
    }

    fn run(&self, transform: fn(f32) -> f32, x: &[u8], y: &mut [u8]) -> Result<(), Error> {
        if y.len() > 256 {
            let mut lut = [0u8; 256];
            for (b, slot) in lut.iter_mut().enumerate() {
                *slot = self.entry(transform, i32::from(b as u8 as i8));
            }
            for (i, out) in y.iter_mut().enumerate() {
                *out = lut[usize::from(*x.get(i).ok_or(SHAPE)?)];
            }
        } else {
            for (i, out) in y.iter_mut().enumerate() {
                *out = self.entry(transform, int8(x, i)?);
            }
        }
        Ok(())
    }
}

/// `1.0f / (1.0f + std::exp(-x))`.
fn logistic(x: f32) -> f32 {
    1.0 / (1.0 + expf(-x))
}

/// glibc's `expm1f` (`sysdeps/ieee754/flt-32/s_expm1f.c`, fdlibm's), as the
/// `tanhf` below calls it.
fn expm1f(x: f32) -> f32 {
    let o_threshold = f32::from_bits(0x42b1_7180);
    let ln2_hi = f32::from_bits(0x3f31_7180);
    let ln2_lo = f32::from_bits(0x3717_f7d1);
    let invln2 = f32::from_bits(0x3fb8_aa3b);
    let q1 = f32::from_bits(0xbd08_8889);
    let q2 = f32::from_bits(0x3ad0_0d01);
    let q3 = f32::from_bits(0xb8a6_70cd);
    let q4 = f32::from_bits(0x3686_7e54);
    let q5 = f32::from_bits(0xb457_edbb);
    const TINY: f32 = 1.0e-30;

    let mut x = x;
    let bits = x.to_bits();
    let negative = bits & 0x8000_0000 != 0;
    let hx = bits & 0x7fff_ffff;
    // Huge and non-finite arguments.
    if hx >= 0x4195_b844 {
        if hx >= 0x42b1_7218 {
            if hx > 0x7f80_0000 {
                return x + x;
            }
            if hx == 0x7f80_0000 {
                return if negative { -1.0 } else { x };
            }
            if x > o_threshold {
                return f32::INFINITY;
            }
        }
        if negative {
            return TINY - 1.0;
        }
    }
    // Argument reduction.
    let (k, c) = if hx > 0x3eb1_7218 {
        let (hi, lo, k);
        if hx < 0x3F85_1592 {
            if negative {
                (hi, lo, k) = (x + ln2_hi, -ln2_lo, -1);
            } else {
                (hi, lo, k) = (x - ln2_hi, ln2_lo, 1);
            }
        } else {
            k = (invln2 * x + if negative { -0.5 } else { 0.5 }) as i32;
            let t = k as f32;
            hi = x - t * ln2_hi;
            lo = t * ln2_lo;
        }
        x = hi - lo;
        (k, (hi - x) - lo)
    } else if hx < 0x3300_0000 {
        return x;
    } else {
        (0, 0.0)
    };
    // x is now in the primary range.
    let hfx = 0.5 * x;
    let hxs = x * hfx;
    let r1 = 1.0 + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))));
    let t = 3.0 - r1 * hfx;
    let mut e = hxs * ((r1 - t) / (6.0 - x * t));
    if k == 0 {
        return x - (x * e - hxs);
    }
    e = x * (e - c) - c;
    e -= hxs;
    if k == -1 {
        return 0.5 * (x - e) - 0.5;
    }
    if k == 1 {
        return if x < -0.25 {
            -2.0 * (e - (x + 0.5))
        } else {
            1.0 + 2.0 * (x - e)
        };
    }
    let add_exponent = |y: f32| f32::from_bits(y.to_bits().wrapping_add((k as u32) << 23));
    if k <= -2 || k > 56 {
        return add_exponent(1.0 - (e - x)) - 1.0;
    }
    if k < 23 {
        let t = f32::from_bits(0x3f80_0000 - (0x0100_0000 >> k));
        add_exponent(t - (e - x))
    } else {
        let t = f32::from_bits(((0x7f - k) as u32) << 23);
        add_exponent(x - (e + t) + 1.0)
    }
}

/// glibc's `tanhf` (`sysdeps/ieee754/flt-32/s_tanhf.c`, fdlibm's): what
/// `std::tanh(float)` returned when the reference outputs were made.
fn tanhf(x: f32) -> f32 {
    let bits = x.to_bits();
    let ix = bits & 0x7fff_ffff;
    let negative = bits & 0x8000_0000 != 0;
    if ix >= 0x7f80_0000 {
        return if negative {
            1.0 / x - 1.0
        } else {
            1.0 / x + 1.0
        };
    }
    let z = if ix < 0x41b0_0000 {
        if ix == 0 {
            return x;
        }
        if ix < 0x2400_0000 {
            return x * (1.0 + x);
        }
        if ix >= 0x3f80_0000 {
            let t = expm1f(2.0 * libm::fabsf(x));
            1.0 - 2.0 / (t + 2.0)
        } else {
            let t = expm1f(-2.0 * libm::fabsf(x));
            -t / (t + 2.0)
        }
    } else {
        1.0 - 1.0e-30
    };
    if negative {
        -z
    } else {
        z
    }
}

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// gemmlowp's `SaturatingRoundingDoublingHighMul` on int16.
fn rounding_doubling_high_mul16(a: i16, b: i16) -> i16 {
    if a == b && a == i16::MIN {
        return i16::MAX;
    }
    let ab = i32::from(a) * i32::from(b);
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// `SaturatingDoublingHighMul` of `reference/hard_swish.h`: as above but
/// truncating toward zero.
fn doubling_high_mul16(a: i16, b: i16) -> i16 {
    if a == b && a == i16::MIN {
        return i16::MAX;
    }
    ((i32::from(a) * i32::from(b)) / (1 << 15)) as i16
}

/// gemmlowp's `RoundingDivideByPOT` instantiated for int16 (its mask
/// truncated to 16 bits, as the template does); `exponent` in `0..=31`.
fn rounding_divide_by_pot16(x: i16, exponent: i32) -> i16 {
    let exponent = exponent.clamp(0, 31);
    let mask = ((1i64 << exponent) - 1) as i16;
    let remainder = x & mask;
    let threshold = (mask >> 1).wrapping_add(i16::from(x < 0));
    ((i32::from(x) >> exponent) as i16).wrapping_add(i16::from(remainder > threshold))
}

/// `SaturatingLeftShift` of `reference/hard_swish.h`.
fn saturating_left_shift16(value: i16, amount: i32) -> i16 {
    let result = i64::from(value) * (1i64 << amount.clamp(0, 31));
    result.clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16
}

impl HardSwish {
    fn element(&self, x: i32) -> u8 {
        let input_value = x.wrapping_sub(self.input_zero_point) as i16;
        let hires = input_value.wrapping_mul(1 << 7);
        let preshift_output = rounding_doubling_high_mul16(hires, self.output_multiplier);
        let mut reluish = hires;
        if self.reluish_exponent > 0 {
            reluish = saturating_left_shift16(reluish, self.reluish_exponent - 1);
        }
        reluish = rounding_doubling_high_mul16(reluish, self.reluish_multiplier);
        if self.reluish_exponent > 0 {
            reluish = saturating_left_shift16(reluish, 1);
        }
        if self.reluish_exponent < 0 {
            reluish = rounding_divide_by_pot16(reluish, -self.reluish_exponent);
        }
        let reluish = ((i32::from(reluish) + (1 << 15)) >> 1) as i16;
        let preshift_output_value = doubling_high_mul16(reluish, preshift_output);
        let output = rounding_divide_by_pot16(preshift_output_value, -self.output_exponent);
        let output = (i32::from(output) + self.output_zero_point) as i16;
        output.clamp(i16::from(i8::MIN), i16::from(i8::MAX)) as i8 as u8
    }
}

impl LeakyRelu {
    fn element(&self, x: i32) -> u8 {
        let v = x.wrapping_sub(self.input_zero_point);
        let scaled = if v >= 0 {
            multiply_by_quantized_multiplier(v, self.identity.0, self.identity.1)
        } else {
            let negative = self.alpha.0 < 0;
            let scaled =
                multiply_by_quantized_multiplier(v, self.alpha.0.wrapping_abs(), self.alpha.1);
            if negative {
                scaled.wrapping_neg()
            } else {
                scaled
            }
        };
        clamp(
            self.output_zero_point.wrapping_add(scaled),
            i32::from(i8::MIN),
            i32::from(i8::MAX),
        ) as i8 as u8
    }
}

impl Prelu {
    fn element(&self, x: i32, alpha: i32) -> u8 {
        let v = self.input_offset.wrapping_add(x);
        let scaled = if v >= 0 {
            multiply_by_quantized_multiplier(v, self.identity.0, self.identity.1)
        } else {
            let a = self.alpha_offset.wrapping_add(alpha);
            multiply_by_quantized_multiplier(v.wrapping_mul(a), self.alpha.0, self.alpha.1)
        };
        clamp(
            scaled.wrapping_add(self.output_offset),
            i32::from(i8::MIN),
            i32::from(i8::MAX),
        ) as i8 as u8
    }

    fn run(&self, x: &[u8], alpha: &[u8], y: &mut [u8]) -> Result<(), Error> {
        let mut index = [0usize; MAX_RANK];
        for (i, out) in y.iter_mut().enumerate() {
            let a: usize = (0..MAX_RANK)
                .map(|d| index[d] * self.alpha_strides[d])
                .sum();
            *out = self.element(int8(x, i)?, int8(alpha, a)?);
            // Next output index, last dimension fastest.
            for d in (0..MAX_RANK).rev() {
                index[d] += 1;
                if index[d] < self.dims[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok(())
    }
}

impl Activation {
    pub(crate) fn work(&self) -> Option<u64> {
        Some(self.elements as u64)
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        if o != 0 {
            return Err(Error::Internal("activation with more than one output"));
        }
        let y = y.get_mut(..self.elements).ok_or(SHAPE)?;
        let x = inputs.first().copied().unwrap_or(&[]);
        match &self.kernel {
            Kernel::Logistic(t) => t.run(logistic, x, y)?,
            Kernel::Tanh(t) => t.run(tanhf, x, y)?,
            Kernel::LeakyRelu(l) => {
                for (i, out) in y.iter_mut().enumerate() {
                    *out = l.element(int8(x, i)?);
                }
            }
            Kernel::HardSwish(h) => {
                for (i, out) in y.iter_mut().enumerate() {
                    *out = h.element(int8(x, i)?);
                }
            }
            Kernel::Prelu(p) => p.run(x, inputs.get(1).copied().unwrap_or(&[]), y)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::quant::quantize_multiplier;

    fn table(
        input_scale: f32,
        input_zero_point: i32,
        output_scale: f32,
        output_zero_point: i32,
    ) -> Table {
        Table {
            input_scale,
            input_zero_point,
            inverse_scale: 1.0 / output_scale,
            output_zero_point,
        }
    }

    #[test]
    fn tanhf_is_glibcs_not_the_correctly_rounded_one() {
        // Values of glibc 2.36's `tanhf` (one ulp from the correctly
        // rounded result); a sweep of every 7th float below 32, both signs,
        // matched the host's glibc bit for bit.
        for (x, want) in [
            (0x3d4c_ccd9u32, 0x3d4c_a134u32),
            (0x3e99_99a1, 0x3e95_26f3),
            (0xbfc0_0055, 0xbf67_b7eb),
            (0x3fc0_00da, 0x3f67_b81a),
        ] {
            assert_eq!(tanhf(f32::from_bits(x)).to_bits(), want, "{x:x}");
        }
        // Within three ulps of the exact value everywhere sampled (glibc's
        // `tanhf` is off by up to about two: it does not round correctly).
        let mut bits = 0x3000_0000u32;
        while bits < 0x4200_0000 {
            let x = f32::from_bits(bits);
            let exact = libm::tanh(f64::from(x));
            let got = tanhf(x);
            let ulp = f64::from(f32::from_bits(got.to_bits() + 1) - got);
            assert!(
                (f64::from(got) - exact).abs() <= 3.0 * ulp,
                "{x}: {got:e} vs {exact:e}"
            );
            assert_eq!(tanhf(-x), -got);
            bits += 4099;
        }
        assert_eq!(tanhf(0.0), 0.0);
        assert_eq!(tanhf(30.0), 1.0);
        assert_eq!(tanhf(f32::NEG_INFINITY), -1.0);
    }

    #[test]
    fn quantize_float_is_quantize_multiplier_of_the_float() {
        let mut x = 0x9e37_79b9u32;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // Magnitudes from about 2^-40 to 2^20, both signs.
            let m =
                f32::from_bits((x & 0x8000_0000) | (87 + (x >> 23) % 60) << 23 | (x & 0x7f_ffff));
            assert_eq!(
                quantize_float(m),
                Some(quantize_multiplier(f64::from(m))),
                "{m}"
            );
        }
        assert_eq!(quantize_float(-0.25), Some((-(1 << 30), -1)));
        assert_eq!(quantize_float(0.0), Some((0, 0)));
        assert_eq!(quantize_float(1e-12), Some((0, 0)));
        assert_eq!(quantize_float(f32::NAN), None);
    }

    #[test]
    fn logistic_table_saturates_at_the_zero_point_extremes() {
        // Output scale 1/256, zero point -128: sigmoid(0) = 0.5 -> 128 - 128.
        let t = table(0.1, -128, 1.0 / 256.0, -128);
        assert_eq!(t.entry(logistic, -128) as i8, 0);
        // sigmoid(25.5) is 1.0 in float: 256 - 128 = 128, clamped to 127.
        assert_eq!(t.entry(logistic, 127) as i8, 127);
        // Input zero point 127: -128 is -25.5, sigmoid ~ 8e-12 -> -128.
        let t = table(0.1, 127, 1.0 / 256.0, -128);
        assert_eq!(t.entry(logistic, -128) as i8, -128);
        assert_eq!(t.entry(logistic, 127) as i8, 0);
        // Another output zero point (TFLite checks only the scale).
        let t = table(0.1, -128, 1.0 / 256.0, 0);
        assert_eq!(t.entry(logistic, -128) as i8, 127);
        // sigmoid(1) = 0.7310586 -> 187.15 -> 187 - 128.
        let t = table(0.5, 0, 1.0 / 256.0, -128);
        assert_eq!(t.entry(logistic, 2) as i8, 59);
        assert_eq!(t.entry(logistic, -2) as i8, -59);
    }

    #[test]
    fn tanh_table_saturates_and_rounds() {
        let t = table(0.05, 0, 1.0 / 128.0, 0);
        assert_eq!(t.entry(tanhf, 0) as i8, 0);
        // tanh(0.5) * 128 = 59.15.
        assert_eq!(t.entry(tanhf, 10) as i8, 59);
        assert_eq!(t.entry(tanhf, -10) as i8, -59);
        // tanh(6.35) * 128 = 127.9996 -> 128, clamped.
        assert_eq!(t.entry(tanhf, 127) as i8, 127);
        assert_eq!(t.entry(tanhf, -128) as i8, -128);
        // Input zero point at an extreme: 127 - (-128) = 255 steps.
        let t = table(0.05, -128, 1.0 / 128.0, 0);
        assert_eq!(t.entry(tanhf, 127) as i8, 127);
        assert_eq!(t.entry(tanhf, -128) as i8, 0);
        // A rescaled value past int32 saturates (as LiteRT does).
        let t = table(0.05, 0, 1e-12, 0);
        assert_eq!(t.entry(tanhf, 100) as i8, 127);
        assert_eq!(t.entry(tanhf, -100) as i8, -128);
    }

    fn leaky(alpha: f32, input_zero_point: i32, output_zero_point: i32) -> LeakyRelu {
        // Input and output scale 0.5: identity multiplier 1.
        LeakyRelu {
            input_zero_point,
            output_zero_point,
            identity: quantize_float(1.0).unwrap(),
            alpha: quantize_float(0.5 * alpha / 0.5).unwrap(),
        }
    }

    #[test]
    fn leaky_relu_extremes() {
        // -128 with zero point 127: -255 * 0.25 = -63.75 -> -64.
        assert_eq!(leaky(0.25, 127, 0).element(-128) as i8, -64);
        // ... and with output zero point -128, saturated.
        assert_eq!(leaky(0.25, 127, -128).element(-128) as i8, -128);
        // 127 with zero point -128: 255 - 128 = 127 exactly; -100 saturates.
        assert_eq!(leaky(0.25, -128, -128).element(127) as i8, 127);
        assert_eq!(leaky(0.25, -128, -100).element(127) as i8, 127);
        // A negative alpha: the magnitude's product, negated: +64.
        assert_eq!(leaky(-0.25, 127, 0).element(-128) as i8, 64);
        assert_eq!(leaky(-0.25, 127, 100).element(-128) as i8, 127);
        // Alpha 0: every negative input is the output zero point.
        assert_eq!(leaky(0.0, 0, -7).element(-100) as i8, -7);
        assert_eq!(leaky(0.0, 0, -7).element(3) as i8, -4);
    }

    fn hard_swish(
        input_scale: f32,
        input_zero_point: i32,
        output_scale: f32,
        output_zero_point: i32,
    ) -> HardSwish {
        let hires = (1.0f32 / 128.0) * input_scale;
        let (om, oe) = quantize_float(hires / output_scale).unwrap();
        let (rm, re) = quantize_float(hires / (3.0f32 / 32768.0)).unwrap();
        HardSwish {
            input_zero_point,
            output_zero_point,
            output_multiplier: downscale(om),
            output_exponent: oe,
            reluish_multiplier: downscale(rm),
            reluish_exponent: re,
        }
    }

    #[test]
    fn hard_swish_extremes() {
        // Scales 0.05 / 0.05: output multiplier 2^-7 (16384, -6), reluish
        // 0.05 * 256 / 3 (17476, 3).
        let h = hard_swish(0.05, 127, 0.05, -128);
        assert_eq!((h.output_multiplier, h.output_exponent), (16384, -6));
        assert_eq!((h.reluish_multiplier, h.reluish_exponent), (17476, 3));
        // -12.75 <= -3: hard_swish is 0, the output zero point.
        assert_eq!(h.element(-128) as i8, -128);
        assert_eq!(hard_swish(0.05, 127, 0.05, 5).element(-128) as i8, 5);
        // 12.75 >= 3: itself, 255 steps: 255 - 128 = 127 (reluish 32767,
        // 32767 * 16320 >> 15 = 16319, rounded >> 6 = 255).
        assert_eq!(hard_swish(0.05, -128, 0.05, -128).element(127) as i8, 127);
        assert_eq!(hard_swish(0.05, -128, 0.05, 0).element(127) as i8, 127);
        // 1.5 * 4.5 / 6 = 1.125 = 22.5 steps: 1440 / 64 rounds to 23.
        assert_eq!(hard_swish(0.05, 0, 0.05, 0).element(30) as i8, 23);
        assert_eq!(hard_swish(0.05, 0, 0.05, 0).element(0) as i8, 0);
    }

    #[test]
    fn int16_fixed_point_helpers() {
        assert_eq!(rounding_divide_by_pot16(5, 1), 3);
        assert_eq!(rounding_divide_by_pot16(-5, 1), -3);
        assert_eq!(rounding_divide_by_pot16(1440, 6), 23);
        assert_eq!(rounding_divide_by_pot16(7, 0), 7);
        // Exponents of 16 and more: gemmlowp's int16 mask is all ones, so
        // non-negative values give 1 and negative ones -1 (LiteRT agrees).
        assert_eq!(rounding_divide_by_pot16(0, 20), 1);
        assert_eq!(rounding_divide_by_pot16(-5, 20), -1);
        assert_eq!(rounding_doubling_high_mul16(i16::MIN, i16::MIN), i16::MAX);
        assert_eq!(rounding_doubling_high_mul16(-32768, 17476), -17476);
        assert_eq!(doubling_high_mul16(32767, 16320), 16319);
        assert_eq!(doubling_high_mul16(-3, 16384), -1);
        assert_eq!(saturating_left_shift16(-32640, 2), i16::MIN);
        assert_eq!(saturating_left_shift16(100, 2), 400);
        assert_eq!(downscale(i32::MAX - 100), i16::MAX);
        assert_eq!(downscale(1 << 30), 16384);
    }

    #[test]
    fn prelu_broadcasts_and_saturates() {
        // Input [2, 3], alpha [3]: scales 0.5, 0.25, 0.5 (alpha multiplier
        // 0.25, identity 1).
        let mut dims = [1usize; MAX_RANK];
        dims[MAX_RANK - 2] = 2;
        dims[MAX_RANK - 1] = 3;
        let mut alpha_strides = [0usize; MAX_RANK];
        alpha_strides[MAX_RANK - 1] = 1;
        let p = Prelu {
            dims,
            alpha_strides,
            input_offset: 0,
            alpha_offset: 0,
            output_offset: 0,
            identity: quantize_float(1.0).unwrap(),
            alpha: quantize_float(0.5 * 0.25 / 0.5).unwrap(),
        };
        let x = [-10i8, -10, -10, -10, 7, -10].map(|v| v as u8);
        let alpha = [4i8, 8, -4].map(|v| v as u8);
        let mut y = [0u8; 6];
        p.run(&x, &alpha, &mut y).unwrap();
        assert_eq!(y.map(|v| v as i8), [-10, -20, 10, -10, 7, 10]);
        // Zero points at the extremes: -255 * 255 * 0.25 saturates; alpha at
        // its zero point gives the output zero point; 127 - 127 = 0.
        let p = Prelu {
            input_offset: -127,
            alpha_offset: 128,
            output_offset: 0,
            ..p
        };
        assert_eq!(p.element(-128, 127) as i8, -128);
        assert_eq!(p.element(-128, -128) as i8, 0);
        assert_eq!(p.element(127, 0) as i8, 0);
        let p = Prelu {
            input_offset: -127,
            alpha_offset: 128,
            output_offset: 100,
            ..p
        };
        // -255 * 1 * 0.25 = -63.75 -> -64, plus 100.
        assert_eq!(p.element(-128, -127) as i8, 36);
    }
}
