#!/usr/bin/env bash
# Set up what is missing, then build and run the offload benchmark
# (tests/offload_bench) on the emulated dual core (mps2/an521, both images
# in one QEMU with -icount, so every figure is deterministic emulated
# k_cycle_get_32 ticks), and write its table and plots with
# scripts/bench_report.py:
#
#   <out>/console.txt   what CPU0 printed
#   <out>/bench.md      the table (also printed)
#   <out>/status_rtt.png, <out>/sweep.png, <out>/throughput.png
#   <out>/tflite.md     the interpreter's rows (scripts/tflite-bench.sh):
#                       host callgrind instructions per inference, ours vs
#                       TFLite's reference kernels and the ratio; emulated
#                       an521 cycles per inference and per MAC; arena
#
#   scripts/bench.sh [output directory]      (default: build/bench)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/bench}"

"$root/scripts/setup.sh"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

if [ -z "${ZEPHYR_BASE:-}" ]; then
    echo "bench: needs a Zephyr workspace (ZEPHYR_BASE, west topdir or ~/zephyrproject); see README, 'Workspace'" >&2
    exit 1
fi

mkdir -p "$out"
build="$out/build"
cd "$SYNAPTIC_WORKSPACE"
# Pristine every time: an incremental build can keep the Rust crates'
# Kconfig cfg flags from an older .config (a new option would read as off).
west build --sysbuild -p always -b mps2/an521/cpu0 -d "$build" "$root/tests/offload_bench" \
    -- -DZEPHYR_EXTRA_MODULES="$root" >"$out/build.log" 2>&1 ||
    { tail -n 40 "$out/build.log"; echo "bench: build failed (log: $out/build.log)"; exit 1; }
"$root/scripts/run_until.py" --timeout 900 \
    --pass "bench: PASS" --fail "bench: FAIL|FATAL ERROR" \
    -- west build -d "$build/offload_bench" -t run >"$out/console.txt" 2>&1 ||
    { grep -E "^bench:" "$out/console.txt" || tail -n 40 "$out/console.txt"; echo "bench: run failed"; exit 1; }
python3 "$root/scripts/bench_report.py" "$out/console.txt" "$out"

# The int8 TFLite interpreter: host callgrind against TFLite's reference
# kernels, emulated cycles on mps2/an521, arena (<out>/tflite.md).
echo
"$root/scripts/tflite-bench.sh" "$out"
