//! SOFTMAX on int8, as LiteRT's reference resolver runs it:
//! `reference_ops::Softmax<int8_t, int8_t>` (`reference/softmax.h`), the
//! fixed-point kernel with gemmlowp's exponential and reciprocal, which
//! `activations.cc` selects for `kReference` (`SoftmaxQuantized` calls
//! `reference_ops::Softmax` when `kernel_type == kReference`; the float
//! table of `PopulateSoftmaxLookupTable` is only the optimised kernels').
//!
//! Constants (`SoftmaxPrepare<kReference>`, `PreprocessSoftmaxScaling`,
//! `CalculateInputRadius` of `quantization_util.cc`, double-rounding build):
//! * `input_beta_real_multiplier = min(beta * input_scale * 2^26, 2^31 -
//!   1)` in double, then `QuantizeMultiplierGreaterThanOne` into a Q0.31
//!   multiplier and a left shift (LiteRT aborts unless the real multiplier
//!   exceeds 1; this kernel returns an error). Both factors are `f32`, so
//!   the double product is exact and [`quantize_ratio`] reproduces it in
//!   integers.
//! * `diff_min = -floor(31 * 2^26 / 2^left_shift)`: differences from the
//!   row's maximum below it give probability 0 (output -128).
//!
//! Per row, with `d = x - max` for each element not below `diff_min`:
//! * `SaturatingRoundingDoublingHighMul(d << left_shift, multiplier)` is
//!   `beta * input_scale * d` in Q5.26;
//! * gemmlowp's `exp_on_negative_values` gives its exponential in Q0.31;
//! * `Rescale<12>` (a rounding shift right by 12) to Q12.19, summed;
//! * `GetReciprocal(sum, 12)`: the sum normalised to `[1, 2)` and
//!   `one_over_one_plus_x_for_x_in_0_1` (Newton-Raphson, Q2.29 inside) give
//!   its reciprocal in Q0.31 and `num_bits_over_unit`;
//! * output `RoundingDivideByPOT(SRDHM(reciprocal, exp), num_bits_over_unit
//!   + 23) - 128`, clamped to int8.
//!
//! The output quantisation is not read by the kernel: TFLite requires zero
//! point -128 and scale 1/256, which the model's preparation checks.

use crate::quant::{
    clamp, quantize_ratio, rounding_divide_by_pot, saturating_rounding_doubling_high_mul as srdhm,
    split,
};
use crate::Error;

const SHAPE: Error = Error::Internal("softmax buffer shorter than its shape");

/// Integer bits of the exponent's input (Q5.26).
const SCALED_DIFF_INTEGER_BITS: u32 = 5;
/// Integer bits of the sum of exponentials (Q12.19).
const ACCUMULATION_INTEGER_BITS: i32 = 12;

/// The constants `SoftmaxPrepare` computes for the reference kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Params {
    /// Q0.31 significand of `beta * input_scale * 2^26`.
    pub multiplier: i32,
    /// Its exponent, `0..=31`.
    pub left_shift: u32,
    /// The smallest `x - max` that contributes.
    pub diff_min: i32,
}

/// `num * 2^exp` compared with `target` (`num < 2^53`).
fn compare_scaled(num: u64, exp: i32, target: u64) -> core::cmp::Ordering {
    let (num, target) = (u128::from(num), u128::from(target));
    if exp >= 0 {
        if exp >= 64 {
            return if num == 0 {
                0.cmp(&target)
            } else {
                core::cmp::Ordering::Greater
            };
        }
        (num << exp).cmp(&target)
    } else {
        let e = exp.unsigned_abs();
        if e >= 64 {
            return if target == 0 {
                num.cmp(&0)
            } else {
                core::cmp::Ordering::Less
            };
        }
        num.cmp(&(target << e))
    }
}

/// `PreprocessSoftmaxScaling(beta, input_scale, 5)` and
/// `-CalculateInputRadius(5, left_shift)`, in integers.
pub(crate) fn params(input_scale: f32, beta: f32) -> Result<Params, Error> {
    const NOT_ABOVE_ONE: Error = Error::UnsupportedFeature {
        operator: crate::schema::builtin::SOFTMAX,
        what: "beta * input scale at most 2^-26 (TFLite requires more)",
    };
    if !(input_scale > 0.0 && beta > 0.0) {
        return Err(NOT_ABOVE_ONE);
    }
    let (ms, es) = split(input_scale).ok_or(NOT_ABOVE_ONE)?;
    let (mb, eb) = split(beta).ok_or(NOT_ABOVE_ONE)?;
    // beta * input_scale * 2^(31 - 5), exact in a double.
    let (mut num, mut exp) = (ms * mb, es + eb + (31 - SCALED_DIFF_INTEGER_BITS as i32));
    // std::min with (1LL << 31) - 1.0.
    let max_real = (1u64 << 31) - 1;
    if compare_scaled(num, exp, max_real).is_gt() {
        (num, exp) = (max_real, 0);
    }
    // QuantizeMultiplierGreaterThanOne: TFLITE_CHECK_GT(multiplier, 1.).
    if !compare_scaled(num, exp, 1).is_gt() {
        return Err(NOT_ABOVE_ONE);
    }
    let (multiplier, shift) = quantize_ratio(num, exp, 1);
    let left_shift = u32::try_from(shift)
        .ok()
        .filter(|&s| s <= 31)
        .ok_or(Error::Internal("softmax multiplier exponent out of range"))?;
    // floor(((1 << 5) - 1) * 2^(31 - 5) / 2^left_shift): exact in integers.
    let radius =
        (((1i64 << SCALED_DIFF_INTEGER_BITS) - 1) << (31 - SCALED_DIFF_INTEGER_BITS)) >> left_shift;
    Ok(Params {
        multiplier,
        left_shift,
        diff_min: -(radius as i32),
    })
}

/// gemmlowp's `SaturatingRoundingMultiplyByPOT<exponent>` for `exponent` in
/// `1..=30`: a left shift saturating to the int32 range.
fn saturating_shift_left(x: i32, exponent: u32) -> i32 {
    let threshold = (1i32 << (31 - exponent)) - 1;
    if x > threshold {
        i32::MAX
    } else if x < -threshold {
        i32::MIN
    } else {
        x << exponent
    }
}

/// gemmlowp's `RoundingHalfSum` on int32: `(a + b) / 2` rounded to nearest,
/// halves away from zero.
fn rounding_half_sum(a: i32, b: i32) -> i32 {
    let sum = i64::from(a) + i64::from(b);
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i32
}

/// gemmlowp's `exp_on_interval_between_negative_one_quarter_and_0_excl`:
/// `exp(a)` for `a` in `[-1/4, 0)`, both Q0.31; a fourth-order Taylor
/// expansion around -1/8.
fn exp_on_interval_between_negative_one_quarter_and_0_excl(a: i32) -> i32 {
    const EXP_MINUS_ONE_EIGHTH: i32 = 1_895_147_668;
    const ONE_THIRD: i32 = 715_827_883;
    let x = a.wrapping_add(1 << 28);
    let x2 = srdhm(x, x);
    let x3 = srdhm(x2, x);
    let x4 = srdhm(x2, x2);
    let x4_over_4 = rounding_divide_by_pot(x4, 2);
    let x4_over_24_plus_x3_over_6_plus_x2_over_2 = rounding_divide_by_pot(
        srdhm(x4_over_4.wrapping_add(x3), ONE_THIRD).wrapping_add(x2),
        1,
    );
    EXP_MINUS_ONE_EIGHTH.wrapping_add(srdhm(
        EXP_MINUS_ONE_EIGHTH,
        x.wrapping_add(x4_over_24_plus_x3_over_6_plus_x2_over_2),
    ))
}

/// gemmlowp's `exp_on_negative_values` for a Q5.26 input: `exp(a)` in Q0.31
/// for `a <= 0` (`exp(0)` is `i32::MAX`, gemmlowp's One). The input's
/// fraction below 1/4 goes through the Taylor polynomial, each of its bits
/// from 1/4 to 16 multiplies by the Q0.31 constant `exp(-2^k)`.
pub(crate) fn exp_on_negative_values(a: i32) -> i32 {
    const FRACTIONAL_BITS: u32 = 31 - SCALED_DIFF_INTEGER_BITS;
    const BARREL: [(i32, i32); 7] = crate::quant::EXP_BARREL;
    let one_quarter = 1i32 << (FRACTIONAL_BITS - 2);
    let mask = one_quarter - 1;
    let a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
    let mut result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_shift_left(a_mod_quarter_minus_one_quarter, SCALED_DIFF_INTEGER_BITS),
    );
    let remainder = a_mod_quarter_minus_one_quarter.wrapping_sub(a);
    for (k, multiplier) in BARREL {
        let bit = (FRACTIONAL_BITS as i32 + k) as u32;
        if remainder & (1 << bit) != 0 {
            result = srdhm(result, multiplier);
        }
    }
    // No clamp below -32: Q5.26 cannot go lower.
    if a == 0 {
        i32::MAX
    } else {
        result
    }
}

/// gemmlowp's `one_over_one_plus_x_for_x_in_0_1`: `1 / (1 + a)` for `a` in
/// `[0, 1)`, both Q0.31, by three Newton-Raphson steps from `48/17 - 32/17
/// * d` on the half denominator `d = (1 + a) / 2`, in Q2.29.
pub(crate) fn one_over_one_plus_x_for_x_in_0_1(a: i32) -> i32 {
    const FORTY_EIGHT_OVER_17: i32 = 1_515_870_810;
    const MINUS_THIRTY_TWO_OVER_17: i32 = -1_010_580_540;
    const ONE_Q2_29: i32 = 1 << 29;
    let half_denominator = rounding_half_sum(a, i32::MAX);
    let mut x = FORTY_EIGHT_OVER_17.wrapping_add(srdhm(half_denominator, MINUS_THIRTY_TWO_OVER_17));
    for _ in 0..3 {
        let half_denominator_times_x = srdhm(half_denominator, x);
        let one_minus_half_denominator_times_x = ONE_Q2_29.wrapping_sub(half_denominator_times_x);
        x = x.wrapping_add(saturating_shift_left(
            srdhm(x, one_minus_half_denominator_times_x),
            2,
        ));
    }
    // Rescale<0>(ExactMulByPot<-1>(x)): Q2.29 read as Q1.30, then to Q0.31.
    saturating_shift_left(x, 1)
}

/// TFLite's `GetReciprocal(x, x_integer_digits)` for `x > 0`: the Q0.31
/// reciprocal of `x` normalised into `[1, 2)`, and `num_bits_over_unit`
/// (`1 / x = reciprocal * 2^-num_bits_over_unit`).
pub(crate) fn get_reciprocal(x: i32, x_integer_digits: i32) -> (i32, i32) {
    let headroom_plus_one = (x as u32).leading_zeros();
    let num_bits_over_unit = x_integer_digits - headroom_plus_one as i32;
    let shifted_sum_minus_one = (x as u32)
        .checked_shl(headroom_plus_one)
        .unwrap_or(0)
        .wrapping_sub(1 << 31) as i32;
    (
        one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one),
        num_bits_over_unit,
    )
}

/// `beta * input_scale * diff` in Q5.26 and its exponential in Q0.31
/// (`MultiplyByQuantizedMultiplierGreaterThanOne`, then
/// `exp_on_negative_values`).
#[inline]
fn exp_of_difference(p: &Params, diff: i32) -> i32 {
    // |diff| <= 31 * 2^26 >> left_shift, so the shift cannot overflow.
    let rescaled = srdhm(diff.wrapping_mul(1 << p.left_shift), p.multiplier);
    exp_on_negative_values(rescaled)
}

/// `reference_ops::Softmax` on int8 rows of `depth` elements. The output
/// quantisation (zero point -128, scale 1/256, checked by the model's
/// preparation) is implied by the kernel; a zero point other than -128 is
/// refused.
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
    let _ = output_scale;
    if output_zero_point != -128 {
        return Err(Error::UnsupportedFeature {
            operator: crate::schema::builtin::SOFTMAX,
            what: "an output zero point other than -128",
        });
    }
    let p = params(input_scale, beta)?;
    let (min, max) = (i32::from(i8::MIN), i32::from(i8::MAX));
    for r in 0..rows {
        let start = r.checked_mul(depth).ok_or(SHAPE)?;
        let end = start.checked_add(depth).ok_or(SHAPE)?;
        let row = input.get(start..end).ok_or(SHAPE)?;
        let out = output.get_mut(start..end).ok_or(SHAPE)?;
        let max_in_row = row.iter().map(|&b| i32::from(b as i8)).fold(min, i32::max);

        let mut sum_of_exps = 0i32; // Q12.19
        for &b in row {
            let diff = i32::from(b as i8) - max_in_row;
            if diff >= p.diff_min {
                let exp = exp_of_difference(&p, diff);
                // Rescale<12>: Q0.31 to Q12.19.
                sum_of_exps = sum_of_exps.wrapping_add(rounding_divide_by_pot(
                    exp,
                    ACCUMULATION_INTEGER_BITS as u32,
                ));
            }
        }
        // The row's maximum contributes 1.0, so the sum is at least 2^19;
        // past 2^28 (a sum of 512) the reference shifts by more than 31.
        if !(1 << 19..1 << 28).contains(&sum_of_exps) {
            return Err(Error::UnsupportedFeature {
                operator: crate::schema::builtin::SOFTMAX,
                what: "a sum of exponentials of 512 or more (a row that long)",
            });
        }
        let (shifted_scale, num_bits_over_unit) =
            get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS);
        // num_bits_over_unit + 31 - 8, in 23..=31 by the check above.
        let exponent = u32::try_from(num_bits_over_unit + 31 - 8)
            .ok()
            .filter(|&e| e <= 31)
            .ok_or(Error::Internal("softmax exponent out of range"))?;

        for (o, &b) in out.iter_mut().zip(row) {
            let diff = i32::from(b as i8) - max_in_row;
            let q = if diff >= p.diff_min {
                let exp = exp_of_difference(&p, diff);
                let unsat = rounding_divide_by_pot(srdhm(shifted_scale, exp), exponent);
                clamp(unsat + min, min, max)
            } else {
                min
            };
            *o = q as i8 as u8;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use crate::quant::{expf, quantize_multiplier};

    const Q31: f64 = 2147483648.0;

    /// `exp_on_negative_values` over Q5.26 inputs from -32 to 0 is within
    /// 2^-21 of the exponential: the Taylor polynomial's truncation,
    /// `(1/8)^5 / 120` or about 2^-22 at the ends of `[-1/4, 0)`, dominates
    /// the Q0.31 roundings (the sweep's worst is 2.3e-7 against the exact
    /// exponential); `expf` adds half an f32 ulp.
    #[test]
    fn exponential_matches_expf() {
        let mut worst = 0.0f64;
        let mut a = 0i64;
        while a >= -(1i64 << 31) {
            let raw = exp_on_negative_values(a as i32);
            let x = a as f64 / (1u64 << 26) as f64;
            let want = f64::from(expf(x as f32));
            let got = f64::from(raw) / Q31;
            let err = (got - want).abs();
            let bound = 2f64.powi(-21) + want * 2f64.powi(-24);
            assert!(err <= bound, "exp({x}) = {got}, expf {want}");
            worst = worst.max(err);
            a -= 0x1_2345;
        }
        assert!(worst > 0.0);
        // exp(0) is gemmlowp's One; exp(-1) and exp(-1/4) (the polynomial
        // at the end of its interval) within 2^-21 (1024 units) of the
        // Q0.31 constants.
        assert_eq!(exp_on_negative_values(0), i32::MAX);
        assert!((exp_on_negative_values(-(1 << 26)) - 790_015_084).abs() <= 1024);
        assert!((exp_on_negative_values(-(1 << 24)) - 1_672_461_947).abs() <= 1024);
        // exp(-1/2^26), the smallest step, is the polynomial at the other
        // end of its interval: about 520 units below One, within 2^-21.
        let tiny = exp_on_negative_values(-1);
        assert!(tiny < i32::MAX - 256 && tiny > i32::MAX - 1024, "{tiny}");
        // exp(-32) underflows Q0.31.
        assert!(exp_on_negative_values(i32::MIN) <= 1);
        // Monotonic over a fine sweep near 0.
        let mut prev = i32::MAX;
        for a in (-(1 << 22)..0).rev().step_by(997) {
            let e = exp_on_negative_values(a);
            assert!(e <= prev, "exp not monotonic at {a}");
            prev = e;
        }
    }

    /// `one_over_one_plus_x_for_x_in_0_1` within 8 units of 1 / (1 + a) in
    /// Q0.31 (its Newton-Raphson steps round in Q2.29, 4 units each; the
    /// worst seen is 6.2), and `get_reciprocal` of Q12.19 sums.
    #[test]
    fn reciprocal() {
        let mut a = 0i64;
        while a < 1i64 << 31 {
            let got = f64::from(one_over_one_plus_x_for_x_in_0_1(a as i32));
            let want = (Q31 / (1.0 + a as f64 / Q31)).min(f64::from(i32::MAX));
            assert!((got - want).abs() <= 8.0, "1/(1+{a}): {got} vs {want}");
            a += 0x1234;
        }
        // 1.0 in Q12.19: no bits over unit, reciprocal One.
        assert_eq!(get_reciprocal(1 << 19, 12), (i32::MAX, 0));
        // 3.0: normalised to 1.5, reciprocal 2/3, one bit over unit.
        let (r, bits) = get_reciprocal(3 << 19, 12);
        assert_eq!(bits, 1);
        assert!((r - 1_431_655_765).abs() <= 8, "{r}");
        // 10.0: 1.25 * 2^3, reciprocal 0.8.
        let (r, bits) = get_reciprocal(10 << 19, 12);
        assert_eq!(bits, 3);
        assert!((r - 1_717_986_918).abs() <= 8, "{r}");
    }

    /// The constants equal `QuantizeMultiplier` of the double product,
    /// clamped at 2^31 - 1, and the radius its double formula.
    #[test]
    fn prepare_constants() {
        for &(scale, beta) in &[
            (0.1f32, 1.0f32),
            (0.0390625, 1.0),
            (1.0 / 16.0, 1.0),
            (0.0123, 0.7),
            (3.7e-5, 2.0),
            (25.0, 1.0),
            (200.0, 3.0),
        ] {
            let p = params(scale, beta).unwrap();
            let real = (f64::from(beta) * f64::from(scale) * f64::from(1u32 << 26))
                .min(f64::from(i32::MAX));
            let (m, s) = quantize_multiplier(real);
            assert_eq!(
                (p.multiplier, p.left_shift as i32),
                (m, s),
                "{scale} {beta}"
            );
            let radius = libm::floor(31.0 * f64::from(1u32 << 26) / (1u64 << s) as f64) as i32;
            assert_eq!(p.diff_min, -radius);
        }
        // At most 2^-26 in all: TFLite's check fails.
        assert!(params(1.0 / (1u64 << 26) as f32, 1.0).is_err());
        assert!(params(0.1, 0.0).is_err());
        assert!(params(0.1, -1.0).is_err());
        // Clamped: the multiplier is 2^31 - 1 with shift 31, radius 0.
        assert_eq!(
            params(100.0, 1.0).unwrap(),
            Params {
                multiplier: i32::MAX,
                left_shift: 31,
                diff_min: 0
            }
        );
    }

    /// A row against the float softmax: within one output step, and the
    /// maximum alone of 1.0 saturates at 127.
    #[test]
    fn rows_near_float_softmax() {
        let scale = 0.0625f32;
        let input: [i8; 6] = [-20, 0, 17, 17, -128, 5];
        let bytes = input.map(|v| v as u8);
        let mut out = [0u8; 6];
        softmax(1, 6, scale, 1.0, 1.0 / 256.0, -128, &bytes, &mut out).unwrap();
        let exps = input.map(|v| (f64::from(v) * f64::from(scale)).exp());
        let sum: f64 = exps.iter().sum();
        for (o, e) in out.iter().zip(exps) {
            let want = e / sum * 256.0 - 128.0;
            let got = f64::from(*o as i8);
            assert!((got - want).abs() <= 1.0, "{got} vs {want}");
        }
        let mut one = [0u8; 1];
        softmax(1, 1, scale, 1.0, 1.0 / 256.0, -128, &[42], &mut one).unwrap();
        assert_eq!(one[0] as i8, 127);
        // Differences below diff_min give -128 exactly.
        let mut two = [0u8; 2];
        softmax(1, 2, 100.0, 1.0, 1.0 / 256.0, -128, &[0, 1], &mut two).unwrap();
        assert_eq!(two.map(|b| b as i8), [-128, 127]);
        assert!(softmax(1, 2, scale, 1.0, 1.0 / 256.0, 0, &[0, 1], &mut two).is_err());
        assert!(softmax(2, 2, scale, 1.0, 1.0 / 256.0, -128, &[0, 1], &mut two).is_err());
    }
}
