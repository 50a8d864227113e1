#!/usr/bin/env bash
# Set up what is missing, then build the dual-core demo for the emulated
# target (mps2/an521: CPU0 + CPU1 images, one sysbuild) and run both cores in
# QEMU until the demo reports PASS or FAIL. (Sysbuild does not forward the
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
west build --sysbuild -p auto -b mps2/an521/cpu0 -d "$build" "$root/samples/dual_core_hello" \
    -- -DZEPHYR_EXTRA_MODULES="$root"
exec "$root/scripts/run_until.py" --timeout 120 \
    --pass "dual-core skeleton: PASS" --fail "dual-core skeleton: FAIL|FATAL ERROR" \
    -- west build -d "$build/dual_core_hello" -t run
