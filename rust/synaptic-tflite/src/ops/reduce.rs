//! MEAN on int8.
//!
//! LiteRT's `reduce.cc` sends every int8 MEAN of its reference kernel
//! (`EvalMean<kReference>` → `EvalQuantizedMean`) to
//! `reference_ops::QuantizedMeanOrSum` with `compute_sum = false`,
//! whatever the axes (the 4D height-and-width special case,
//! `optimized_integer_ops::Mean`, is taken by the optimised kernel only)
//! and whether or not the input is quantised as the output. Its
//! arithmetic, repeated here:
//!
//! * `PrepareMeanOrSum`: `(multiplier, shift) = QuantizeMultiplier(double(
//!   input_scale) / double(output_scale))`;
//! * the sum of the int8 values over the reduced axes (duplicate and
//!   negative axes resolved by `ResolveAxis`), in int32 (exact, so its
//!   order is irrelevant; wrapping as the C++ would on absurd sizes);
//! * with `n` the number of elements summed, `s = min(floor(log2 n), 32,
//!   31 + shift)`, the multiplier becomes `(multiplier << s) / n`
//!   (truncating int64 division) and the shift `shift - s`;
//! * the output is `MultiplyByQuantizedMultiplier(int32(sum -
//!   input_zero_point * n), multiplier, shift) + output_zero_point` (the
//!   double-rounding form), clamped to int8.

use super::Prepared;
use super::{operands, Context, Op};
use crate::model::ElementType;
use crate::quant::ratio;
use crate::quant::{clamp, multiply_by_quantized_multiplier};
use crate::schema::options;
use crate::{Error, MAX_RANK};

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// Most entries of the axis operand read (duplicates allowed).
const MAX_AXES: usize = 32;

/// The iteration of a reduction: output elements over `kept`, each the sum
/// over `reduced` (both right-aligned to [`MAX_RANK`], with input element
/// strides).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Reduction {
    kept: [usize; MAX_RANK],
    kept_strides: [usize; MAX_RANK],
    reduced: [usize; MAX_RANK],
    reduced_strides: [usize; MAX_RANK],
    /// Elements summed into each output.
    count: usize,
}

/// The reduction of an input of dimensions `dims` over `axes` (negative
/// counted from the end, duplicates ignored), with the output dimensions
/// TFLite gives it (`keep_dims`: the reduced ones as 1), or why not.
pub(crate) fn plan(
    dims: &[usize],
    axes: &[i32],
    keep_dims: bool,
    out: &mut [usize; MAX_RANK],
) -> Result<(Reduction, usize), &'static str> {
    let rank = dims.len();
    let skip = MAX_RANK
        .checked_sub(rank)
        .ok_or("more dimensions than the largest rank")?;
    let mut is_axis = [false; MAX_RANK];
    for &a in axes {
        let a = if a < 0 { a + rank as i32 } else { a };
        let a = usize::try_from(a)
            .ok()
            .filter(|&a| a < rank)
            .ok_or("axis out of range")?;
        is_axis[a] = true;
    }
    let mut r = Reduction {
        kept: [1; MAX_RANK],
        kept_strides: [0; MAX_RANK],
        reduced: [1; MAX_RANK],
        reduced_strides: [0; MAX_RANK],
        count: 1,
    };
    let mut stride = 1usize;
    let mut out_rank = 0;
    for d in (0..rank).rev() {
        if is_axis[d] {
            r.reduced[skip + d] = dims[d];
            r.reduced_strides[skip + d] = stride;
            r.count *= dims[d];
        } else {
            r.kept[skip + d] = dims[d];
            r.kept_strides[skip + d] = stride;
        }
        stride *= dims[d];
    }
    for d in 0..rank {
        if !is_axis[d] || keep_dims {
            out[out_rank] = if is_axis[d] { 1 } else { dims[d] };
            out_rank += 1;
        }
    }
    Ok((r, out_rank))
}

/// `QuantizedMeanOrSum`'s multiplier of the mean of `count` elements from
/// `QuantizeMultiplier(input_scale / output_scale)`.
pub(crate) fn mean_multiplier(multiplier: i32, shift: i32, count: usize) -> (i32, i32) {
    let count = count.max(1) as u64;
    let s = (63 - count.leading_zeros() as i32)
        .min(32)
        .min(31 + shift)
        .max(0);
    let m = (i64::from(multiplier) << s) / count as i64;
    (m as i32, shift - s)
}

/// A prepared int8 MEAN.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mean {
    reduction: Reduction,
    input_zero_point: i32,
    output_zero_point: i32,
    multiplier: i32,
    shift: i32,
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(2, 2, 1)?;
    let (t, input) = c.input(0)?;
    let (_, axis) = c.input(1)?;
    let (_, out) = c.output(0)?;
    if input.element_type() != ElementType::Int8 {
        return Err(c.unsupported("element types other than int8"));
    }
    let qi = c.quantization(&input, ElementType::Int8)?;
    let qo = c.quantization(&out, ElementType::Int8)?;
    if axis.element_type() != ElementType::Int32 {
        return Err(c.invalid("axis not int32"));
    }
    let keep_dims = match c.options(options::REDUCER)? {
        Some(o) => o.u8(options::reducer::KEEP_DIMS, 0)? != 0,
        None => false,
    };
    let mut axes = [0i32; MAX_AXES];
    let n = c.constant_ints(&axis, &mut axes)?;
    let mut dims = [0usize; MAX_RANK];
    let (reduction, rank) =
        plan(input.shape.dims(), &axes[..n], keep_dims, &mut dims).map_err(|r| c.invalid(r))?;
    if out.shape.dims() != &dims[..rank] {
        return Err(c.invalid("output shape is not the reduced input shape"));
    }
    let (m, s) = ratio(qi.scale, qo.scale)
        .ok_or(c.unsupported("scales whose ratio TFLite's multipliers cannot hold"))?;
    let (multiplier, shift) = mean_multiplier(m, s, reduction.count);
    if shift > 30 {
        return Err(c.unsupported("scales whose ratio TFLite's multipliers cannot hold"));
    }
    let mean = Mean {
        reduction,
        input_zero_point: qi.zero_point,
        output_zero_point: qo.zero_point,
        multiplier,
        shift,
    };
    Ok(c.prepared(operands(&[t])?, Op::Mean(mean)))
}

/// Advances the row-major `index` over `dims`, moving `at` by `strides`.
#[inline]
fn next(
    index: &mut [usize; MAX_RANK],
    at: &mut usize,
    dims: &[usize; MAX_RANK],
    strides: &[usize; MAX_RANK],
) {
    for d in (0..MAX_RANK).rev() {
        index[d] += 1;
        *at += strides[d];
        if index[d] < dims[d] {
            return;
        }
        *at -= strides[d] * dims[d];
        index[d] = 0;
    }
}

impl Mean {
    pub(crate) fn work(&self) -> Option<u64> {
        self.reduction
            .kept
            .iter()
            .try_fold(self.reduction.count as u64, |acc, &d| {
                acc.checked_mul(d as u64)
            })
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        if o != 0 {
            return Err(Error::Internal("MEAN has one output"));
        }
        let x = inputs.first().copied().unwrap_or(&[]);
        let r = &self.reduction;
        let outputs: usize = r.kept.iter().product();
        if y.len() != outputs {
            return Err(SHAPE);
        }
        let offset = i64::from(self.input_zero_point) * r.count as i64;
        let (mut kept, mut base) = ([0usize; MAX_RANK], 0usize);
        for out in y.iter_mut() {
            let (mut index, mut at) = ([0usize; MAX_RANK], base);
            let mut sum = 0i32;
            for _ in 0..r.count {
                sum = sum.wrapping_add(i32::from(*x.get(at).ok_or(SHAPE)? as i8));
                next(&mut index, &mut at, &r.reduced, &r.reduced_strides);
            }
            let shifted = (i64::from(sum) - offset) as i32;
            let value = multiply_by_quantized_multiplier(shifted, self.multiplier, self.shift)
                .wrapping_add(self.output_zero_point);
            *out = clamp(value, -128, 127) as i8 as u8;
            next(&mut kept, &mut base, &r.kept, &r.kept_strides);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{mean_multiplier, plan, Mean};
    use crate::MAX_RANK;

    fn mean(
        dims: &[usize],
        axes: &[i32],
        keep: bool,
        x: &[i8],
        m: (i32, i32),
        zp: (i32, i32),
    ) -> std::vec::Vec<i8> {
        let mut out = [0usize; MAX_RANK];
        let (reduction, _) = plan(dims, axes, keep, &mut out).unwrap();
        let (multiplier, shift) = mean_multiplier(m.0, m.1, reduction.count);
        let op = Mean {
            reduction,
            input_zero_point: zp.0,
            output_zero_point: zp.1,
            multiplier,
            shift,
        };
        let x: std::vec::Vec<u8> = x.iter().map(|&v| v as u8).collect();
        let mut y = std::vec![0u8; reduction.kept.iter().product()];
        op.run(&[&x], 0, &mut y).unwrap();
        y.iter().map(|&v| v as i8).collect()
    }

    /// `QuantizeMultiplier(1.0)`.
    const ONE: (i32, i32) = (1 << 30, 1);

    #[test]
    fn output_shapes() {
        let mut out = [0usize; MAX_RANK];
        let (r, rank) = plan(&[2, 3, 4], &[-1, 0, 2], false, &mut out).unwrap();
        assert_eq!((&out[..rank], r.count), (&[3usize][..], 8));
        let (_, rank) = plan(&[2, 3, 4], &[1], true, &mut out).unwrap();
        assert_eq!(&out[..rank], &[2, 1, 4]);
        assert!(plan(&[2, 3, 4], &[3], true, &mut out).is_err());
        assert!(plan(&[2, 3, 4], &[-4], true, &mut out).is_err());
    }

    #[test]
    fn mean_rounds_ties_up() {
        // Same scales, so the multiplier is 1/2 with shift 0: the tie is
        // rounded by SaturatingRoundingDoublingHighMul, upwards: mean of
        // [1, 2] = 1.5 -> 2, of [-1, -2] = -1.5 -> -1; of [1, 4, 4] = 3
        // (the multiplier 1/3 a little low, rounded to nearest).
        assert_eq!(
            mean(&[2, 2], &[1], false, &[1, 2, -1, -2], ONE, (0, 0)),
            [2, -1]
        );
        assert_eq!(mean(&[1, 3], &[-1], true, &[1, 4, 4], ONE, (0, 0)), [3]);
        // Over axis 0 of [[1, 2] [3, 6]]: [2, 4].
        assert_eq!(
            mean(&[2, 2], &[0, -2], false, &[1, 2, 3, 6], ONE, (0, 0)),
            [2, 4]
        );
    }

    #[test]
    fn zero_points_and_clamp() {
        // Input zero point 10, output zero point -5: mean(x - 10) - 5.
        assert_eq!(mean(&[2], &[0], false, &[20, 30], ONE, (10, -5)), [10]);
        // A multiplier of 4 (input scale 4x the output's) saturates.
        assert_eq!(
            mean(&[2], &[0], false, &[100, 120], (1 << 30, 3), (0, 0)),
            [127]
        );
        assert_eq!(
            mean(&[2], &[0], false, &[-100, -120], (1 << 30, 3), (0, 0)),
            [-128]
        );
    }

    #[test]
    fn multiplier_absorbs_the_count() {
        // 1/3 of QuantizeMultiplier(1.0): s = 1, (2^30 << 1) / 3.
        assert_eq!(mean_multiplier(1 << 30, 1, 3), (715_827_882, 0));
        // Count 2^40 is capped at a shift of 32.
        assert_eq!(mean_multiplier(1 << 30, 1, 1 << 40).1, -31);
        // 31 + shift caps it too.
        assert_eq!(mean_multiplier(1 << 30, -20, 1 << 20), (1 << 21, -31));
    }
}
