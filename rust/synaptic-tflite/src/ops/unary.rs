//! Element-wise operators with one input: RELU, RELU6 and RELU_N1_TO_1
//! (int8), QUANTIZE (float32 to int8, int8 to int8) and DEQUANTIZE (int8 to
//! float32).
//!
//! Arithmetic of the reference kernels:
//! * RELU and its clamps (`QuantizedReluX`, `ReluX`): `output_zero_point +
//!   MultiplyByQuantizedMultiplier(x - input_zero_point, m)` with `m` from
//!   `input_scale / output_scale` divided in float, as `ReluPrepare`
//!   does, then clamped to the activation's range in output units.
//! * QUANTIZE from float (`reference_ops::AffineQuantize`): `round(x /
//!   scale) + zero_point`, the division in double (scale is a double
//!   there), rounded half away from zero, clamped. The quotient of two
//!   floats is never within a double's rounding of a half-integer without
//!   being one, so the exact rational rounding computed here is the same.
//! * QUANTIZE int8 to int8 (`reference_ops::Requantize`):
//!   `MultiplyByQuantizedMultiplier(x - input_zero_point, input_scale /
//!   output_scale) + output_zero_point`, clamped.
//! * DEQUANTIZE (`reference_ops::Dequantize`): `float(scale * (x -
//!   zero_point))` with the product in double, which is exact, so the float
//!   product rounds the same.

use super::Prepared;
use super::{int8, operands, Context, Op};
use crate::model::{Activation, ElementType};
use crate::quant::ratio;
use crate::quant::{
    activation_range, clamp, multiply_by_quantized_multiplier, quantize_ratio, split,
};
use crate::schema::{builtin, options};
use crate::Error;

/// What the operator does to each element.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Map {
    /// int8 to int8: rescale by `multiplier`, clamp to `min..=max`.
    Rescale {
        input_zero_point: i32,
        output_zero_point: i32,
        multiplier: (i32, i32),
        min: i32,
        max: i32,
    },
    /// float32 to int8.
    Quantize { scale: f32, zero_point: i32 },
    /// int8 to float32.
    Dequantize { scale: f32, zero_point: i32 },
}

/// A prepared one-input element-wise operator.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Unary {
    pub(crate) elements: usize,
    map: Map,
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(1, 1, 1)?;
    let (t, input) = c.input(0)?;
    let (_, output) = c.output(0)?;
    if input.shape.elements() != output.shape.elements() {
        return Err(c.invalid("input and output sizes differ"));
    }
    match c.code {
        builtin::QUANTIZE => c.options(options::QUANTIZE)?,
        builtin::DEQUANTIZE => c.options(options::DEQUANTIZE)?,
        _ => None,
    };
    let unsupported_scale = || c.unsupported("scales whose ratio TFLite's multipliers cannot hold");
    let map = match (c.code, input.element_type, output.element_type) {
        (builtin::QUANTIZE, ElementType::Float32, ElementType::Int8) => {
            let q = c.quantization(&output, ElementType::Int8)?;
            Map::Quantize {
                scale: q.scale,
                zero_point: q.zero_point,
            }
        }
        (builtin::DEQUANTIZE, ElementType::Int8, ElementType::Float32) => {
            let q = c.quantization(&input, ElementType::Int8)?;
            Map::Dequantize {
                scale: q.scale,
                zero_point: q.zero_point,
            }
        }
        (builtin::QUANTIZE, ElementType::Int8, ElementType::Int8) => {
            let (qi, qo) = (
                c.quantization(&input, ElementType::Int8)?,
                c.quantization(&output, ElementType::Int8)?,
            );
            let multiplier = ratio(qi.scale, qo.scale).ok_or_else(unsupported_scale)?;
            Map::Rescale {
                input_zero_point: qi.zero_point,
                output_zero_point: qo.zero_point,
                multiplier,
                min: -128,
                max: 127,
            }
        }
        (
            builtin::RELU | builtin::RELU6 | builtin::RELU_N1_TO_1,
            ElementType::Int8,
            ElementType::Int8,
        ) => {
            let (qi, qo) = (
                c.quantization(&input, ElementType::Int8)?,
                c.quantization(&output, ElementType::Int8)?,
            );
            // `ReluPrepare` divides the scales in float.
            let multiplier = split(qi.scale / qo.scale)
                .map(|(m, e)| quantize_ratio(m, e, 1))
                .ok_or_else(unsupported_scale)?;
            let activation = match c.code {
                builtin::RELU => Activation::Relu,
                builtin::RELU6 => Activation::Relu6,
                _ => Activation::ReluN1To1,
            };
            let (min, max) = activation_range(activation, qo);
            Map::Rescale {
                input_zero_point: qi.zero_point,
                output_zero_point: qo.zero_point,
                multiplier,
                min,
                max,
            }
        }
        (builtin::QUANTIZE, _, _) => {
            return Err(c.unsupported("types other than float32 or int8 to int8"))
        }
        (builtin::DEQUANTIZE, _, _) => {
            return Err(c.unsupported("types other than int8 to float32"))
        }
        _ => return Err(c.unsupported("element types other than int8")),
    };
    if let Map::Rescale { multiplier, .. } = map {
        if multiplier.1 > 30 {
            return Err(unsupported_scale());
        }
    }
    let unary = Unary {
        elements: input.shape.elements(),
        map,
    };
    Ok(c.prepared(operands(&[t])?, Op::Unary(unary)))
}

/// `round(a / b)` of two floats, halves away from zero, saturated to the
/// `i32` range; `b` positive and finite.
pub(crate) fn round_quotient(a: f32, b: f32) -> i32 {
    let (Some((mb, eb)), Some((ma, ea))) = (split(b), split(a.abs())) else {
        // a is 0 (or not finite: saturate by sign).
        return if a.is_nan() || a == 0.0 {
            0
        } else if a > 0.0 {
            i32::MAX
        } else {
            i32::MIN
        };
    };
    // |a / b| = ma / mb * 2^(ea - eb); twice it, as an integer quotient
    // and remainder, decides the rounding.
    let e = ea - eb;
    let magnitude: u64 = if e >= 0 {
        if e > 40 {
            u64::MAX
        } else {
            let num = u128::from(ma) << e;
            let q = num / u128::from(mb);
            let r = num % u128::from(mb);
            (q + u128::from(2 * r >= u128::from(mb))).min(u128::from(u64::MAX)) as u64
        }
    } else if -e > 100 {
        0
    } else {
        let num = u128::from(ma);
        let den = u128::from(mb) << (-e);
        let q = num / den;
        let r = num % den;
        (q + u128::from(2 * r >= den)) as u64
    };
    let signed = i64::try_from(magnitude).unwrap_or(i64::MAX);
    let signed = if a < 0.0 { -signed } else { signed };
    signed.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// QUANTIZE's output byte, `clamp(round(v / scale) + zero_point)` with
/// [`round_quotient`]'s exact rounding, without its division: the
/// quotient's magnitude from a float multiply by `1 / scale`, within one
/// of the exact one, then checked and corrected by comparing `2 |v|` with
/// `(2k ± 1) scale` in integers. Quotients of 1024 and more (and NaN)
/// take [`round_quotient`].
struct FastQuantize {
    inverse: f32,
    /// `scale` as `significand * 2^exponent`.
    significand: u64,
    exponent: i32,
    zero_point: i32,
}

impl FastQuantize {
    fn new(scale: f32, zero_point: i32) -> Option<Self> {
        let (significand, exponent) = split(scale)?;
        Some(FastQuantize {
            inverse: 1.0 / scale,
            significand,
            exponent,
            zero_point,
        })
    }

    /// `2 |v| >= c * scale` for `|v| = m 2^e`, `c < 2^36`.
    #[inline(always)]
    fn at_least(&self, (m, e): (u64, i32), c: u64) -> bool {
        // m 2^(e + 1) against c * significand 2^exponent.
        let rhs = c * self.significand;
        let d = e + 1 - self.exponent;
        if d >= 0 {
            d >= 40 || m << d >= rhs
        } else if -d >= 40 || rhs > u64::MAX >> -d {
            false
        } else {
            m >= rhs << -d
        }
    }

    #[inline(always)]
    fn byte(&self, v: f32, scale: f32) -> u8 {
        let approx = (v * self.inverse).abs();
        let q = match split(v.abs()) {
            // 1024 and more, infinite or NaN.
            _ if approx.partial_cmp(&1024.0) != Some(core::cmp::Ordering::Less) => {
                round_quotient(v, scale)
            }
            None => 0,
            Some(magnitude) => {
                // A candidate within one of the quotient, corrected below.
                // (`as u32`: one conversion instruction; `approx < 1024`.)
                let mut k = u64::from((approx + 0.5) as u32);
                while k > 0 && !self.at_least(magnitude, 2 * k - 1) {
                    k -= 1;
                }
                while self.at_least(magnitude, 2 * k + 1) {
                    k += 1;
                }
                if v < 0.0 {
                    -(k as i32)
                } else {
                    k as i32
                }
            }
        };
        clamp(q.saturating_add(self.zero_point), -128, 127) as i8 as u8
    }
}

impl Unary {
    pub(crate) fn run(&self, inputs: &[&[u8]], y: &mut [u8]) -> Result<(), Error> {
        const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");
        let x = inputs.first().copied().unwrap_or(&[]);
        match self.map {
            Map::Rescale {
                input_zero_point,
                output_zero_point,
                multiplier,
                min,
                max,
            } => {
                for (i, out) in y.iter_mut().enumerate().take(self.elements) {
                    let v = int8(x, i)?.wrapping_sub(input_zero_point);
                    let v = multiply_by_quantized_multiplier(v, multiplier.0, multiplier.1)
                        .wrapping_add(output_zero_point);
                    *out = clamp(v, min, max) as i8 as u8;
                }
            }
            Map::Quantize { scale, zero_point } => {
                let fast = FastQuantize::new(scale, zero_point).ok_or(SHAPE)?;
                for (out, b) in y.iter_mut().zip(x.chunks_exact(4)).take(self.elements) {
                    *out = fast.byte(f32::from_le_bytes([b[0], b[1], b[2], b[3]]), scale);
                }
            }
            Map::Dequantize { scale, zero_point } => {
                for (i, out) in y.chunks_exact_mut(4).enumerate().take(self.elements) {
                    let v = scale * (int8(x, i)? - zero_point) as f32;
                    out.copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        if y.len() < self.elements {
            return Err(SHAPE);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::round_quotient;

    #[test]
    fn round_quotient_is_the_double_division_rounded() {
        let mut x = 0x2545_f491u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for _ in 0..200_000 {
            let a = f32::from_bits(next() & 0xbfff_ffff) * 0.25;
            let b = f32::from_bits(0x3000_0000 + next() % 0x0e00_0000);
            let want = (f64::from(a) / f64::from(b)).round();
            let want = want.clamp(f64::from(i32::MIN), f64::from(i32::MAX)) as i32;
            assert_eq!(round_quotient(a, b), want, "{a} / {b}");
        }
        assert_eq!(round_quotient(2.5, 1.0), 3);
        assert_eq!(round_quotient(-2.5, 1.0), -3);
        assert_eq!(round_quotient(0.0, 0.1), 0);
    }

    /// The fast QUANTIZE byte against `round_quotient`'s, over random
    /// scales and values near every rounding boundary (`(k + 1/2) scale`
    /// and its float neighbours), subnormals, zeros, infinities and NaN.
    #[test]
    fn fast_quantize_equals_the_exact_quotient() {
        let mut x = 0x6a09_e667u32;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x
        };
        for case in 0..400_000u32 {
            let scale = match case % 5 {
                0 => f32::from_bits(1 + next() % 0x007f_ffff),
                _ => f32::from_bits(0x2000_0000 + next() % 0x2800_0000),
            };
            let zero_point = (next() % 256) as i32 - 128;
            let fast = super::FastQuantize::new(scale, zero_point).unwrap();
            let k = (next() % 1200) as f32 - 600.0;
            let v = match case % 4 {
                // Near a boundary, then nudged by a few ulps either way.
                0 | 1 => {
                    let v = (k + 0.5) * scale;
                    let ulps = (next() % 7) as i32 - 3;
                    f32::from_bits((v.to_bits() as i32).wrapping_add(ulps) as u32)
                }
                2 => f32::from_bits(next()),
                _ => [0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 1e-45]
                    [case as usize / 4 % 6],
            };
            let want = super::clamp(
                round_quotient(v, scale).saturating_add(zero_point),
                -128,
                127,
            );
            assert_eq!(fast.byte(v, scale) as i8 as i32, want, "{v} / {scale}");
        }
    }
}
