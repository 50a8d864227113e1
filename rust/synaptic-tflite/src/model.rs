//! A `.tflite` model read from untrusted bytes: [`Model::parse`] checks
//! everything the interpreter will later rely on.
//!
//! What is checked, once, in `parse`: the flatbuffer structure (every offset,
//! vtable, vector length, inside the bytes); file identifier `TFL3` and
//! `Model.version == 3`; exactly one subgraph; every tensor (element type,
//! rank at most [`MAX_RANK`], every dimension at least 1, element and byte
//! counts without overflow, buffer index in range, constant data exactly as
//! long as the shape says, no sparsity, no variables, no external buffers);
//! every operator (opcode index in range, a supported builtin, tensor indices
//! in range, options of the right union type, padding, strides, dilations,
//! activation, the shapes, element types and quantisation each kernel needs,
//! output shapes equal to the ones the reference kernels compute); and the
//! graph (inputs and outputs in range and not constant, every operator's
//! activation input produced by an earlier operator or a graph input, every
//! tensor written at most once). After a successful parse the accessors
//! re-read the same bytes through the same checked reader, so they cannot
//! read out of bounds either; they return errors rather than panic.
//!
//! Limits: [`MAX_TENSORS`] tensors, [`MAX_OPERATORS`] operators, tensors of
//! at most [`MAX_TENSOR_BYTES`] bytes.

use crate::flat::{Table, Vector};
use crate::schema::{self, builtin, options, tensor_type};
use crate::Error;

/// Largest tensor rank accepted.
pub const MAX_RANK: usize = 6;
/// Largest number of tensors in the subgraph.
pub const MAX_TENSORS: usize = 1024;
/// Largest number of operators in the subgraph.
pub const MAX_OPERATORS: usize = 1024;
/// Largest tensor, in bytes.
pub const MAX_TENSOR_BYTES: usize = 1 << 28;

/// Element type of a tensor (`TensorType` in the schema).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ElementType {
    /// 32-bit float.
    Float32,
    /// 32-bit signed integer (biases).
    Int32,
    /// 8-bit unsigned integer.
    UInt8,
    /// 64-bit signed integer.
    Int64,
    /// Boolean, one byte.
    Bool,
    /// 16-bit signed integer.
    Int16,
    /// 8-bit signed integer (the quantised activations and weights).
    Int8,
}

impl ElementType {
    fn from_code(code: i8) -> Option<Self> {
        Some(match code {
            tensor_type::FLOAT32 => Self::Float32,
            tensor_type::INT32 => Self::Int32,
            tensor_type::UINT8 => Self::UInt8,
            tensor_type::INT64 => Self::Int64,
            tensor_type::BOOL => Self::Bool,
            tensor_type::INT16 => Self::Int16,
            tensor_type::INT8 => Self::Int8,
            _ => return None,
        })
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::UInt8 | Self::Int8 | Self::Bool => 1,
            Self::Int16 => 2,
            Self::Float32 | Self::Int32 => 4,
            Self::Int64 => 8,
        }
    }
}

/// A tensor shape: at most [`MAX_RANK`] dimensions, each at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub(crate) dims: [usize; MAX_RANK],
    pub(crate) rank: usize,
}

impl Shape {
    /// The dimensions, outermost first.
    pub fn dims(&self) -> &[usize] {
        &self.dims[..self.rank]
    }

    /// Number of elements (checked not to overflow when the model was parsed).
    pub fn elements(&self) -> usize {
        self.dims().iter().product()
    }

    pub(crate) fn dim(&self, index: usize) -> usize {
        self.dims[index]
    }
}

/// Affine quantisation of a tensor with one scale: `real = scale * (q - zero_point)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Quantization {
    /// The scale (finite, positive).
    pub scale: f32,
    /// The zero point, within the element type's range.
    pub zero_point: i32,
}

/// The quantisation vectors as stored.
#[derive(Clone, Copy)]
pub(crate) struct QuantVectors<'a> {
    pub(crate) scales: Vector<'a>,
    pub(crate) zero_points: Vector<'a>,
    pub(crate) dimension: i32,
}

/// A tensor of the model, as validated.
#[derive(Clone, Copy)]
pub struct Tensor<'a> {
    pub(crate) shape: Shape,
    pub(crate) element_type: ElementType,
    pub(crate) data: Option<&'a [u8]>,
    pub(crate) quantization: Option<QuantVectors<'a>>,
    pub(crate) bytes: usize,
    /// Marked `is_variable` (state an operator keeps, such as an LSTM's).
    pub(crate) variable: bool,
}

impl<'a> Tensor<'a> {
    /// Its shape.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// Its element type.
    pub fn element_type(&self) -> ElementType {
        self.element_type
    }

    /// Its size in bytes.
    pub fn byte_len(&self) -> usize {
        self.bytes
    }

    /// Whether its data is stored in the model (weights, biases).
    pub fn is_constant(&self) -> bool {
        self.data.is_some()
    }

    /// Its per-tensor quantisation, if it has one scale (activations do).
    pub fn quantization(&self) -> Option<Quantization> {
        let q = self.quantization?;
        if q.scales.len() != 1 {
            return None;
        }
        Some(Quantization {
            scale: q.scales.f32(0).ok()?,
            zero_point: i32::try_from(q.zero_points.i64(0).ok()?).ok()?,
        })
    }
}

/// `Conv2DOptions.quantized_bias_type` (schema slot 6).
const CONV_QUANTIZED_BIAS_TYPE: usize = 6;
/// `FullyConnectedOptions.quantized_bias_type` (schema slot 4).
const FULLY_CONNECTED_QUANTIZED_BIAS_TYPE: usize = 4;

/// Padding scheme of a convolution or pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Padding {
    Same,
    Valid,
}

/// A fused activation, applied as the clamp of the output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Activation {
    None,
    Relu,
    ReluN1To1,
    Relu6,
}

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

/// Convolution and pooling geometry, NHWC, with the reference kernels'
/// padding already worked out.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Geometry {
    pub batches: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub out_c: usize,
    pub filter_h: usize,
    pub filter_w: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub dilation_h: usize,
    pub dilation_w: usize,
    pub pad_h: usize,
    pub pad_w: usize,
    pub depth_multiplier: usize,
}

/// Most tensors one operator reads, or writes (an operator with more is
/// refused as unsupported).
pub const MAX_OPERANDS: usize = 16;

/// Tensor indices an operator reads or writes, in its own order.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Operands {
    tensors: [u16; MAX_OPERANDS],
    len: usize,
}

impl Operands {
    pub(crate) fn one(tensor: usize) -> Self {
        let mut o = Self::default();
        o.tensors[0] = tensor as u16;
        o.len = 1;
        o
    }

    /// Appends `tensor` (an index below [`MAX_TENSORS`]).
    pub(crate) fn push(&mut self, tensor: usize) -> Result<(), Error> {
        let slot = self
            .tensors
            .get_mut(self.len)
            .ok_or(Error::Unsupported("an operator with more than 16 operands"))?;
        *slot = u16::try_from(tensor).map_err(|_| Error::TooLarge)?;
        self.len += 1;
        Ok(())
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn get(&self, i: usize) -> Option<usize> {
        self.tensors[..self.len].get(i).map(|&t| usize::from(t))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.tensors[..self.len].iter().map(|&t| usize::from(t))
    }

    pub(crate) fn contains(&self, tensor: usize) -> bool {
        self.iter().any(|t| t == tensor)
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

/// One operator as [`Model::survey`] reports it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OperatorSurvey {
    /// Its index in the graph.
    pub index: usize,
    /// Its `BuiltinOperator` code (`CUSTOM`, 32, for a custom operator).
    pub code: i32,
    /// Its name in TFLite's schema.
    pub name: &'static str,
    /// The element types of its first four inputs (`None`: absent).
    pub inputs: [Option<ElementType>; 4],
    /// The element types of its first four outputs.
    pub outputs: [Option<ElementType>; 4],
    /// `Ok` when the interpreter runs it, else why not
    /// ([`Error::UnsupportedOperator`], [`Error::UnsupportedFeature`], or
    /// what is inconsistent).
    pub verdict: Result<(), Error>,
}

/// A validated `.tflite` model, borrowing its bytes.
#[derive(Clone, Copy)]
pub struct Model<'a> {
    opcodes: Vector<'a>,
    buffers: Vector<'a>,
    tensors: Vector<'a>,
    operators: Vector<'a>,
    inputs: Vector<'a>,
    outputs: Vector<'a>,
    work: u64,
}

pub(crate) fn invalid_tensor(tensor: usize, reason: &'static str) -> Error {
    Error::InvalidTensor {
        tensor: tensor as u32,
        reason,
    }
}

/// `error` with the operator's name when it says something is unsupported.
fn named(error: Error, code: i32) -> Error {
    match error {
        Error::Unsupported(what) => Error::UnsupportedFeature {
            operator: code,
            what,
        },
        e => e,
    }
}

pub(crate) fn invalid_operator(operator: usize, reason: &'static str) -> Error {
    Error::InvalidOperator {
        operator: operator as u32,
        reason,
    }
}

/// The dilated extent of a filter, `(filter - 1) * dilation + 1`, if it is
/// no larger than [`MAX_TENSOR_BYTES`] (so that every coordinate the kernels
/// compute fits an `i32`).
fn effective_filter(filter: usize, dilation: usize) -> Option<usize> {
    (filter - 1)
        .checked_mul(dilation)?
        .checked_add(1)
        .filter(|&e| e <= MAX_TENSOR_BYTES)
}

/// `ComputeOutSize` of TFLite's `padding.h` (`effective` from
/// [`effective_filter`]).
fn out_size(padding: Padding, image: usize, effective: usize, stride: usize) -> usize {
    match padding {
        Padding::Same => image.div_ceil(stride),
        Padding::Valid => (image + stride).saturating_sub(effective) / stride,
    }
}

/// The leading padding of `ComputePaddingWithOffset` (the trailing offset is
/// not used by the reference kernels).
fn padding_before(stride: usize, image: usize, effective: usize, out: usize) -> usize {
    ((out - 1) * stride + effective).saturating_sub(image) / 2
}

/// Output size and leading padding along one axis, or `None` for an empty
/// output or an oversized filter.
fn axis(
    padding: Padding,
    image: usize,
    filter: usize,
    stride: usize,
    dilation: usize,
) -> Option<(usize, usize)> {
    let effective = effective_filter(filter, dilation)?;
    let out = out_size(padding, image, effective, stride);
    (out > 0).then(|| (out, padding_before(stride, image, effective, out)))
}

impl<'a> Model<'a> {
    /// Reads and validates a model.
    ///
    /// # Errors
    ///
    /// Any structural fault is [`Error::Malformed`]; a wrong identifier or
    /// schema version, [`Error::NotTflite`] or [`Error::SchemaVersion`];
    /// operators and features this interpreter does not implement,
    /// [`Error::UnsupportedOperator`] or [`Error::Unsupported`]; a model that
    /// is well formed but inconsistent, [`Error::InvalidTensor`],
    /// [`Error::InvalidOperator`] or [`Error::InvalidGraph`].
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_tflite::{Error, Model};
    /// assert_eq!(Model::parse(&[0; 4]).err(), Some(Error::Malformed));
    /// assert_eq!(Model::parse(b"\x08\0\0\0TFL2\0\0\0\0").err(), Some(Error::NotTflite));
    /// ```
    pub fn parse(bytes: &'a [u8]) -> Result<Self, Error> {
        let mut model = Self::read(bytes)?;
        model.validate()?;
        Ok(model)
    }

    /// Everything [`parse`](Self::parse) checks past the structure: first
    /// that every operator is one this interpreter implements (so that a
    /// network is refused for its operator, not for a tensor only that
    /// operator would use), then every tensor, then the graph.
    fn validate(&mut self) -> Result<(), Error> {
        for k in 0..self.operator_count() {
            let code = self.opcode(k, &self.operators.table(k)?)?;
            if !crate::ops::implemented(code) {
                return Err(Error::UnsupportedOperator { code });
            }
        }
        for t in 0..self.tensors.len() {
            self.tensor(t)?;
        }
        self.check_graph()
    }

    /// Every operator of a model with what it needs and whether this
    /// interpreter runs it, without stopping at the first it refuses (as
    /// [`parse`](Self::parse) does): for a tool that tells a user, before
    /// flashing, everything a network lacks. `each` gets one
    /// [`OperatorSurvey`] per operator, in order; the result is then that
    /// of [`parse`](Self::parse), so `Ok` means the model runs.
    ///
    /// # Errors
    ///
    /// As [`parse`](Self::parse); a structural fault ends the survey before
    /// any operator is reported.
    ///
    /// # Examples
    ///
    /// ```
    /// # let bytes = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/micro_speech.tflite")).unwrap();
    /// let mut names = Vec::new();
    /// synaptic_tflite::Model::survey(&bytes, |op| names.push(op.name))?;
    /// assert_eq!(names, ["RESHAPE", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "SOFTMAX"]);
    /// # Ok::<(), synaptic_tflite::Error>(())
    /// ```
    pub fn survey(bytes: &'a [u8], mut each: impl FnMut(OperatorSurvey)) -> Result<(), Error> {
        let mut model = Self::read(bytes)?;
        for k in 0..model.operator_count() {
            each(model.operator_survey(k)?);
        }
        model.validate()
    }

    fn operator_survey(&self, index: usize) -> Result<OperatorSurvey, Error> {
        use schema::operator as f;
        let op = self.operators.table(index)?;
        let code = match self.opcode(index, &op) {
            Ok(code) => code,
            Err(Error::Unsupported(_)) => schema::builtin::CUSTOM,
            Err(e) => return Err(e),
        };
        let mut survey = OperatorSurvey {
            index,
            code,
            name: crate::ops::name(code),
            inputs: [None; 4],
            outputs: [None; 4],
            verdict: self.prepare(index).map(|_| ()),
        };
        for (slot, list) in [
            (&mut survey.inputs, op.vector(f::INPUTS, 4)?),
            (&mut survey.outputs, op.vector(f::OUTPUTS, 4)?),
        ] {
            let list = list.unwrap_or(Vector::EMPTY);
            for (i, s) in slot.iter_mut().enumerate() {
                if let Some(t) = self.operand(index, list, i)? {
                    // A tensor the interpreter refuses is named by the
                    // verdict; its type is then not shown.
                    *s = self.tensor(t).ok().map(|t| t.element_type);
                }
            }
        }
        Ok(survey)
    }

    /// The structure: the tables and vectors every later read starts from.
    fn read(bytes: &'a [u8]) -> Result<Self, Error> {
        if bytes.len() < 8 {
            return Err(Error::Malformed);
        }
        if bytes.get(4..8) != Some(&schema::FILE_IDENTIFIER[..]) {
            return Err(Error::NotTflite);
        }
        let root = Table::root(bytes)?;
        let version = root.u32(schema::model::VERSION, 0)?;
        if version != schema::SCHEMA_VERSION {
            return Err(Error::SchemaVersion(version));
        }
        let opcodes = root
            .vector(schema::model::OPERATOR_CODES, 4)?
            .unwrap_or(Vector::EMPTY);
        let subgraphs = root
            .vector(schema::model::SUBGRAPHS, 4)?
            .ok_or(Error::MissingField("Model.subgraphs"))?;
        if subgraphs.len() != 1 {
            return Err(Error::Unsupported("a model with other than one subgraph"));
        }
        let subgraph = subgraphs.table(0)?;
        let buffers = root
            .vector(schema::model::BUFFERS, 4)?
            .unwrap_or(Vector::EMPTY);
        let tensors = subgraph
            .vector(schema::subgraph::TENSORS, 4)?
            .ok_or(Error::MissingField("SubGraph.tensors"))?;
        let operators = subgraph
            .vector(schema::subgraph::OPERATORS, 4)?
            .unwrap_or(Vector::EMPTY);
        let inputs = subgraph
            .vector(schema::subgraph::INPUTS, 4)?
            .ok_or(Error::MissingField("SubGraph.inputs"))?;
        let outputs = subgraph
            .vector(schema::subgraph::OUTPUTS, 4)?
            .ok_or(Error::MissingField("SubGraph.outputs"))?;
        if tensors.len() > MAX_TENSORS || operators.len() > MAX_OPERATORS {
            return Err(Error::TooLarge);
        }
        let model = Self {
            opcodes,
            buffers,
            tensors,
            operators,
            inputs,
            outputs,
            work: 0,
        };
        Ok(model)
    }

    /// Number of tensors in the subgraph.
    pub fn tensor_count(&self) -> usize {
        self.tensors.len()
    }

    /// Number of operators in the subgraph.
    pub fn operator_count(&self) -> usize {
        self.operators.len()
    }

    /// Steps a sliced run of this model takes
    /// ([`crate::Interpreter::step`]): one per operator, a convolution one
    /// per [`crate::STEP_ROWS`] of its output rows.
    ///
    /// # Errors
    ///
    /// As planning the model would.
    pub fn step_count(&self) -> Result<usize, Error> {
        let mut steps = 0;
        for k in 0..self.operator_count() {
            steps += match self.prepare(k)?.kind {
                Kind::Conv { geometry, .. } => (geometry.batches * geometry.out_h)
                    .div_ceil(crate::STEP_ROWS)
                    .max(1),
                _ => 1,
            };
        }
        Ok(steps)
    }

    /// Number of graph inputs.
    pub fn input_count(&self) -> usize {
        self.inputs.len()
    }

    /// Number of graph outputs.
    pub fn output_count(&self) -> usize {
        self.outputs.len()
    }

    /// Multiply-accumulates of one inference (pooling, reshape and softmax
    /// count one per element visited): a bound on the work of `invoke`.
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Multiply-accumulates of one inference in the CONV_2D,
    /// DEPTHWISE_CONV_2D and FULLY_CONNECTED operators (taps that fall in
    /// the padding included, as the shapes count them): the denominator of
    /// cycles per MAC.
    pub fn macs(&self) -> u64 {
        (0..self.operator_count())
            .filter_map(|k| self.prepare(k).ok())
            .filter(|p| matches!(p.kind, Kind::Conv { .. } | Kind::FullyConnected { .. }))
            .filter_map(|p| p.kind.work())
            .fold(0u64, u64::saturating_add)
    }

    /// Graph input `index`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexOutOfRange`] past the last input.
    pub fn input(&self, index: usize) -> Result<Tensor<'a>, Error> {
        self.tensor(self.input_tensor(index)?)
    }

    /// Graph output `index`.
    ///
    /// # Errors
    ///
    /// [`Error::IndexOutOfRange`] past the last output.
    pub fn output(&self, index: usize) -> Result<Tensor<'a>, Error> {
        self.tensor(self.output_tensor(index)?)
    }

    pub(crate) fn input_tensor(&self, index: usize) -> Result<usize, Error> {
        self.graph_index(self.inputs, index)
    }

    pub(crate) fn output_tensor(&self, index: usize) -> Result<usize, Error> {
        self.graph_index(self.outputs, index)
    }

    fn graph_index(&self, list: Vector<'a>, index: usize) -> Result<usize, Error> {
        if index >= list.len() {
            return Err(Error::IndexOutOfRange);
        }
        let t = list.i32(index)?;
        usize::try_from(t)
            .ok()
            .filter(|&t| t < self.tensors.len())
            .ok_or(Error::InvalidGraph(
                "graph input or output index out of range",
            ))
    }

    /// Tensor `index`, validated.
    pub(crate) fn tensor(&self, index: usize) -> Result<Tensor<'a>, Error> {
        use schema::tensor as f;
        if index >= self.tensors.len() {
            return Err(Error::IndexOutOfRange);
        }
        let t = self.tensors.table(index)?;
        let element_type = ElementType::from_code(t.i8(f::TYPE, tensor_type::FLOAT32)?)
            .ok_or(Error::Unsupported("tensor element type"))?;
        if t.has(f::SPARSITY)? {
            return Err(Error::Unsupported("sparse tensors"));
        }
        // A variable tensor (an LSTM's state) has no data; only the
        // operator that owns it reads it, and no operator lists it as an
        // activation, so the graph check refuses it anywhere else.
        let variable = t.u8(f::IS_VARIABLE, 0)? != 0;
        let mut shape = Shape {
            dims: [1; MAX_RANK],
            rank: 0,
        };
        let mut elements: usize = 1;
        if let Some(dims) = t.vector(f::SHAPE, 4)? {
            if dims.len() > MAX_RANK {
                return Err(invalid_tensor(index, "rank too large"));
            }
            shape.rank = dims.len();
            for d in 0..dims.len() {
                // A zero dimension (an empty optional tensor, such as an
                // LSTM's unused intermediates) gives 0 elements and 0 bytes.
                let dim = usize::try_from(dims.i32(d)?)
                    .map_err(|_| invalid_tensor(index, "negative dimension"))?;
                shape.dims[d] = dim;
                elements = elements
                    .checked_mul(dim)
                    .ok_or(invalid_tensor(index, "too many elements"))?;
            }
        }
        let bytes = elements
            .checked_mul(element_type.size())
            .filter(|&b| b <= MAX_TENSOR_BYTES)
            .ok_or(invalid_tensor(index, "too large"))?;
        let buffer = t.u32(f::BUFFER, 0)? as usize;
        let mut data = None;
        if buffer >= self.buffers.len() {
            if buffer != 0 {
                return Err(invalid_tensor(index, "buffer index out of range"));
            }
        } else {
            let b = self.buffers.table(buffer)?;
            if b.u64(schema::buffer::OFFSET, 0)? > 1 {
                return Err(Error::Unsupported("buffers stored outside the flatbuffer"));
            }
            if let Some(v) = b.vector(schema::buffer::DATA, 1)? {
                if v.len() > 0 {
                    if v.len() != bytes {
                        return Err(invalid_tensor(index, "data length differs from shape"));
                    }
                    data = Some(v.bytes());
                }
            }
        }
        let mut quantization = None;
        if let Some(q) = t.table(f::QUANTIZATION)? {
            use schema::quantization as qf;
            if q.u8(qf::DETAILS_TYPE, 0)? != 0 {
                return Err(Error::Unsupported("custom quantisation details"));
            }
            let scales = q.vector(qf::SCALE, 4)?.unwrap_or(Vector::EMPTY);
            let zero_points = q.vector(qf::ZERO_POINT, 8)?.unwrap_or(Vector::EMPTY);
            let dimension = q.i32(qf::QUANTIZED_DIMENSION, 0)?;
            if scales.len() > 0 {
                if zero_points.len() != scales.len() {
                    return Err(invalid_tensor(index, "scale and zero point counts differ"));
                }
                quantization = Some(QuantVectors {
                    scales,
                    zero_points,
                    dimension,
                });
            }
        }
        Ok(Tensor {
            shape,
            element_type,
            data,
            quantization,
            bytes,
            variable,
        })
    }

    /// The builtin operator code of operator `index`.
    fn opcode(&self, index: usize, op: &Table<'a>) -> Result<i32, Error> {
        let code_index = op.u32(schema::operator::OPCODE_INDEX, 0)? as usize;
        if code_index >= self.opcodes.len() {
            return Err(invalid_operator(index, "opcode index out of range"));
        }
        let code = self.opcodes.table(code_index)?;
        let deprecated = i32::from(code.i8(schema::operator_code::DEPRECATED_BUILTIN_CODE, 0)?);
        let builtin = code.i32(schema::operator_code::BUILTIN_CODE, 0)?;
        // schema.fbs: the larger of the two fields is the operator.
        let value = deprecated.max(builtin);
        if value == builtin::CUSTOM || code.has(schema::operator_code::CUSTOM_CODE)? {
            return Err(Error::Unsupported("custom operators"));
        }
        Ok(value)
    }

    /// The tensor index at position `position` of an operator's input or
    /// output list (`None` for the optional `-1`).
    pub(crate) fn operand(
        &self,
        index: usize,
        list: Vector<'a>,
        position: usize,
    ) -> Result<Option<usize>, Error> {
        if position >= list.len() {
            return Ok(None);
        }
        match list.i32(position)? {
            -1 => Ok(None),
            t => usize::try_from(t)
                .ok()
                .filter(|&t| t < self.tensors.len())
                .map(Some)
                .ok_or(invalid_operator(index, "tensor index out of range")),
        }
    }

    /// The output tensors of operator `index`, as listed.
    pub(crate) fn operator_outputs(&self, index: usize) -> Result<Operands, Error> {
        let op = self.operators.table(index)?;
        let list = op
            .vector(schema::operator::OUTPUTS, 4)?
            .unwrap_or(Vector::EMPTY);
        if list.len() == 0 {
            return Err(invalid_operator(index, "no output"));
        }
        let mut outputs = Operands::default();
        for position in 0..list.len() {
            let t = self
                .operand(index, list, position)?
                .ok_or(invalid_operator(index, "missing output"))?;
            outputs
                .push(t)
                .map_err(|_| invalid_operator(index, "too many outputs"))?;
        }
        Ok(outputs)
    }

    /// The output tensor of an operator with exactly one.
    fn operator_output(&self, index: usize) -> Result<usize, Error> {
        let op = self.operators.table(index)?;
        let outputs = op
            .vector(schema::operator::OUTPUTS, 4)?
            .unwrap_or(Vector::EMPTY);
        if outputs.len() != 1 {
            return Err(invalid_operator(index, "not exactly one output"));
        }
        self.operand(index, outputs, 0)?
            .ok_or(invalid_operator(index, "missing output"))
    }

    pub(crate) fn activation(index: usize, code: i8) -> Result<Activation, Error> {
        Ok(match code {
            0 => Activation::None,
            1 => Activation::Relu,
            2 => Activation::ReluN1To1,
            3 => Activation::Relu6,
            4 | 5 => return Err(Error::Unsupported("fused TANH or SIGN_BIT activation")),
            _ => return Err(invalid_operator(index, "unknown fused activation")),
        })
    }

    pub(crate) fn padding(index: usize, code: i8) -> Result<Padding, Error> {
        match code {
            0 => Ok(Padding::Same),
            1 => Ok(Padding::Valid),
            _ => Err(invalid_operator(index, "unknown padding")),
        }
    }

    pub(crate) fn positive(index: usize, value: i32, reason: &'static str) -> Result<usize, Error> {
        usize::try_from(value)
            .ok()
            .filter(|&v| (1..=1 << 16).contains(&v))
            .ok_or(invalid_operator(index, reason))
    }

    /// An int8 activation tensor with one valid scale and zero point.
    pub(crate) fn int8_activation(
        &self,
        index: usize,
        tensor: &Tensor<'a>,
    ) -> Result<Quantization, Error> {
        if tensor.element_type != ElementType::Int8 {
            return Err(Error::Unsupported("operators on tensors other than int8"));
        }
        let q = tensor
            .quantization()
            .ok_or(invalid_operator(index, "activation without one scale"))?;
        if !(q.scale.is_finite() && q.scale > 0.0 && (-128..=127).contains(&q.zero_point)) {
            return Err(invalid_operator(
                index,
                "activation scale or zero point out of range",
            ));
        }
        Ok(q)
    }

    /// The activation of a convolution or fully-connected layer: int8
    /// ([`int8_activation`](Self::int8_activation)), or for a 16x8 layer
    /// int16 with one valid scale and zero point 0 (LiteRT's `Prepare`
    /// requires it of input and output).
    fn layer_activation(
        &self,
        index: usize,
        tensor: &Tensor<'a>,
        sixteen: bool,
    ) -> Result<Quantization, Error> {
        if !sixteen {
            return self.int8_activation(index, tensor);
        }
        if tensor.element_type != ElementType::Int16 {
            return Err(invalid_operator(index, "16x8 output not int16"));
        }
        let q = tensor
            .quantization()
            .ok_or(invalid_operator(index, "activation without one scale"))?;
        if !(q.scale.is_finite() && q.scale > 0.0 && q.zero_point == 0) {
            return Err(invalid_operator(
                index,
                "int16 activation scale not positive or zero point not 0",
            ));
        }
        Ok(q)
    }

    /// A 16x8 layer's `quantized_bias_type` option: `Some(true)` for int64,
    /// `Some(false)` for int32, `None` when not given (`FLOAT32`, the
    /// schema's default); anything else LiteRT's `Prepare` refuses.
    fn declared_bias(index: usize, declared: i8) -> Result<Option<bool>, Error> {
        match declared {
            tensor_type::FLOAT32 => Ok(None),
            tensor_type::INT64 => Ok(Some(true)),
            tensor_type::INT32 => Ok(Some(false)),
            _ => Err(invalid_operator(
                index,
                "quantized bias type not int32 or int64",
            )),
        }
    }

    /// A 16x8 layer's constant bias (`channels` elements, or none) and
    /// its accumulator width (`true`: int64). `declared` is the
    /// `quantized_bias_type` option: given, the bias must be of that type
    /// (LiteRT's `Prepare`); not given, LiteRT's kernels read the bias as
    /// int64, so an int32 bias is refused as unsupported (they would read
    /// it as half as many int64 values).
    fn bias16(
        &self,
        index: usize,
        tensor: Option<usize>,
        channels: usize,
        declared: Option<bool>,
    ) -> Result<(Option<&'a [u8]>, bool), Error> {
        let Some(t) = tensor else {
            return Ok((None, declared.unwrap_or(true)));
        };
        let bias = self.tensor(t)?;
        let wide = match bias.element_type {
            ElementType::Int64 => true,
            ElementType::Int32 => false,
            _ => return Err(invalid_operator(index, "16x8 bias not int32 or int64")),
        };
        match (bias.data, declared) {
            (Some(_), None) if !wide => Err(Error::Unsupported(
                "an int32 16x8 bias without its quantized_bias_type",
            )),
            (Some(data), d) if d.unwrap_or(wide) == wide && bias.shape.elements() == channels => {
                Ok((Some(data), wide))
            }
            _ => Err(invalid_operator(
                index,
                "16x8 bias not constant, of its declared type, one per channel",
            )),
        }
    }

    /// A constant int8 filter's scales: one, or one per channel along
    /// `channel_dimension`; zero points must be 0 unless per-tensor and
    /// `allow_zero_point`. Returns the scales and the per-tensor zero point.
    pub(crate) fn filter_scales(
        &self,
        index: usize,
        filter: &Tensor<'a>,
        channel_dimension: usize,
        allow_zero_point: bool,
    ) -> Result<(Vector<'a>, i32), Error> {
        if filter.element_type != ElementType::Int8 || filter.data.is_none() {
            return Err(Error::Unsupported("filters other than constant int8"));
        }
        let q = filter
            .quantization
            .ok_or(invalid_operator(index, "filter without quantisation"))?;
        let channels = filter.shape.dim(channel_dimension);
        let n = q.scales.len();
        if n != 1 && (n != channels || q.dimension as usize != channel_dimension) {
            return Err(invalid_operator(
                index,
                "filter scales do not match its channels",
            ));
        }
        for c in 0..n {
            let s = q.scales.f32(c)?;
            if !(s.is_finite() && s > 0.0) {
                return Err(invalid_operator(index, "filter scale not positive"));
            }
            let zp = q.zero_points.i64(c)?;
            let allowed = if n == 1 && allow_zero_point {
                (-128..=127).contains(&zp)
            } else {
                zp == 0
            };
            if !allowed {
                return Err(invalid_operator(index, "filter zero point out of range"));
            }
        }
        Ok((q.scales, q.zero_points.i64(0)? as i32))
    }

    /// A constant int32 bias with `channels` elements, or none.
    pub(crate) fn bias(
        &self,
        index: usize,
        tensor: Option<usize>,
        channels: usize,
    ) -> Result<Option<&'a [u8]>, Error> {
        let Some(t) = tensor else { return Ok(None) };
        let bias = self.tensor(t)?;
        match bias.data {
            Some(data)
                if bias.element_type == ElementType::Int32 && bias.shape.elements() == channels =>
            {
                Ok(Some(data))
            }
            _ => Err(invalid_operator(
                index,
                "bias not constant int32 of one per channel",
            )),
        }
    }

    /// Operator `index` with its tensors resolved and checked.
    pub(crate) fn prepare(&self, index: usize) -> Result<Prepared<'a>, Error> {
        use schema::operator as f;
        if index >= self.operators.len() {
            return Err(Error::IndexOutOfRange);
        }
        let op = self.operators.table(index)?;
        let code = self.opcode(index, &op)?;
        let inputs = op.vector(f::INPUTS, 4)?.unwrap_or(Vector::EMPTY);
        let options_type = op.u8(f::BUILTIN_OPTIONS_TYPE, 0)?;
        let options = op.table(f::BUILTIN_OPTIONS)?;
        // The operator first: an operator this interpreter lacks is
        // reported as such, whatever its operands.
        if !crate::ops::implemented(code) {
            return Err(Error::UnsupportedOperator { code });
        }
        let intermediates = op.vector(f::INTERMEDIATES, 4)?;
        if intermediates.is_some() && code != builtin::UNIDIRECTIONAL_SEQUENCE_LSTM {
            return Err(Error::UnsupportedFeature {
                operator: code,
                what: "intermediate tensors",
            });
        }
        if !crate::ops::classic(code) {
            let context = crate::ops::Context {
                model: self,
                index,
                code,
                inputs,
                outputs: self.operator_outputs(index)?,
                intermediates: intermediates.unwrap_or(Vector::EMPTY),
                options_type,
                options,
            };
            return crate::ops::prepare(&context).map_err(|e| named(e, code));
        }
        self.prepare_classic(index, code, inputs, options_type, options)
            .map_err(|e| named(e, code))
    }

    /// [`prepare`](Self::prepare) of the operators this crate ran first
    /// (one activation input, one output, weights in the kind).
    fn prepare_classic(
        &self,
        index: usize,
        code: i32,
        inputs: Vector<'a>,
        options_type: u8,
        options: Option<Table<'a>>,
    ) -> Result<Prepared<'a>, Error> {
        let output = self.operator_output(index)?;
        let input = self
            .operand(index, inputs, 0)?
            .ok_or(invalid_operator(index, "missing input"))?;
        let expect_options = |tag: u8| -> Result<Option<Table<'a>>, Error> {
            match options {
                Some(_) if options_type != tag => {
                    Err(invalid_operator(index, "options of another operator"))
                }
                o => Ok(o),
            }
        };
        let input_tensor = self.tensor(input)?;
        let output_tensor = self.tensor(output)?;
        if input_tensor.is_constant() {
            return Err(Error::Unsupported("constant activation inputs"));
        }
        if output_tensor.is_constant() {
            return Err(invalid_operator(index, "output is constant"));
        }
        // The element type first: int16 activations are TFLite's 16x8
        // quantisation, which only the convolutions and fully-connected
        // layers run here; elsewhere unsupported, not inconsistent.
        let sixteen = cfg!(feature = "ops-16x8")
            && input_tensor.element_type == ElementType::Int16
            && matches!(
                code,
                builtin::CONV_2D | builtin::DEPTHWISE_CONV_2D | builtin::FULLY_CONNECTED
            );
        if code != builtin::RESHAPE && input_tensor.element_type != ElementType::Int8 && !sixteen {
            return Err(Error::Unsupported(
                if input_tensor.element_type == ElementType::Int16 {
                    "int16 activations (16x8 quantisation)"
                } else {
                    "element types other than int8"
                },
            ));
        }
        let max_inputs = match code {
            builtin::CONV_2D | builtin::DEPTHWISE_CONV_2D | builtin::FULLY_CONNECTED => 3,
            builtin::RESHAPE => 2,
            _ => 1,
        };
        if inputs.len() > max_inputs {
            return Err(invalid_operator(index, "too many inputs"));
        }
        let kind = match code {
            builtin::CONV_2D | builtin::DEPTHWISE_CONV_2D => {
                let depthwise = code == builtin::DEPTHWISE_CONV_2D;
                let (tag, padding, stride_w, stride_h, activation, dil_w, dil_h) = if depthwise {
                    use options::depthwise as o;
                    (
                        options::DEPTHWISE_CONV_2D,
                        o::PADDING,
                        o::STRIDE_W,
                        o::STRIDE_H,
                        o::FUSED_ACTIVATION,
                        o::DILATION_W,
                        o::DILATION_H,
                    )
                } else {
                    use options::conv as o;
                    (
                        options::CONV_2D,
                        o::PADDING,
                        o::STRIDE_W,
                        o::STRIDE_H,
                        o::FUSED_ACTIVATION,
                        o::DILATION_W,
                        o::DILATION_H,
                    )
                };
                let opts =
                    expect_options(tag)?.ok_or(invalid_operator(index, "missing options"))?;
                let padding = Self::padding(index, opts.i8(padding, 0)?)?;
                let stride_w = Self::positive(index, opts.i32(stride_w, 0)?, "stride")?;
                let stride_h = Self::positive(index, opts.i32(stride_h, 0)?, "stride")?;
                let dilation_w = Self::positive(index, opts.i32(dil_w, 1)?, "dilation")?;
                let dilation_h = Self::positive(index, opts.i32(dil_h, 1)?, "dilation")?;
                let activation = Self::activation(index, opts.i8(activation, 0)?)?;
                let filter_index = self
                    .operand(index, inputs, 1)?
                    .ok_or(invalid_operator(index, "missing filter"))?;
                let filter = self.tensor(filter_index)?;
                let (is, fs, os) = (input_tensor.shape, filter.shape, output_tensor.shape);
                if is.rank != 4 || fs.rank != 4 || os.rank != 4 {
                    return Err(invalid_operator(index, "convolution tensors not of rank 4"));
                }
                let in_c = is.dim(3);
                let out_c = os.dim(3);
                let depth_multiplier = if depthwise {
                    if fs.dim(0) != 1 || fs.dim(3) != out_c || in_c == 0 || out_c % in_c != 0 {
                        return Err(invalid_operator(index, "depthwise filter shape"));
                    }
                    // A file's multiplier may be anything: negative, or so
                    // large that the product overflows.
                    let m = opts.i32(options::depthwise::DEPTH_MULTIPLIER, 0)?;
                    let fits = usize::try_from(m)
                        .ok()
                        .and_then(|m| m.checked_mul(in_c))
                        .is_some_and(|channels| channels == out_c);
                    if m != 0 && !fits {
                        return Err(invalid_operator(index, "depth multiplier"));
                    }
                    out_c / in_c
                } else {
                    if fs.dim(0) != out_c || fs.dim(3) != in_c {
                        return Err(invalid_operator(index, "filter shape"));
                    }
                    1
                };
                let (filter_h, filter_w) = (fs.dim(1), fs.dim(2));
                let (in_h, in_w) = (is.dim(1), is.dim(2));
                let bad_shape = invalid_operator(index, "output shape");
                let (out_h, pad_h) =
                    axis(padding, in_h, filter_h, stride_h, dilation_h).ok_or(bad_shape)?;
                let (out_w, pad_w) =
                    axis(padding, in_w, filter_w, stride_w, dilation_w).ok_or(bad_shape)?;
                if os.dim(0) != is.dim(0) || os.dim(1) != out_h || os.dim(2) != out_w {
                    return Err(bad_shape);
                }
                let geometry = Geometry {
                    batches: is.dim(0),
                    in_h,
                    in_w,
                    in_c,
                    out_h,
                    out_w,
                    out_c,
                    filter_h,
                    filter_w,
                    stride_h,
                    stride_w,
                    dilation_h,
                    dilation_w,
                    pad_h,
                    pad_w,
                    depth_multiplier,
                };
                let (filter_scales, _) =
                    self.filter_scales(index, &filter, if depthwise { 3 } else { 0 }, false)?;
                let bias = self.operand(index, inputs, 2)?;
                let (bias, precision) = if !sixteen {
                    (self.bias(index, bias, out_c)?, Precision::Int8)
                } else if depthwise {
                    // LiteRT's 16x8 DEPTHWISE_CONV_2D takes int64 biases only.
                    let bias = self.bias16(index, bias, out_c, Some(true))?;
                    (bias.0, Precision::sixteen(true)?)
                } else {
                    let declared = opts.i8(CONV_QUANTIZED_BIAS_TYPE, tensor_type::FLOAT32)?;
                    let wide = Self::declared_bias(index, declared)?;
                    let (bias, wide) = self.bias16(index, bias, out_c, wide)?;
                    (bias, Precision::sixteen(wide)?)
                };
                Kind::Conv {
                    depthwise,
                    geometry,
                    filter: filter.data.unwrap_or(&[]),
                    bias,
                    filter_scales,
                    input: self.layer_activation(index, &input_tensor, sixteen)?,
                    output: self.layer_activation(index, &output_tensor, sixteen)?,
                    activation,
                    precision,
                }
            }
            builtin::FULLY_CONNECTED => {
                use options::fully_connected as o;
                let opts = expect_options(options::FULLY_CONNECTED)?;
                let (activation, format, declared) = match opts {
                    Some(t) => (
                        t.i8(o::FUSED_ACTIVATION, 0)?,
                        t.i8(o::WEIGHTS_FORMAT, 0)?,
                        t.i8(FULLY_CONNECTED_QUANTIZED_BIAS_TYPE, tensor_type::FLOAT32)?,
                    ),
                    None => (0, 0, tensor_type::FLOAT32),
                };
                if format != 0 {
                    return Err(Error::Unsupported("shuffled fully-connected weights"));
                }
                let activation = Self::activation(index, activation)?;
                let filter_index = self
                    .operand(index, inputs, 1)?
                    .ok_or(invalid_operator(index, "missing filter"))?;
                let filter = self.tensor(filter_index)?;
                if filter.shape.rank != 2 {
                    return Err(invalid_operator(index, "filter not of rank 2"));
                }
                let (units, depth) = (filter.shape.dim(0), filter.shape.dim(1));
                let elements = input_tensor.shape.elements();
                if elements % depth != 0
                    || output_tensor.shape.elements() != elements / depth * units
                {
                    return Err(invalid_operator(index, "fully-connected shapes"));
                }
                let (filter_scales, filter_zero_point) =
                    self.filter_scales(index, &filter, 0, true)?;
                let bias = self.operand(index, inputs, 2)?;
                let (bias, precision) = if sixteen {
                    let wide = Self::declared_bias(index, declared)?;
                    let (bias, wide) = self.bias16(index, bias, units, wide)?;
                    (bias, Precision::sixteen(wide)?)
                } else {
                    (self.bias(index, bias, units)?, Precision::Int8)
                };
                Kind::FullyConnected {
                    batches: elements / depth,
                    depth,
                    units,
                    filter: filter.data.unwrap_or(&[]),
                    bias,
                    filter_scales,
                    filter_zero_point,
                    input: self.layer_activation(index, &input_tensor, sixteen)?,
                    output: self.layer_activation(index, &output_tensor, sixteen)?,
                    activation,
                    precision,
                }
            }
            builtin::AVERAGE_POOL_2D | builtin::MAX_POOL_2D => {
                use options::pool as o;
                let opts = expect_options(options::POOL_2D)?
                    .ok_or(invalid_operator(index, "missing options"))?;
                let padding = Self::padding(index, opts.i8(o::PADDING, 0)?)?;
                let stride_w = Self::positive(index, opts.i32(o::STRIDE_W, 0)?, "stride")?;
                let stride_h = Self::positive(index, opts.i32(o::STRIDE_H, 0)?, "stride")?;
                let filter_w = Self::positive(index, opts.i32(o::FILTER_W, 0)?, "filter size")?;
                let filter_h = Self::positive(index, opts.i32(o::FILTER_H, 0)?, "filter size")?;
                let activation = Self::activation(index, opts.i8(o::FUSED_ACTIVATION, 0)?)?;
                let (is, os) = (input_tensor.shape, output_tensor.shape);
                if is.rank != 4 || os.rank != 4 {
                    return Err(invalid_operator(index, "pool tensors not of rank 4"));
                }
                let (in_h, in_w) = (is.dim(1), is.dim(2));
                let bad_shape = invalid_operator(index, "output shape");
                let (out_h, pad_h) = axis(padding, in_h, filter_h, stride_h, 1).ok_or(bad_shape)?;
                let (out_w, pad_w) = axis(padding, in_w, filter_w, stride_w, 1).ok_or(bad_shape)?;
                if os.dims() != [is.dim(0), out_h, out_w, is.dim(3)] {
                    return Err(bad_shape);
                }
                let input = self.int8_activation(index, &input_tensor)?;
                let output = self.int8_activation(index, &output_tensor)?;
                if input != output {
                    return Err(invalid_operator(
                        index,
                        "pool input and output quantised differently",
                    ));
                }
                Kind::Pool {
                    average: code == builtin::AVERAGE_POOL_2D,
                    geometry: Geometry {
                        batches: is.dim(0),
                        in_h,
                        in_w,
                        in_c: is.dim(3),
                        out_h,
                        out_w,
                        out_c: is.dim(3),
                        filter_h,
                        filter_w,
                        stride_h,
                        stride_w,
                        dilation_h: 1,
                        dilation_w: 1,
                        pad_h,
                        pad_w,
                        depth_multiplier: 1,
                    },
                    output,
                    activation,
                }
            }
            builtin::RESHAPE => {
                expect_options(options::RESHAPE)?;
                if let Some(shape) = self.operand(index, inputs, 1)? {
                    if !self.tensor(shape)?.is_constant() {
                        return Err(Error::Unsupported("reshape to a computed shape"));
                    }
                }
                if input_tensor.element_type != output_tensor.element_type
                    || input_tensor.bytes != output_tensor.bytes
                {
                    return Err(invalid_operator(index, "reshape changes the size"));
                }
                Kind::Reshape {
                    bytes: input_tensor.bytes,
                }
            }
            builtin::SOFTMAX => {
                let beta = match expect_options(options::SOFTMAX)? {
                    Some(t) => t.f32(options::softmax::BETA, 0.0)?,
                    None => 0.0,
                };
                let input = self.int8_activation(index, &input_tensor)?;
                let output = self.int8_activation(index, &output_tensor)?;
                // TFLite's int8 softmax requires exactly this output quantisation.
                if output.zero_point != -128 || (output.scale - 1.0 / 256.0).abs() > 0.001 / 256.0 {
                    return Err(invalid_operator(
                        index,
                        "softmax output not scale 1/256, zero point -128",
                    ));
                }
                let is = input_tensor.shape;
                if is.rank == 0
                    || is != output_tensor.shape
                    || !beta.is_finite()
                    || !(input.scale * beta).is_finite()
                {
                    return Err(invalid_operator(index, "softmax shapes or beta"));
                }
                let depth = is.dim(is.rank - 1);
                Kind::Softmax {
                    rows: is.elements() / depth,
                    depth,
                    beta,
                    input,
                    output,
                }
            }
            other => return Err(Error::UnsupportedOperator { code: other }),
        };
        Ok(Prepared {
            inputs: Operands::one(input),
            outputs: Operands::one(output),
            kind,
        })
    }

    /// The graph rules of the module docs; also sums the work.
    fn check_graph(&mut self) -> Result<(), Error> {
        let is_graph_input = |t: usize| -> Result<bool, Error> {
            for i in 0..self.inputs.len() {
                if self.input_tensor(i)? == t {
                    return Ok(true);
                }
            }
            Ok(false)
        };
        for i in 0..self.inputs.len() {
            let t = self.input_tensor(i)?;
            if self.tensor(t)?.is_constant() {
                return Err(Error::InvalidGraph("constant graph input"));
            }
            for j in 0..i {
                if self.input_tensor(j)? == t {
                    return Err(Error::InvalidGraph("graph input listed twice"));
                }
            }
        }
        let mut work: u64 = 0;
        for k in 0..self.operators.len() {
            let p = self.prepare(k)?;
            work = p
                .kind
                .work()
                .and_then(|w| work.checked_add(w))
                .ok_or(Error::TooLarge)?;
            for (position, o) in p.outputs.iter().enumerate() {
                if is_graph_input(o)? {
                    return Err(invalid_operator(k, "writes a graph input"));
                }
                let mut twice = p.outputs.iter().take(position).any(|e| e == o);
                for j in 0..k {
                    twice |= self.operator_outputs(j)?.contains(o);
                }
                if twice {
                    return Err(invalid_operator(k, "output written twice"));
                }
            }
            for t in p.inputs.iter() {
                if self.tensor(t)?.is_constant() {
                    continue;
                }
                let mut ready = is_graph_input(t)?;
                for j in 0..k {
                    ready |= self.operator_outputs(j)?.contains(t);
                }
                if !ready {
                    return Err(invalid_operator(k, "input not produced before it is read"));
                }
            }
        }
        for i in 0..self.outputs.len() {
            let t = self.output_tensor(i)?;
            let mut produced = is_graph_input(t)?;
            for k in 0..self.operators.len() {
                produced |= self.operator_outputs(k)?.contains(t);
            }
            if !produced {
                return Err(Error::InvalidGraph("graph output never written"));
            }
        }
        self.work = work;
        Ok(())
    }
}
