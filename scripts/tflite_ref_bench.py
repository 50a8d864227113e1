#!/usr/bin/env python3
"""TFLite's reference kernels under callgrind: the peer of
rust/synaptic-tflite's examples/bench.rs in scripts/bench.sh.

Loads a model into LiteRT's interpreter with the reference op resolver
(`OpResolverType.BUILTIN_REF`), allocates its tensors once, then runs
`invoke()` N times on one shipped input (unsigned bytes, given `byte ^ 0x80`
as in the golden tests). Run it under

    valgrind --tool=callgrind --toggle-collect='tflite::impl::Interpreter::Invoke()' \\
        python3 scripts/tflite_ref_bench.py <model.tflite> <input.u8> <N>

so that only the C++ interpreter's Invoke (every kernel, none of Python's
work) is counted; bench.sh divides by N. The output bytes are printed so the
run can be checked against models/golden/.
"""

import sys
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

sys.path.insert(0, str(Path(__file__).resolve().parent))
from golden import for_reference  # noqa: E402  (the quantized_dimension fix-up)


def main():
    model_path, input_path, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    it = Interpreter(
        model_content=for_reference(Path(model_path).read_bytes()),
        experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
    )
    it.allocate_tensors()
    (inp,) = it.get_input_details()
    (out,) = it.get_output_details()
    data = np.frombuffer(bytes(b ^ 0x80 for b in Path(input_path).read_bytes()), dtype=np.int8)
    data = data.reshape(inp["shape"])
    for _ in range(n):
        it.set_tensor(inp["index"], data)
        it.invoke()
    print(f"reference: {n} invokes, output {it.get_tensor(out['index']).tobytes().hex()}")


if __name__ == "__main__":
    main()
