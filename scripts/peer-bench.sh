#!/usr/bin/env bash
# synaptic's interpreter beside its peer, TensorFlow Lite Micro with Arm's
# CMSIS-NN kernels (scripts/bench.sh runs this after tflite-bench.sh). Both
# run the same networks and inputs on emulated mps2/an521/cpu0 with the
# MCXN947's CPU0 emulated (DSP extension and FPU on,
# CONFIG_SYNAPTIC_EMULATE_MCXN947_CPU0), in QEMU with -icount shift=7:
#
# * bench/tflm_peer: TFLite Micro (Zephyr's tflite-micro module, -O2) with
#   CMSIS-NN (Zephyr's cmsis-nn module, -Ofast);
# * tests/tflite_golden: synaptic's interpreter, with the emulation options
#   given on the command line.
#
# scripts/peer_report.py reads both consoles and writes <out>/peer.md (also
# printed): per network, ticks per inference of each side, ours / peer,
# arenas, and whether each side's outputs equal LiteRT's reference kernels;
# and <out>/peer.png.
#
#   scripts/peer-bench.sh [output directory]   (default: build/bench)
#
# Without a Zephyr workspace, or without its tflite-micro and cmsis-nn
# modules (west.yml imports them), prints `peer-bench: SKIPPED (...)` and
# exits 0. The peer needs the toolchain's C++ library (Debian's
# picolibc-arm-none-eabi and libstdc++-arm-none-eabi-picolibc, which
# scripts/setup.sh installs).
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/bench}"

# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

if [ -z "${ZEPHYR_BASE:-}" ]; then
    echo "peer-bench: SKIPPED (no Zephyr workspace: ZEPHYR_BASE, west topdir or ~/zephyrproject)"
    exit 0
fi
missing=()
for module in tflite-micro cmsis-nn; do
    dir="$(cd "$SYNAPTIC_WORKSPACE" && west list -f '{abspath}' "$module" 2>/dev/null)" || dir=""
    [ -n "$dir" ] && [ -d "$dir" ] && [ -n "$(ls -A "$dir" 2>/dev/null)" ] || missing+=("$module")
done
if [ "${#missing[@]}" -gt 0 ]; then
    echo "peer-bench: SKIPPED (the Zephyr workspace has no ${missing[*]} module; 'west update' with this repository's west.yml fetches them)"
    exit 0
fi
for pkg in picolibc-arm-none-eabi libstdc++-arm-none-eabi-picolibc; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        echo "peer-bench: needs the Debian package $pkg (scripts/setup.sh installs it)" >&2
        exit 1
    fi
done

mkdir -p "$out"
board=mps2/an521/cpu0
emulate=(-DCONFIG_SYNAPTIC_EMULATE_MCXN947_CPU0=y -DCONFIG_FPU=y)

# Build one application pristine, then run it in QEMU until its last line.
build_and_run() { # name app pass-regex fail-regex [cmake args]
    local name="$1" app="$2" pass="$3" fail="$4"
    shift 4
    local build="$out/build-$name"
    (cd "$SYNAPTIC_WORKSPACE" &&
        nice -n 10 west build -p always -b "$board" -d "$build" "$app" \
            -- -DZEPHYR_EXTRA_MODULES="$root" "$@") >"$out/$name-build.log" 2>&1 ||
        { tail -n 40 "$out/$name-build.log"; echo "peer-bench: $name build failed (log: $out/$name-build.log)"; exit 1; }
    (cd "$SYNAPTIC_WORKSPACE" &&
        "$root/scripts/run_until.py" --timeout 900 --pass "$pass" --fail "$fail" \
            -- west build -d "$build" -t run) >"$out/$name-console.txt" 2>&1 ||
        { tail -n 40 "$out/$name-console.txt"; echo "peer-bench: $name run failed (console: $out/$name-console.txt)"; exit 1; }
}

# Zephyr's gnuarmemb toolchain does not say that the toolchain has picolibc;
# Debian's arm-none-eabi GCC finds it through picolibc.specs.
echo "peer-bench: building and running bench/tflm_peer (TFLite Micro + CMSIS-NN)"
build_and_run peer "$root/bench/tflm_peer" "tflm_peer: DONE" "FATAL ERROR" -DTOOLCHAIN_HAS_PICOLIBC=ON
grep -E "^tflm_peer: [a-z_0-9]+: " "$out/peer-console.txt" || true
echo "peer-bench: building and running tests/tflite_golden on the same emulated core"
# Its verdict ends the run either way: an output that differs from LiteRT's
# shows in the table (tflite-bench.sh is the step that fails on it).
build_and_run ours "$root/tests/tflite_golden" "tflite_golden: (PASS|FAIL)$" "FATAL ERROR" "${emulate[@]}"
grep -E "^tflite_golden: [a-z_0-9]+: " "$out/ours-console.txt" || true

echo
python3 "$root/scripts/peer_report.py" "$out/peer-console.txt" "$out/ours-console.txt" "$out" \
    --commit "$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
    --date "$(date -u +%Y-%m-%d)"
