#!/usr/bin/env bash
# Set up what is missing, then build the dual-core demo (samples/dual_model)
# for the emulated target (mps2/an521: CPU0 + CPU1 images, one sysbuild) and
# run both cores in QEMU until the demo reports PASS or FAIL: CPU0 serves a
# face-detection and a keyword-spotting model, CPU1 calls both at 20 Hz, CPU0
# prints the `syn ipc status` view every second. (Sysbuild does not forward the
# `run` target: it is the CPU0 image's, whose QEMU command loads both.)
#
#   scripts/demo.sh [build directory]        (default: build/demo)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/demo}"

"$root/scripts/setup.sh"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

if [ -z "${ZEPHYR_BASE:-}" ]; then
    echo "demo: needs a Zephyr workspace (ZEPHYR_BASE, west topdir or ~/zephyrproject); see README, 'Workspace'" >&2
    exit 1
fi

cd "$SYNAPTIC_WORKSPACE"
west build --sysbuild -p auto -b mps2/an521/cpu0 -d "$build" "$root/samples/dual_model" \
    -- -DZEPHYR_EXTRA_MODULES="$root"
exec "$root/scripts/run_until.py" --timeout 120 \
    --pass "dual_model: PASS" --fail "dual_model: FAIL|FATAL ERROR" \
    -- west build -d "$build/dual_model" -t run
