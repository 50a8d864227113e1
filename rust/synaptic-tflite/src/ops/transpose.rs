//! TRANSPOSE, for every element type: the permutation copy of TFLite's
//! `reference_ops::Transpose` (`transpose.cc`: each `perm` entry in
//! `-rank..rank`, negative ones counted from the end; output dimension `i`
//! is input dimension `perm[i]`). The element bytes are moved unchanged,
//! so the quantisation of the output is not looked at.
//!
//! [`Gather`], the strided copy that runs it, also runs STRIDED_SLICE
//! (`slice.rs`).

use super::Prepared;
use super::{operands, Context, Op};
use crate::{Error, MAX_RANK};

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// A strided copy: output element `(i_0, …, i_5)` (row-major over `dims`)
/// is input element `start + Σ i_d * strides[d]`; elements of `size` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Gather {
    /// Output dimensions, right-aligned to [`MAX_RANK`].
    pub(crate) dims: [usize; MAX_RANK],
    /// Input element strides along the output's dimensions (negative for a
    /// reversed slice).
    pub(crate) strides: [isize; MAX_RANK],
    /// The input element of the first output element.
    pub(crate) start: usize,
    /// Bytes per element.
    pub(crate) size: usize,
}

impl Gather {
    /// Output elements.
    pub(crate) fn elements(&self) -> Option<usize> {
        self.dims
            .iter()
            .try_fold(1usize, |acc, &d| acc.checked_mul(d))
    }

    /// Whether every element read lies in an input of `input` elements.
    pub(crate) fn fits(&self, input: usize) -> bool {
        if self.elements() == Some(0) {
            return true;
        }
        let (mut low, mut high) = (self.start as i128, self.start as i128);
        for d in 0..MAX_RANK {
            let reach = (self.dims[d] as i128 - 1) * self.strides[d] as i128;
            if reach < 0 {
                low += reach;
            } else {
                high += reach;
            }
        }
        low >= 0 && high < input as i128
    }

    pub(crate) fn work(&self) -> Option<u64> {
        self.elements().map(|n| n as u64)
    }

    /// Copies the gathered elements of `x` into `y`.
    pub(crate) fn run(&self, x: &[u8], y: &mut [u8]) -> Result<(), Error> {
        let n = self.size;
        if n == 0 || Some(y.len()) != self.elements().and_then(|e| e.checked_mul(n)) {
            return Err(SHAPE);
        }
        let mut index = [0usize; MAX_RANK];
        let mut at = self.start as isize;
        for out in y.chunks_exact_mut(n) {
            let from = usize::try_from(at).map_err(|_| SHAPE)? * n;
            out.copy_from_slice(x.get(from..from + n).ok_or(SHAPE)?);
            // Next output index, last dimension fastest.
            for d in (0..MAX_RANK).rev() {
                index[d] += 1;
                at += self.strides[d];
                if index[d] < self.dims[d] {
                    break;
                }
                at -= self.strides[d] * self.dims[d] as isize;
                index[d] = 0;
            }
        }
        Ok(())
    }
}

/// Row-major element strides of `dims`, right-aligned to [`MAX_RANK`].
pub(crate) fn row_major(dims: &[usize]) -> Option<[isize; MAX_RANK]> {
    let skip = MAX_RANK.checked_sub(dims.len())?;
    let mut strides = [0isize; MAX_RANK];
    let mut stride = 1isize;
    for (d, &size) in dims.iter().enumerate().rev() {
        strides[skip + d] = stride;
        stride = stride.checked_mul(isize::try_from(size).ok()?)?;
    }
    Some(strides)
}

/// The copy of an input of dimensions `dims` transposed by `perm`, or why
/// not.
pub(crate) fn plan(dims: &[usize], perm: &[i32], size: usize) -> Result<Gather, &'static str> {
    let rank = dims.len();
    if perm.len() != rank {
        return Err("permutation not of the input's rank");
    }
    let input_strides = row_major(dims).ok_or("more dimensions than the largest rank")?;
    let skip = MAX_RANK - rank;
    let mut gather = Gather {
        dims: [1; MAX_RANK],
        strides: [0; MAX_RANK],
        start: 0,
        size,
    };
    let mut seen = [false; MAX_RANK];
    for (i, &p) in perm.iter().enumerate() {
        let p = if p < 0 { p + rank as i32 } else { p };
        let p = usize::try_from(p)
            .ok()
            .filter(|&p| p < rank)
            .ok_or("permutation entry out of range")?;
        if core::mem::replace(&mut seen[p], true) {
            return Err("permutation repeats a dimension");
        }
        gather.dims[skip + i] = dims[p];
        gather.strides[skip + i] = input_strides[skip + p];
    }
    Ok(gather)
}

/// A prepared TRANSPOSE.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Transpose {
    gather: Gather,
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    c.arity(2, 2, 1)?;
    c.options(crate::schema::options::TRANSPOSE)?;
    let (t, input) = c.input(0)?;
    let (_, perm) = c.input(1)?;
    let (_, out) = c.output(0)?;
    if input.element_type() != out.element_type() {
        return Err(c.invalid("tensors of different element types"));
    }
    if perm.element_type() != crate::ElementType::Int32 {
        return Err(c.invalid("permutation not int32"));
    }
    let mut p = [0i32; MAX_RANK];
    let n = c.constant_ints(&perm, &mut p)?;
    let gather =
        plan(input.shape.dims(), &p[..n], input.element_type().size()).map_err(|r| c.invalid(r))?;
    let rank = out.shape.dims().len();
    if rank != input.shape.dims().len() || out.shape.dims() != &gather.dims[MAX_RANK - rank..] {
        return Err(c.invalid("output shape is not the permuted input shape"));
    }
    Ok(c.prepared(operands(&[t])?, Op::Transpose(Transpose { gather })))
}

impl Transpose {
    pub(crate) fn work(&self) -> Option<u64> {
        self.gather.work()
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        if o != 0 {
            return Err(Error::Internal("TRANSPOSE has one output"));
        }
        self.gather.run(inputs.first().copied().unwrap_or(&[]), y)
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::plan;
    use std::vec::Vec;

    fn transpose(dims: &[usize], perm: &[i32], size: usize) -> Vec<u8> {
        let n: usize = dims.iter().product::<usize>() * size;
        let x: Vec<u8> = (0..n).map(|i| i as u8).collect();
        let mut y = std::vec![0u8; n];
        plan(dims, perm, size).unwrap().run(&x, &mut y).unwrap();
        y
    }

    #[test]
    fn matrix_transpose() {
        // [[0 1 2] [3 4 5]] -> [[0 3] [1 4] [2 5]]
        assert_eq!(transpose(&[2, 3], &[1, 0], 1), [0, 3, 1, 4, 2, 5]);
        // Negative entries count from the end.
        assert_eq!(transpose(&[2, 3], &[-1, -2], 1), [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn wide_elements_move_whole() {
        // Two-byte elements [[a b] [c d]] -> [[a c] [b d]].
        assert_eq!(transpose(&[2, 2], &[1, 0], 2), [0, 1, 4, 5, 2, 3, 6, 7]);
    }

    #[test]
    fn three_dimensions() {
        // x[i][j][k] = 6i + 3j + k... with dims [2, 1, 3]: x[i][0][k] = 3i + k.
        // perm [2, 0, 1]: y[k][i][0] = x[i][0][k].
        assert_eq!(transpose(&[2, 1, 3], &[2, 0, 1], 1), [0, 3, 1, 4, 2, 5]);
        // Identity.
        assert_eq!(transpose(&[2, 1, 3], &[0, 1, 2], 1), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn bad_permutations_are_refused() {
        assert!(plan(&[2, 3], &[0, 0], 1).is_err());
        assert!(plan(&[2, 3], &[0, 2], 1).is_err());
        assert!(plan(&[2, 3], &[0], 1).is_err());
        assert!(plan(&[2, 3], &[-3, 0], 1).is_err());
    }
}
