#!/usr/bin/env python3
"""Single-operator int8 TFLite models for property tests: models/ops/.

Writes models/ops/<family>/<family>_<NN>.tflite, MODELS_PER_FAMILY models per
family, each a small float graph (tf.function; tf_keras for the LSTM) with
one operator of interest, converted by tf.lite.TFLiteConverter with full
integer quantisation: optimizations=[Optimize.DEFAULT], a representative
dataset, supported_ops=[TFLITE_BUILTINS_INT8] and int8 input and output
(16x8 families: EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
and int16 input and output). After conversion the script reads the
flatbuffer back and fails loudly unless the model has one subgraph whose
operators are exactly the intended ones, with the intended input and output
types, options (padding, strides, dilations, fused activation, depth
multiplier, axis, ...) and weight quantisation (per-channel or per-tensor,
bias type), and no degenerate activation scale. A model whose output is the
same for 16 random inputs (e.g. a dilated kernel whose taps all fall into
the padding) is drawn again from the next seed.

Deterministic: every model draws its shapes, options, weights and
calibration data from numpy's generator seeded with (SEED, CRC-32 of the
family name, model index); TensorFlow's seed is set too. The converter's
output is byte-identical across runs: two runs in separate processes gave
the same 380 files, and `--check` converts everything again and compares
with the files (exit 1 on a difference).

Per model, the calibration range of each input is drawn anew (width 0.2 to
10, symmetric, non-negative or offset), so input and output scales and zero
points differ from model to model; weights are normal with a random overall
magnitude and, per output channel, a further random factor (per-channel
scales differ). Shapes are small (spatial at most 12, channels at most 16).

Every model has exactly one operator (no family needed an extra one):

| family | operator (code) | randomised |
|---|---|---|
| conv_2d | CONV_2D (3) | batch 1-2, HxW 1-12, Cin 1-16, Cout 2-16, kernel 1-5, strides 1-3, dilations 1-3, SAME/VALID, NONE/RELU/RELU6/RELU_N1_TO_1; per-channel weights |
| depthwise_conv_2d | DEPTHWISE_CONV_2D (4) | as conv_2d; depth multiplier 1-3 (Cin x multiplier <= 16) |
| fully_connected_per_tensor | FULLY_CONNECTED (9) | input [B, K] (B 1-4, K 1-32), [B, n, K] or [B, n, m, K] (keep_num_dims), units 2-16, activation; per-tensor weights (_experimental_disable_per_channel_quantization_for_dense_layers) |
| fully_connected_per_channel | FULLY_CONNECTED (9) | as above; per-channel weights (the converter's default) |
| average_pool_2d, max_pool_2d | AVERAGE_POOL_2D (1), MAX_POOL_2D (17) | batch, HxW, C, filter 1-4 (not 1x1), strides 1-3, padding, fused activation |
| reshape | RESHAPE (22) | input rank 1-4, output a random factorisation of rank 1-4 |
| softmax | SOFTMAX (25) | rank 2-4, last axis 2-32 (beta is always 1: the converter fuses no scaling into it) |
| add, sub, mul | ADD (0), SUB (41), MUL (18) | two inputs of equal shape (NN 00-02), broadcast shapes of rank 1-4 (03-06), one constant operand, either side for ADD/SUB, scalar or broadcast (07-09); fused activation |
| maximum, minimum | MAXIMUM (55), MINIMUM (57) | as add (no fused activation; the converter gives both inputs the output's scale) |
| concatenation | CONCATENATION (2) | 2-3 inputs, rank 1-4, axis (also negative); the converter gives all inputs the output's scale |
| pad, padv2 | PAD (34), PADV2 (60) | rank 1-4, paddings 0-3 per side; PADV2's constant value nonzero |
| mean | MEAN (40) | rank 2-4, random axes (not all), keep_dims both ways |
| quantize | QUANTIZE (114) | NN 00-05: float32 input -> int8 (a fake-quant range near [-4, 4]); NN 06-09: int8 -> int8 requantisation (the legacy quantizer, experimental_new_quantizer=False) |
| dequantize | DEQUANTIZE (6) | int8 input (a fake-quant range near [-4, 4]) -> float32 |
| logistic, tanh, relu, relu6, leaky_relu, hard_swish | LOGISTIC (14), TANH (28), RELU (19), RELU6 (21), LEAKY_RELU (98), HARD_SWISH (117) | shape rank 1-4, input range (always both signs); leaky_relu's alpha 0.01-0.95 |
| prelu | PRELU (54) | rank 2-4, alpha of one rank less with some dimensions 1 |
| transpose | TRANSPOSE (39) | rank 2-5, a permutation that moves a non-unit dimension |
| strided_slice | STRIDED_SLICE (45) | rank 1-4, begin/end (negative too, or masked), strides 1, 2, 3, -1, -2, shrink_axis |
| squeeze | SQUEEZE (43) | unknown batch (shape 1, shape_signature -1) with all unit dimensions squeezed (even NN), or two unknown dimensions and explicit axes (odd NN); with known shapes the converter emits RESHAPE |
| expand_dims | EXPAND_DIMS (70) | unknown batch (shape 1, signature -1), rank 1-3 more, axis (negative too); with known shapes the converter emits RESHAPE |
| split, split_v | SPLIT (49), SPLIT_V (102) | rank 1-4, axis (negative too), 2-4 equal parts / 2-4 unequal sizes |
| transpose_conv | TRANSPOSE_CONV (67) | batch, HxW, kernel 1-4, strides 1-3, padding, Cin/Cout, bias (NN 00-06) or none; no fused activation (the converter fuses none) |
| unidirectional_sequence_lstm | UNIDIRECTIONAL_SEQUENCE_LSTM (44) | tf_keras LSTM, return_sequences: batch 1-2, steps 1-8, features and units 2-8, weights |
| conv_2d_16x8, depthwise_conv_2d_16x8, fully_connected_16x8, add_16x8 | CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD | as the int8 families, int16 activations; int64 biases, int32 for NN 02, 05, 08 of conv and fully connected |

Not made: SVDF. The converter has no TensorFlow op or composite function
that it lowers to SVDF; only the old TOCO converter has a name-based SVDF
cluster matcher, and a graph named to its pattern and converted with
experimental_new_converter=False still came out as FULLY_CONNECTED, SUM,
TILE, RESHAPE, ... .

Usage (TensorFlow pinned in scripts/opgen-requirements.txt):

    python3 -m venv ~/.venv/opgen
    ~/.venv/opgen/bin/pip install -r scripts/opgen-requirements.txt
    ~/.venv/opgen/bin/python scripts/opgen.py              # (re)write every family
    ~/.venv/opgen/bin/python scripts/opgen.py conv_2d add  # only these families
    ~/.venv/opgen/bin/python scripts/opgen.py --check      # convert again, compare, write nothing

then scripts/opgolden.py (LiteRT only) records the reference outputs.
"""

import argparse
import os
import sys
import warnings
import zlib
from dataclasses import dataclass, field
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402

# TensorFlow's notices (tf.lite.Interpreter's deprecation, "statistics for
# quantized inputs were expected") say nothing about these models.
warnings.filterwarnings("ignore", category=UserWarning, module="tensorflow")

ROOT = Path(__file__).resolve().parent.parent
OPS = ROOT / "models" / "ops"
SEED = 0x0B5E55ED
MODELS_PER_FAMILY = 10
CALIBRATION_SAMPLES = 24

OP_NAMES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
TYPE_NAMES = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
ACT_CODES = {k: v for k, v in vars(schema.ActivationFunctionType).items() if not k.startswith("_")}
ACT_NAMES = {v: k for k, v in ACT_CODES.items()}
ACTS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
TF_TYPES = {"int8": tf.int8, "int16": tf.int16, "int32": tf.int32, "float32": tf.float32}


# -- what a model is ------------------------------------------------------------


@dataclass
class Spec:
    """One model: a float graph, its inputs and how to check the conversion."""

    fn: object  # tensors -> tensor or tuple of tensors (float32 graph)
    inputs: list  # per graph input: (shape, (calibration low, high))
    ops: list  # the operators (names) the converted model must have, in order
    mode: str = "int8"  # "int8" or "16x8" (int16 activations, int8 weights)
    input_type: str = ""  # inference_input_type, default: int8 / int16 by mode
    output_type: str = ""
    per_channel_dense: bool = True
    legacy_quantizer: bool = False  # experimental_new_quantizer = False
    bias_type: str = ""  # 16x8 only: "int32" instead of the converter's int64 biases
    options: dict = field(default_factory=dict)  # op name -> {option field: value}
    check: object = None  # ModelT -> error message or None
    about: str = ""  # one line: what was chosen
    trackable: object = None  # what holds the graph's variables (a Keras model)
    calibration_shapes: list = None  # per input, where the graph's shape has unknown dimensions


def act_fn(y, act):
    if act == "RELU":
        return tf.nn.relu(y)
    if act == "RELU6":
        return tf.nn.relu6(y)
    if act == "RELU_N1_TO_1":
        return tf.minimum(tf.maximum(y, -1.0), 1.0)
    return y


def calib_range(rng, scale=1.0, signed=False):
    """A calibration range: varied width, offset and sign (so that each model's
    scales and zero points differ); with `signed` never non-negative."""
    width = scale * 10 ** rng.uniform(-0.7, 1.0)
    kind = rng.integers(0, 4)
    if kind == 0:  # symmetric
        return (-width, width)
    if kind == 1 and not signed:  # non-negative
        return (0.0, 2 * width)
    centre = rng.uniform(-0.8, 0.8) * width  # the range always holds both signs
    return (centre - width, centre + width)


def weights(rng, shape, per_channel_axis=None):
    """Random weights of a random overall magnitude; with per_channel_axis each
    output channel gets its own magnitude too (per-channel scales differ)."""
    w = rng.normal(size=shape) * 10 ** rng.uniform(-1.5, 0.5)
    if per_channel_axis is not None:
        bshape = [1] * len(shape)
        bshape[per_channel_axis] = shape[per_channel_axis]
        w = w * 10 ** rng.uniform(-1.0, 0.5, size=bshape)
    return w.astype(np.float32)


def bias(rng, n):
    return (rng.normal(size=n) * 10 ** rng.uniform(-1.5, 0.5)).astype(np.float32)


def cycle(idx, values, offset=0):
    return values[(idx + offset) % len(values)]


def out_size(n, k, s, d, padding):
    eff = (k - 1) * d + 1
    return -(-n // s) if padding == "SAME" else (n - eff) // s + 1


def spatial(rng, padding, kh, kw, dh=1, dw=1, lo=1, hi=12):
    """Input height and width that suit the kernel (VALID needs room)."""
    eh, ew = (kh - 1) * dh + 1, (kw - 1) * dw + 1
    assert max(eh, ew) <= hi, "fit_dilation first"
    if padding == "VALID":
        return int(rng.integers(max(lo, eh), hi + 1)), int(rng.integers(max(lo, ew), hi + 1))
    return int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1))


def fit_dilation(k, d, hi=12):
    """The dilation, lowered until the dilated kernel fits `hi`."""
    while (k - 1) * d + 1 > hi:
        d -= 1
    return d


def batch(rng):
    return 2 if rng.random() < 0.2 else 1


def weight_channels(axis, count):
    """A check: the weight tensor (operator input 1) has `count` scales."""

    def check(m):
        sg = m.subgraphs[0]
        q = sg.tensors[sg.operators[0].inputs[1]].quantization
        n = 0 if q is None or q.scale is None else len(q.scale)
        if n != count:
            return f"weights have {n} scales, expected {count}"
        if count > 1 and q.quantizedDimension != axis:
            return f"weights are quantised along dimension {q.quantizedDimension}, expected {axis}"
        return None

    return check


def all_checks(*checks):
    def check(m):
        for c in checks:
            msg = c(m) if c else None
            if msg:
                return msg
        return None

    return check


def bias_type(want):
    """A check: the operator's bias (input 2) is of type `want`."""

    def check(m):
        sg = m.subgraphs[0]
        have = TYPE_NAMES[sg.tensors[sg.operators[0].inputs[2]].type]
        return None if have == want else f"bias is {have}, expected {want}"

    return check


def sixteen_by_eight(builder):
    """A 16x8 family from an int8 one: int16 activations, int8 weights; the
    bias is the converter's default int64, or int32 (its
    _experimental_full_integer_quantization_bias_type) for idx % 3 == 2 of
    CONV_2D and FULLY_CONNECTED."""

    def build(rng, idx):
        spec = builder(rng, idx, mode="16x8")
        if spec.ops[0] != "ADD":
            # LiteRT's DEPTHWISE_CONV_2D takes int64 biases only in 16x8
            int32 = idx % 3 == 2 and spec.ops[0] != "DEPTHWISE_CONV_2D"
            spec.bias_type = "int32" if int32 else ""
            spec.check = all_checks(spec.check, bias_type(spec.bias_type or "int64"))
            spec.about += f" bias {spec.bias_type or 'int64'}"
        return spec

    return build


# -- group 1 --------------------------------------------------------------------


def conv_2d(rng, idx, mode="int8"):
    padding = cycle(idx, ["SAME", "VALID"])
    act = ACTS[(idx // 2) % 4]
    kh, kw = (int(v) for v in rng.integers(1, 6, size=2))
    kind = idx % 3
    sh, sw = (int(v) for v in rng.integers(1, 4, size=2)) if kind != 2 else (1, 1)
    dh, dw = (int(v) for v in rng.integers(1, 4, size=2)) if kind != 1 else (1, 1)
    dh, dw = fit_dilation(kh, dh), fit_dilation(kw, dw)
    h, w = spatial(rng, padding, kh, kw, dh, dw)
    cin, cout = int(rng.integers(1, 17)), int(rng.integers(2, 17))
    while kh * kw * cin * cout > 3000:
        cin = max(1, cin // 2)
    n = batch(rng)
    filt = weights(rng, (kh, kw, cin, cout), per_channel_axis=3)
    b = bias(rng, cout)

    def fn(x):
        y = tf.nn.conv2d(x, filt, strides=[1, sh, sw, 1], padding=padding, dilations=[1, dh, dw, 1])
        return act_fn(y + b, act)

    return Spec(
        fn,
        [((n, h, w, cin), calib_range(rng))],
        ["CONV_2D"],
        mode=mode,
        options={
            "CONV_2D": {
                "padding": padding,
                "strideH": sh,
                "strideW": sw,
                "dilationHFactor": dh,
                "dilationWFactor": dw,
                "fusedActivationFunction": act,
            }
        },
        check=weight_channels(0, cout),
        about=f"in {n}x{h}x{w}x{cin} k{kh}x{kw} out{cout} s{sh}x{sw} d{dh}x{dw} {padding} {act}",
    )


def depthwise_conv_2d(rng, idx, mode="int8"):
    padding = cycle(idx, ["SAME", "VALID"])
    act = ACTS[(idx // 2) % 4]
    mult = 1 + idx % 3
    kh, kw = (int(v) for v in rng.integers(1, 6, size=2))
    kind = (idx // 3) % 3
    sh, sw = (int(v) for v in rng.integers(1, 4, size=2)) if kind != 2 else (1, 1)
    dh, dw = (int(v) for v in rng.integers(1, 4, size=2)) if kind != 1 else (1, 1)
    dh, dw = fit_dilation(kh, dh), fit_dilation(kw, dw)
    h, w = spatial(rng, padding, kh, kw, dh, dw)
    cin = int(rng.integers(1, 16 // mult + 1))
    n = batch(rng)
    filt = weights(rng, (kh, kw, cin, mult), per_channel_axis=2)
    b = bias(rng, cin * mult)

    def fn(x):
        y = tf.raw_ops.DepthwiseConv2dNative(
            input=x, filter=filt, strides=[1, sh, sw, 1], padding=padding, dilations=[1, dh, dw, 1]
        )
        return act_fn(y + b, act)

    return Spec(
        fn,
        [((n, h, w, cin), calib_range(rng))],
        ["DEPTHWISE_CONV_2D"],
        mode=mode,
        options={
            "DEPTHWISE_CONV_2D": {
                "padding": padding,
                "strideH": sh,
                "strideW": sw,
                "dilationHFactor": dh,
                "dilationWFactor": dw,
                "depthMultiplier": mult,
                "fusedActivationFunction": act,
            }
        },
        check=weight_channels(3, cin * mult) if cin * mult > 1 else None,
        about=f"in {n}x{h}x{w}x{cin} k{kh}x{kw} mult{mult} s{sh}x{sw} d{dh}x{dw} {padding} {act}",
    )


def fully_connected(rng, idx, per_channel, mode="int8"):
    act = ACTS[idx % 4]
    rank = 2 if idx < 7 else (3 if idx < 9 else 4)
    k, units = int(rng.integers(1, 33)), int(rng.integers(2, 17))
    lead = [int(rng.integers(1, 5))] + [int(v) for v in rng.integers(1, 4, size=rank - 2)]
    mat = weights(rng, (k, units), per_channel_axis=1)
    b = bias(rng, units)

    def fn(x):
        y = tf.matmul(x, mat) if rank == 2 else tf.tensordot(x, mat, axes=1)
        return act_fn(y + b, act)

    shape = tuple(lead) + (k,)
    return Spec(
        fn,
        [(shape, calib_range(rng))],
        ["FULLY_CONNECTED"],
        mode=mode,
        per_channel_dense=per_channel,
        options={"FULLY_CONNECTED": {"fusedActivationFunction": act, "keepNumDims": rank > 2}},
        check=weight_channels(0, units if per_channel else 1),
        about=f"in {'x'.join(map(str, shape))} units{units} {act} {'per-channel' if per_channel else 'per-tensor'}",
    )


def pool(rng, idx, op):
    padding = cycle(idx, ["SAME", "VALID"])
    act = ACTS[(idx // 2) % 4]
    while True:
        kh, kw = (int(v) for v in rng.integers(1, 5, size=2))
        sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
        if kh * kw > 1:
            break
    h, w = spatial(rng, padding, kh, kw)
    c, n = int(rng.integers(1, 17)), batch(rng)
    tf_pool = tf.nn.avg_pool2d if op == "AVERAGE_POOL_2D" else tf.nn.max_pool2d

    def fn(x):
        return act_fn(tf_pool(x, ksize=[kh, kw], strides=[sh, sw], padding=padding), act)

    return Spec(
        fn,
        [((n, h, w, c), calib_range(rng))],
        [op],
        options={
            op: {
                "padding": padding,
                "strideH": sh,
                "strideW": sw,
                "filterHeight": kh,
                "filterWidth": kw,
                "fusedActivationFunction": act,
            }
        },
        about=f"in {n}x{h}x{w}x{c} k{kh}x{kw} s{sh}x{sw} {padding} {act}",
    )


def random_shape(rng, rank, max_dim=8, max_elements=256, min_dim=1):
    while True:
        shape = tuple(int(v) for v in rng.integers(min_dim, max_dim + 1, size=rank))
        if int(np.prod(shape)) <= max_elements:
            return shape


def factorise(rng, total, rank):
    """A random shape of `rank` dimensions with `total` elements."""
    primes, n, p = [], total, 2
    while n > 1:
        while n % p == 0:
            primes.append(p)
            n //= p
        p += 1
    dims = [1] * rank
    for q in primes:
        dims[int(rng.integers(0, rank))] *= q
    return tuple(dims)


def reshape(rng, idx):
    while True:
        shape = random_shape(rng, int(rng.integers(1, 5)), max_dim=12)
        new = factorise(rng, int(np.prod(shape)), int(rng.integers(1, 5)))
        if new != shape and np.prod(shape) > 1:
            break

    def fn(x):
        return tf.reshape(x, new)

    return Spec(
        fn,
        [(shape, calib_range(rng))],
        ["RESHAPE"],
        about=f"{'x'.join(map(str, shape))} -> {'x'.join(map(str, new))}",
    )


def softmax(rng, idx):
    rank = 2 + idx % 3
    while True:
        shape = random_shape(rng, rank - 1, max_dim=4) + (int(rng.integers(2, 33)),)
        if np.prod(shape) <= 256:
            break

    def fn(x):
        return tf.nn.softmax(x)

    return Spec(
        fn,
        [(shape, calib_range(rng, scale=3.0))],
        ["SOFTMAX"],
        options={"SOFTMAX": {"beta": 1.0}},
        about=f"in {'x'.join(map(str, shape))}",
    )


# -- group 2 --------------------------------------------------------------------


def broadcast_pair(rng, max_elements=256):
    """(output shape, shape a, shape b): b (or both) broadcast against the output."""
    while True:
        out = random_shape(rng, int(rng.integers(1, 5)), max_dim=8, max_elements=max_elements)
        a, b = list(out), list(out)
        for d in range(len(out)):
            r = rng.random()
            if r < 0.35:
                b[d] = 1
            elif r < 0.5:
                a[d] = 1
        drop = int(rng.integers(0, len(out)))  # b may have fewer dimensions
        b = b[drop:] if all(v == 1 for v in b[:drop]) else b
        if tuple(a) != tuple(b) and tuple(b) != tuple(out) or tuple(a) != tuple(out):
            if tuple(a) != tuple(b):
                return tuple(out), tuple(a), tuple(b)


BINARY = {
    "ADD": lambda a, b: a + b,
    "SUB": lambda a, b: a - b,
    "MUL": lambda a, b: a * b,
    "MAXIMUM": tf.maximum,
    "MINIMUM": tf.minimum,
}


def binary(rng, idx, op, mode="int8"):
    """Two graph inputs of equal shape (idx 0-2), broadcast shapes (3-6), one
    constant operand (7-9, either side); a fused activation where the operator
    has one."""
    fused = op in ("ADD", "SUB", "MUL")
    act = ACTS[idx % 4] if fused else "NONE"
    if idx < 3:
        shape = random_shape(rng, int(rng.integers(1, 5)))
        shapes, kind = [shape, shape], "equal"
    elif idx < 7:
        _, a, b = broadcast_pair(rng)
        shapes, kind = ([a, b] if rng.random() < 0.5 else [b, a]), "broadcast"
    else:
        _, a, b = broadcast_pair(rng)
        if rng.random() < 0.3:
            b = ()
        shapes, kind = [a, b], "constant"
    f = BINARY[op]
    if kind == "constant":
        lo, hi = calib_range(rng)  # the input's range; the constant's values lie in it too
        const = rng.uniform(lo, hi, size=shapes[1]).astype(np.float32)
        first = op != "MUL" and rng.random() < 0.4  # the constant as the first operand

        def fn(x):
            return act_fn(f(const, x) if first else f(x, const), act)

        inputs = [(shapes[0], (lo, hi))]
        what = f"{'x'.join(map(str, shapes[0]))} {op.lower()} const[{'x'.join(map(str, shapes[1]))}]" + (" (const first)" if first else "")
    else:

        def fn(x, y):
            return act_fn(f(x, y), act)

        inputs = [(s, calib_range(rng)) for s in shapes]
        what = f"{'x'.join(map(str, shapes[0]))} {op.lower()} {'x'.join(map(str, shapes[1]))}"
    return Spec(
        fn,
        inputs,
        [op],
        mode=mode,
        options={op: {"fusedActivationFunction": act}} if fused else {},
        about=f"{kind}: {what} {act if fused else ''}".rstrip(),
    )


def concatenation(rng, idx):
    count = 2 + idx % 2
    while True:
        base = list(random_shape(rng, int(rng.integers(1, 5)), max_dim=6, max_elements=96))
        axis = int(rng.integers(0, len(base)))
        shapes = []
        for _ in range(count):
            s = list(base)
            s[axis] = int(rng.integers(1, 6))
            shapes.append(tuple(s))
        if sum(int(np.prod(s)) for s in shapes) <= 384:
            break
    tf_axis = axis - len(base) if rng.random() < 0.3 else axis

    def fn(*xs):
        return tf.concat(list(xs), axis=tf_axis)

    return Spec(
        fn,
        [(s, calib_range(rng)) for s in shapes],
        ["CONCATENATION"],
        options={"CONCATENATION": {"axis": tf_axis}},
        about=f"{' ++ '.join('x'.join(map(str, s)) for s in shapes)} axis {tf_axis}",
    )


def pad(rng, idx, v2):
    shape = random_shape(rng, int(rng.integers(1, 5)), max_dim=8, max_elements=192)
    while True:
        pads = [[int(v) for v in rng.integers(0, 4, size=2)] if rng.random() < 0.7 else [0, 0] for _ in shape]
        if any(sum(p) for p in pads):
            break
    lo, hi = calib_range(rng)
    value = float(np.float32(rng.uniform(lo, hi))) if v2 else 0.0
    if v2 and value == 0.0:
        value = hi / 2

    def fn(x):
        return tf.pad(x, pads, constant_values=value)

    return Spec(
        fn,
        [(shape, (lo, hi))],
        ["PADV2" if v2 else "PAD"],
        about=f"{'x'.join(map(str, shape))} pads {pads}" + (f" value {value:.4g}" if v2 else ""),
    )


def mean(rng, idx):
    keep = idx % 2 == 0
    while True:  # reducing only dimensions of size 1 would be no operation at all
        shape = random_shape(rng, int(rng.integers(2, 5)), max_dim=8, max_elements=256)
        axes = [d for d in range(len(shape)) if rng.random() < 0.5] or [int(rng.integers(0, len(shape)))]
        if len(axes) == len(shape):
            axes = axes[1:]
        if np.prod([shape[d] for d in axes]) > 1:
            break

    def fn(x):
        return tf.reduce_mean(x, axis=axes, keepdims=keep)

    return Spec(
        fn,
        [(shape, calib_range(rng))],
        ["MEAN"],
        options={"MEAN": {"keepDims": keep}},
        about=f"{'x'.join(map(str, shape))} axes {axes} keepdims {keep}",
    )


def fake_quant_range(rng):
    """A fake-quantisation range for the float-edged models, about [-4, 4]
    (the float inputs' range) but varied: scale * [-128 - z, 127 - z] with an
    8-bit-mantissa scale, so that the scale the converter derives from the
    range is exact. (With an inexact one the converter rounds the scale two ways
    and adds a DEQUANTIZE + QUANTIZE pair between them.)"""
    target = 10 ** rng.uniform(np.log10(0.008), np.log10(0.06))
    e = int(np.floor(-np.log2(target))) + 7
    scale = round(target * 2**e) / 2**e
    zero = int(rng.integers(-100, 101))
    return scale * (-128 - zero), scale * (127 - zero)


def quantize(rng, idx):
    """idx 0-5: float32 input -> int8 (QUANTIZE at the float edge); idx 6-9:
    int8 -> int8 requantisation (the legacy quantizer, which quantises the input
    from the calibration data and the output from the fake-quant range)."""
    shape = random_shape(rng, int(rng.integers(1, 5)))
    lo, hi = fake_quant_range(rng)

    def fn(x):
        return tf.quantization.fake_quant_with_min_max_args(x, lo, hi, num_bits=8)

    if idx < 6:
        return Spec(
            fn,
            [(shape, (lo - 1.0, hi + 1.0))],  # beyond the range: the fake quantisation clips
            ["QUANTIZE"],
            input_type="float32",
            about=f"float32[{'x'.join(map(str, shape))}] -> int8, range [{lo:.3g}, {hi:.3g}]",
        )
    return Spec(
        fn,
        [(shape, calib_range(rng))],
        ["QUANTIZE"],
        legacy_quantizer=True,
        about=f"int8[{'x'.join(map(str, shape))}] -> int8, output range [{lo:.3g}, {hi:.3g}]",
    )


def dequantize(rng, idx):
    shape = random_shape(rng, int(rng.integers(1, 5)))
    lo, hi = fake_quant_range(rng)

    def fn(x):
        return tf.quantization.fake_quant_with_min_max_args(x, lo, hi, num_bits=8)

    return Spec(
        fn,
        [(shape, (lo, hi))],
        ["DEQUANTIZE"],
        output_type="float32",
        about=f"int8[{'x'.join(map(str, shape))}] range [{lo:.3g}, {hi:.3g}] -> float32",
    )


def unary(rng, idx, op, mode="int8"):
    shape = random_shape(rng, int(rng.integers(1, 5)))
    about = ""
    options = {}
    if op == "LOGISTIC":
        fn = tf.sigmoid
        scale = 4.0
    elif op == "TANH":
        fn = tf.tanh
        scale = 2.0
    elif op == "RELU":
        fn = tf.nn.relu
        scale = 1.0
    elif op == "RELU6":
        fn = tf.nn.relu6
        scale = 4.0
    elif op == "LEAKY_RELU":
        alpha = float(np.float32(rng.uniform(0.01, 0.95)))
        fn = lambda x: tf.nn.leaky_relu(x, alpha)  # noqa: E731
        scale, about = 1.0, f" alpha {alpha:.4g}"
        options = {op: {"alpha": alpha}}
    elif op == "HARD_SWISH":
        fn = lambda x: x * tf.nn.relu6(x + 3.0) * (1.0 / 6.0)  # noqa: E731
        scale = 3.0
    else:
        raise ValueError(op)
    return Spec(
        fn,
        [(shape, calib_range(rng, scale=scale, signed=True))],
        [op],
        mode=mode,
        options=options,
        about=f"{'x'.join(map(str, shape))}{about}",
    )


def prelu(rng, idx):
    """alpha has one dimension fewer than the input (what the converter's PReLU
    pattern needs), some of its dimensions 1 (shared, as Keras' shared_axes)."""
    shape = random_shape(rng, int(rng.integers(2, 5)))
    ashape = tuple(d if rng.random() < 0.6 else 1 for d in shape[1:])
    alpha = (rng.uniform(-0.5, 1.5, size=ashape) * 10 ** rng.uniform(-1, 0.3)).astype(np.float32)

    def fn(x):
        return tf.nn.relu(x) + tf.nn.relu(-x) * (-alpha)

    return Spec(
        fn,
        [(shape, calib_range(rng, signed=True))],
        ["PRELU"],
        about=f"{'x'.join(map(str, shape))} alpha[{'x'.join(map(str, ashape))}]",
    )


# -- group 3 --------------------------------------------------------------------


def shape_str(shape):
    return "x".join(str(d) for d in shape)


def transpose(rng, idx):
    rank = [2, 3, 4, 4, 4, 3, 5, 4, 3, 5][idx]
    while True:
        shape = random_shape(rng, rank, max_dim=6, max_elements=256)
        perm = [int(p) for p in rng.permutation(rank)]
        moved = [p for p in perm if shape[p] > 1]
        if moved != sorted(moved):  # else the converter makes it a RESHAPE
            break

    def fn(x):
        return tf.transpose(x, perm)

    return Spec(fn, [(shape, calib_range(rng))], ["TRANSPOSE"], about=f"{shape_str(shape)} perm {perm}")


def strided_slice(rng, idx):
    """Random begin/end/stride per dimension (negative strides and indices too),
    begin/end masks, and shrink_axis on some dimensions."""
    rank = [1, 2, 3, 4, 2, 3, 4, 3, 4, 4][idx]
    shape = random_shape(rng, rank, max_dim=8, max_elements=256, min_dim=2)
    while True:
        keys, desc = [], []
        for d in shape:
            r = rng.random()
            if r < 0.15 and d > 1:  # a single index: shrink_axis
                i = int(rng.integers(-d, d))
                keys.append(i)
                desc.append(str(i))
                continue
            step = int(rng.choice([1, 1, 2, 3, -1, -2]))
            begin = None if rng.random() < 0.3 else int(rng.integers(-d, d))
            end = None if rng.random() < 0.3 else int(rng.integers(-d - 1, d + 1))
            keys.append(slice(begin, end, step))
            desc.append(f"{'' if begin is None else begin}:{'' if end is None else end}:{step}")
        probe = np.zeros(shape)[tuple(keys)]
        full = all(isinstance(k, slice) and k == slice(None, None, 1) for k in keys)
        if probe.size > 0 and not full:
            break

    def fn(x):
        return x[tuple(keys)]

    return Spec(
        fn,
        [(shape, calib_range(rng))],
        ["STRIDED_SLICE"],
        about=f"{shape_str(shape)}[{', '.join(desc)}] -> {shape_str(probe.shape)}",
    )


def squeeze(rng, idx):
    """The converter turns SQUEEZE into RESHAPE whenever the shape is known
    well enough; it keeps SQUEEZE for an unknown batch dimension with all
    unit dimensions squeezed (even idx), or for two unknown dimensions (odd
    idx). Unknown dimensions are 1 in the model (shape_signature -1)."""
    while True:
        core = [int(v) for v in rng.integers(2, 7, size=int(rng.integers(1, 3)) + idx % 2)]
        shape = [None] + core
        for _ in range(int(rng.integers(1, 3))):  # one or two unit dimensions somewhere
            shape.insert(int(rng.integers(1, len(shape) + 1)), 1)
        if idx % 2 == 0:
            axes = None
            break
        if len(shape) >= 4:
            unknown = int(rng.choice([d for d in range(1, len(shape)) if shape[d] != 1]))
            shape[unknown] = None  # a second unknown dimension
            ones = [d for d in range(1, len(shape)) if shape[d] == 1]
            axes = [d for d in ones if rng.random() < 0.7] or ones[:1]
            break
    spec_shape = shape
    calib = [2 if d is None else d for d in spec_shape]

    def fn(x):
        return tf.squeeze(x, axes)

    return Spec(
        fn,
        [(tuple(spec_shape), calib_range(rng))],
        ["SQUEEZE"],
        calibration_shapes=[tuple(calib)],
        about=f"{shape_str(['?' if d is None else d for d in spec_shape])} axes {axes if axes is not None else 'all'}",
    )


def expand_dims(rng, idx):
    """The converter turns EXPAND_DIMS into RESHAPE for known shapes; an
    unknown batch dimension (1 in the model, shape_signature -1) keeps it."""
    shape = random_shape(rng, int(rng.integers(1, 4)), max_dim=8, max_elements=128)
    rank = len(shape) + 1
    axis = int(rng.integers(-rank, rank))
    spec_shape = (None,) + shape

    def fn(x):
        return tf.expand_dims(x, axis)

    return Spec(
        fn,
        [(spec_shape, calib_range(rng))],
        ["EXPAND_DIMS"],
        calibration_shapes=[(2,) + shape],
        about=f"?x{shape_str(shape)} axis {axis}",
    )


def split(rng, idx, v):
    while True:
        shape = list(random_shape(rng, int(rng.integers(1, 5)), max_dim=8, max_elements=256))
        axis = int(rng.integers(0, len(shape)))
        if v:
            count = int(rng.integers(2, 5))
            if shape[axis] < count:
                shape[axis] = count + int(rng.integers(0, 3))
            cuts = sorted(int(c) for c in rng.choice(np.arange(1, shape[axis]), size=count - 1, replace=False))
            sizes = [b - a for a, b in zip([0] + cuts, cuts + [shape[axis]])]
            if len(set(sizes)) > 1 and np.prod(shape) <= 256:
                arg = sizes
                break
        else:
            count = int(rng.choice([2, 3, 4]))
            shape[axis] = count * int(rng.integers(1, 4))
            if np.prod(shape) <= 256:
                arg = count
                break
    tf_axis = axis - len(shape) if rng.random() < 0.3 else axis

    def fn(x):
        return tuple(tf.split(x, arg, axis=tf_axis))

    op = "SPLIT_V" if v else "SPLIT"
    return Spec(
        fn,
        [(tuple(shape), calib_range(rng))],
        [op],
        options={op: {"numSplits": count}},
        about=f"{shape_str(shape)} axis {tf_axis} into {arg}",
    )


def transpose_conv(rng, idx, mode="int8"):
    """tf.nn.conv2d_transpose with a bias (idx < 7; fused into the operator)
    or without; the converter fuses no activation into TRANSPOSE_CONV."""
    padding = cycle(idx, ["SAME", "VALID"])
    while True:
        kh, kw = (int(v) for v in rng.integers(1, 5, size=2))
        sh, sw = (int(v) for v in rng.integers(1, 4, size=2))
        h, w = (int(v) for v in rng.integers(1, 7, size=2))
        if padding == "SAME":
            oh, ow = h * sh, w * sw
        else:
            oh, ow = (h - 1) * sh + kh, (w - 1) * sw + kw
        if oh <= 12 and ow <= 12:
            break
    cin, cout = int(rng.integers(1, 13)), int(rng.integers(2, 13))
    n = batch(rng)
    filt = weights(rng, (kh, kw, cout, cin), per_channel_axis=2)
    with_bias = idx < 7
    b = bias(rng, cout)

    def fn(x):
        y = tf.nn.conv2d_transpose(x, filt, [n, oh, ow, cout], strides=[1, sh, sw, 1], padding=padding)
        return y + b if with_bias else y

    return Spec(
        fn,
        [((n, h, w, cin), calib_range(rng))],
        ["TRANSPOSE_CONV"],
        mode=mode,
        options={"TRANSPOSE_CONV": {"padding": padding, "strideH": sh, "strideW": sw}},
        about=f"in {n}x{h}x{w}x{cin} k{kh}x{kw} out {n}x{oh}x{ow}x{cout} s{sh}x{sw} {padding}"
        + (" bias" if with_bias else " no bias"),
    )


def lstm(rng, idx):
    """tf_keras' LSTM (Keras 3's LSTM has no fused conversion), return_sequences
    (the final-state-only form adds a STRIDED_SLICE), weights from the seed."""
    import tf_keras

    steps, features, units = (int(v) for v in rng.integers(2, 9, size=3))
    if idx == 0:
        steps = 1
    n = 1 if idx < 7 else 2
    layer = tf_keras.layers.LSTM(units, return_sequences=True)
    inp = tf_keras.Input((steps, features), batch_size=n)
    model = tf_keras.Model(inp, layer(inp))
    scale = 10 ** rng.uniform(-0.7, 0.3)
    layer.set_weights(
        [
            (rng.normal(size=(features, 4 * units)) * scale).astype(np.float32),
            (rng.normal(size=(units, 4 * units)) * scale).astype(np.float32),
            (rng.normal(size=(4 * units,)) * 0.5).astype(np.float32),
        ]
    )

    def fn(x):
        return model(x)

    return Spec(
        fn,
        [((n, steps, features), calib_range(rng, signed=True))],
        ["UNIDIRECTIONAL_SEQUENCE_LSTM"],
        trackable=model,
        about=f"in {n}x{steps}x{features} units {units}",
    )


# -- the families ---------------------------------------------------------------

FAMILIES = {
    # group 1
    "conv_2d": conv_2d,
    "depthwise_conv_2d": depthwise_conv_2d,
    "fully_connected_per_tensor": lambda rng, idx: fully_connected(rng, idx, per_channel=False),
    "fully_connected_per_channel": lambda rng, idx: fully_connected(rng, idx, per_channel=True),
    "average_pool_2d": lambda rng, idx: pool(rng, idx, "AVERAGE_POOL_2D"),
    "max_pool_2d": lambda rng, idx: pool(rng, idx, "MAX_POOL_2D"),
    "reshape": reshape,
    "softmax": softmax,
    # group 2
    "add": lambda rng, idx: binary(rng, idx, "ADD"),
    "sub": lambda rng, idx: binary(rng, idx, "SUB"),
    "mul": lambda rng, idx: binary(rng, idx, "MUL"),
    "concatenation": concatenation,
    "pad": lambda rng, idx: pad(rng, idx, v2=False),
    "padv2": lambda rng, idx: pad(rng, idx, v2=True),
    "mean": mean,
    "quantize": quantize,
    "dequantize": dequantize,
    "logistic": lambda rng, idx: unary(rng, idx, "LOGISTIC"),
    "tanh": lambda rng, idx: unary(rng, idx, "TANH"),
    "relu": lambda rng, idx: unary(rng, idx, "RELU"),
    "relu6": lambda rng, idx: unary(rng, idx, "RELU6"),
    "leaky_relu": lambda rng, idx: unary(rng, idx, "LEAKY_RELU"),
    "hard_swish": lambda rng, idx: unary(rng, idx, "HARD_SWISH"),
    "prelu": prelu,
    "maximum": lambda rng, idx: binary(rng, idx, "MAXIMUM"),
    "minimum": lambda rng, idx: binary(rng, idx, "MINIMUM"),
    # group 3
    "transpose": transpose,
    "strided_slice": strided_slice,
    "squeeze": squeeze,
    "expand_dims": expand_dims,
    "split": lambda rng, idx: split(rng, idx, v=False),
    "split_v": lambda rng, idx: split(rng, idx, v=True),
    "transpose_conv": transpose_conv,
    "unidirectional_sequence_lstm": lstm,
    "conv_2d_16x8": sixteen_by_eight(conv_2d),
    "depthwise_conv_2d_16x8": sixteen_by_eight(depthwise_conv_2d),
    "fully_connected_16x8": sixteen_by_eight(lambda rng, idx, mode: fully_connected(rng, idx, True, mode)),
    "add_16x8": sixteen_by_eight(lambda rng, idx, mode: binary(rng, idx, "ADD", mode)),
}


# -- converting and checking ----------------------------------------------------


def convert(spec, rng):
    input_specs = [tf.TensorSpec(shape, tf.float32, name=f"input_{i}") for i, (shape, _) in enumerate(spec.inputs)]
    func = tf.function(spec.fn, autograph=False).get_concrete_function(*input_specs)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([func], spec.trackable or tf.Module())
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    shapes = spec.calibration_shapes or [shape for shape, _ in spec.inputs]
    samples = [
        [rng.uniform(lo, hi, size=shape).astype(np.float32) for shape, (_, (lo, hi)) in zip(shapes, spec.inputs)]
        for _ in range(CALIBRATION_SAMPLES)
    ]
    converter.representative_dataset = lambda: iter(samples)
    if spec.mode == "16x8":
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8
        ]
        default = "int16"
    else:
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        default = "int8"
    converter.inference_input_type = TF_TYPES[spec.input_type or default]
    converter.inference_output_type = TF_TYPES[spec.output_type or default]
    if spec.bias_type:
        converter._experimental_full_integer_quantization_bias_type = TF_TYPES[spec.bias_type]
    if spec.legacy_quantizer:
        converter.experimental_new_quantizer = False
    if not spec.per_channel_dense:
        converter._experimental_disable_per_channel_quantization_for_dense_layers = True
    return converter.convert()


def op_name(m, op):
    code = m.operatorCodes[op.opcodeIndex]
    return OP_NAMES[max(code.builtinCode, code.deprecatedBuiltinCode)]


def option_value(v):
    if isinstance(v, str):
        for table in (ACT_CODES, {"SAME": schema.Padding.SAME, "VALID": schema.Padding.VALID}):
            if v in table:
                return table[v]
    return v


def verify(spec, buf):
    """Problems with the converted model (empty when it is the intended one)."""
    m = schema.ModelT.InitFromPackedBuf(buf, 0)
    errors = []
    if len(m.subgraphs) != 1:
        errors.append(f"{len(m.subgraphs)} subgraphs")
    sg = m.subgraphs[0]
    names = [op_name(m, op) for op in sg.operators]
    if names != spec.ops:
        errors.append(f"operators {names}, expected {spec.ops}")
    default = "int16" if spec.mode == "16x8" else "int8"
    for which, idxs, want in (
        ("input", sg.inputs, spec.input_type or default),
        ("output", sg.outputs, spec.output_type or default),
    ):
        for i in idxs:
            have = TYPE_NAMES[sg.tensors[i].type]
            if have != want:
                errors.append(f"{which} tensor {i} is {have}, expected {want}")
    if len(sg.inputs) != len(spec.inputs):
        errors.append(f"{len(sg.inputs)} graph inputs, expected {len(spec.inputs)}")
    if not errors:
        for op in sg.operators:
            want = spec.options.get(op_name(m, op), {})
            for key, value in want.items():
                have = getattr(op.builtinOptions, key, None)
                if have != option_value(value):
                    errors.append(f"{op_name(m, op)}.{key} = {have}, expected {value}")
    for op in sg.operators:
        for i in list(op.outputs):
            q = sg.tensors[i].quantization
            if q is not None and q.scale is not None and min(q.scale) < 1e-6:
                errors.append(f"tensor {i} has the degenerate scale {min(q.scale):.3g}")
    if not errors and spec.check:
        msg = spec.check(m)
        if msg:
            errors.append(msg)
    return errors


def varies(buf, count=16):
    """A model whose output is the same for every input tests little: run a few
    random inputs (TensorFlow's own interpreter) and require some difference."""
    it = tf.lite.Interpreter(model_content=buf)
    it.allocate_tensors()
    rng = np.random.default_rng(SEED)
    seen = set()
    for _ in range(count):
        for d in it.get_input_details():
            if d["dtype"] == np.float32:
                data = rng.uniform(-4, 4, size=d["shape"]).astype(np.float32)
            else:
                info = np.iinfo(d["dtype"])
                data = rng.integers(info.min, info.max + 1, size=d["shape"]).astype(d["dtype"])
            it.set_tensor(d["index"], data)
        it.invoke()
        seen.add(b"".join(it.get_tensor(d["index"]).tobytes() for d in it.get_output_details()))
    return [] if len(seen) > 1 else [f"the output is the same for {count} random inputs"]


def tensor_desc(sg, i):
    t = sg.tensors[i]
    q = t.quantization
    shape = "x".join(str(d) for d in t.shape) if t.shape is not None else ""
    s = f"{TYPE_NAMES[t.type]}[{shape}]"
    if q is not None and q.scale is not None and len(q.scale) == 1:
        s += f"(s={q.scale[0]:.4g},z={q.zeroPoint[0]})"
    return s


def describe(buf):
    m = schema.ModelT.InitFromPackedBuf(buf, 0)
    sg = m.subgraphs[0]
    ops = " ".join(f"{op_name(m, op)}({max(m.operatorCodes[op.opcodeIndex].builtinCode, m.operatorCodes[op.opcodeIndex].deprecatedBuiltinCode)})" for op in sg.operators)
    ins = ", ".join(tensor_desc(sg, i) for i in sg.inputs)
    outs = ", ".join(tensor_desc(sg, i) for i in sg.outputs)
    return f"{ops}: {ins} -> {outs}"


def family_models(family):
    """[(file name, model bytes, description)] of one family."""
    out = []
    for idx in range(MODELS_PER_FAMILY):
        for attempt in range(4):
            # A model whose output never changes (e.g. a dilated kernel whose
            # taps all land in the padding) is drawn again from the next seed.
            rng = np.random.default_rng([SEED, zlib.crc32(family.encode()), idx] + [attempt] * (attempt > 0))
            spec = FAMILIES[family](rng, idx)
            tf.random.set_seed(SEED + idx)
            buf = convert(spec, rng)
            name = f"{family}_{idx:02d}.tflite"
            errors = verify(spec, buf)
            if errors:
                raise SystemExit(f"opgen: {family}/{name} ({spec.about}; {describe(buf)}): " + "; ".join(errors))
            constant = varies(buf)
            if not constant:
                break
        else:
            raise SystemExit(f"opgen: {family}/{name} ({spec.about}): {constant[0]}, 4 draws in a row")
        out.append((name, buf, f"{spec.about} | {describe(buf)}"))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("families", nargs="*", help="families to make (default: all)")
    ap.add_argument("--check", action="store_true", help="convert again and compare with models/ops, write nothing")
    ap.add_argument("--list", action="store_true", help="list the families")
    args = ap.parse_args()
    if args.list:
        print("\n".join(FAMILIES))
        return 0
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown:
        raise SystemExit(f"opgen: unknown families {unknown}; --list names them")
    np.random.seed(SEED)
    tf.random.set_seed(SEED)
    status, total = 0, 0
    for family in args.families or FAMILIES:
        folder = OPS / family
        for name, buf, about in family_models(family):
            path = folder / name
            total += len(buf)
            if args.check:
                if not path.exists() or path.read_bytes() != buf:
                    print(f"opgen: {path.relative_to(ROOT)} differs from a new conversion", file=sys.stderr)
                    status = 1
            else:
                folder.mkdir(parents=True, exist_ok=True)
                path.write_bytes(buf)
            print(f"{family}/{name} {len(buf)} B {about}")
        if not args.check:
            made = {f"{family}_{i:02d}.tflite" for i in range(MODELS_PER_FAMILY)}
            for stale in folder.glob("*.tflite"):
                if stale.name not in made:
                    stale.unlink()
    print(f"opgen: {'checked' if args.check else 'wrote'} {total} bytes of models")
    return status


if __name__ == "__main__":
    sys.exit(main())
