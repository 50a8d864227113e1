#!/usr/bin/env python3
"""Golden outputs of TFLite's reference kernels for the models in models/.

Runs every shipped test input and a fixed set of pseudo-random inputs through
each model with LiteRT's interpreter and its reference op resolver
(`OpResolverType.BUILTIN_REF`), and writes one line per input to
models/golden/<model>.txt:

    <input name> <output bytes in hex>

and, for the shipped inputs, models/golden/<model>.layers.txt with every
operator's output (the intermediate tensors too):

    <input name> <operator index> <byte count> <FNV-1a 64 of the bytes, hex>

rust/synaptic-tflite's golden test reads these files, regenerates the same
inputs (the shipped files, and the same xorshift32 streams) and requires every
output byte to be equal.

    python3 -m venv ~/.venv/golden
    ~/.venv/golden/bin/pip install -r scripts/golden-requirements.txt
    ~/.venv/golden/bin/python scripts/golden.py          # rewrite models/golden/
    ~/.venv/golden/bin/python scripts/golden.py --check  # compare, exit 1 on a difference

Input conventions (models/README.md):
* the shipped test inputs are 8-bit unsigned data as TFLite Micro's examples
  shipped them; the int8 models take `byte - 128` (`byte ^ 0x80`), the
  conversion TFLite Micro's int8 examples apply;
* random input k of a model is the low byte of successive outputs of
  xorshift32 seeded with `0x9E3779B9 * (k + 1)` (mod 2^32).

The person-detection file marks its 1-D depthwise-convolution bias tensors
with `quantized_dimension = 3`. TFLite Micro ignores that field for biases;
LiteRT rejects it ("quantized_dimension must be in range [0, 1)"). This script
therefore hands LiteRT a copy in which every `quantized_dimension` that is not
below its tensor's rank is rewritten to 0 (in place, same bytes otherwise). The
kernels never read a bias's quantisation, so the outputs are those of the
shipped model.
"""

import argparse
import struct
import sys
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from flatbuffers.table import Table

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "models"

# model file -> list of (input name, file of unsigned bytes)
SHIPPED = {
    "person_detect": [("person", "inputs/person.u8"), ("no_person", "inputs/no_person.u8")],
    "micro_speech": [("yes", "inputs/yes.u8"), ("no", "inputs/no.u8")],
}
RANDOM_INPUTS = 16


def xorshift32_bytes(seed, n):
    """n bytes: the low byte of successive xorshift32 (13, 17, 5) outputs."""
    x = seed & 0xFFFFFFFF
    out = bytearray(n)
    for i in range(n):
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
        out[i] = x & 0xFF
    return bytes(out)


def random_seed(k):
    return (0x9E3779B9 * (k + 1)) & 0xFFFFFFFF


# -- the quantized_dimension rewrite (flatbuffers' generic Table reader) -------


def _table(buf, t, slot):
    o = t.Offset(4 + 2 * slot)
    return Table(buf, t.Indirect(t.Pos + o)) if o else None


def _tables(buf, t, slot):
    o = t.Offset(4 + 2 * slot)
    if not o:
        return []
    start = t.Vector(o)
    return [Table(buf, t.Indirect(start + 4 * i)) for i in range(t.VectorLen(o))]


def _vector_len(t, slot):
    o = t.Offset(4 + 2 * slot)
    return t.VectorLen(o) if o else 0


def for_reference(model):
    buf = bytearray(model)
    root = Table(buf, struct.unpack_from("<I", buf, 0)[0])
    for subgraph in _tables(buf, root, 2):  # Model.subgraphs
        for tensor in _tables(buf, subgraph, 0):  # SubGraph.tensors
            quant = _table(buf, tensor, 4)  # Tensor.quantization
            if quant is None:
                continue
            o = quant.Offset(16)  # QuantizationParameters.quantized_dimension
            if o and struct.unpack_from("<i", buf, quant.Pos + o)[0] >= _vector_len(tensor, 0):
                struct.pack_into("<i", buf, quant.Pos + o, 0)
    return bytes(buf)


# -- running ------------------------------------------------------------------


def interpreter(model):
    it = Interpreter(
        model_content=for_reference(model),
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
        experimental_preserve_all_tensors=True,
    )
    it.allocate_tensors()
    return it


def run(it, data):
    (inp,) = it.get_input_details()
    (out,) = it.get_output_details()
    assert inp["dtype"] == np.int8 and out["dtype"] == np.int8
    n = int(np.prod(inp["shape"]))
    assert len(data) == n, (len(data), n)
    it.set_tensor(inp["index"], np.frombuffer(data, dtype=np.int8).reshape(inp["shape"]))
    it.invoke()
    return it.get_tensor(out["index"]).tobytes()


def fnv1a64(data):
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def layer_lines(it, label):
    lines = []
    for op in it._get_ops_details():
        (out,) = op["outputs"]
        data = it.get_tensor(out).tobytes()
        lines.append(f"{label} {op['index']} {len(data)} {fnv1a64(data):016x}\n")
    return lines


def golden_lines(name):
    model = (MODELS / f"{name}.tflite").read_bytes()
    it = interpreter(model)
    n = int(np.prod(it.get_input_details()[0]["shape"]))
    lines, layers = [], []
    for label, path in SHIPPED[name]:
        raw = (MODELS / path).read_bytes()
        lines.append((label, run(it, bytes(b ^ 0x80 for b in raw))))
        layers += layer_lines(it, label)
    for k in range(RANDOM_INPUTS):
        lines.append((f"random{k}", run(it, xorshift32_bytes(random_seed(k), n))))
    return "".join(f"{label} {out.hex()}\n" for label, out in lines), "".join(layers)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with models/golden/, write nothing")
    args = ap.parse_args()
    status = 0
    for name in SHIPPED:
        outputs, layers = golden_lines(name)
        for path, text in [
            (MODELS / "golden" / f"{name}.txt", outputs),
            (MODELS / "golden" / f"{name}.layers.txt", layers),
        ]:
            if args.check:
                if not path.exists() or path.read_text() != text:
                    print(f"golden: {path.relative_to(ROOT)} differs from the reference", file=sys.stderr)
                    status = 1
                else:
                    print(f"golden: {path.relative_to(ROOT)} matches ({text.count(chr(10))} lines)")
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                print(f"golden: wrote {path.relative_to(ROOT)} ({text.count(chr(10))} lines)")
    return status


if __name__ == "__main__":
    sys.exit(main())
