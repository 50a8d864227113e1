#!/usr/bin/env bash
# Run the placement benchmark (synaptic-sim's placement_bench: host, fake
# clock, deterministic) and plot it with scripts/placement_plots.py:
#
#   <out>/placement.md                 the table (also printed)
#   <out>/placement.csv                one row per policy, load and class
#   <out>/placement_throughput.png, <out>/placement_p99.png,
#   <out>/placement_model.png
#   <out>/placement_phases.md          the latency model's error on one
#                                      phase of the emulated benchmark,
#                                      over 200 arrival sequences
#
#   scripts/placement-bench.sh [output directory]   (default: build/placement)
#
# Needs only cargo and the Python venv of scripts/setup.sh (matplotlib);
# it does not run setup.sh itself (no Zephyr workspace is needed).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/placement}"
venv="${SYNAPTIC_VENV:-$HOME/.venv/synaptic}"
mkdir -p "$out"
(cd "$root/rust" && cargo run -q --release -p synaptic-sim --example placement_bench -- \
    --csv "$out/placement.csv") | tee "$out/placement.md"
"$venv/bin/python" "$root/scripts/placement_plots.py" "$out/placement.csv" "$out"
# How far one phase of the emulated benchmark can judge the latency model:
# the same phase over many arrival sequences (<out>/placement_phases.md).
echo
(cd "$root/rust" && cargo run -q --release -p synaptic-sim --example placement_bench -- --phases) |
    tee "$out/placement_phases.md"
