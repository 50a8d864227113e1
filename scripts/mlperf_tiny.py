#!/usr/bin/env python3
"""The four MLPerf Tiny v1.x reference networks, int8, seeded: models/networks/.

Built with tf.keras (tf_keras, Keras 2) from the layer lists of the MLPerf
Tiny reference training code (mlcommons/tiny, benchmark/training/*/
keras_model.py and vww_model.py); Dropout, an identity at inference, is
left out. The weights are not trained:
every kernel is drawn from a seeded generator with He-normal magnitudes
(sqrt(2 / fan in)), biases and BatchNorm scales and offsets from seeded
distributions of trained-network size, and each BatchNorm's moving mean and
variance are set to the statistics of its input over a seeded batch (one
training-mode pass with momentum 0), so that the activations stay in the
range a trained network's have. The inputs (statistics and calibration) are
half realistic (smooth images in [0, 1], MFCCs, normalised log-mel
features), half uniform noise over the same range, which is what the tests
feed (scripts/opgolden.py). The converter folds every BatchNorm into the
kernel and bias before it (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED) and
every ReLU into the operator's fused activation, as it does for the
published models. Full-integer quantisation (`Optimize.DEFAULT`,
TFLITE_BUILTINS_INT8, CALIBRATION_SAMPLES seeded calibration inputs,
per-channel weights), int8 input and output but for the autoencoder, whose
graph input and output are float32 (QUANTIZE first, DEQUANTIZE last).

| network | what | input | output | operators | bytes |
|---|---|---|---|---|---:|
| vww | visual wake words, MobileNetV1 0.25 | int8 1x96x96x3 | int8 1x2 | 30: CONV_2D x14, DEPTHWISE_CONV_2D x13, AVERAGE_POOL_2D, FULLY_CONNECTED, SOFTMAX | 307,464 |
| resnet8 | image classification, ResNet-8 | int8 1x32x32x3 | int8 1x10 | 15: CONV_2D x9, ADD x3, AVERAGE_POOL_2D, FULLY_CONNECTED, SOFTMAX | 94,888 |
| dscnn | keyword spotting, DS-CNN small | int8 1x49x10x1 | int8 1x12 | 12: CONV_2D x5, DEPTHWISE_CONV_2D x4, AVERAGE_POOL_2D, FULLY_CONNECTED, SOFTMAX | 47,048 |
| autoencoder | anomaly detection, FC autoencoder | float32 1x640 | float32 1x640 | 12: QUANTIZE, FULLY_CONNECTED x10, DEQUANTIZE | 317,728 |

(In that order in the graph: the stem conv, then per block the depthwise and
pointwise convs; per residual stack the two 3x3 convs, the 1x1 shortcut
conv where there is one, then ADD with its fused ReLU. Flatten leaves no
RESHAPE: the converter gives FULLY_CONNECTED the pooled 1x1xC tensor.)

The operators are checked on every conversion (counts and order), and so are
the graph's input and output types; a network whose output is the same for
every input fails. Converting twice gives the same bytes.

Usage (TensorFlow pinned in scripts/opgen-requirements.txt, as opgen.py):

    ~/.venv/opgen/bin/python scripts/mlperf_tiny.py            # (re)write every network
    ~/.venv/opgen/bin/python scripts/mlperf_tiny.py vww dscnn  # only these
    ~/.venv/opgen/bin/python scripts/mlperf_tiny.py --check    # convert again, compare, write nothing

then scripts/opgolden.py (LiteRT only) records the reference outputs.
"""

import argparse
import os
import sys
import zlib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from tensorflow.lite.python import schema_py_generated as schema  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NETWORKS = ROOT / "models" / "networks"
SEED = 0x0B5E55ED
CALIBRATION_SAMPLES = 100
STATISTICS_SAMPLES = 64  # the batch that sets the BatchNorm statistics

OP_NAMES = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
TYPE_NAMES = {v: k.lower() for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
TF_TYPES = {"int8": tf.int8, "float32": tf.float32}

# tf.keras as the reference code knew it (Keras 2): TensorFlow 2.21's tf.keras
# is Keras 3, whose variables the concrete-function converter does not freeze.
keras = tf_keras
layers = keras.layers


# -- what a network is ----------------------------------------------------------


@dataclass
class Net:
    """One network: a Keras model, its calibration data and what to check."""

    model: object  # keras.Model, float32, batch 1
    data: object  # rng -> float32 array [count, *input shape] of realistic inputs
    ops: list  # the operators (names) the converted model must have, in order
    about: str  # one line: what it is
    io_type: str = "int8"  # inference_input_type and inference_output_type


class Weights:
    """Seeded weights of realistic magnitudes for the layers of one model."""

    def __init__(self, rng):
        self.rng = rng

    def kernel(self, shape, fan_in):
        return (self.rng.normal(size=shape) * np.sqrt(2.0 / fan_in)).astype(np.float32)

    def bias(self, n):
        return (self.rng.normal(size=n) * 0.05).astype(np.float32)

    def fill(self, model):
        """Draw every layer's kernel, bias and BatchNorm scale and offset (the
        moving statistics come from `normalise`)."""
        for layer in model.layers:
            if isinstance(layer, layers.DepthwiseConv2D):
                k, b = layer.get_weights()
                kh, kw = k.shape[:2]
                layer.set_weights([self.kernel(k.shape, kh * kw), self.bias(b.shape[0])])
            elif isinstance(layer, (layers.Conv2D, layers.Dense)):
                k, b = layer.get_weights()
                layer.set_weights([self.kernel(k.shape, int(np.prod(k.shape[:-1]))), self.bias(b.shape[0])])
            elif isinstance(layer, layers.BatchNormalization):
                n = layer.get_weights()[0].shape[0]
                gamma = self.rng.uniform(0.5, 1.5, size=n).astype(np.float32)
                beta = (self.rng.normal(size=n) * 0.2).astype(np.float32)
                layer.set_weights([gamma, beta, np.zeros(n, np.float32), np.ones(n, np.float32)])


def normalise(model, x):
    """Set every BatchNorm's moving mean and variance to its input's statistics
    over the batch x: one training-mode pass with momentum 0 (each layer then
    sees the input it sees at inference)."""
    bns = [layer for layer in model.layers if isinstance(layer, layers.BatchNormalization)]
    for bn in bns:
        bn.momentum = 0.0
    model(tf.constant(x), training=True)
    for bn in bns:
        bn.momentum = 0.99


def conv_bn_relu(x, filters, kernel, strides=1):
    x = layers.Conv2D(filters, kernel, strides=strides, padding="same")(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation("relu")(x)


def dw_bn_relu(x, strides=1):
    x = layers.DepthwiseConv2D(3, strides=strides, padding="same")(x)
    x = layers.BatchNormalization()(x)
    return layers.Activation("relu")(x)


def with_noise(rng, x):
    """The second half of x replaced by uniform noise over x's range. The
    tests' inputs are such noise (scripts/opgolden.py); calibrated on
    realistic inputs alone, the layers' ranges are too narrow for them and
    the outputs saturate to a few values (the BatchNorm statistics and the
    calibration both use these samples)."""
    half = len(x) // 2
    x[half:] = rng.uniform(x.min(), x.max(), size=x[half:].shape)
    return x


def images(rng, count, shape):
    """Pixels scaled to [0, 1]: smooth random images (a low-resolution random
    field, upsampled) with a little noise, as the reference's /255 inputs."""
    h, w, c = shape
    coarse = rng.uniform(0, 1, size=(count, 6, 6, c))
    up = tf.image.resize(coarse, (h, w), method="bilinear").numpy()
    noisy = up + rng.normal(size=up.shape) * 0.05
    return with_noise(rng, np.clip(noisy, 0, 1)).astype(np.float32)


# -- the networks ---------------------------------------------------------------


def vww():
    """MobileNetV1, alpha 0.25, 96x96x3: conv 8 s2, 13 depthwise-separable
    blocks (3x3 depthwise, 1x1 pointwise, each BatchNorm + ReLU), average pool
    3x3, flatten, dense 2, softmax (vww_model.py's mobilenet_v1)."""
    blocks = [(16, 1), (32, 2), (32, 1), (64, 2), (64, 1), (128, 2)] + [(128, 1)] * 5 + [(256, 2), (256, 1)]
    inp = keras.Input((96, 96, 3), batch_size=1)
    x = conv_bn_relu(inp, 8, 3, strides=2)
    for filters, stride in blocks:
        x = dw_bn_relu(x, stride)
        x = conv_bn_relu(x, filters, 1)
    x = layers.AveragePooling2D(pool_size=x.shape[1:3])(x)
    x = layers.Flatten()(x)
    out = layers.Dense(2, activation="softmax")(x)
    return Net(
        keras.Model(inp, out),
        lambda rng, n: images(rng, n, (96, 96, 3)),
        ["CONV_2D"] + ["DEPTHWISE_CONV_2D", "CONV_2D"] * 13 + ["AVERAGE_POOL_2D", "FULLY_CONNECTED", "SOFTMAX"],
        "visual wake words: MobileNetV1 0.25, 13 depthwise-separable blocks",
    )


def resnet8():
    """ResNet-8 for 32x32x3: conv 16, three stacks of two 3x3 convs (16, 32 s2,
    64 s2) with BatchNorm, the shortcut an identity in the first stack and a
    1x1 stride-2 conv in the others, add, ReLU; average pool 8x8, flatten,
    dense 10, softmax (keras_model.py's resnet_v1_eembc with the 16 filters
    of v1.x; later versions default to 26)."""
    inp = keras.Input((32, 32, 3), batch_size=1)
    x = conv_bn_relu(inp, 16, 3)
    for filters, stride in ((16, 1), (32, 2), (64, 2)):
        y = conv_bn_relu(x, filters, 3, strides=stride)
        y = layers.Conv2D(filters, 3, padding="same")(y)
        y = layers.BatchNormalization()(y)
        if stride != 1:
            x = layers.Conv2D(filters, 1, strides=stride, padding="same")(x)
        x = layers.Activation("relu")(layers.add([x, y]))
    x = layers.AveragePooling2D(pool_size=int(min(x.shape[1:3])))(x)
    x = layers.Flatten()(x)
    out = layers.Dense(10, activation="softmax")(x)
    stack = lambda proj: ["CONV_2D", "CONV_2D"] + ["CONV_2D"] * proj + ["ADD"]  # noqa: E731
    return Net(
        keras.Model(inp, out),
        lambda rng, n: images(rng, n, (32, 32, 3)),
        ["CONV_2D"] + stack(0) + stack(1) + stack(1) + ["AVERAGE_POOL_2D", "FULLY_CONNECTED", "SOFTMAX"],
        "image classification: ResNet-8, stacks 16/32/64",
    )


def mfcc(rng, count):
    """49 frames x 10 MFCCs: per coefficient a mean and spread like the
    reference's features (the first coefficient large and negative), and a
    little correlation between frames."""
    mean = np.array([-220, 40, -10, 10, -5, 5, -3, 3, -2, 2], dtype=np.float64)
    spread = np.array([60, 25, 15, 12, 10, 8, 7, 6, 5, 5], dtype=np.float64)
    z = rng.normal(size=(count, 50, 10))
    z = (z[:, 1:] + z[:, :-1]) / np.sqrt(2)
    return with_noise(rng, (mean + spread * z).reshape(count, 49, 10, 1)).astype(np.float32)


def dscnn():
    """DS-CNN (small) on 49x10x1 MFCCs: conv 64 10x4 s2 (BatchNorm, ReLU), four
    depthwise-separable blocks of 64 (3x3 depthwise, 1x1 pointwise, each
    BatchNorm + ReLU), average pool 24x5, flatten, dense 12, softmax
    (keyword_spotting/keras_model.py's ds_cnn)."""
    inp = keras.Input((49, 10, 1), batch_size=1)
    x = conv_bn_relu(inp, 64, (10, 4), strides=2)
    for _ in range(4):
        x = dw_bn_relu(x)
        x = conv_bn_relu(x, 64, 1)
    x = layers.AveragePooling2D(pool_size=(49 // 2, 10 // 2))(x)
    x = layers.Flatten()(x)
    out = layers.Dense(12, activation="softmax")(x)
    return Net(
        keras.Model(inp, out),
        mfcc,
        ["CONV_2D"] + ["DEPTHWISE_CONV_2D", "CONV_2D"] * 4 + ["AVERAGE_POOL_2D", "FULLY_CONNECTED", "SOFTMAX"],
        "keyword spotting: DS-CNN small, 4 depthwise-separable blocks of 64",
    )


def autoencoder():
    """The anomaly-detection autoencoder on 640 inputs (5 frames x 128 mel
    bands): dense 128 x4, dense 8, dense 128 x4, each BatchNorm + ReLU, then
    dense 640 (anomaly_detection/keras_model.py's get_model). The inputs are
    calibrated as normalised features (mean 0, spread 1.5), so that
    scripts/opgolden.py's float inputs in [-4, 4) cover their range."""
    inp = keras.Input((640,), batch_size=1)
    x = inp
    for units in [128] * 4 + [8] + [128] * 4:
        x = layers.Dense(units)(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
    out = layers.Dense(640)(x)
    return Net(
        keras.Model(inp, out),
        lambda rng, n: with_noise(rng, rng.normal(size=(n, 640)) * 1.5).astype(np.float32),
        ["QUANTIZE"] + ["FULLY_CONNECTED"] * 10 + ["DEQUANTIZE"],
        "anomaly detection: fully-connected autoencoder 640-128x4-8-128x4-640",
        io_type="float32",
    )


def speech_v2():
    """Not an MLPerf network: the keyword spotter's second version that the
    store tests stream to CPU0 (tests/service), with micro_speech's input and
    output (int8 1x1960 features, 49 frames x 40, -> int8 1x4 scores) and
    other weights and layers: conv 8 10x8 s2 (ReLU), flatten, dense 4,
    softmax."""
    inp = keras.Input((1960,), batch_size=1)
    x = layers.Reshape((49, 40, 1))(inp)
    x = layers.Conv2D(8, (10, 8), strides=2, padding="same", activation="relu")(x)
    x = layers.Flatten()(x)
    out = layers.Dense(4, activation="softmax")(x)
    return Net(
        keras.Model(inp, out),
        lambda rng, n: with_noise(rng, rng.uniform(0.0, 26.0, size=(n, 1960))).astype(np.float32),
        ["RESHAPE", "CONV_2D", "RESHAPE", "FULLY_CONNECTED", "SOFTMAX"],
        "the store tests' keyword spotter version 2: conv 8 10x8 s2, dense 4",
    )


BUILDERS = {"vww": vww, "resnet8": resnet8, "dscnn": dscnn, "autoencoder": autoencoder, "speech_v2": speech_v2}


# -- converting and checking ----------------------------------------------------


def convert(net, rng):
    model = net.model
    spec = tf.TensorSpec(model.inputs[0].shape, tf.float32, name="input")
    func = tf.function(lambda x: model(x, training=False), autograph=False).get_concrete_function(spec)
    converter = tf.lite.TFLiteConverter.from_concrete_functions([func], model)
    converter.optimizations = [tf.lite.Optimize.DEFAULT]
    samples = [[s[None]] for s in net.data(rng, CALIBRATION_SAMPLES)]
    converter.representative_dataset = lambda: iter(samples)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = TF_TYPES[net.io_type]
    converter.inference_output_type = TF_TYPES[net.io_type]
    return converter.convert()


def op_name(m, op):
    code = m.operatorCodes[op.opcodeIndex]
    return OP_NAMES[max(code.builtinCode, code.deprecatedBuiltinCode)]


def op_names(buf):
    m = schema.ModelT.InitFromPackedBuf(buf, 0)
    return [op_name(m, op) for op in m.subgraphs[0].operators]


def verify(net, buf):
    """Problems with the converted model (empty when it is the intended one)."""
    m = schema.ModelT.InitFromPackedBuf(buf, 0)
    errors = []
    if len(m.subgraphs) != 1:
        errors.append(f"{len(m.subgraphs)} subgraphs")
    sg = m.subgraphs[0]
    names = [op_name(m, op) for op in sg.operators]
    if names != net.ops:
        errors.append(f"operators {names}, expected {net.ops}")
    for which, idxs in (("input", sg.inputs), ("output", sg.outputs)):
        if len(idxs) != 1:
            errors.append(f"{len(idxs)} graph {which}s, expected 1")
        for i in idxs:
            have = TYPE_NAMES[sg.tensors[i].type]
            if have != net.io_type:
                errors.append(f"{which} tensor {i} is {have}, expected {net.io_type}")
    for i, t in enumerate(sg.tensors):
        if t.buffer and m.buffers[t.buffer].data is not None:
            continue  # constants: checked by the operator list
        have = TYPE_NAMES[t.type]
        if have not in ("int8", net.io_type):
            errors.append(f"activation tensor {i} is {have}")
    for op in sg.operators:
        for i in list(op.outputs):
            q = sg.tensors[i].quantization
            if q is not None and q.scale is not None and min(q.scale) < 1e-6:
                errors.append(f"tensor {i} has the degenerate scale {min(q.scale):.3g}")
    return errors


def varies(buf, count=16):
    """The output must change with the input (TensorFlow's own interpreter,
    random inputs of the graph's type)."""
    it = tf.lite.Interpreter(model_content=buf)
    it.allocate_tensors()
    rng = np.random.default_rng(SEED)
    seen = set()
    for _ in range(count):
        for d in it.get_input_details():
            if d["dtype"] == np.float32:
                data = rng.uniform(-4, 4, size=d["shape"]).astype(np.float32)
            else:
                data = rng.integers(-128, 128, size=d["shape"]).astype(d["dtype"])
            it.set_tensor(d["index"], data)
        it.invoke()
        seen.add(b"".join(it.get_tensor(d["index"]).tobytes() for d in it.get_output_details()))
    return [] if len(seen) > 1 else [f"the output is the same for {count} random inputs"]


def tensor_desc(sg, i):
    t = sg.tensors[i]
    q = t.quantization
    s = f"{TYPE_NAMES[t.type]}[{'x'.join(str(d) for d in t.shape)}]"
    if q is not None and q.scale is not None and len(q.scale) == 1:
        s += f"(s={q.scale[0]:.4g},z={q.zeroPoint[0]})"
    return s


def counts(names):
    """'CONV_2D x14, DEPTHWISE_CONV_2D x13, ...' in order of first use."""
    c = Counter(names)
    return ", ".join(f"{n} x{c[n]}" for n in dict.fromkeys(names))


def build(name):
    """(model bytes, one-line description) of one network."""
    rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
    tf.random.set_seed(SEED)
    keras.backend.clear_session()
    net = BUILDERS[name]()
    Weights(rng).fill(net.model)
    normalise(net.model, net.data(rng, STATISTICS_SAMPLES))
    buf = convert(net, rng)
    errors = verify(net, buf) + varies(buf)
    if errors:
        raise SystemExit(f"mlperf_tiny: {name}: " + "; ".join(errors))
    m = schema.ModelT.InitFromPackedBuf(buf, 0)
    sg = m.subgraphs[0]
    io = f"{tensor_desc(sg, sg.inputs[0])} -> {tensor_desc(sg, sg.outputs[0])}"
    return buf, f"{net.about} | {io} | {len(net.ops)} operators: {counts(op_names(buf))}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("networks", nargs="*", help=f"networks to make (default: all of {', '.join(BUILDERS)})")
    ap.add_argument("--check", action="store_true", help="convert again and compare with models/networks, write nothing")
    args = ap.parse_args()
    unknown = [n for n in args.networks if n not in BUILDERS]
    if unknown:
        raise SystemExit(f"mlperf_tiny: unknown networks {unknown}; they are {list(BUILDERS)}")
    tf.config.experimental.enable_op_determinism()
    np.random.seed(SEED)
    tf.random.set_seed(SEED)
    status, total = 0, 0
    for name in args.networks or BUILDERS:
        buf, about = build(name)
        path = NETWORKS / f"{name}.tflite"
        total += len(buf)
        if args.check:
            if not path.exists() or path.read_bytes() != buf:
                print(f"mlperf_tiny: {path.relative_to(ROOT)} differs from a new conversion", file=sys.stderr)
                status = 1
        else:
            NETWORKS.mkdir(parents=True, exist_ok=True)
            path.write_bytes(buf)
        print(f"{name}.tflite {len(buf)} B {about}")
    print(f"mlperf_tiny: {'checked' if args.check else 'wrote'} {total} bytes of models")
    return status


if __name__ == "__main__":
    sys.exit(main())
