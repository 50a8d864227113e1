//! The seven operators the interpreter ran first (CONV_2D,
//! DEPTHWISE_CONV_2D, FULLY_CONNECTED, AVERAGE_POOL_2D, MAX_POOL_2D,
//! RESHAPE, SOFTMAX): one activation input, one output, their weights and
//! per-channel quantisation kept in the [`Kind`] itself; their kernels are
//! in `crate::kernels` and `ops::softmax`.

use super::{Kind, Precision, Prepared};
use crate::flat::{Table, Vector};
use crate::model::{
    invalid_operator, ElementType, Geometry, Model, Operands, Padding, Quantization, Tensor,
    MAX_TENSOR_BYTES,
};
use crate::schema::{builtin, options, tensor_type};
use crate::Error;

/// `Conv2DOptions.quantized_bias_type` (schema slot 6).
const CONV_QUANTIZED_BIAS_TYPE: usize = 6;

/// `FullyConnectedOptions.quantized_bias_type` (schema slot 4).
const FULLY_CONNECTED_QUANTIZED_BIAS_TYPE: usize = 4;

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

    /// [`prepare`](Self::prepare) of the operators this crate ran first
    /// (one activation input, one output, weights in the kind).
    pub(crate) fn prepare_classic(
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
}
