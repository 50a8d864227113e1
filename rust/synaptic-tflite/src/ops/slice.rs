//! STRIDED_SLICE and SPLIT, for every element type: copies, so the output
//! quantisation is not looked at.
//!
//! STRIDED_SLICE repeats TFLite's `strided_slice.cc`
//! (`BuildStridedSliceParams`: the ellipsis expanded to the dimensions the
//! begin/end/strides vectors leave out, new axes inserted as dimensions of
//! 1, the masks moved to the effective dimensions) and
//! `reference_ops::StridedSlice` with `StartForAxis` / `EndForAxis` (the
//! logic of `strided_slice_logic.h`): a negative index counts from the end,
//! the start is clamped to `0..=size` (`-1..=size-1` for a negative
//! stride), `begin_mask` / `end_mask` take the whole axis, a shrunk axis
//! takes the one element at its start, `offset` makes `end` relative to
//! `begin`. All of it is worked out once into a [`Gather`].
//!
//! SPLIT repeats `split.cc` + `reference_ops::Split`: the axis (its first
//! input, a constant scalar, negative counted from the end) divided evenly
//! into `num_splits` outputs.
//!
//! SPLIT_V repeats `split_v.cc` (`ResizeOutputTensors`) +
//! `reference_ops::Split`: the axis (its third input, a constant int32
//! scalar, negative counted from the end) divided into consecutive parts of
//! the sizes of `size_splits` (its second input, a constant int32 or int64
//! vector of `num_splits` entries), where one entry may be -1: the rest of
//! the axis (the other entries may not add up to more than the axis). Without
//! a -1 the sizes must add up to the axis.

use super::transpose::{row_major, Gather};
use super::Prepared;
use super::{operands, Context, Op};
use crate::model::{ElementType, Tensor, MAX_OPERANDS};
use crate::schema::{builtin, options};
use crate::{Error, MAX_RANK};

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// Most entries of `begin`, `end` and `strides` (TFLite's limit).
const MAX_INDICES: usize = 31;
/// Most effective dimensions: the input's and one new axis per index.
const MAX_EFFECTIVE: usize = MAX_RANK + MAX_INDICES;

/// A prepared STRIDED_SLICE, SPLIT or SPLIT_V.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Slice {
    /// STRIDED_SLICE.
    Strided(Gather),
    /// SPLIT: `outer` times, output `o` takes `chunk` bytes at `o * chunk`
    /// of each input row of `outputs * chunk` bytes.
    Split {
        outer: usize,
        chunk: usize,
        outputs: usize,
    },
    /// SPLIT_V: `outer` times, output `o` takes bytes `bounds[o]..bounds[o
    /// + 1]` of each input row of `row` bytes.
    SplitV {
        outer: usize,
        row: usize,
        bounds: [usize; MAX_OPERANDS + 1],
        outputs: usize,
    },
}

/// `StridedSliceOptions`.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Masks {
    pub begin: u32,
    pub end: u32,
    pub ellipsis: u32,
    pub new_axis: u32,
    pub shrink: u32,
    pub offset: bool,
}

/// Bit `i` of `mask` (`uint32_t{1} << i & mask`, none past bit 31).
fn bit(mask: u32, i: usize) -> bool {
    i < 32 && mask >> i & 1 == 1
}

/// One dimension of the slice after `BuildStridedSliceParams`.
#[derive(Clone, Copy, Default)]
struct Axis {
    size: i64,
    start: i32,
    stop: i32,
    stride: i32,
    begin_mask: bool,
    end_mask: bool,
    shrink: bool,
    /// The input dimension (none for a new axis).
    input: Option<usize>,
}

/// `strided_slice::Clamp`.
fn clamp(v: i32, lo: i32, hi: i32) -> i32 {
    if hi < v {
        hi
    } else if v < lo {
        lo
    } else {
        v
    }
}

impl Axis {
    /// `StartForAxis`.
    fn start(&self) -> i32 {
        let size = self.size as i32;
        let mut start = self.start;
        if start < 0 {
            start = start.wrapping_add(size);
        }
        start = if self.stride > 0 {
            clamp(start, 0, size)
        } else {
            clamp(start, -1, size - 1)
        };
        if self.begin_mask {
            start = if self.stride > 0 { 0 } else { size - 1 };
        }
        start
    }

    /// `EndForAxis`.
    fn stop(&self, start: i32, offset: bool) -> i32 {
        let size = self.size as i32;
        if self.shrink {
            return if start >= size { start } else { start + 1 };
        }
        let mut end = self.stop;
        if offset {
            end = end.wrapping_add(start);
        }
        if end < 0 {
            end = end.wrapping_add(size);
        }
        end = if self.stride > 0 {
            clamp(end, 0, size)
        } else {
            clamp(end, -1, size - 1)
        };
        if self.end_mask {
            end = if self.stride > 0 { size } else { -1 };
        }
        end
    }
}

/// The copy STRIDED_SLICE makes of an input of dimensions `dims` (elements
/// of `size` bytes), or why not.
pub(crate) fn plan_strided(
    dims: &[usize],
    begin: &[i32],
    end: &[i32],
    strides: &[i32],
    m: Masks,
    size: usize,
) -> Result<Gather, &'static str> {
    let begin_count = begin.len();
    if end.len() != begin_count || strides.len() != begin_count {
        return Err("begin, end and strides of different lengths");
    }
    if begin_count > MAX_INDICES {
        return Err("more than 31 indices");
    }
    let input_dims = dims.len();
    let num_add_axis = (0..begin_count)
        .filter(|&i| !bit(m.ellipsis, i) && bit(m.new_axis, i))
        .count();
    let effective_dims = input_dims + num_add_axis;

    // Where the ellipsis expands and where the new axes go.
    let mut ellipsis = [false; MAX_EFFECTIVE];
    let mut new_axis = [false; MAX_EFFECTIVE];
    let (mut ellipsis_start, mut expanded_ellipsis) = (effective_dims, 0usize);
    let mut i = 0;
    while i < effective_dims {
        if bit(m.ellipsis, i) {
            ellipsis_start = i;
            let end = (i + 1).max(
                (i + 1 + num_add_axis + input_dims)
                    .saturating_sub(begin_count)
                    .min(effective_dims),
            );
            expanded_ellipsis = end - ellipsis_start - 1;
            while i < end {
                ellipsis[i] = true;
                i += 1;
            }
            continue;
        }
        if bit(m.new_axis, i.wrapping_sub(expanded_ellipsis)) {
            new_axis[i] = true;
        }
        i += 1;
    }

    // The effective dimensions and their indices.
    let mut axes = [Axis::default(); MAX_EFFECTIVE];
    let (mut added_ellipsis, mut added_axes) = (0usize, 0usize);
    let input_dim = |j: usize| {
        dims.get(j)
            .map(|&d| (d as i64, Some(j)))
            .ok_or("ellipsis or new axes past the input's rank")
    };
    for i in 0..effective_dims {
        let a = &mut axes[i];
        a.stride = 1;
        if ellipsis[i] {
            added_ellipsis = i.saturating_sub(ellipsis_start);
            a.begin_mask = true;
            a.end_mask = true;
            (a.size, a.input) = input_dim(i - added_axes)?;
        } else if new_axis[i] {
            a.stop = 1;
            a.size = 1;
            added_axes += 1;
        } else if i >= begin_count + expanded_ellipsis {
            a.begin_mask = true;
            a.end_mask = true;
            (a.size, a.input) = input_dim(i - added_axes)?;
        } else {
            let j = i - added_ellipsis;
            let get = |v: &[i32]| v.get(j).copied().ok_or("ellipsis past the indices");
            a.start = get(begin)?;
            a.stop = get(end)?;
            a.stride = get(strides)?;
            a.begin_mask = bit(m.begin, j);
            a.end_mask = bit(m.end, j);
            a.shrink = bit(m.shrink, j);
            (a.size, a.input) = input_dim(i - added_axes)?;
        }
    }

    // The loops of `reference_ops::StridedSlice`, as a gather over the
    // dimensions that take more than one element.
    let input_strides = row_major(dims).ok_or("more dimensions than the largest rank")?;
    let skip = MAX_RANK - input_dims;
    let mut taken = [(1usize, 0i64); MAX_RANK];
    let mut kept = 0;
    let mut first = 0i64;
    let mut empty = false;
    for a in &axes[..effective_dims] {
        if a.stride == 0 {
            return Err("zero stride");
        }
        let start = a.start();
        let stop = a.stop(start, m.offset);
        let (span, step) = (i64::from(stop) - i64::from(start), i64::from(a.stride));
        let count = if span == 0 || (span < 0) != (step < 0) {
            0
        } else {
            (span - span.signum()) / step + 1
        };
        if a.shrink && count != 1 {
            return Err("shrunk axis index out of range");
        }
        let input_stride = a.input.map_or(0, |j| input_strides[skip + j] as i64);
        empty |= count == 0;
        first += i64::from(start) * input_stride;
        if count != 1 {
            let slot = taken
                .get_mut(kept)
                .ok_or("more sliced dimensions than the largest rank")?;
            *slot = (count as usize, step * input_stride);
            kept += 1;
        }
    }
    let mut gather = Gather {
        dims: [1; MAX_RANK],
        strides: [0; MAX_RANK],
        start: 0,
        size,
    };
    if empty {
        gather.dims[0] = 0;
        return Ok(gather);
    }
    for (k, &(count, stride)) in taken[..kept].iter().enumerate() {
        gather.dims[MAX_RANK - kept + k] = count;
        gather.strides[MAX_RANK - kept + k] =
            isize::try_from(stride).map_err(|_| "stride too large")?;
    }
    gather.start = usize::try_from(first).map_err(|_| "slice starts before the input")?;
    let elements: usize = dims.iter().product();
    if !gather.fits(elements) {
        return Err("slice outside the input");
    }
    Ok(gather)
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    if c.code == builtin::SPLIT {
        prepare_split(c)
    } else if c.code == builtin::SPLIT_V {
        prepare_split_v(c)
    } else {
        prepare_strided(c)
    }
}

fn prepare_strided<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(4, 4, 1)?;
    let (t, input) = c.input(0)?;
    let (_, out) = c.output(0)?;
    if input.element_type() != out.element_type() {
        return Err(c.invalid("tensors of different element types"));
    }
    let mut indices = [[0i32; MAX_INDICES + 1]; 3];
    let mut counts = [0usize; 3];
    for (k, (values, n)) in indices.iter_mut().zip(counts.iter_mut()).enumerate() {
        let (_, v) = c.input(k + 1)?;
        if v.element_type() != ElementType::Int32 || v.shape.dims().len() != 1 {
            return Err(c.invalid("begin, end or strides not an int32 vector"));
        }
        *n = c.constant_ints(&v, values)?;
    }
    let m = match c.options(options::STRIDED_SLICE)? {
        Some(o) => {
            use options::strided_slice as s;
            Masks {
                begin: o.i32(s::BEGIN_MASK, 0)? as u32,
                end: o.i32(s::END_MASK, 0)? as u32,
                ellipsis: o.i32(s::ELLIPSIS_MASK, 0)? as u32,
                new_axis: o.i32(s::NEW_AXIS_MASK, 0)? as u32,
                shrink: o.i32(s::SHRINK_AXIS_MASK, 0)? as u32,
                offset: o.u8(s::OFFSET, 0)? != 0,
            }
        }
        None => Masks::default(),
    };
    let [begin, end, strides] = [0, 1, 2].map(|k| &indices[k][..counts[k]]);
    let gather = plan_strided(
        input.shape.dims(),
        begin,
        end,
        strides,
        m,
        input.element_type().size(),
    )
    .map_err(|r| c.invalid(r))?;
    if gather.elements() != Some(out.shape.elements()) {
        return Err(c.invalid("output shape is not the slice's"));
    }
    Ok(c.prepared(operands(&[t])?, Op::Slice(Slice::Strided(gather))))
}

fn prepare_split<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    let num_splits = match c.options(options::SPLIT)? {
        Some(t) => t.i32(options::split::NUM_SPLITS, 0)?,
        None => 0,
    };
    let outputs = usize::try_from(num_splits)
        .ok()
        .filter(|&n| n > 0)
        .ok_or(c.invalid("num_splits not positive"))?;
    c.arity(2, 2, outputs)?;
    let (t, input) = c.input(1)?;
    let axis = split_axis(c, 0, &input)?;
    let dims = input.shape.dims();
    if dims[axis] % outputs != 0 {
        return Err(c.invalid("not an even split"));
    }
    let size = input.element_type().size();
    let inner: usize = dims[axis + 1..].iter().product::<usize>() * size;
    let chunk = dims[axis] / outputs * inner;
    for o in 0..outputs {
        check_part(c, o, &input, axis, dims[axis] / outputs)?;
    }
    let split = Slice::Split {
        outer: dims[..axis].iter().product(),
        chunk,
        outputs,
    };
    Ok(c.prepared(operands(&[t])?, Op::Slice(split)))
}

/// The split axis of `input`: operand `k`, a constant int32 scalar,
/// negative counted from the end.
fn split_axis(c: &Context<'_, '_>, k: usize, input: &Tensor<'_>) -> Result<usize, Error> {
    let (_, axis) = c.input(k)?;
    if axis.element_type() != ElementType::Int32 || axis.shape.elements() != 1 {
        return Err(c.invalid("axis not one int32"));
    }
    let mut a = [0i32; 1];
    c.constant_ints(&axis, &mut a)?;
    let rank = input.shape.dims().len();
    let axis = if a[0] < 0 { a[0] + rank as i32 } else { a[0] };
    usize::try_from(axis)
        .ok()
        .filter(|&a| a < rank)
        .ok_or(c.invalid("axis out of range"))
}

/// Checks that output `o` is `input` with `size` along `axis`.
fn check_part(
    c: &Context<'_, '_>,
    o: usize,
    input: &Tensor<'_>,
    axis: usize,
    size: usize,
) -> Result<(), Error> {
    let (_, out) = c.output(o)?;
    let (d, dims) = (out.shape.dims(), input.shape.dims());
    if out.element_type() != input.element_type()
        || d.len() != dims.len()
        || (0..dims.len()).any(|k| d[k] != if k == axis { size } else { dims[k] })
    {
        return Err(c.invalid("output shape is not the input's split"));
    }
    Ok(())
}

/// The sizes of SPLIT_V's parts along an axis of `size` elements:
/// `size_splits` with its one -1 (if any) replaced by what the others leave.
fn split_sizes(splits: &[i32], size: usize, out: &mut [usize]) -> Result<(), &'static str> {
    let mut minus_one = None;
    let mut sum = 0i64;
    for (i, &s) in splits.iter().enumerate() {
        if s == -1 {
            if minus_one.replace(i).is_some() {
                return Err("size_splits with more than one -1");
            }
        } else {
            sum += i64::from(s);
        }
    }
    let size = size as i64;
    match minus_one {
        Some(_) if sum > size => return Err("size_splits add up to more than the axis"),
        None if sum != size => return Err("size_splits do not add up to the axis"),
        _ => {}
    }
    for (i, (o, &s)) in out.iter_mut().zip(splits).enumerate() {
        let s = if Some(i) == minus_one {
            size - sum
        } else {
            i64::from(s)
        };
        *o = usize::try_from(s).map_err(|_| "negative size_splits entry")?;
    }
    Ok(())
}

fn prepare_split_v<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    let num_splits = match c.options(options::SPLIT_V)? {
        Some(t) => t.i32(options::split_v::NUM_SPLITS, 0)?,
        None => 0,
    };
    let outputs = usize::try_from(num_splits)
        .ok()
        .filter(|&n| n > 0)
        .ok_or(c.invalid("num_splits not positive"))?;
    if outputs > MAX_OPERANDS {
        return Err(c.unsupported("more than 16 outputs"));
    }
    c.arity(3, 3, outputs)?;
    let (t, input) = c.input(0)?;
    let (_, size_splits) = c.input(1)?;
    if size_splits.shape.dims().len() != 1 || size_splits.shape.elements() != outputs {
        return Err(c.invalid("size_splits not a vector of num_splits"));
    }
    let mut splits = [0i32; MAX_OPERANDS];
    c.constant_ints(&size_splits, &mut splits)?;
    let axis = split_axis(c, 2, &input)?;
    let dims = input.shape.dims();
    let mut sizes = [0usize; MAX_OPERANDS];
    split_sizes(&splits[..outputs], dims[axis], &mut sizes[..outputs]).map_err(|r| c.invalid(r))?;
    let inner: usize = dims[axis + 1..].iter().product::<usize>() * input.element_type().size();
    let mut bounds = [0usize; MAX_OPERANDS + 1];
    for (o, &s) in sizes[..outputs].iter().enumerate() {
        check_part(c, o, &input, axis, s)?;
        bounds[o + 1] = bounds[o] + s * inner;
    }
    let split = Slice::SplitV {
        outer: dims[..axis].iter().product(),
        row: dims[axis] * inner,
        bounds,
        outputs,
    };
    Ok(c.prepared(operands(&[t])?, Op::Slice(split)))
}

impl Slice {
    pub(crate) fn work(&self) -> Option<u64> {
        match self {
            Slice::Strided(g) => g.work(),
            Slice::Split { outer, chunk, .. } => (*outer as u64).checked_mul(*chunk as u64),
            Slice::SplitV { outer, row, .. } => (*outer as u64).checked_mul(*row as u64),
        }
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        let x = inputs.first().copied().unwrap_or(&[]);
        match *self {
            Slice::Strided(g) => g.run(x, y),
            Slice::Split {
                outer,
                chunk,
                outputs,
            } => {
                if o >= outputs || y.len() != outer * chunk {
                    return Err(SHAPE);
                }
                for (r, out) in y.chunks_exact_mut(chunk.max(1)).enumerate() {
                    let from = (r * outputs + o) * chunk;
                    out.copy_from_slice(x.get(from..from + chunk).ok_or(SHAPE)?);
                }
                Ok(())
            }
            Slice::SplitV {
                outer,
                row,
                ref bounds,
                outputs,
            } => {
                let (lo, hi) = match (bounds.get(o), bounds.get(o + 1)) {
                    (Some(&lo), Some(&hi)) if o < outputs && lo <= hi => (lo, hi),
                    _ => return Err(SHAPE),
                };
                let chunk = hi - lo;
                if y.len() != outer * chunk {
                    return Err(SHAPE);
                }
                for (r, out) in y.chunks_exact_mut(chunk.max(1)).enumerate() {
                    let from = r * row + lo;
                    out.copy_from_slice(x.get(from..from + chunk).ok_or(SHAPE)?);
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{plan_strided, split_sizes, Masks, Slice};
    use crate::model::MAX_OPERANDS;
    use std::vec::Vec;

    fn slice(dims: &[usize], begin: &[i32], end: &[i32], strides: &[i32], m: Masks) -> Vec<u8> {
        let n: usize = dims.iter().product();
        let x: Vec<u8> = (0..n).map(|i| i as u8).collect();
        let g = plan_strided(dims, begin, end, strides, m, 1).unwrap();
        let mut y = std::vec![0u8; g.elements().unwrap()];
        g.run(&x, &mut y).unwrap();
        y
    }

    #[test]
    fn negative_indices_and_strides() {
        // x = [[0 1 2 3] [4 5 6 7] [8 9 10 11]]; x[1:3, -1:0:-1].
        let m = Masks::default();
        assert_eq!(
            slice(&[3, 4], &[1, -1], &[3, 0], &[1, -1], m),
            [7, 6, 5, 11, 10, 9]
        );
        // x[:, ::3]-like: begin 0, end past the end, stride 3 on 7 elements.
        assert_eq!(slice(&[7], &[0], &[100], &[3], m), [0, 3, 6]);
        // The whole axis reversed by the masks.
        let m = Masks {
            begin: 1,
            end: 1,
            ..m
        };
        assert_eq!(slice(&[4], &[0], &[0], &[-1], m), [3, 2, 1, 0]);
    }

    #[test]
    fn begin_and_end_masks() {
        // x[1:, 0::2] written as begin [1, 5] end [0, 4] with begin_mask on
        // axis 1 and end_mask on axis 0.
        let m = Masks {
            begin: 2,
            end: 1,
            ..Masks::default()
        };
        assert_eq!(slice(&[3, 4], &[1, 5], &[0, 4], &[1, 2], m), [4, 6, 8, 10]);
    }

    #[test]
    fn shrink_axis_takes_one_element() {
        let m = Masks {
            shrink: 1,
            ..Masks::default()
        };
        assert_eq!(slice(&[3, 4], &[1, 0], &[2, 4], &[1, 1], m), [4, 5, 6, 7]);
        // The end of a shrunk axis is ignored; a negative begin counts from
        // the end.
        assert_eq!(
            slice(&[3, 4], &[-1, 0], &[0, 4], &[1, 1], m),
            [8, 9, 10, 11]
        );
        // Shrinking past the end is refused.
        assert!(plan_strided(&[3, 4], &[3, 0], &[4, 4], &[1, 1], m, 1).is_err());
    }

    #[test]
    fn ellipsis_and_new_axis() {
        // x of [2, 3, 4]: x[..., 1:3].
        let m = Masks {
            ellipsis: 1,
            ..Masks::default()
        };
        assert_eq!(
            slice(&[2, 3, 4], &[0, 1], &[0, 3], &[1, 1], m),
            [1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22]
        );
        // x of [2, 3, 4]: x[1:, ..., 0:4:3] (ellipsis in the middle).
        let m = Masks {
            ellipsis: 2,
            ..Masks::default()
        };
        assert_eq!(
            slice(&[2, 3, 4], &[1, 0, 0], &[2, 0, 4], &[1, 1, 3], m),
            [12, 15, 16, 19, 20, 23]
        );
        // x of [2, 3]: x[newaxis, 0:1, 0:3].
        let m = Masks {
            new_axis: 1,
            ..Masks::default()
        };
        assert_eq!(
            slice(&[2, 3], &[0, 0, 0], &[0, 1, 3], &[1, 1, 1], m),
            [0, 1, 2]
        );
    }

    #[test]
    fn fewer_indices_than_dimensions_and_offset() {
        let m = Masks::default();
        assert_eq!(slice(&[2, 3], &[1], &[2], &[1], m), [3, 4, 5]);
        // With `offset`, end counts from begin.
        let m = Masks { offset: true, ..m };
        assert_eq!(slice(&[5], &[1], &[2], &[1], m), [1, 2]);
    }

    #[test]
    fn zero_stride_is_refused() {
        assert!(plan_strided(&[4], &[0], &[4], &[0], Masks::default(), 1).is_err());
    }

    #[test]
    fn split_takes_its_chunk_of_every_row() {
        // Input [2, 6] split in 3 along axis 1: output 1 is x[:, 2:4].
        let x: Vec<u8> = (0..12).collect();
        let s = Slice::Split {
            outer: 2,
            chunk: 2,
            outputs: 3,
        };
        let mut y = [0u8; 4];
        s.run(&[&x], 1, &mut y).unwrap();
        assert_eq!(y, [2, 3, 8, 9]);
    }

    #[test]
    fn split_v_fills_in_the_minus_one() {
        let mut sizes = [0usize; 3];
        split_sizes(&[2, -1, 1], 7, &mut sizes).unwrap();
        assert_eq!(sizes, [2, 4, 1]);
        split_sizes(&[3, 1, 3], 7, &mut sizes).unwrap();
        assert_eq!(sizes, [3, 1, 3]);
        // -1 may stand for nothing left.
        split_sizes(&[4, 3, -1], 7, &mut sizes).unwrap();
        assert_eq!(sizes, [4, 3, 0]);
        assert!(split_sizes(&[-1, 2, -1], 7, &mut sizes).is_err());
        assert!(split_sizes(&[5, -1, 3], 7, &mut sizes).is_err());
        assert!(split_sizes(&[3, 1, 2], 7, &mut sizes).is_err());
        assert!(split_sizes(&[9, -2, 0], 7, &mut sizes).is_err());
    }

    #[test]
    fn split_v_takes_uneven_parts_of_every_row() {
        // Input [2, 7] split along axis 1 by [2, -1, 1] = [2, 4, 1].
        let x: Vec<u8> = (0..14).collect();
        let mut sizes = [0usize; 3];
        split_sizes(&[2, -1, 1], 7, &mut sizes).unwrap();
        let mut bounds = [0usize; MAX_OPERANDS + 1];
        for o in 0..3 {
            bounds[o + 1] = bounds[o] + sizes[o];
        }
        let s = Slice::SplitV {
            outer: 2,
            row: 7,
            bounds,
            outputs: 3,
        };
        let mut y = [0u8; 4];
        s.run(&[&x], 0, &mut y).unwrap();
        assert_eq!(y, [0, 1, 7, 8]);
        let mut y = [0u8; 8];
        s.run(&[&x], 1, &mut y).unwrap();
        assert_eq!(y, [2, 3, 4, 5, 9, 10, 11, 12]);
        let mut y = [0u8; 2];
        s.run(&[&x], 2, &mut y).unwrap();
        assert_eq!(y, [6, 13]);
        assert!(s.run(&[&x], 3, &mut y).is_err());
    }
}
