//! Operators that move bytes without arithmetic: CONCATENATION, PAD and
//! PADV2, SQUEEZE and EXPAND_DIMS (a reshape).
//!
//! TFLite's int8 CONCATENATION requires every input quantised as the output
//! (its `Prepare` checks it), so it is a copy; PAD fills with the output's
//! zero point, PADV2 with its constant value, and both require the input
//! quantised as the output.

use super::{advance, extended, operands, Context, Op};
use super::{Kind, Prepared};
use crate::model::{ElementType, Operands, MAX_OPERANDS};
use crate::schema::{builtin, options};
use crate::{Error, MAX_RANK};

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// A prepared CONCATENATION: `outer` times, each input's `chunk[i]` bytes
/// in turn.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Concat {
    outer: usize,
    chunk: [usize; MAX_OPERANDS],
    inputs: usize,
    pub(crate) bytes: usize,
}

/// Requires `t`'s element type and quantisation to be `like`'s.
fn same_quantisation(
    c: &Context<'_, '_>,
    t: &crate::Tensor<'_>,
    like: &crate::Tensor<'_>,
) -> Result<(), Error> {
    if t.element_type() != like.element_type() {
        return Err(c.invalid("tensors of different element types"));
    }
    if matches!(t.element_type(), ElementType::Int8 | ElementType::Int16)
        && t.quantization() != like.quantization()
    {
        return Err(c.unsupported("inputs quantised unlike the output"));
    }
    Ok(())
}

pub(crate) fn prepare_concat<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(1, MAX_OPERANDS, 1)?;
    let (_, out) = c.output(0)?;
    let opts = c.options(options::CONCATENATION)?;
    let (axis, activation) = match opts {
        Some(t) => (
            t.i32(options::concatenation::AXIS, 0)?,
            t.i8(options::concatenation::FUSED_ACTIVATION, 0)?,
        ),
        None => (0, 0),
    };
    if activation != 0 {
        return Err(c.unsupported("a fused activation"));
    }
    let rank = out.shape.dims().len();
    let axis = if axis < 0 { axis + rank as i32 } else { axis };
    let axis = usize::try_from(axis)
        .ok()
        .filter(|&a| a < rank)
        .ok_or(c.invalid("axis out of range"))?;
    let size = out.element_type().size();
    let inner: usize = out.shape.dims()[axis + 1..].iter().product::<usize>() * size;
    let outer: usize = out.shape.dims()[..axis].iter().product();
    let mut inputs = Operands::default();
    let mut chunk = [0usize; MAX_OPERANDS];
    let mut along = 0usize;
    for (i, slot) in chunk.iter_mut().enumerate().take(c.input_count()) {
        let (t, input) = c.input(i)?;
        same_quantisation(c, &input, &out)?;
        let dims = input.shape.dims();
        if dims.len() != rank || (0..rank).any(|d| d != axis && dims[d] != out.shape.dims()[d]) {
            return Err(c.invalid("input shapes differ off the axis"));
        }
        *slot = dims[axis] * inner;
        along += dims[axis];
        inputs.push(t)?;
    }
    if along != out.shape.dims()[axis] {
        return Err(c.invalid("output size along the axis"));
    }
    let concat = Concat {
        outer,
        chunk,
        inputs: c.input_count(),
        bytes: out.byte_len(),
    };
    Ok(c.prepared(inputs, Op::Concat(concat)))
}

impl Concat {
    pub(crate) fn run(&self, inputs: &[&[u8]], y: &mut [u8]) -> Result<(), Error> {
        let mut at = 0;
        for o in 0..self.outer {
            for (i, &n) in self.chunk[..self.inputs].iter().enumerate() {
                let x = inputs.get(i).ok_or(SHAPE)?;
                let src = x.get(o * n..(o + 1) * n).ok_or(SHAPE)?;
                y.get_mut(at..at + n).ok_or(SHAPE)?.copy_from_slice(src);
                at += n;
            }
        }
        Ok(())
    }
}

/// A prepared PAD or PADV2 of an int8 tensor.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pad {
    input: [usize; MAX_RANK],
    output: [usize; MAX_RANK],
    before: [usize; MAX_RANK],
    value: u8,
}

pub(crate) fn prepare_pad<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    let padv2 = c.code == builtin::PADV2;
    if padv2 {
        c.arity(2, 3, 1)?;
    } else {
        c.arity(2, 2, 1)?;
    }
    c.options(if padv2 { options::PADV2 } else { options::PAD })?;
    let (t, input) = c.input(0)?;
    let (_, paddings) = c.input(1)?;
    let (_, out) = c.output(0)?;
    if input.element_type() != ElementType::Int8 {
        return Err(c.unsupported("element types other than int8"));
    }
    same_quantisation(c, &input, &out)?;
    let zero_point = out.quantization().map_or(0, |q| q.zero_point);
    let value = if padv2 && c.input_count() == 3 {
        let (_, constant) = c.input(2)?;
        match (constant.element_type(), constant.data) {
            (ElementType::Int8, Some([v])) => *v,
            _ => return Err(c.unsupported("a pad value other than one constant int8")),
        }
    } else {
        zero_point as i8 as u8
    };
    let rank = input.shape.dims().len();
    let mut pads = [0i32; 2 * MAX_RANK];
    let n = c.constant_ints(&paddings, &mut pads)?;
    if n != 2 * rank || out.shape.dims().len() != rank {
        return Err(c.invalid("paddings not of shape [rank, 2]"));
    }
    let skip = MAX_RANK - rank;
    let mut before = [0usize; MAX_RANK];
    for d in 0..rank {
        let (b, a) = (pads[2 * d], pads[2 * d + 1]);
        let (b, a) = (
            usize::try_from(b).map_err(|_| c.invalid("negative padding"))?,
            usize::try_from(a).map_err(|_| c.invalid("negative padding"))?,
        );
        if input.shape.dims()[d]
            .checked_add(b)
            .and_then(|x| x.checked_add(a))
            != Some(out.shape.dims()[d])
        {
            return Err(c.invalid("output shape"));
        }
        before[skip + d] = b;
    }
    let bad = || c.unsupported("more dimensions than the largest rank");
    let pad = Pad {
        input: extended(input.shape.dims()).ok_or_else(bad)?,
        output: extended(out.shape.dims()).ok_or_else(bad)?,
        before,
        value,
    };
    Ok(c.prepared(operands(&[t])?, Op::Pad(pad)))
}

impl Pad {
    pub(crate) fn work(&self) -> Option<u64> {
        self.output
            .iter()
            .try_fold(1u64, |acc, &d| acc.checked_mul(d as u64))
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], y: &mut [u8]) -> Result<(), Error> {
        let x = inputs.first().copied().unwrap_or(&[]);
        let mut index = [0usize; MAX_RANK];
        for out in y.iter_mut() {
            let mut at = 0usize;
            let mut inside = true;
            for ((&o, &before), &size) in index.iter().zip(&self.before).zip(&self.input) {
                // Outside the input, `i` wraps to a huge value: `inside`
                // then ends false and `at` is never used.
                let i = o.wrapping_sub(before);
                inside &= i < size;
                at = at.wrapping_mul(size).wrapping_add(i);
            }
            *out = if inside {
                *x.get(at).ok_or(SHAPE)?
            } else {
                self.value
            };
            advance(&mut index, &self.output);
        }
        Ok(())
    }
}

/// SQUEEZE and EXPAND_DIMS: the same bytes under another shape.
pub(crate) fn prepare_reshape<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    let expand = c.code == builtin::EXPAND_DIMS;
    c.arity(if expand { 2 } else { 1 }, if expand { 2 } else { 1 }, 1)?;
    c.options(if expand {
        options::EXPAND_DIMS
    } else {
        options::SQUEEZE
    })?;
    let (t, input) = c.input(0)?;
    let (_, out) = c.output(0)?;
    if input.element_type() != out.element_type() {
        return Err(c.invalid("the output is not the input reshaped"));
    }
    if input.byte_len() != out.byte_len() {
        // A converter leaves the output's shape out (rank 0) when the
        // input's batch is dynamic: LiteRT computes it at run time; this
        // interpreter plans every tensor from the file.
        return Err(if out.shape.dims().is_empty() {
            c.unsupported("an output shape left to be computed at run time")
        } else {
            c.invalid("the output is not the input reshaped")
        });
    }
    Ok(Prepared {
        inputs: Operands::one(t),
        outputs: c.outputs,
        kind: Kind::Reshape {
            bytes: input.byte_len(),
        },
    })
}
