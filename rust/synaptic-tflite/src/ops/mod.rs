//! The operators past the first seven: one module per family, each with
//! its `prepare` (checks and constants from the model, once per call of
//! `Model::prepare`) and its kernel, and here the table that says which
//! builtin codes run and what each is called.
//!
//! An operator outside [`SUPPORTED`] is refused as
//! [`Error::UnsupportedOperator`] with its code and schema name; a supported
//! one used in a way its kernel does not do (an element type, a broadcast,
//! an attribute) as [`Error::UnsupportedFeature`] with the operator's name
//! and what is missing.

use crate::flat::{Table, Vector};
use crate::model::{
    invalid_operator, Activation, ElementType, Geometry, Model, Operands, Quantization, Tensor,
};
use crate::schema::builtin;
use crate::Error;

#[cfg(feature = "ops-activation")]
pub(crate) mod activation;
pub(crate) mod classic;
#[cfg(feature = "ops-arithmetic")]
pub(crate) mod elementwise;
#[cfg(feature = "ops-layout")]
pub(crate) mod layout;
#[cfg(feature = "ops-recurrent")]
pub(crate) mod lstm;
#[cfg(feature = "ops-reduce")]
pub(crate) mod reduce;
#[cfg(feature = "ops-layout")]
pub(crate) mod slice;
pub(crate) mod softmax;
#[cfg(feature = "ops-layout")]
pub(crate) mod transpose;
#[cfg(feature = "ops-transpose-conv")]
pub(crate) mod transpose_conv;
#[cfg(any(feature = "ops-activation", feature = "ops-quantize"))]
pub(crate) mod unary;

/// Activation and accumulator widths of a convolution or fully-connected
/// layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Precision {
    /// int8 activations, int32 bias and accumulator.
    Int8,
    /// TFLite's 16x8 quantisation: int16 activations (zero point 0), int8
    /// weights; `wide`: int64 bias and accumulator, else int32.
    #[cfg(feature = "ops-16x8")]
    Int16 { wide: bool },
}

impl Precision {
    /// The 16x8 precision, in a build with the `ops-16x8` feature.
    fn sixteen(wide: bool) -> Result<Self, Error> {
        #[cfg(feature = "ops-16x8")]
        return Ok(Precision::Int16 { wide });
        #[cfg(not(feature = "ops-16x8"))]
        {
            let _ = wide;
            Err(Error::Unsupported("int16 activations (16x8 quantisation)"))
        }
    }

    /// 16x8 with an int64 bias and accumulator.
    pub(crate) fn is_wide(self) -> bool {
        #[cfg(feature = "ops-16x8")]
        return self == Precision::Int16 { wide: true };
        #[cfg(not(feature = "ops-16x8"))]
        false
    }
}

/// An operator with every tensor resolved and checked.
#[derive(Clone, Copy)]
pub(crate) struct Prepared<'a> {
    /// The tensors the kernel reads, in the order it takes them: activations
    /// from the arena, constants from the model. (The weights of the
    /// convolution and fully-connected kinds are in the kind itself.)
    pub inputs: Operands,
    /// The tensors it writes, one kernel call each.
    pub outputs: Operands,
    pub kind: Kind<'a>,
}

impl Prepared<'_> {
    /// The first output (every operator has one).
    pub(crate) fn output(&self) -> usize {
        self.outputs.get(0).unwrap_or(usize::MAX)
    }
}

#[derive(Clone, Copy)]
pub(crate) enum Kind<'a> {
    /// CONV_2D (`depthwise == false`) or DEPTHWISE_CONV_2D.
    Conv {
        depthwise: bool,
        geometry: Geometry,
        filter: &'a [u8],
        bias: Option<&'a [u8]>,
        filter_scales: Vector<'a>,
        input: Quantization,
        output: Quantization,
        activation: Activation,
        precision: Precision,
    },
    FullyConnected {
        batches: usize,
        depth: usize,
        units: usize,
        filter: &'a [u8],
        bias: Option<&'a [u8]>,
        filter_scales: Vector<'a>,
        filter_zero_point: i32,
        input: Quantization,
        output: Quantization,
        activation: Activation,
        precision: Precision,
    },
    Pool {
        average: bool,
        geometry: Geometry,
        output: Quantization,
        activation: Activation,
    },
    Reshape {
        bytes: usize,
    },
    Softmax {
        rows: usize,
        depth: usize,
        beta: f32,
        input: Quantization,
        output: Quantization,
    },
    /// An operator of `crate::ops`.
    Op(crate::ops::Op),
}

impl Kind<'_> {
    /// Requantisation multipliers this operator keeps in the arena.
    pub(crate) fn channels(&self) -> usize {
        match self {
            Kind::Conv { geometry, .. } => geometry.out_c,
            Kind::FullyConnected { filter_scales, .. } => filter_scales.len(),
            _ => 0,
        }
    }

    /// Multiply-accumulates (or element visits) of one run.
    pub(crate) fn work(&self) -> Option<u64> {
        let product = |factors: &[usize]| {
            factors
                .iter()
                .try_fold(1u64, |acc, &f| acc.checked_mul(f as u64))
        };
        match *self {
            Kind::Conv {
                depthwise,
                geometry: g,
                ..
            } => product(&[
                g.batches,
                g.out_h,
                g.out_w,
                g.out_c,
                g.filter_h,
                g.filter_w,
                if depthwise { 1 } else { g.in_c },
            ]),
            Kind::FullyConnected {
                batches,
                depth,
                units,
                ..
            } => product(&[batches, depth, units]),
            Kind::Pool { geometry: g, .. } => {
                product(&[g.batches, g.out_h, g.out_w, g.out_c, g.filter_h, g.filter_w])
            }
            Kind::Reshape { bytes } => Some(bytes as u64),
            Kind::Softmax { rows, depth, .. } => product(&[rows, depth]),
            Kind::Op(ref op) => op.work(),
        }
    }
}

/// `BuiltinOperator` names of TFLite's schema in code order, one space
/// after each: one string rather than a table of 210 slices saves 1.7 KB
/// of flash, and only an error or a report looks a name up.
const NAMES: &str = "ADD AVERAGE_POOL_2D CONCATENATION CONV_2D DEPTHWISE_CONV_2D \
     DEPTH_TO_SPACE DEQUANTIZE EMBEDDING_LOOKUP FLOOR FULLY_CONNECTED \
     HASHTABLE_LOOKUP L2_NORMALIZATION L2_POOL_2D \
     LOCAL_RESPONSE_NORMALIZATION LOGISTIC LSH_PROJECTION LSTM MAX_POOL_2D \
     MUL RELU RELU_N1_TO_1 RELU6 RESHAPE RESIZE_BILINEAR RNN SOFTMAX \
     SPACE_TO_DEPTH SVDF TANH CONCAT_EMBEDDINGS SKIP_GRAM CALL CUSTOM \
     EMBEDDING_LOOKUP_SPARSE PAD UNIDIRECTIONAL_SEQUENCE_RNN GATHER \
     BATCH_TO_SPACE_ND SPACE_TO_BATCH_ND TRANSPOSE MEAN SUB DIV SQUEEZE \
     UNIDIRECTIONAL_SEQUENCE_LSTM STRIDED_SLICE BIDIRECTIONAL_SEQUENCE_RNN \
     EXP TOPK_V2 SPLIT LOG_SOFTMAX DELEGATE BIDIRECTIONAL_SEQUENCE_LSTM \
     CAST PRELU MAXIMUM ARG_MAX MINIMUM LESS NEG PADV2 GREATER \
     GREATER_EQUAL LESS_EQUAL SELECT SLICE SIN TRANSPOSE_CONV \
     SPARSE_TO_DENSE TILE EXPAND_DIMS EQUAL NOT_EQUAL LOG SUM SQRT RSQRT \
     SHAPE POW ARG_MIN FAKE_QUANT REDUCE_PROD REDUCE_MAX PACK LOGICAL_OR \
     ONE_HOT LOGICAL_AND LOGICAL_NOT UNPACK REDUCE_MIN FLOOR_DIV \
     REDUCE_ANY SQUARE ZEROS_LIKE FILL FLOOR_MOD RANGE \
     RESIZE_NEAREST_NEIGHBOR LEAKY_RELU SQUARED_DIFFERENCE MIRROR_PAD ABS \
     SPLIT_V UNIQUE CEIL REVERSE_V2 ADD_N GATHER_ND COS WHERE RANK ELU \
     REVERSE_SEQUENCE MATRIX_DIAG QUANTIZE MATRIX_SET_DIAG ROUND \
     HARD_SWISH IF WHILE NON_MAX_SUPPRESSION_V4 NON_MAX_SUPPRESSION_V5 \
     SCATTER_ND SELECT_V2 DENSIFY SEGMENT_SUM BATCH_MATMUL \
     PLACEHOLDER_FOR_GREATER_OP_CODES CUMSUM CALL_ONCE BROADCAST_TO RFFT2D \
     CONV_3D IMAG REAL COMPLEX_ABS HASHTABLE HASHTABLE_FIND \
     HASHTABLE_IMPORT HASHTABLE_SIZE REDUCE_ALL CONV_3D_TRANSPOSE \
     VAR_HANDLE READ_VARIABLE ASSIGN_VARIABLE BROADCAST_ARGS \
     RANDOM_STANDARD_NORMAL BUCKETIZE RANDOM_UNIFORM MULTINOMIAL GELU \
     DYNAMIC_UPDATE_SLICE RELU_0_TO_1 UNSORTED_SEGMENT_PROD \
     UNSORTED_SEGMENT_MAX UNSORTED_SEGMENT_SUM ATAN2 UNSORTED_SEGMENT_MIN \
     SIGN BITCAST BITWISE_XOR RIGHT_SHIFT STABLEHLO_LOGISTIC STABLEHLO_ADD \
     STABLEHLO_DIVIDE STABLEHLO_MULTIPLY STABLEHLO_MAXIMUM \
     STABLEHLO_RESHAPE STABLEHLO_CLAMP STABLEHLO_CONCATENATE \
     STABLEHLO_BROADCAST_IN_DIM STABLEHLO_CONVOLUTION STABLEHLO_SLICE \
     STABLEHLO_CUSTOM_CALL STABLEHLO_REDUCE STABLEHLO_ABS STABLEHLO_AND \
     STABLEHLO_COSINE STABLEHLO_EXPONENTIAL STABLEHLO_FLOOR STABLEHLO_LOG \
     STABLEHLO_MINIMUM STABLEHLO_NEGATE STABLEHLO_OR STABLEHLO_POWER \
     STABLEHLO_REMAINDER STABLEHLO_RSQRT STABLEHLO_SELECT \
     STABLEHLO_SUBTRACT STABLEHLO_TANH STABLEHLO_SCATTER STABLEHLO_COMPARE \
     STABLEHLO_CONVERT STABLEHLO_DYNAMIC_SLICE \
     STABLEHLO_DYNAMIC_UPDATE_SLICE STABLEHLO_PAD STABLEHLO_IOTA \
     STABLEHLO_DOT_GENERAL STABLEHLO_REDUCE_WINDOW STABLEHLO_SORT \
     STABLEHLO_WHILE STABLEHLO_GATHER STABLEHLO_TRANSPOSE DILATE \
     STABLEHLO_RNG_BIT_GENERATOR REDUCE_WINDOW STABLEHLO_COMPOSITE \
     STABLEHLO_SHIFT_LEFT STABLEHLO_CBRT STABLEHLO_CASE";

/// The schema's name of builtin operator `code` (`"UNKNOWN"` past the
/// schema's last code).
pub fn name(code: i32) -> &'static str {
    usize::try_from(code)
        .ok()
        .and_then(|c| NAMES.split(' ').nth(c))
        .unwrap_or("UNKNOWN")
}

/// Every builtin operator this crate implements, with whether this build
/// has it: the seven it started with always, the others by Cargo feature
/// (`ops-arithmetic`, `ops-activation`, `ops-quantize`, `ops-layout`,
/// `ops-reduce`, `ops-transpose-conv`, `ops-recurrent`; all on by default), so firmware that knows its networks
/// links only their kernels, as TFLite Micro's op resolver allows.
const OPERATORS: &[(i32, bool)] = &[
    (builtin::CONV_2D, true),
    (builtin::DEPTHWISE_CONV_2D, true),
    (builtin::FULLY_CONNECTED, true),
    (builtin::AVERAGE_POOL_2D, true),
    (builtin::MAX_POOL_2D, true),
    (builtin::RESHAPE, true),
    (builtin::SOFTMAX, true),
    (builtin::ADD, cfg!(feature = "ops-arithmetic")),
    (builtin::SUB, cfg!(feature = "ops-arithmetic")),
    (builtin::MUL, cfg!(feature = "ops-arithmetic")),
    (builtin::MAXIMUM, cfg!(feature = "ops-arithmetic")),
    (builtin::MINIMUM, cfg!(feature = "ops-arithmetic")),
    (builtin::RELU, cfg!(feature = "ops-activation")),
    (builtin::RELU6, cfg!(feature = "ops-activation")),
    (builtin::RELU_N1_TO_1, cfg!(feature = "ops-activation")),
    (builtin::LOGISTIC, cfg!(feature = "ops-activation")),
    (builtin::TANH, cfg!(feature = "ops-activation")),
    (builtin::HARD_SWISH, cfg!(feature = "ops-activation")),
    (builtin::LEAKY_RELU, cfg!(feature = "ops-activation")),
    (builtin::PRELU, cfg!(feature = "ops-activation")),
    (builtin::QUANTIZE, cfg!(feature = "ops-quantize")),
    (builtin::DEQUANTIZE, cfg!(feature = "ops-quantize")),
    (builtin::CONCATENATION, cfg!(feature = "ops-layout")),
    (builtin::PAD, cfg!(feature = "ops-layout")),
    (builtin::PADV2, cfg!(feature = "ops-layout")),
    (builtin::SQUEEZE, cfg!(feature = "ops-layout")),
    (builtin::EXPAND_DIMS, cfg!(feature = "ops-layout")),
    (builtin::TRANSPOSE, cfg!(feature = "ops-layout")),
    (builtin::STRIDED_SLICE, cfg!(feature = "ops-layout")),
    (builtin::SPLIT, cfg!(feature = "ops-layout")),
    (builtin::SPLIT_V, cfg!(feature = "ops-layout")),
    (builtin::MEAN, cfg!(feature = "ops-reduce")),
    (
        builtin::TRANSPOSE_CONV,
        cfg!(feature = "ops-transpose-conv"),
    ),
    (
        builtin::UNIDIRECTIONAL_SEQUENCE_LSTM,
        cfg!(feature = "ops-recurrent"),
    ),
];

/// The builtin operator codes this build of the interpreter runs (which
/// element types and attributes each takes: the crate documentation).
pub fn supported() -> impl Iterator<Item = i32> {
    OPERATORS
        .iter()
        .filter(|&&(_, on)| on)
        .map(|&(code, _)| code)
}

/// Whether this build runs builtin operator `code`.
pub(crate) fn implemented(code: i32) -> bool {
    OPERATORS.iter().any(|&(c, on)| on && c == code)
}

/// The operators `Model::prepare_classic` prepares.
pub(crate) fn classic(code: i32) -> bool {
    matches!(
        code,
        builtin::CONV_2D
            | builtin::DEPTHWISE_CONV_2D
            | builtin::FULLY_CONNECTED
            | builtin::AVERAGE_POOL_2D
            | builtin::MAX_POOL_2D
            | builtin::RESHAPE
            | builtin::SOFTMAX
    )
}

/// One operator of the model as its `prepare` sees it.
pub(crate) struct Context<'m, 'a> {
    pub model: &'m Model<'a>,
    pub index: usize,
    pub code: i32,
    pub inputs: Vector<'a>,
    pub outputs: Operands,
    /// The operator's `intermediates` (only an LSTM may have them: the
    /// quantisation of its gates).
    pub intermediates: Vector<'a>,
    pub options_type: u8,
    pub options: Option<Table<'a>>,
}

impl<'a> Context<'_, 'a> {
    /// The operator is inconsistent.
    pub fn invalid(&self, reason: &'static str) -> Error {
        invalid_operator(self.index, reason)
    }

    /// The operator is used in a way its kernel does not do.
    pub fn unsupported(&self, what: &'static str) -> Error {
        Error::UnsupportedFeature {
            operator: self.code,
            what,
        }
    }

    /// Entries of the operator's input list.
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Requires between `min` and `max` inputs and exactly `outputs` outputs.
    pub fn arity(&self, min: usize, max: usize, outputs: usize) -> Result<(), Error> {
        if !(min..=max).contains(&self.inputs.len()) {
            return Err(self.invalid("wrong number of inputs"));
        }
        if self.outputs.len() != outputs {
            return Err(self.invalid("wrong number of outputs"));
        }
        Ok(())
    }

    /// Input `i` (required): its tensor index and tensor.
    pub fn input(&self, i: usize) -> Result<(usize, Tensor<'a>), Error> {
        let t = self
            .model
            .operand(self.index, self.inputs, i)?
            .ok_or(self.invalid("missing input"))?;
        Ok((t, self.model.tensor(t)?))
    }

    /// Output `i`: its tensor index and tensor.
    pub fn output(&self, i: usize) -> Result<(usize, Tensor<'a>), Error> {
        let t = self.outputs.get(i).ok_or(self.invalid("missing output"))?;
        Ok((t, self.model.tensor(t)?))
    }

    /// The builtin options, if present, checked to be of union type `tag`.
    pub fn options(&self, tag: u8) -> Result<Option<Table<'a>>, Error> {
        match self.options {
            Some(_) if self.options_type != tag => Err(self.invalid("options of another operator")),
            o => Ok(o),
        }
    }

    /// The per-tensor quantisation of an activation of type `ty`: int8 with
    /// a zero point in its range, or int16 with zero point 0 (TFLite's 16x8
    /// scheme).
    pub fn quantization(&self, t: &Tensor<'a>, ty: ElementType) -> Result<Quantization, Error> {
        if t.element_type != ty {
            return Err(self.invalid("tensors of different element types"));
        }
        let q = t
            .quantization()
            .ok_or(self.invalid("activation without one scale"))?;
        let zero_point_ok = match ty {
            ElementType::Int8 => (-128..=127).contains(&q.zero_point),
            ElementType::Int16 => q.zero_point == 0,
            _ => false,
        };
        if !(q.scale.is_finite() && q.scale > 0.0 && zero_point_ok) {
            return Err(self.invalid("activation scale or zero point out of range"));
        }
        Ok(q)
    }

    /// The values of a constant int32 or int64 vector input (axes, paddings,
    /// permutations), each checked to fit an `i32`, into `out`; returns how
    /// many.
    pub fn constant_ints(&self, t: &Tensor<'a>, out: &mut [i32]) -> Result<usize, Error> {
        let data = t
            .data
            .ok_or(self.unsupported("a computed shape or axis operand"))?;
        let width = match t.element_type {
            ElementType::Int32 => 4,
            ElementType::Int64 => 8,
            _ => return Err(self.invalid("shape or axis operand not int32 or int64")),
        };
        let n = data.len() / width;
        if n > out.len() {
            return Err(self.unsupported("more axes than the largest rank"));
        }
        for (o, b) in out.iter_mut().zip(data.chunks_exact(width)) {
            let v = if width == 4 {
                i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            } else {
                i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]])
            };
            *o = i32::try_from(v).map_err(|_| self.invalid("shape or axis value out of range"))?;
        }
        Ok(n)
    }

    /// A prepared operator reading `inputs` and writing every output.
    pub fn prepared(&self, inputs: Operands, op: Op) -> Prepared<'a> {
        Prepared {
            inputs,
            outputs: self.outputs,
            kind: Kind::Op(op),
        }
    }
}

/// A prepared operator of this module's families.
#[derive(Clone, Copy)]
pub(crate) enum Op {
    /// ADD, SUB, MUL, MAXIMUM, MINIMUM.
    #[cfg(feature = "ops-arithmetic")]
    Binary(elementwise::Binary),
    /// One value in, one out: RELU and its clamps, QUANTIZE, DEQUANTIZE.
    #[cfg(any(feature = "ops-activation", feature = "ops-quantize"))]
    Unary(unary::Unary),
    /// CONCATENATION.
    #[cfg(feature = "ops-layout")]
    Concat(layout::Concat),
    /// PAD, PADV2.
    #[cfg(feature = "ops-layout")]
    Pad(layout::Pad),
    /// LOGISTIC, TANH, HARD_SWISH, LEAKY_RELU, PRELU.
    #[cfg(feature = "ops-activation")]
    Activation(activation::Activation),
    /// MEAN.
    #[cfg(feature = "ops-reduce")]
    Mean(reduce::Mean),
    /// TRANSPOSE.
    #[cfg(feature = "ops-layout")]
    Transpose(transpose::Transpose),
    /// STRIDED_SLICE, SPLIT.
    #[cfg(feature = "ops-layout")]
    Slice(slice::Slice),
    /// TRANSPOSE_CONV.
    #[cfg(feature = "ops-transpose-conv")]
    TransposeConv(transpose_conv::TransposeConv),
    /// UNIDIRECTIONAL_SEQUENCE_LSTM.
    #[cfg(feature = "ops-recurrent")]
    Lstm(lstm::Lstm),
}

impl Op {
    /// Elements visited by one run.
    pub(crate) fn work(&self) -> Option<u64> {
        // `*self`: with every family left out the enum is empty.
        match *self {
            #[cfg(feature = "ops-arithmetic")]
            Op::Binary(ref b) => b.work(),
            #[cfg(any(feature = "ops-activation", feature = "ops-quantize"))]
            Op::Unary(u) => Some(u.elements as u64),
            #[cfg(feature = "ops-layout")]
            Op::Concat(c) => Some(c.bytes as u64),
            #[cfg(feature = "ops-layout")]
            Op::Pad(ref p) => p.work(),
            #[cfg(feature = "ops-activation")]
            Op::Activation(ref a) => a.work(),
            #[cfg(feature = "ops-reduce")]
            Op::Mean(ref m) => m.work(),
            #[cfg(feature = "ops-layout")]
            Op::Transpose(ref t) => t.work(),
            #[cfg(feature = "ops-layout")]
            Op::Slice(ref s) => s.work(),
            #[cfg(feature = "ops-transpose-conv")]
            Op::TransposeConv(ref t) => t.work(),
            #[cfg(feature = "ops-recurrent")]
            Op::Lstm(ref l) => l.work(),
        }
    }

    /// Computes output `o` into `y` from `inputs` (as listed in `prepare`).
    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        let _ = (inputs, o, &y);
        match *self {
            #[cfg(feature = "ops-arithmetic")]
            Op::Binary(ref b) => crate::own_frame(|| b.run(inputs, y)),
            #[cfg(any(feature = "ops-activation", feature = "ops-quantize"))]
            Op::Unary(ref u) => crate::own_frame(|| u.run(inputs, y)),
            #[cfg(feature = "ops-layout")]
            Op::Concat(ref c) => crate::own_frame(|| c.run(inputs, y)),
            #[cfg(feature = "ops-layout")]
            Op::Pad(ref p) => crate::own_frame(|| p.run(inputs, y)),
            #[cfg(feature = "ops-activation")]
            Op::Activation(ref a) => crate::own_frame(|| a.run(inputs, o, y)),
            #[cfg(feature = "ops-reduce")]
            Op::Mean(ref m) => crate::own_frame(|| m.run(inputs, o, y)),
            #[cfg(feature = "ops-layout")]
            Op::Transpose(ref t) => crate::own_frame(|| t.run(inputs, o, y)),
            #[cfg(feature = "ops-layout")]
            Op::Slice(ref s) => crate::own_frame(|| s.run(inputs, o, y)),
            #[cfg(feature = "ops-transpose-conv")]
            Op::TransposeConv(ref t) => crate::own_frame(|| t.run(inputs, o, y)),
            #[cfg(feature = "ops-recurrent")]
            Op::Lstm(ref l) => crate::own_frame(|| l.run(inputs, o, y)),
        }
    }
}

/// Prepares an operator of this module (codes [`implemented`] and not
/// [`classic`]).
pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    match c.code {
        #[cfg(feature = "ops-arithmetic")]
        builtin::ADD | builtin::SUB | builtin::MUL | builtin::MAXIMUM | builtin::MINIMUM => {
            elementwise::prepare(c)
        }
        #[cfg(feature = "ops-activation")]
        builtin::RELU | builtin::RELU6 | builtin::RELU_N1_TO_1 => unary::prepare(c),
        #[cfg(feature = "ops-quantize")]
        builtin::QUANTIZE | builtin::DEQUANTIZE => unary::prepare(c),
        #[cfg(feature = "ops-layout")]
        builtin::CONCATENATION => layout::prepare_concat(c),
        #[cfg(feature = "ops-layout")]
        builtin::PAD | builtin::PADV2 => layout::prepare_pad(c),
        #[cfg(feature = "ops-layout")]
        builtin::SQUEEZE | builtin::EXPAND_DIMS => layout::prepare_reshape(c),
        #[cfg(feature = "ops-activation")]
        builtin::LOGISTIC
        | builtin::TANH
        | builtin::HARD_SWISH
        | builtin::LEAKY_RELU
        | builtin::PRELU => activation::prepare(c),
        #[cfg(feature = "ops-reduce")]
        builtin::MEAN => reduce::prepare(c),
        #[cfg(feature = "ops-layout")]
        builtin::TRANSPOSE => transpose::prepare(c),
        #[cfg(feature = "ops-layout")]
        builtin::STRIDED_SLICE | builtin::SPLIT | builtin::SPLIT_V => slice::prepare(c),
        #[cfg(feature = "ops-transpose-conv")]
        builtin::TRANSPOSE_CONV => transpose_conv::prepare(c),
        #[cfg(feature = "ops-recurrent")]
        builtin::UNIDIRECTIONAL_SEQUENCE_LSTM => lstm::prepare(c),
        code => Err(Error::UnsupportedOperator { code }),
    }
}

/// Tensor sizes of the kernels' element loops: `[usize; MAX_RANK]` with
/// the dimensions right-aligned (leading 1s), as TFLite's broadcasting
/// kernels extend shapes.
pub(crate) fn extended(dims: &[usize]) -> Option<[usize; crate::MAX_RANK]> {
    let mut out = [1usize; crate::MAX_RANK];
    let skip = crate::MAX_RANK.checked_sub(dims.len())?;
    out[skip..].copy_from_slice(dims);
    Some(out)
}

/// Steps a row-major index over `dims` to the next element (last
/// dimension fastest; back to all zeros after the last).
pub(crate) fn advance(index: &mut [usize; crate::MAX_RANK], dims: &[usize; crate::MAX_RANK]) {
    for (i, &d) in index.iter_mut().zip(dims).rev() {
        *i += 1;
        if *i < d {
            return;
        }
        *i = 0;
    }
}

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// int8 element `i` of `bytes`.
#[inline]
pub(crate) fn int8(bytes: &[u8], i: usize) -> Result<i32, Error> {
    bytes.get(i).map(|&b| i32::from(b as i8)).ok_or(SHAPE)
}

/// The operands list of `tensors`.
pub(crate) fn operands(tensors: &[usize]) -> Result<Operands, Error> {
    let mut o = Operands::default();
    for &t in tensors {
        o.push(t)?;
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::name;

    #[test]
    fn names_follow_the_schema_codes() {
        assert_eq!(name(0), "ADD");
        assert_eq!(name(9), "FULLY_CONNECTED");
        assert_eq!(name(44), "UNIDIRECTIONAL_SEQUENCE_LSTM");
        assert_eq!(name(114), "QUANTIZE");
        assert_eq!(name(117), "HARD_SWISH");
        assert_eq!(name(209), "STABLEHLO_CASE");
        assert_eq!(name(210), "UNKNOWN");
        assert_eq!(name(-1), "UNKNOWN");
    }
}
