#!/usr/bin/env bash
# Set up what is missing, then run every benchmark and write its tables and
# plots to one folder. First the offload benchmark (tests/offload_bench) on
# the emulated dual core (mps2/an521, both images in one QEMU with -icount,
# so every figure is deterministic emulated k_cycle_get_32 ticks), its
# table and plots by scripts/bench_report.py; then the interpreter, the
# placement benchmark, the ring's cost and the images' footprint:
#
#   <out>/console.txt   what CPU0 printed
#   <out>/bench.md      the table (also printed)
#   <out>/status_rtt.png, <out>/sweep.png, <out>/throughput.png
#   <out>/tflite.md     the interpreter's rows (scripts/tflite-bench.sh):
#                       host callgrind instructions per inference, ours vs
#                       TFLite's reference kernels and the ratio; emulated
#                       an521 cycles per inference and per MAC; arena
#   <out>/peer.md       the interpreter beside TFLite Micro with CMSIS-NN
#                       kernels (scripts/peer-bench.sh), both on emulated
#                       mps2/an521/cpu0 with DSP and FPU: ticks per
#                       inference, ours / peer, arenas, outputs = LiteRT;
#                       with peer.png
#   <out>/placement_emul.txt  the placement phases on the emulated dual
#                       core (tests/offload_bench built with
#                       SB_CONFIG_OFFLOAD_BENCH_PLACEMENT): per policy and
#                       load, throughput, busy fractions, per-class latency
#                       and the latency model's figure
#   <out>/placement.md  the placement benchmark (scripts/placement-bench.sh)
#                       with placement_throughput.png, placement_p99.png,
#                       placement_model.png, and placement_phases.md (the
#                       latency model on one emulated phase over 200
#                       arrival sequences)
#   <out>/signature.md  verification cycles and flash bytes on emulated
#                       CPU0 (scripts/signature-bench.sh): no_std Ed25519
#                       and P-256 crates over a digest, and the store's own
#                       check of a signed micro_speech container
#   <out>/ring.txt      the ring's push/pop cost beside heapless's queue and
#                       k_msgq (tests/ipc on qemu_cortex_m3, emulated cycles)
#   <out>/footprint.txt scripts/image_report.py over dual_model (AN521 and
#                       FRDM-MCXN947) and hello_inference (qemu_cortex_m3)
#   <out>/results.md    one table: these figures next to the paper's and the
#                       peers' (scripts/results_report.py)
#
#   scripts/bench.sh [output directory]      (default: build/bench)
#
# About 45 minutes on two cores: every image is built pristine.
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
cd "$SYNAPTIC_WORKSPACE"
# Build tests/offload_bench for both cores and run it until its verdict;
# CPU0's console goes to <out>/<console>. Pristine every time: an
# incremental build can keep the Rust crates' Kconfig cfg flags from an
# older .config (a new option would read as off).
two_cores() { # build-dir console [extra cmake args]
    local build="$out/$1" console="$out/$2"
    shift 2
    west build --sysbuild -p always -b mps2/an521/cpu0 -d "$build" "$root/tests/offload_bench" \
        -- -DZEPHYR_EXTRA_MODULES="$root" "$@" >"$build.log" 2>&1 ||
        { tail -n 40 "$build.log"; echo "bench: build failed (log: $build.log)"; exit 1; }
    "$root/scripts/run_until.py" --timeout 900 \
        --pass "bench: PASS" --fail "bench: FAIL|FATAL ERROR" \
        -- west build -d "$build/offload_bench" -t run >"$console" 2>&1 ||
        { grep -E "^bench:" "$console" || tail -n 40 "$console"; echo "bench: run failed"; exit 1; }
}
two_cores build console.txt
python3 "$root/scripts/bench_report.py" "$out/console.txt" "$out"

# The placement phases on the same two emulated cores.
echo
two_cores build-placement placement-console.txt -DSB_CONFIG_OFFLOAD_BENCH_PLACEMENT=y
grep -E "^bench: placement" "$out/placement-console.txt" | tee "$out/placement_emul.txt"

# The int8 TFLite interpreter: host callgrind against TFLite's reference
# kernels, emulated cycles on mps2/an521, arena (<out>/tflite.md).
echo
"$root/scripts/tflite-bench.sh" "$out"

# The same networks and inputs on TFLite Micro with CMSIS-NN kernels, both
# on the MCXN947's CPU0 emulated (<out>/peer.md, <out>/peer.png).
echo
"$root/scripts/peer-bench.sh" "$out"

echo
"$root/scripts/placement-bench.sh" "$out"

# Verification cycles and flash bytes: the signature crates and the store's
# check of a whole signed container, on emulated CPU0 (<out>/signature.md).
echo
"$root/scripts/signature-bench.sh" "$out"

# The ring against its peers, in one emulated run.
echo
west build -p always -b qemu_cortex_m3 -d "$out/build-ring" "$root/tests/ipc" \
    -- -DZEPHYR_EXTRA_MODULES="$root" >"$out/build-ring.log" 2>&1 ||
    { tail -n 40 "$out/build-ring.log"; echo "bench: ring build failed"; exit 1; }
"$root/scripts/run_until.py" --timeout 600 \
    --pass "PROJECT EXECUTION SUCCESSFUL" --fail "PROJECT EXECUTION FAILED|FATAL ERROR" \
    -- west build -d "$out/build-ring" -t run >"$out/ring-console.txt" 2>&1 ||
    { tail -n 40 "$out/ring-console.txt"; echo "bench: ring run failed"; exit 1; }
grep -E " cost: |costs .*x the ring" "$out/ring-console.txt" | tee "$out/ring.txt"

# Footprint: the images the paper's table has.
echo
: >"$out/footprint.txt"
footprint() { # name board app [sysbuild]
    local dir="$out/build-footprint/$1"
    west build ${4:+--sysbuild} -p always -b "$2" -d "$dir" "$root/$3" \
        -- -DZEPHYR_EXTRA_MODULES="$root" -DBOARD_ROOT="$root" >"$dir.log" 2>&1 ||
        { tail -n 40 "$dir.log"; echo "bench: $3 for $2 failed to build"; exit 1; }
    { echo "== $1"; python3 "$root/scripts/image_report.py" "$dir"; } >>"$out/footprint.txt"
}
mkdir -p "$out/build-footprint"
footprint an521 mps2/an521/cpu0 samples/dual_model sysbuild
footprint frdm frdm_mcxn947/mcxn947/cpu0 samples/dual_model sysbuild
footprint hello qemu_cortex_m3 samples/hello_inference
grep -E "^(== |  \S)" "$out/footprint.txt"

echo
python3 "$root/scripts/results_report.py" "$out"
