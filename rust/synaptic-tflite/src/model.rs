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
use crate::schema::{self, builtin, tensor_type};
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

/// A validated `.tflite` model, borrowing its bytes.
#[derive(Clone, Copy)]
pub struct Model<'a> {
    pub(crate) opcodes: Vector<'a>,
    pub(crate) buffers: Vector<'a>,
    pub(crate) tensors: Vector<'a>,
    pub(crate) operators: Vector<'a>,
    pub(crate) inputs: Vector<'a>,
    pub(crate) outputs: Vector<'a>,
    pub(crate) work: u64,
    /// Every operator and tensor passed [`Model::parse`]'s checks: what
    /// they checked once need not be checked again when an operator is
    /// prepared to run (the bytes are borrowed immutably).
    pub(crate) validated: bool,
}

pub(crate) fn invalid_tensor(tensor: usize, reason: &'static str) -> Error {
    Error::InvalidTensor {
        tensor: tensor as u32,
        reason,
    }
}

pub(crate) fn invalid_operator(operator: usize, reason: &'static str) -> Error {
    Error::InvalidOperator {
        operator: operator as u32,
        reason,
    }
}

impl<'a> Model<'a> {
    /// The structure: the tables and vectors every later read starts from.
    pub(crate) fn read(bytes: &'a [u8]) -> Result<Self, Error> {
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
            validated: false,
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
        // What parse checked once is not checked again (`validated`).
        if !self.validated && t.has(f::SPARSITY)? {
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
            if !self.validated && b.u64(schema::buffer::OFFSET, 0)? > 1 {
                return Err(Error::Unsupported("buffers stored outside the flatbuffer"));
            }
            if let Some(v) = b.vector(schema::buffer::DATA, 1)? {
                if v.len() > 0 {
                    if !self.validated && v.len() != bytes {
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

    /// The constant data of tensor `index` (`None`: an activation), read
    /// from a validated model without decoding the rest of the tensor:
    /// what [`tensor`](Self::tensor)`(index)?.data` gives, for running an
    /// operator.
    pub(crate) fn tensor_data(&self, index: usize) -> Result<Option<&'a [u8]>, Error> {
        if !self.validated {
            return Ok(self.tensor(index)?.data);
        }
        let t = self.tensors.table(index)?;
        let buffer = t.u32(schema::tensor::BUFFER, 0)? as usize;
        if buffer >= self.buffers.len() {
            return Ok(None);
        }
        let data = self
            .buffers
            .table(buffer)?
            .vector(schema::buffer::DATA, 1)?;
        Ok(data.map(|v| v.bytes()).filter(|d| !d.is_empty()))
    }

    /// The builtin operator code of operator `index`.
    pub(crate) fn opcode(&self, index: usize, op: &Table<'a>) -> Result<i32, Error> {
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
    pub(crate) fn operator_output(&self, index: usize) -> Result<usize, Error> {
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
        // Per channel, once: at parse, not at every run of the operator.
        for c in (0..n).filter(|_| !self.validated) {
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
}
