#!/usr/bin/env bash
# The committed golden outputs (models/golden/) against TFLite's reference
# kernels, recomputed now: scripts/golden.py --check with LiteRT
# (ai-edge-litert, pinned in scripts/golden-requirements.txt) in its own
# virtual environment, made here when missing (GOLDEN_VENV, default
# ~/.venv/golden). Measured: the install downloads about 39 MB of wheels
# (ai-edge-litert 21.8 MB, numpy 16.9 MB) and takes about 6 s on a fast
# mirror (163 MB on disk); the check itself takes under a second. The host
# tier runs every scripts/check-*.sh, so this runs there.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
venv="${GOLDEN_VENV:-$HOME/.venv/golden}"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import ai_edge_litert, flatbuffers" 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$root/scripts/golden-requirements.txt"
fi
"$venv/bin/python" "$root/scripts/golden.py" --check
