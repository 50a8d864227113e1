//! ADD, SUB, MUL, MAXIMUM and MINIMUM on int8, with NumPy broadcasting up
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

use super::{advance, extended, int8, operands, Context, Op};
use crate::model::{ElementType, Model, Prepared};
use crate::quant::{
    activation_range, clamp, multiply_by_quantized_multiplier, product_ratio, ratio,
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
}

/// `ADD`/`SUB`'s left shift of the offset inputs for int8.
const LEFT_SHIFT: i32 = 20;

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(2, 2, 1)?;
    let (t1, in1) = c.input(0)?;
    let (t2, in2) = c.input(1)?;
    let (_, out) = c.output(0)?;
    if in1.element_type != ElementType::Int8 {
        return Err(c.unsupported("element types other than int8"));
    }
    let q1 = c.quantization(&in1, ElementType::Int8)?;
    let q2 = c.quantization(&in2, ElementType::Int8)?;
    let qo = c.quantization(&out, ElementType::Int8)?;
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
    let (act_min, act_max) = activation_range(activation, qo);
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
            let shifted_output = qo.scale * (1 << LEFT_SHIFT) as f32;
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
                let sa =
                    multiply_by_quantized_multiplier(a.wrapping_shl(LEFT_SHIFT as u32), m1.0, m1.1);
                let sb =
                    multiply_by_quantized_multiplier(b.wrapping_shl(LEFT_SHIFT as u32), m2.0, m2.1);
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

    pub(crate) fn run(&self, inputs: &[&[u8]], y: &mut [u8]) -> Result<(), Error> {
        let [x1, x2] = [0, 1].map(|i| inputs.get(i).copied().unwrap_or(&[]));
        let mut index = [0usize; MAX_RANK];
        for out in y.iter_mut() {
            let (i1, i2) = index
                .iter()
                .zip(&self.strides[0])
                .zip(&self.strides[1])
                .fold((0, 0), |(a, b), ((&i, &s1), &s2)| (a + i * s1, b + i * s2));
            *out = self.element(int8(x1, i1)?, int8(x2, i2)?) as i8 as u8;
            advance(&mut index, &self.dims);
        }
        Ok(())
    }
}
