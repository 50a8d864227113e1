#!/usr/bin/env bash
# The committed reference hashes of the single-operator models
# (models/ops/*/*.tflite.expect) against TFLite's reference kernels,
# recomputed now: scripts/opgolden.py --check with LiteRT (ai-edge-litert,
# pinned in scripts/golden-requirements.txt, the same environment as
# check-golden.sh) in its own virtual environment, made here when missing
# (GOLDEN_VENV, default ~/.venv/golden). The check runs 128 inputs through
# each model and takes a few seconds. The host tier runs every
# scripts/check-*.sh, so this runs there.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${GOLDEN_VENV:-$HOME/.venv/golden}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import ai_edge_litert, numpy" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$root/scripts/golden-requirements.txt"
fi
"$venv/bin/python" "$root/scripts/opgolden.py" --check
