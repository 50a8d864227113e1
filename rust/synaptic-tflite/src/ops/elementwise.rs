//! ADD, SUB, MUL, MAXIMUM and MINIMUM on int8 (ADD on int16 too), with NumPy broadcasting up
//! to [`MAX_RANK`](crate::MAX_RANK) dimensions (TFLite's
//! `BroadcastAdd6DSlow` and kin: every output element is computed on its
//! own, so the loop order does not change a byte).
//!
//! Arithmetic of the reference kernels (`reference_integer_ops::AddFunc`,
//! `SubFunc`, `MulElementwise`), with the multipliers of their `Prepare`:
//! ADD and SUB shift both offset inputs left by 20, scale each by
//! `scale_i / (2 * max(scale_1, scale_2))`, add or subtract, then scale by
//! `2 * max / (2^20 * output_scale)`; MUL scales the product of the offset
//! inputs by `scale_1 * scale_2 / output_scale`. MAXIMUM and MINIMUM
//! compare the stored values (TFLite requires nothing of their
//! quantisation and rescales nothing).
//!
//! ADD on int16 (16x8 quantisation, zero points 0) is `add.cc`'s general
//! int16 path, `reference_ops::AddGeneralParamScale` / `BroadcastAdd6DSlow`
//! on int16: the int8 arithmetic above with a left shift of 15 instead of
//! 20 (`MultiplyByQuantizedMultiplierSmallerThanOneExp`, gemmlowp's double
//! rounding) and the int16 clamp. That path runs when
//! `AddOptions.pot_scale_int16` is false (TensorFlow's converter writes
//! false) or a scale is not a power of two; the power-of-two path
//! (`pot_scale_int16` true, the schema's default, and all three scales
//! powers of two) is refused as unsupported.

use super::Prepared;
use super::{advance, extended, int8, operands, Context, Op};
use crate::model::{ElementType, Model};
use crate::quant::{
    activation_range, activation_range_in, clamp, multiply_by_quantized_multiplier, product_ratio,
    ratio, Multiplier, Requant,
};
use crate::schema::{builtin, options};
use crate::{Error, MAX_RANK};

/// Which operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Operation {
    Add,
    Sub,
    Mul,
    Maximum,
    Minimum,
}

/// A prepared binary element-wise operator.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Binary {
    operation: Operation,
    /// Output dimensions, right-aligned to [`MAX_RANK`].
    dims: [usize; MAX_RANK],
    /// Element strides of each input along the output's dimensions (0
    /// where the input is broadcast).
    strides: [[usize; MAX_RANK]; 2],
    input_offset: [i32; 2],
    output_offset: i32,
    /// ADD/SUB: the two input multipliers and the output's; MUL: the
    /// output's in `multipliers[2]`.
    multipliers: [(i32, i32); 3],
    act_min: i32,
    act_max: i32,
    /// ADD on int16 (elements of two bytes, left shift 15).
    int16: bool,
}

/// `ADD`/`SUB`'s left shift of the offset inputs for int8.
const LEFT_SHIFT: i32 = 20;
/// `ADD`'s left shift for int16 (`65535 << 15` fits an int32).
const LEFT_SHIFT_INT16: i32 = 15;
/// `AddOptions.pot_scale_int16` (schema slot 1, default true).
const POT_SCALE_INT16: usize = 1;

/// Whether `add.cc`'s `CheckedLog2` might call `scale` a power of two
/// (`|log2(scale) - round(log2(scale))| < 1e-3` in float): its significand
/// within `2^±0.0011` of a power of two, a margin past the reference's
/// float rounding.
fn near_power_of_two(scale: f32) -> bool {
    let fraction = scale.to_bits() & 0x7f_ffff;
    fraction <= 6399 || fraction >= (1 << 23) - 12788
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(2, 2, 1)?;
    let (t1, in1) = c.input(0)?;
    let (t2, in2) = c.input(1)?;
    let (_, out) = c.output(0)?;
    let int16 = cfg!(feature = "ops-16x8")
        && c.code == builtin::ADD
        && in1.element_type == ElementType::Int16;
    if in1.element_type != ElementType::Int8 && !int16 {
        return Err(c.unsupported("element types other than int8"));
    }
    let ty = in1.element_type;
    let q1 = c.quantization(&in1, ty)?;
    let q2 = c.quantization(&in2, ty)?;
    let qo = c.quantization(&out, ty)?;
    let (operation, tag) = match c.code {
        builtin::ADD => (Operation::Add, options::ADD),
        builtin::SUB => (Operation::Sub, options::SUB),
        builtin::MUL => (Operation::Mul, options::MUL),
        builtin::MAXIMUM => (Operation::Maximum, options::MAXIMUM_MINIMUM),
        _ => (Operation::Minimum, options::MAXIMUM_MINIMUM),
    };
    let activation = match c.options(tag)? {
        Some(t) if matches!(operation, Operation::Add | Operation::Sub | Operation::Mul) => {
            t.i8(options::arithmetic::FUSED_ACTIVATION, 0)?
        }
        _ => 0,
    };
    let activation = Model::activation(c.index, activation)?;
    let (act_min, act_max) = if int16 {
        // Options absent: LiteRT's parser leaves `pot_scale_int16` false.
        let pot = match c.options(tag)? {
            Some(t) => t.u8(POT_SCALE_INT16, 1)? != 0,
            None => false,
        };
        if pot
            && [q1.scale, q2.scale, qo.scale]
                .into_iter()
                .all(near_power_of_two)
        {
            return Err(c.unsupported("int16 ADD with power-of-two scales (pot_scale_int16)"));
        }
        activation_range_in(activation, qo, i32::from(i16::MIN), i32::from(i16::MAX))
    } else {
        activation_range(activation, qo)
    };
    let left_shift = if int16 { LEFT_SHIFT_INT16 } else { LEFT_SHIFT };
    // Broadcasting: the output shape is the inputs' broadcast shape.
    let (d1, d2, d_out) = (in1.shape.dims(), in2.shape.dims(), out.shape.dims());
    let rank = d1.len().max(d2.len());
    if d_out.len() != rank {
        return Err(c.invalid("output shape is not the broadcast shape"));
    }
    let bad = || c.unsupported("more dimensions than the largest rank");
    let (e1, e2, dims) = (
        extended(d1).ok_or_else(bad)?,
        extended(d2).ok_or_else(bad)?,
        extended(d_out).ok_or_else(bad)?,
    );
    let mut strides = [[0usize; MAX_RANK]; 2];
    for (s, e) in strides.iter_mut().zip([e1, e2]) {
        let mut stride = 1;
        for d in (0..MAX_RANK).rev() {
            if e[d] == dims[d] {
                s[d] = stride;
            } else if e[d] == 1 {
                s[d] = 0;
            } else {
                return Err(c.invalid("shapes do not broadcast"));
            }
            stride *= e[d];
        }
    }
    for d in 0..MAX_RANK {
        if dims[d] != e1[d].max(e2[d]) {
            return Err(c.invalid("output shape is not the broadcast shape"));
        }
    }
    let unsupported_scale = || c.unsupported("scales whose ratio TFLite's multipliers cannot hold");
    let multipliers = match operation {
        Operation::Add | Operation::Sub => {
            // `2 * max` in float, as the reference (exact: a power of two).
            let twice_max = 2.0 * q1.scale.max(q2.scale);
            let shifted_output = qo.scale * (1 << left_shift) as f32;
            [
                ratio(q1.scale, twice_max).ok_or_else(unsupported_scale)?,
                ratio(q2.scale, twice_max).ok_or_else(unsupported_scale)?,
                ratio(twice_max, shifted_output).ok_or_else(unsupported_scale)?,
            ]
        }
        Operation::Mul => [
            (0, 0),
            (0, 0),
            product_ratio(q1.scale, q2.scale, qo.scale).ok_or_else(unsupported_scale)?,
        ],
        Operation::Maximum | Operation::Minimum => [(0, 0); 3],
    };
    if matches!(operation, Operation::Add | Operation::Sub)
        && multipliers.iter().any(|&(_, shift)| shift > 0)
    {
        return Err(unsupported_scale());
    }
    if multipliers.iter().any(|&(_, shift)| shift > 30) {
        return Err(unsupported_scale());
    }
    let binary = Binary {
        operation,
        dims,
        strides,
        input_offset: [-q1.zero_point, -q2.zero_point],
        output_offset: qo.zero_point,
        multipliers,
        act_min,
        act_max,
        int16,
    };
    Ok(c.prepared(operands(&[t1, t2])?, Op::Binary(binary)))
}

impl Binary {
    pub(crate) fn work(&self) -> Option<u64> {
        self.dims
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
    }

    fn element(&self, x1: i32, x2: i32) -> i32 {
        let [m1, m2, mo] = self.multipliers;
        let (a, b) = (
            x1.wrapping_add(self.input_offset[0]),
            x2.wrapping_add(self.input_offset[1]),
        );
        let raw = match self.operation {
            Operation::Maximum => return x1.max(x2),
            Operation::Minimum => return x1.min(x2),
            Operation::Mul => multiply_by_quantized_multiplier(a.wrapping_mul(b), mo.0, mo.1),
            Operation::Add | Operation::Sub => {
                let shift = if self.int16 {
                    LEFT_SHIFT_INT16
                } else {
                    LEFT_SHIFT
                } as u32;
                let sa = multiply_by_quantized_multiplier(a.wrapping_shl(shift), m1.0, m1.1);
                let sb = multiply_by_quantized_multiplier(b.wrapping_shl(shift), m2.0, m2.1);
                let sum = if self.operation == Operation::Add {
                    sa.wrapping_add(sb)
                } else {
                    sa.wrapping_sub(sb)
                };
                multiply_by_quantized_multiplier(sum, mo.0, mo.1)
            }
        };
        clamp(
            raw.wrapping_add(self.output_offset),
            self.act_min,
            self.act_max,
        )
    }

    /// The elements of both inputs at output `index`.
    #[inline(always)]
    fn offsets(&self, index: &[usize; MAX_RANK]) -> (usize, usize) {
        index
            .iter()
            .zip(&self.strides[0])
            .zip(&self.strides[1])
            .fold((0, 0), |(a, b), ((&i, &s1), &s2)| (a + i * s1, b + i * s2))
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], y: &mut [u8]) -> Result<(), Error> {
        let [x1, x2] = [0, 1].map(|i| inputs.get(i).copied().unwrap_or(&[]));
        let mut index = [0usize; MAX_RANK];
        // The constant compiles the int16 loop out of a build without 16x8.
        if cfg!(feature = "ops-16x8") && self.int16 {
            for out in y.chunks_exact_mut(2) {
                let (i1, i2) = self.offsets(&index);
                let v = self.element(int16(x1, i1)?, int16(x2, i2)?) as i16;
                out.copy_from_slice(&v.to_le_bytes());
                advance(&mut index, &self.dims);
            }
            return Ok(());
        }
        if matches!(self.operation, Operation::Add | Operation::Sub) {
            return self.add_int8(x1, x2, y);
        }
        for out in y.iter_mut() {
            let (i1, i2) = self.offsets(&index);
            *out = self.element(int8(x1, i1)?, int8(x2, i2)?) as i8 as u8;
            advance(&mut index, &self.dims);
        }
        Ok(())
    }

    /// int8 ADD and SUB. Each input's scaled term depends on its byte
    /// alone, so both are tabled once (256 values each, the reference's
    /// arithmetic); an element is then two lookups, a sum and the output's
    /// requantisation (a [`Requant`] where the output multiplier shifts
    /// right). Inputs of the output's shape (no broadcasting) run as one
    /// loop over the three.
    fn add_int8(&self, x1: &[u8], x2: &[u8], y: &mut [u8]) -> Result<(), Error> {
        let [m1, m2, mo] = self.multipliers;
        let table = |offset: i32, (m, shift): (i32, i32)| {
            let mut t = [0i32; 256];
            for (v, t) in t.iter_mut().enumerate() {
                let x = i32::from(v as u8 as i8).wrapping_add(offset);
                *t = multiply_by_quantized_multiplier(x.wrapping_shl(LEFT_SHIFT as u32), m, shift);
            }
            t
        };
        let mut t2 = table(self.input_offset[1], m2);
        if self.operation == Operation::Sub {
            t2.iter_mut().for_each(|t| *t = t.wrapping_neg());
        }
        let t1 = table(self.input_offset[0], m1);
        let output = Multiplier::new(mo.0, mo.1);
        match Requant::new(output, self.output_offset) {
            Some(r) => self.add_tabled(x1, x2, y, (&t1, &t2), |sum| r.apply(sum)),
            None => self.add_tabled(x1, x2, y, (&t1, &t2), |sum| {
                output.apply(sum).wrapping_add(self.output_offset)
            }),
        }
    }

    /// [`add_int8`](Self::add_int8) with the tables `t` and the output's
    /// requantisation (offset added) `requantize`.
    #[inline(always)]
    fn add_tabled(
        &self,
        x1: &[u8],
        x2: &[u8],
        y: &mut [u8],
        (t1, t2): (&[i32; 256], &[i32; 256]),
        requantize: impl Fn(i32) -> i32,
    ) -> Result<(), Error> {
        let element = |a: u8, b: u8| {
            let sum = t1[usize::from(a)].wrapping_add(t2[usize::from(b)]);
            clamp(requantize(sum), self.act_min, self.act_max) as i8 as u8
        };
        if x1.len() == y.len() && x2.len() == y.len() {
            for ((o, &a), &b) in y.iter_mut().zip(x1).zip(x2) {
                *o = element(a, b);
            }
            return Ok(());
        }
        let mut index = [0usize; MAX_RANK];
        for out in y.iter_mut() {
            let (i1, i2) = self.offsets(&index);
            let byte = |x: &[u8], i: usize| x.get(i).copied().ok_or(OUTSIDE);
            *out = element(byte(x1, i1)?, byte(x2, i2)?);
            advance(&mut index, &self.dims);
        }
        Ok(())
    }
}

const OUTSIDE: Error = Error::Internal("element outside its tensor");

/// Element `i` of an int16 tensor (little-endian).
fn int16(bytes: &[u8], i: usize) -> Result<i32, Error> {
    match bytes.get(2 * i..2 * i + 2) {
        Some(&[lo, hi]) => Ok(i32::from(i16::from_le_bytes([lo, hi]))),
        _ => Err(OUTSIDE),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// The tabled int8 ADD and SUB against the reference arithmetic
    /// (`element`) on every pair of input bytes, for random scales, zero
    /// points and activation ranges, with and without broadcasting.
    #[test]
    fn tabled_add_and_sub_equal_the_reference_arithmetic() {
        let mut s = 0x6c07_8965u32;
        let mut next = move || {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            s
        };
        let bytes: std::vec::Vec<u8> = (0..=255).collect();
        for case in 0..300 {
            // Scales 2^-12 to 2^4, as f32.
            let mut scale = || f32::from_bits((115 + next() % 17) << 23 | (next() & 0x7f_ffff));
            let (s1, s2, so) = (scale(), scale(), scale());
            let twice_max = 2.0 * s1.max(s2);
            let multipliers = [
                ratio(s1, twice_max).unwrap(),
                ratio(s2, twice_max).unwrap(),
                ratio(twice_max, so * (1 << LEFT_SHIFT) as f32).unwrap(),
            ];
            if multipliers.iter().any(|&(_, shift)| shift > 0) {
                continue;
            }
            let zero = |next: &mut dyn FnMut() -> u32| (next() % 256) as i32 - 128;
            let output_offset = zero(&mut next);
            let (act_min, act_max) = if case % 2 == 0 {
                (-128, 127)
            } else {
                (output_offset, (output_offset + 50).min(127))
            };
            let mut dims = [1; MAX_RANK];
            dims[MAX_RANK - 1] = 256;
            let mut binary = Binary {
                operation: if case % 3 == 0 {
                    Operation::Sub
                } else {
                    Operation::Add
                },
                dims,
                strides: [[0; MAX_RANK]; 2],
                input_offset: [zero(&mut next), zero(&mut next)],
                output_offset,
                multipliers,
                act_min,
                act_max,
                int16: false,
            };
            // Every pair: x1 along the last axis, x2 broadcast (one byte)
            // for each of its 256 values; then x2 the full row too.
            binary.strides[0][MAX_RANK - 1] = 1;
            let mut y = [0u8; 256];
            for b in 0..=255u8 {
                binary.add_int8(&bytes, &[b], &mut y).unwrap();
                for (a, &got) in y.iter().enumerate() {
                    let want = binary.element(i32::from(a as u8 as i8), i32::from(b as i8));
                    assert_eq!(got as i8 as i32, want, "case {case}: {a} {b}");
                }
            }
            binary.strides[1][MAX_RANK - 1] = 1;
            let x2: std::vec::Vec<u8> = (0..256).map(|_| next() as u8).collect();
            binary.add_int8(&bytes, &x2, &mut y).unwrap();
            for (a, (&got, &b)) in y.iter().zip(&x2).enumerate() {
                let want = binary.element(i32::from(a as u8 as i8), i32::from(b as i8));
                assert_eq!(got as i8 as i32, want, "case {case}: {a} {b}");
            }
        }
    }
}
