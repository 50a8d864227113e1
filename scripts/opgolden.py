#!/usr/bin/env python3
"""Reference outputs of TFLite's kernels for the models in models/ops/ and models/networks/.

For every models/ops/<family>/<family>_<NN>.tflite (made by scripts/opgen.py)
this runs INPUTS deterministic pseudo-random inputs, and for every
models/networks/<name>.tflite (made by scripts/mlperf_tiny.py) NETWORK_INPUTS
of them, through LiteRT's interpreter with its reference op resolver
(`OpResolverType.BUILTIN_REF`) and writes `<model>.tflite.expect` next to
the model:

    # synaptic op golden v1: <model file name> inputs=<N>
    <k> <FNV-1a 64 of output 0's bytes, 16 lowercase hex digits>[ <output 1> ...]

one line per input k = 0..N-1, the outputs in the subgraph's output order,
each hashed over its raw bytes as LiteRT returns them (little-endian: int8 as
two's complement, int16 as LE pairs, float32 as LE IEEE words). FNV-1a 64:
h = 0xcbf29ce484222325; for each byte h = ((h ^ b) * 0x100000001b3) mod 2^64.

Inputs (rust/synaptic-tflite's test regenerates them the same way): input k,
graph input tensor i (subgraph input order) draws from a xorshift32 stream
seeded with s = (0x9E3779B9 * (k + 1) + 0x7F4A7C15 * (i + 1)) mod 2^32, and
s = 1 if that is 0. Each step is x ^= x << 13; x ^= x >> 17; x ^= x << 5
(32-bit), and the new x is the value drawn.
* int8, uint8, int16 tensor of B bytes: byte b is the low byte (x & 0xFF) of
  the b-th value drawn (an int16 element is thus the little-endian pair of two
  successive such bytes).
* float32 tensor of E elements: element j is float32(x >> 8) * 2**-21 - 4.0,
  computed in float32 (exact), one value drawn per element: values in [-4, 4).
* any other input type is an error.
Each input runs from a fresh interpreter state: variable tensors (the LSTM's
state) are reset to their initial values before every input, so the outputs of
input k do not depend on the inputs before it.

    python3 -m venv ~/.venv/golden
    ~/.venv/golden/bin/pip install -r scripts/golden-requirements.txt
    ~/.venv/golden/bin/python scripts/opgolden.py           # rewrite the .expect files
    ~/.venv/golden/bin/python scripts/opgolden.py --check   # compare, exit 1 on a difference
    ~/.venv/golden/bin/python scripts/opgolden.py --dump models/ops/add/add_03.tflite 5

`--dump FILE K` prints input K's input and output bytes in hex. The inputs and
the hashes are computed for all k at once with numpy (one lane per input), so
all models take a few seconds.
"""

import argparse
import sys
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

ROOT = Path(__file__).resolve().parent.parent
OPS = ROOT / "models" / "ops"
INPUTS = 128
NETWORKS = ROOT / "models" / "networks"
NETWORK_INPUTS = 200
# Families some of whose models no interpreter of ours can run (squeeze: the
# even models leave their output shape to run time; rust/synaptic-tflite's
# tests/ops.rs lists them) get more inputs per model, so that the models it
# runs still see over a thousand inputs in all.
FAMILY_INPUTS = {"squeeze": 256}
HEADER = "# synaptic op golden v1: {name} inputs={n}\n"

FNV_OFFSET = np.uint64(0xCBF29CE484222325)
FNV_PRIME = np.uint64(0x100000001B3)


def seeds(ks, i):
    """The xorshift32 seeds of inputs ks (array) for graph input i."""
    s = (0x9E3779B9 * (ks.astype(np.uint64) + 1) + 0x7F4A7C15 * (i + 1)) & 0xFFFFFFFF
    s = s.astype(np.uint32)
    s[s == 0] = 1
    return s


def stream(ks, i, count):
    """count successive xorshift32 values for each k in ks: uint32 [len(ks), count]."""
    x = seeds(ks, i)
    out = np.empty((len(ks), count), dtype=np.uint32)
    for j in range(count):
        x ^= x << np.uint32(13)
        x ^= x >> np.uint32(17)
        x ^= x << np.uint32(5)
        out[:, j] = x
    return out


def input_arrays(detail, i, ks):
    """The inputs ks for graph input i (LiteRT input detail), shape [len(ks), *shape]."""
    shape = [int(d) for d in detail["shape"]]
    dtype = np.dtype(detail["dtype"])
    elements = int(np.prod(shape))
    if dtype in (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16)):
        raw = (stream(ks, i, elements * dtype.itemsize) & 0xFF).astype(np.uint8)
        data = raw.view(dtype.newbyteorder("<")).astype(dtype)
    elif dtype == np.dtype(np.float32):
        x = stream(ks, i, elements)
        data = (x >> np.uint32(8)).astype(np.float32) * np.float32(2.0**-21) - np.float32(4.0)
    else:
        raise SystemExit(f"opgolden: input {i} has type {dtype}, which has no input convention")
    return data.reshape([len(ks)] + shape)


def fnv1a64_rows(rows):
    """FNV-1a 64 of each row of a uint8 [n, bytes] array."""
    h = np.full(rows.shape[0], FNV_OFFSET, dtype=np.uint64)
    for j in range(rows.shape[1]):
        h ^= rows[:, j].astype(np.uint64)
        h *= FNV_PRIME
    return h


def interpreter(path):
    it = Interpreter(
        model_content=path.read_bytes(),
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
    )
    it.allocate_tensors()
    return it


def run(it, ks):
    """(inputs, outputs) for inputs ks: per graph input and per graph output a
    list of len(ks) raw little-endian byte strings."""
    ins = it.get_input_details()
    outs = it.get_output_details()
    arrays = [input_arrays(d, i, ks) for i, d in enumerate(ins)]
    results = [[] for _ in outs]
    for n in range(len(ks)):
        # Every input starts from a fresh state: LSTM keeps its state in variable
        # tensors, which would otherwise carry over from the previous input.
        it.reset_all_variables()
        for d, a in zip(ins, arrays):
            it.set_tensor(d["index"], a[n])
        it.invoke()
        for r, d in zip(results, outs):
            r.append(it.get_tensor(d["index"]).astype(np.dtype(d["dtype"]).newbyteorder("<")).tobytes())
    inputs = [[a[n].astype(a.dtype.newbyteorder("<")).tobytes() for n in range(len(ks))] for a in arrays]
    return inputs, results


def input_count(path):
    if path.parent == NETWORKS:
        return NETWORK_INPUTS
    return FAMILY_INPUTS.get(path.parent.name, INPUTS)


def expect_text(path):
    it = interpreter(path)
    count = input_count(path)
    ks = np.arange(count)
    _, outputs = run(it, ks)
    hashes = []
    for per_input in outputs:
        rows = np.frombuffer(b"".join(per_input), dtype=np.uint8).reshape(len(ks), -1)
        hashes.append(fnv1a64_rows(rows))
    lines = [HEADER.format(name=path.name, n=count)]
    for k in range(count):
        lines.append(f"{k} " + " ".join(f"{int(h[k]):016x}" for h in hashes) + "\n")
    return "".join(lines)


def models():
    return sorted(OPS.glob("*/*.tflite")) + sorted(NETWORKS.glob("*.tflite"))


def check(path, text):
    """Messages naming the file and the first differing input, if any."""
    expect = path.with_name(path.name + ".expect")
    rel = expect.relative_to(ROOT)
    if not expect.exists():
        return [f"opgolden: {rel} is missing"]
    old = expect.read_text().splitlines()
    new = text.splitlines()
    if old == new:
        return []
    if not old or old[0] != new[0]:
        return [f"opgolden: {rel}: header is {old[0] if old else '(empty)'!r}, expected {new[0]!r}"]
    msgs = []
    for k, line in enumerate(new[1:]):
        have = old[k + 1] if k + 1 < len(old) else "(missing)"
        if have != line:
            msgs.append(f"opgolden: {rel}: input {k}: recorded {have!r}, LiteRT now gives {line!r}")
    if len(old) > len(new):
        msgs.append(f"opgolden: {rel}: {len(old) - len(new)} lines past the last input")
    return msgs


def desc(detail):
    shape = "x".join(str(int(v)) for v in detail["shape"])
    scale, zero = detail["quantization"]
    return f"{np.dtype(detail['dtype']).name}[{shape}] scale {scale:.6g} zero point {zero}"


def dump(path, k):
    it = interpreter(path)
    inputs, outputs = run(it, np.array([k]))
    for i, (d, data) in enumerate(zip(it.get_input_details(), inputs)):
        print(f"input {i} {desc(d)}: {data[0].hex()}")
    for o, (d, data) in enumerate(zip(it.get_output_details(), outputs)):
        h = int(fnv1a64_rows(np.frombuffer(data[0], dtype=np.uint8).reshape(1, -1))[0])
        print(f"output {o} {desc(d)} fnv1a64 {h:016x}: {data[0].hex()}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="recompute and compare with the .expect files, write nothing")
    ap.add_argument("--dump", nargs=2, metavar=("FILE", "K"), help="print input K's input and output bytes in hex")
    args = ap.parse_args()
    if args.dump:
        dump(Path(args.dump[0]), int(args.dump[1]))
        return 0
    paths = models()
    if not paths:
        print("opgolden: no models under models/ops or models/networks", file=sys.stderr)
        return 1
    status = 0
    for path in paths:
        text = expect_text(path)
        if args.check:
            msgs = check(path, text)
            for m in msgs[:5]:
                print(m, file=sys.stderr)
            if len(msgs) > 5:
                print(f"opgolden: ... and {len(msgs) - 5} more differences in that file", file=sys.stderr)
            status |= bool(msgs)
        else:
            path.with_name(path.name + ".expect").write_text(text)
    if args.check:
        expects = list(OPS.glob("*/*.tflite.expect")) + list(NETWORKS.glob("*.tflite.expect"))
        orphans = [p for p in expects if not p.with_name(p.name[: -len(".expect")]).exists()]
        for p in orphans:
            print(f"opgolden: {p.relative_to(ROOT)} has no model", file=sys.stderr)
            status = 1
        verdict = "differ" if status else "match"
        print(f"opgolden: {len(paths)} models x {INPUTS} or {NETWORK_INPUTS} inputs: {verdict}")
    else:
        print(f"opgolden: wrote {len(paths)} .expect files ({INPUTS} inputs each, {NETWORK_INPUTS} for networks)")
    return status


if __name__ == "__main__":
    sys.exit(main())
