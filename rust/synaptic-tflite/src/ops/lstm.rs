//! UNIDIRECTIONAL_SEQUENCE_LSTM on int8 (the "8x8->16" integer LSTM).
//!
//! Bit for bit LiteRT's `unidirectional_sequence_lstm.cc` (`Prepare`,
//! `PopulateQuantizedLstmParams8x8_16`,
//! `PopulatePrecomputedZPTimesWeightsWithBias`) and `lstm_eval.cc`
//! (`EvalInteger8x8_16` → `LstmStepInteger8x8_16` with
//! `CalculateLstmGateInteger8x8_16`, `UpdateLstmCellInteger` and
//! `CalculateLstmOutputInteger8x8_16`), with the portable tensor utilities
//! those call (`PortableMatrixBatchVectorMultiplyAccumulate` into int16,
//! `PortableApplySigmoid`, `PortableApplyTanh`, both `PortableCwiseMul`,
//! `PortableCwiseAdd`, `PortableSub1Vector`, `PortableCwiseClipping`) and
//! gemmlowp's 16-bit `logistic` and `tanh` (`fixedpoint.h`).
//!
//! Fixed-point formats, as in the reference:
//! * each gate's pre-activation is int16 Q3.12 (the intermediate scale
//!   `2^-12` of an LSTM without layer normalisation): the input and
//!   recurrent products are each scaled by `MultiplyByQuantizedMultiplier`
//!   (gemmlowp's double rounding) with `QuantizeMultiplier(f32(weight_scale
//!   * activation_scale) / 2^-12)` (the products and quotient in float, as
//!   the C++ does) and added with int16 saturation; the zero points enter as
//!   `bias - zero_point * row_sum`;
//! * the input, forget and output gates are `logistic` of that
//!   `FixedPoint<int16, 3>`, the cell gate `tanh` of it, all Q0.15;
//! * the cell state is int16 with scale `2^cell_scale` (the cell state
//!   tensor's scale must be an exact power of two, `cell_scale` in
//!   `-15..=-9`): `c = RDBP(f * c, 15) + RDBP(i * g, 30 + cell_scale)`
//!   saturated, then clipped to the quantised `cell_clip`; with CIFG `i` is
//!   `32767 - f`;
//! * the hidden state is `o * tanh(c)` (`tanh` of `FixedPoint<int16, 15 +
//!   cell_scale>`) scaled by `QuantizeMultiplier(f32(2^-15 / hidden_scale *
//!   2^-15))` to int8 with the hidden intermediate's (the 5th entry of the
//!   operator's `intermediates`) zero point; it is the output and the next
//!   step's recurrent input (quantised like the output state tensor).
//!
//! State: this interpreter keeps no variable tensors, so every invoke
//! starts from the state LiteRT's `ResetVariableTensors` gives (the int8
//! output state at its zero point, the int16 cell state at 0) and runs the
//! whole sequence of the input: the operator is stateless across invokes
//! (one invoke = one whole sequence, as if the state were reset before each).
//!
//! Limits: int8 input, weights (one scale, zero point 0) and output state,
//! int16 cell state, int32 biases; rank-3 input, batch-major or time-major;
//! at most [`MAX_CELLS`] cells (the kernel's working memory is on the
//! stack, about 2.8 KB: five int16 vectors (four gates, the cell state) and
//! one int8 vector (the hidden state) of [`MAX_CELLS`], one batch at a
//! time, which gives the reference's result since its batches never mix);
//! no limit on the batch, the sequence length or `n_input`. Refused:
//! layer normalisation, peephole connections, projection, diagonal
//! recurrent weights and hybrid or float LSTMs.
//!
//! Operands passed to `run`, in this order (the state tensors are not
//! among them: they are never read, only their quantisation): the input,
//! then for each gate present (input gate unless CIFG, forget, cell,
//! output) its input weights `[n_cell, n_input]`, recurrent weights
//! `[n_cell, n_output]` and bias `[n_cell]`.

use super::Prepared;
use super::{operands, Context, Op};
use crate::model::{ElementType, Tensor};
use crate::quant::{
    clamp, multiply_by_quantized_multiplier, quantize_ratio, rounding_divide_by_pot, split,
};
use crate::schema::options;
use crate::Error;

/// Most cells (and outputs) of an LSTM this kernel runs.
pub(crate) const MAX_CELLS: usize = 256;

const SHAPE: Error = Error::Internal("kernel buffer shorter than its shape");

/// Input positions of TFLite's LSTM (`lstm_shared.h`).
mod input {
    pub const INPUT: usize = 0;
    pub const INPUT_TO_INPUT: usize = 1;
    pub const RECURRENT_TO_INPUT: usize = 5;
    pub const CELL_TO_INPUT: usize = 9;
    pub const CELL_TO_FORGET: usize = 10;
    pub const CELL_TO_OUTPUT: usize = 11;
    pub const INPUT_GATE_BIAS: usize = 12;
    pub const PROJECTION_WEIGHTS: usize = 16;
    pub const PROJECTION_BIAS: usize = 17;
    pub const OUTPUT_STATE: usize = 18;
    pub const CELL_STATE: usize = 19;
    pub const FORGET_LAYER_NORM: usize = 21;
}

/// The scaling of one gate's two matrix products.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Gate {
    input: (i32, i32),
    recurrent: (i32, i32),
}

/// A prepared int8 UNIDIRECTIONAL_SEQUENCE_LSTM.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Lstm {
    n_batch: usize,
    n_time: usize,
    n_input: usize,
    n_cell: usize,
    time_major: bool,
    /// No input gate (coupled input and forget gates).
    cifg: bool,
    input_zero_point: i32,
    output_state_zero_point: i32,
    hidden_zero_point: i32,
    /// Input, forget, cell and output gate.
    gates: [Gate; 4],
    hidden: (i32, i32),
    cell_scale: i32,
    /// Quantised `cell_clip` (0: none).
    cell_clip: i16,
}

/// `QuantizeMultiplier(double(v))` of a float multiplier; `None` for a
/// negative, infinite or NaN one.
fn float_multiplier(v: f32) -> Option<(i32, i32)> {
    if v == 0.0 {
        return Some((0, 0));
    }
    if !(v.is_finite() && v > 0.0) {
        return None;
    }
    let (m, e) = split(v)?;
    Some(quantize_ratio(m, e, 1))
}

/// The single scale of a tensor, with its zero point.
fn scale(c: &Context<'_, '_>, t: &Tensor<'_>) -> Result<(f32, i32), Error> {
    let q = t
        .quantization()
        .ok_or(c.unsupported("LSTM tensors without one scale"))?;
    if !(q.scale.is_finite() && q.scale > 0.0) {
        return Err(c.invalid("LSTM tensor scale not positive"));
    }
    Ok((q.scale, q.zero_point))
}

pub(crate) fn prepare<'a>(c: &Context<'_, 'a>) -> Result<Prepared<'a>, Error> {
    let n_inputs = c.input_count();
    if n_inputs != 20 && n_inputs != 24 {
        return Err(c.invalid("an LSTM takes 20 or 24 inputs"));
    }
    c.arity(20, 24, 1)?;
    let present = |i: usize| -> Result<Option<(usize, Tensor<'a>)>, Error> {
        match c.model.operand(c.index, c.inputs, i)? {
            Some(t) => Ok(Some((t, c.model.tensor(t)?))),
            None => Ok(None),
        }
    };
    if n_inputs == 24 && present(input::FORGET_LAYER_NORM)?.is_some() {
        return Err(c.unsupported("layer normalisation"));
    }
    for i in [
        input::CELL_TO_INPUT,
        input::CELL_TO_FORGET,
        input::CELL_TO_OUTPUT,
    ] {
        if present(i)?.is_some() {
            return Err(c.unsupported("peephole connections"));
        }
    }
    if present(input::PROJECTION_WEIGHTS)?.is_some() || present(input::PROJECTION_BIAS)?.is_some() {
        return Err(c.unsupported("projection"));
    }

    let (mut cell_clip, mut time_major) = (0.0f32, false);
    if let Some(o) = c.options(options::UNIDIRECTIONAL_SEQUENCE_LSTM)? {
        use options::unidirectional_sequence_lstm as f;
        cell_clip = o.f32(f::CELL_CLIP, 0.0)?;
        let proj_clip = o.f32(f::PROJ_CLIP, 0.0)?;
        if cell_clip.is_nan() || cell_clip < 0.0 || proj_clip.is_nan() || proj_clip < 0.0 {
            return Err(c.invalid("negative LSTM clip"));
        }
        time_major = o.u8(f::TIME_MAJOR, 0)? != 0;
        if o.u8(f::DIAGONAL_RECURRENT_TENSORS, 0)? != 0 {
            return Err(c.unsupported("diagonal recurrent weights"));
        }
    }

    let (x_index, x) = c.input(input::INPUT)?;
    if x.element_type() != ElementType::Int8 {
        return Err(c.unsupported("element types other than int8"));
    }
    let qx = c.quantization(&x, ElementType::Int8)?;
    let dims = x.shape().dims();
    if dims.len() != 3 {
        return Err(c.unsupported("an LSTM input not of rank 3"));
    }
    let (n_time, n_batch) = if time_major {
        (dims[0], dims[1])
    } else {
        (dims[1], dims[0])
    };
    let n_input = dims[2];

    let cifg = present(input::INPUT_TO_INPUT)?.is_none();
    if cifg
        && (present(input::RECURRENT_TO_INPUT)?.is_some()
            || present(input::INPUT_GATE_BIAS)?.is_some())
    {
        return Err(c.invalid("CIFG LSTM with input gate tensors"));
    }

    // The output state: its scale scales the recurrent products, its zero
    // point is the initial state and the recurrent input's offset.
    let (_, output_state) = c.input(input::OUTPUT_STATE)?;
    let (_, cell_state) = c.input(input::CELL_STATE)?;
    if !output_state.variable || !cell_state.variable {
        return Err(c.invalid("LSTM state tensors not variable"));
    }
    if output_state.element_type() != ElementType::Int8
        || cell_state.element_type() != ElementType::Int16
    {
        return Err(c.unsupported("LSTM states other than int8 output and int16 cell"));
    }
    let (output_state_scale, output_state_zero_point) = scale(c, &output_state)?;
    if !(-128..=127).contains(&output_state_zero_point) {
        return Err(c.invalid("output state zero point out of range"));
    }
    let (cell_state_scale, _) = scale(c, &cell_state)?;
    // `CheckedLog2`: accepted here only for an exact power of two.
    let (m, e) = split(cell_state_scale).ok_or(c.invalid("cell state scale"))?;
    if !m.is_power_of_two() {
        return Err(c.unsupported("a cell state scale that is not a power of two"));
    }
    let cell_scale = e + m.trailing_zeros() as i32;
    if !(-15..=-9).contains(&cell_scale) {
        return Err(c.unsupported("a cell state scale outside 2^-15..=2^-9"));
    }

    // Gates: weights, recurrent weights, bias; n_cell from the output gate.
    let mut list = [0usize; 13];
    list[0] = x_index;
    let mut listed = 1;
    let mut gates = [Gate::default(); 4];
    let mut n_cell = 0;
    let mut n_output = 0;
    for (g, gate) in gates.iter_mut().enumerate() {
        if g == 0 && cifg {
            continue;
        }
        let (wi, w) = c.input(input::INPUT_TO_INPUT + g)?;
        let (ri, r) = c.input(input::RECURRENT_TO_INPUT + g)?;
        let (bi, b) = c.input(input::INPUT_GATE_BIAS + g)?;
        if n_cell == 0 {
            n_cell = w.shape().dims().first().copied().unwrap_or(0);
            n_output = r.shape().dims().get(1).copied().unwrap_or(0);
        }
        if w.shape().dims() != [n_cell, n_input] || r.shape().dims() != [n_cell, n_output] {
            return Err(c.invalid("LSTM weight shapes disagree"));
        }
        if b.shape().dims() != [n_cell] || b.element_type() != ElementType::Int32 {
            return Err(c.invalid("LSTM bias not int32 of n_cell"));
        }
        if w.element_type() != ElementType::Int8 || r.element_type() != ElementType::Int8 {
            return Err(c.unsupported("LSTM weights other than int8"));
        }
        if w.data.is_none() || r.data.is_none() || b.data.is_none() {
            return Err(c.unsupported("computed LSTM weights"));
        }
        let (ws, wz) = scale(c, &w)?;
        let (rs, rz) = scale(c, &r)?;
        if wz != 0 || rz != 0 {
            return Err(c.unsupported("LSTM weights with a zero point"));
        }
        // f32(weight_scale * activation_scale) / 2^-12, in float as the C++.
        let q12 = 1.0 / 4096.0f32;
        let input = float_multiplier(ws * qx.scale / q12);
        let recurrent = float_multiplier(rs * output_state_scale / q12);
        *gate = Gate {
            input: input.ok_or(c.unsupported("LSTM scales out of range"))?,
            recurrent: recurrent.ok_or(c.unsupported("LSTM scales out of range"))?,
        };
        for t in [wi, ri, bi] {
            *list.get_mut(listed).ok_or(SHAPE)? = t;
            listed += 1;
        }
    }
    if n_cell == 0 || n_cell > MAX_CELLS {
        return Err(c.unsupported("an LSTM of more than 256 cells"));
    }
    if n_output != n_cell {
        return Err(c.invalid("LSTM output size differs from its cells without projection"));
    }
    if Some(output_state.shape().elements()) != n_batch.checked_mul(n_output)
        || Some(cell_state.shape().elements()) != n_batch.checked_mul(n_cell)
    {
        return Err(c.invalid("LSTM state sizes"));
    }
    let (_, out) = c.output(0)?;
    let want = [dims[0], dims[1], n_output];
    if out.element_type() != ElementType::Int8 || out.shape().dims() != want {
        return Err(c.invalid("LSTM output not int8 of the input's shape with n_output"));
    }

    // The hidden state's quantisation: the 5th intermediate.
    if c.intermediates.len() != 5 {
        return Err(c.invalid("an int8 LSTM needs 5 intermediates"));
    }
    let hidden = usize::try_from(c.intermediates.i32(4)?)
        .map_err(|_| c.invalid("LSTM intermediate index"))?;
    let (hidden_scale, hidden_zero_point) = scale(c, &c.model.tensor(hidden)?)?;
    // double(2^-15) / hidden_scale * 2^-15 stored in a float: the double
    // quotient rounded to float is the float quotient (53 >= 2 * 24 + 2),
    // and the power-of-two factors are exact.
    let p15 = 1.0 / 32768.0f32;
    let hidden = float_multiplier(p15 / hidden_scale * p15)
        .ok_or(c.unsupported("LSTM scales out of range"))?;

    // int16(min(max(cell_clip / scale, -32768), 32767)), truncating.
    let cell_clip = if cell_clip > 0.0 {
        (cell_clip / cell_state_scale).clamp(-32768.0, 32767.0) as i16
    } else {
        0
    };

    let lstm = Lstm {
        n_batch,
        n_time,
        n_input,
        n_cell,
        time_major,
        cifg,
        input_zero_point: qx.zero_point,
        output_state_zero_point,
        hidden_zero_point,
        gates,
        hidden,
        cell_scale,
        cell_clip,
    };
    Ok(c.prepared(operands(list.get(..listed).ok_or(SHAPE)?)?, Op::Lstm(lstm)))
}

/// gemmlowp's `SaturatingRoundingDoublingHighMul` on int16: the product of
/// two Q0.15 numbers, rounded, `-1 * -1` saturated.
fn mul16(a: i16, b: i16) -> i16 {
    if a == b && a == i16::MIN {
        return i16::MAX;
    }
    let ab = i32::from(a) * i32::from(b);
    let nudge = if ab >= 0 { 1 << 14 } else { 1 - (1 << 14) };
    ((ab + nudge) / (1 << 15)) as i16
}

/// gemmlowp's `RoundingDivideByPOT` on int16, `exponent` in `0..=15`.
fn rounding_divide16(x: i16, exponent: u32) -> i16 {
    let mask = (1i32 << exponent) - 1;
    let x = i32::from(x);
    let threshold = (mask >> 1) + i32::from(x < 0);
    ((x >> exponent) + i32::from((x & mask) > threshold)) as i16
}

/// gemmlowp's `SaturatingRoundingMultiplyByPOT<exponent>` on int16 for
/// `exponent` in `0..=15` (a saturating left shift).
fn saturating_shift16(x: i16, exponent: u32) -> i16 {
    let threshold = (1i32 << (15 - exponent)) - 1;
    let x = i32::from(x);
    if x > threshold {
        i16::MAX
    } else if x < -threshold {
        i16::MIN
    } else {
        (x << exponent) as i16
    }
}

/// `RescaleConstantInitializer` of int16: a Q0.31 constant to Q0.15.
fn constant16(raw: i32) -> i16 {
    rounding_divide_by_pot(raw, 16) as i16
}

/// gemmlowp's `SaturatingAdd` on int16.
fn saturating_add16(a: i16, b: i16) -> i16 {
    clamp(i32::from(a) + i32::from(b), -32768, 32767) as i16
}

/// gemmlowp's `RoundingHalfSum` on int16.
fn rounding_half_sum16(a: i16, b: i16) -> i16 {
    let sum = i32::from(a) + i32::from(b);
    let sign = if sum >= 0 { 1 } else { -1 };
    ((sum + sign) / 2) as i16
}

/// `exp_on_interval_between_negative_one_quarter_and_0_excl` on Q0.15.
fn exp_on_quarter_interval(a: i16) -> i16 {
    let constant_term = constant16(1_895_147_668);
    let one_third = constant16(715_827_883);
    let x = a.wrapping_add(1 << 12);
    let x2 = mul16(x, x);
    let x3 = mul16(x2, x);
    let x4 = mul16(x2, x2);
    let x4_over_4 = rounding_divide16(x4, 2);
    let sum = mul16(x4_over_4.wrapping_add(x3), one_third).wrapping_add(x2);
    let poly = rounding_divide16(sum, 1);
    saturating_add16(constant_term, mul16(constant_term, x.wrapping_add(poly)))
}

/// `exp_on_negative_values` of `FixedPoint<int16, integer_bits>` (Q0.15
/// result), `integer_bits` in `0..=13`.
fn exp_on_negative_values(a: i16, integer_bits: u32) -> i16 {
    let fractional = 15 - integer_bits;
    let one_quarter: i16 = 1 << (fractional - 2);
    let mask = one_quarter.wrapping_sub(1);
    let a_mod = (a & mask).wrapping_sub(one_quarter);
    let mut result = exp_on_quarter_interval(saturating_shift16(a_mod, integer_bits));
    let remainder = a_mod.wrapping_sub(a);
    const BARREL: [(i32, i32); 7] = crate::quant::EXP_BARREL;
    for (exponent, multiplier) in BARREL {
        if integer_bits as i32 > exponent {
            let bit = (fractional as i32 + exponent) as u32;
            if i32::from(remainder) & (1 << bit) != 0 {
                result = mul16(result, constant16(multiplier));
            }
        }
    }
    if integer_bits > 5 {
        let clamp_at = constant16(-(1 << (36 - integer_bits)));
        if a < clamp_at {
            result = 0;
        }
    }
    if a == 0 {
        result = i16::MAX;
    }
    result
}

/// The Newton-Raphson iterations of `one_over_one_plus_x_for_x_in_0_1` and
/// `one_minus_x_over_one_plus_x_for_x_in_0_1`: `1 / (1 + a)` as Q2.13.
fn reciprocal_iterations(a: i16) -> i16 {
    let half_denominator = rounding_half_sum16(a, i16::MAX);
    let c48_17 = constant16(1_515_870_810);
    let c_neg32_17 = constant16(-1_010_580_540);
    let mut x = c48_17.wrapping_add(mul16(half_denominator, c_neg32_17));
    for _ in 0..3 {
        let half_denominator_times_x = mul16(half_denominator, x);
        let one_minus = (1i16 << 13).wrapping_sub(half_denominator_times_x);
        x = x.wrapping_add(saturating_shift16(mul16(x, one_minus), 2));
    }
    x
}

/// gemmlowp's `logistic` of `FixedPoint<int16, integer_bits>` to Q0.15,
/// `integer_bits` in `0..=13`.
pub(crate) fn logistic16(a: i16, integer_bits: u32) -> i16 {
    if a == 0 {
        return constant16(1 << 30);
    }
    let positive = a > 0;
    let abs = if positive { a } else { a.wrapping_neg() };
    let e = exp_on_negative_values(abs.wrapping_neg(), integer_bits);
    // Rescale<0>(ExactMulByPot<-1>(x)): Q1.14 to Q0.15.
    let if_positive = saturating_shift16(reciprocal_iterations(e), 1);
    if positive {
        if_positive
    } else {
        i16::MAX.wrapping_sub(if_positive)
    }
}

/// gemmlowp's `tanh` of `FixedPoint<int16, integer_bits>` to Q0.15,
/// `integer_bits` in `0..=12`.
pub(crate) fn tanh16(a: i16, integer_bits: u32) -> i16 {
    if a == 0 {
        return 0;
    }
    let negative = a < 0;
    let n = if negative { a } else { a.wrapping_neg() };
    // ExactMulByPot<1>: the same raw value with one more integer bit.
    let e = exp_on_negative_values(n, integer_bits + 1);
    // Rescale<0>(x - F2::One()): Q2.13 to Q0.15.
    let t = saturating_shift16(reciprocal_iterations(e).wrapping_sub(1 << 13), 2);
    if negative {
        t.wrapping_neg()
    } else {
        t
    }
}

/// `Σ x·w - zero_point · Σ w` over one weight row (wrapping int32, as the
/// reference's precomputed `bias - zero_point * row_sum` plus its
/// accumulation).
#[inline]
fn dot(x: &[u8], w: &[u8], zero_point: i32) -> i32 {
    let (mut xw, mut sum) = (0i32, 0i32);
    for (&a, &b) in x.iter().zip(w) {
        let b = i32::from(b as i8);
        xw = xw.wrapping_add(i32::from(a as i8) * b);
        sum = sum.wrapping_add(b);
    }
    xw.wrapping_sub(sum.wrapping_mul(zero_point))
}

/// Little-endian int32 element `i`.
#[inline]
fn int32(bytes: &[u8], i: usize) -> Result<i32, Error> {
    let b = bytes.get(4 * i..4 * i + 4).ok_or(SHAPE)?;
    Ok(i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// One gate's weights: input weights, recurrent weights, bias.
struct GateData<'x> {
    input: &'x [u8],
    recurrent: &'x [u8],
    bias: &'x [u8],
}

impl Lstm {
    pub(crate) fn work(&self) -> Option<u64> {
        let gates = if self.cifg { 3u64 } else { 4 };
        (self.n_batch as u64)
            .checked_mul(self.n_time as u64)?
            .checked_mul(self.n_cell as u64)?
            .checked_mul((self.n_input + self.n_cell) as u64 + 1)?
            .checked_mul(gates)
    }

    /// `CalculateLstmGateInteger8x8_16` without peephole or layer norm:
    /// the two scaled products added with int16 saturation, then the
    /// gate's activation (`tanh` for the cell gate) on Q3.12.
    fn gate(
        &self,
        g: usize,
        d: &GateData<'_>,
        x: &[u8],
        h: &[u8; MAX_CELLS],
        out: &mut [i16; MAX_CELLS],
    ) -> Result<(), Error> {
        let (n_input, n_cell) = (self.n_input, self.n_cell);
        let scales = self.gates.get(g).ok_or(SHAPE)?;
        let hb = h.get(..n_cell).ok_or(SHAPE)?;
        for (row, o) in out.iter_mut().take(n_cell).enumerate() {
            let w = d
                .input
                .get(row * n_input..(row + 1) * n_input)
                .ok_or(SHAPE)?;
            let acc = int32(d.bias, row)?.wrapping_add(dot(x, w, self.input_zero_point));
            let (m, s) = scales.input;
            let v = clamp(multiply_by_quantized_multiplier(acc, m, s), -32768, 32767);
            let r = d
                .recurrent
                .get(row * n_cell..(row + 1) * n_cell)
                .ok_or(SHAPE)?;
            let acc = dot(hb, r, self.output_state_zero_point);
            let (m, s) = scales.recurrent;
            let v = clamp(
                multiply_by_quantized_multiplier(acc, m, s).wrapping_add(v),
                -32768,
                32767,
            ) as i16;
            *o = if g == 2 {
                tanh16(v, 3)
            } else {
                logistic16(v, 3)
            };
        }
        Ok(())
    }

    pub(crate) fn run(&self, inputs: &[&[u8]], o: usize, y: &mut [u8]) -> Result<(), Error> {
        if o != 0 {
            return Err(Error::Internal("an LSTM has one output"));
        }
        let (n_batch, n_time, n_input, n_cell) =
            (self.n_batch, self.n_time, self.n_input, self.n_cell);
        if n_cell > MAX_CELLS {
            return Err(SHAPE);
        }
        let x = *inputs.first().ok_or(SHAPE)?;
        let mut data = [empty_gate(), empty_gate(), empty_gate(), empty_gate()];
        let mut next = 1;
        for (g, d) in data.iter_mut().enumerate() {
            if g == 0 && self.cifg {
                continue;
            }
            let get = |i: usize| inputs.get(i).copied().ok_or(SHAPE);
            *d = GateData {
                input: get(next)?,
                recurrent: get(next + 1)?,
                bias: get(next + 2)?,
            };
            next += 3;
        }
        let steps = n_batch.checked_mul(n_time).ok_or(SHAPE)?;
        if Some(x.len()) != steps.checked_mul(n_input) || Some(y.len()) != steps.checked_mul(n_cell)
        {
            return Err(SHAPE);
        }
        let gated_shift = (self.cell_scale + 30) as u32;
        let tanh_bits = (15 + self.cell_scale) as u32;
        let (hm, hs) = self.hidden;
        let clip = self.cell_clip;
        let mut gates = [[0i16; MAX_CELLS]; 4];
        for b in 0..n_batch {
            // ResetVariableTensors: output state at its zero point, cell 0.
            let mut h = [self.output_state_zero_point as i8 as u8; MAX_CELLS];
            let mut cell = [0i16; MAX_CELLS];
            for t in 0..n_time {
                let step = if self.time_major {
                    t * n_batch + b
                } else {
                    b * n_time + t
                };
                let xs = x.get(step * n_input..(step + 1) * n_input).ok_or(SHAPE)?;
                for g in 0..3 {
                    if g == 0 && self.cifg {
                        continue;
                    }
                    let d = data.get(g).ok_or(SHAPE)?;
                    let out = gates.get_mut(g).ok_or(SHAPE)?;
                    self.gate(g, d, xs, &h, out)?;
                }
                // UpdateLstmCellInteger.
                let [ig, fg, cg, _] = &gates;
                for i in 0..n_cell {
                    let f = i32::from(*fg.get(i).ok_or(SHAPE)?);
                    let c = cell.get_mut(i).ok_or(SHAPE)?;
                    let kept = rounding_divide_by_pot(f * i32::from(*c), 15) as i16;
                    let i_gate = if self.cifg {
                        i32::from(32767i16.wrapping_sub(f as i16))
                    } else {
                        i32::from(*ig.get(i).ok_or(SHAPE)?)
                    };
                    let g = i32::from(*cg.get(i).ok_or(SHAPE)?);
                    let added = rounding_divide_by_pot(i_gate * g, gated_shift) as i16;
                    let mut v = clamp(i32::from(kept) + i32::from(added), -32768, 32767) as i16;
                    if clip > 0 {
                        v = v.min(clip).max(-clip);
                    }
                    *c = v;
                }
                // The output gate sees the updated cell state (unused
                // without peepholes) and the previous hidden state.
                let [.., d] = &data;
                let [.., og] = &mut gates;
                self.gate(3, d, xs, &h, og)?;
                // CalculateLstmOutputInteger8x8_16 without projection.
                let ys = y.get_mut(step * n_cell..(step + 1) * n_cell).ok_or(SHAPE)?;
                for (i, out) in ys.iter_mut().enumerate() {
                    let tc = i32::from(tanh16(*cell.get(i).ok_or(SHAPE)?, tanh_bits));
                    let prod = i32::from(*og.get(i).ok_or(SHAPE)?) * tc;
                    let v = multiply_by_quantized_multiplier(prod, hm, hs)
                        .wrapping_add(self.hidden_zero_point);
                    let v = clamp(v, -128, 127) as i8;
                    *h.get_mut(i).ok_or(SHAPE)? = v as u8;
                    *out = v as u8;
                }
            }
        }
        Ok(())
    }
}

/// A gate with no tensors (the input gate of a CIFG LSTM).
fn empty_gate<'x>() -> GateData<'x> {
    GateData {
        input: &[],
        recurrent: &[],
        bias: &[],
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    /// FNV-1a 64 over `f` of every int16 input, each result as two
    /// little-endian bytes.
    fn fnv(f: impl Fn(i16) -> i16) -> u64 {
        let mut h = 0xcbf2_9ce4_8422_2325u64;
        for v in i16::MIN..=i16::MAX {
            for b in f(v).to_le_bytes() {
                h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
            }
        }
        h
    }

    /// Every input of `gemmlowp::logistic` and `gemmlowp::tanh` on
    /// `FixedPoint<int16_t, N>`, N = 0..=6, against the hashes of the C++
    /// originals (`fixedpoint.h` compiled and run over all 65,536 inputs).
    #[test]
    fn logistic_and_tanh_equal_gemmlowp_on_every_input() {
        const LOGISTIC: [u64; 7] = [
            0x1f12_998f_5fa0_640e,
            0xeec8_7dcb_93f0_98cf,
            0x2811_6d07_c7ce_1d38,
            0x0c53_053b_6c31_00c4,
            0x410d_7ec4_397e_ac8f,
            0xe667_e5b9_1e4f_722f,
            0x94d8_cf36_b42c_aa23,
        ];
        const TANH: [u64; 7] = [
            0x7ba1_6fd7_4eb7_6a73,
            0x3674_55b5_876e_9215,
            0x8056_7d4f_0c05_d1a1,
            0x0ab2_e663_b18a_b5c1,
            0x7111_7f57_c5d5_d098,
            0xfe1a_64c4_ee25_0c04,
            0x5c6c_54cb_f960_5572,
        ];
        for n in 0..7u32 {
            assert_eq!(
                fnv(|x| logistic16(x, n)),
                LOGISTIC[n as usize],
                "logistic {n}"
            );
            assert_eq!(fnv(|x| tanh16(x, n)), TANH[n as usize], "tanh {n}");
        }
        // Some of the C++ values themselves (Q3.12 and Q4.11 inputs).
        let q3 = [
            (-32768, 11, -32767),
            (-20000, 243, -32767),
            (-4096, 8815, -24964),
            (-1, 16383, -8),
            (0, 16384, 0),
            (1, 16384, 8),
            (4096, 23952, 24964),
            (12345, 31236, 32616),
            (32767, 32756, 32767),
        ];
        for (x, l, t) in q3 {
            assert_eq!((logistic16(x, 3), tanh16(x, 3)), (l, t), "{x}");
        }
        let q4 = [
            (-4096, 3901, -31596),
            (-1, 16379, -24),
            (4096, 28866, 31596),
        ];
        for (x, l, t) in q4 {
            assert_eq!((logistic16(x, 4), tanh16(x, 4)), (l, t), "{x}");
        }
    }

    /// Against the real functions: within 16 units of Q0.15 (2^-11; the
    /// worst, 12.05, is gemmlowp's own: tanh on Q1.14).
    #[test]
    fn logistic_and_tanh_approximate_the_real_functions() {
        for n in 0..7u32 {
            let scale = f64::from(1u32 << (15 - n));
            let (mut worst_l, mut worst_t) = (0f64, 0f64);
            for v in i16::MIN..=i16::MAX {
                let x = f64::from(v) / scale;
                let l = 32768.0 / (1.0 + libm::exp(-x));
                let t = 32768.0 * libm::tanh(x);
                worst_l = worst_l.max((f64::from(logistic16(v, n)) - l).abs());
                worst_t = worst_t.max((f64::from(tanh16(v, n)) - t).abs());
            }
            assert!(
                worst_l <= 16.0 && worst_t <= 16.0,
                "{n}: {worst_l} {worst_t}"
            );
        }
    }

    #[test]
    fn int16_fixed_point_primitives() {
        assert_eq!(mul16(i16::MIN, i16::MIN), i16::MAX);
        assert_eq!(mul16(1 << 14, 1 << 14), 1 << 13);
        // 2 * 3 * 2^14 / 2^16 = 1.5 -> 2; -1.5 -> -1 (gemmlowp's nudge).
        assert_eq!(mul16(3, 1 << 14), 2);
        assert_eq!(mul16(-3, 1 << 14), -1);
        assert_eq!(rounding_divide16(5, 1), 3);
        assert_eq!(rounding_divide16(-5, 1), -3);
        assert_eq!(rounding_divide16(-6, 2), -2);
        assert_eq!(saturating_shift16(8191, 2), 32764);
        assert_eq!(saturating_shift16(8192, 2), i16::MAX);
        assert_eq!(saturating_shift16(-8192, 2), i16::MIN);
        assert_eq!(saturating_shift16(-8191, 2), -32764);
        assert_eq!(constant16(1 << 30), 1 << 14);
        assert_eq!(constant16(1_895_147_668), 28918);
        assert_eq!(rounding_half_sum16(1, 2), 2);
        assert_eq!(rounding_half_sum16(-1, -2), -2);
        assert_eq!(saturating_add16(30000, 30000), i16::MAX);
    }

    #[test]
    fn float_multiplier_is_quantize_multiplier() {
        assert_eq!(float_multiplier(0.5), Some((1 << 30, 0)));
        assert_eq!(float_multiplier(1.0), Some((1 << 30, 1)));
        assert_eq!(float_multiplier(0.0), Some((0, 0)));
        assert_eq!(float_multiplier(-1.0), None);
        for &v in &[0.3f32, 0.0011, 1.9, 3.5e-7, 123.25] {
            assert_eq!(
                float_multiplier(v),
                Some(crate::quant::quantize_multiplier(f64::from(v)))
            );
        }
    }
}
