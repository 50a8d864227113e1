#!/usr/bin/env bash
# The build-time check that the model store never overlaps an image
# (src/synaptic_dt.c), on the FRDM-MCXN947's devicetree: CPU0's image of
# samples/dual_model configured with each overlay of tests/store_layout,
# then only synaptic_dt.c compiled.
#
#   scripts/store-layout-check.sh   (needs a Zephyr workspace: scripts/env.sh)
#
# fits.overlay must compile; over_cpu1.overlay (the store on CPU1's image)
# and over_cpu0.overlay (the store inside CPU0's own code partition) must
# stop with their messages.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"
[ -n "${ZEPHYR_BASE:-}" ] || { echo "store-layout: no Zephyr workspace" >&2; exit 1; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
object=modules/synaptic/CMakeFiles/synaptic.dir/src/synaptic_dt.c.obj

# compile <overlay>: configure, then build synaptic_dt.c's object; its
# output in $scratch/<overlay>.log.
compile() {
    local name="$1" dir="$scratch/$1"
    (cd "$SYNAPTIC_WORKSPACE" &&
        west build -b frdm_mcxn947/mcxn947/cpu0 -d "$dir" --cmake-only \
            "$root/samples/dual_model" -- -DZEPHYR_EXTRA_MODULES="$root" \
            -DEXTRA_DTC_OVERLAY_FILE="$root/tests/store_layout/$name.overlay") \
        >"$scratch/$name.log" 2>&1 || { echo "store-layout: $name does not configure" >&2; return 2; }
    ninja -C "$dir" "$object" >>"$scratch/$name.log" 2>&1
}

failed=0
if compile fits; then
    echo "store-layout: fits: compiles (store 0xc0000-0x100000, CPU1's image from 0x100000)"
else
    tail -n 20 "$scratch/fits.log" >&2
    echo "store-layout: fits: FAILED to compile" >&2
    failed=1
fi
for case in "over_cpu1:overlaps the CPU1 image" "over_cpu0:overlaps the running image"; do
    name="${case%%:*}" message="${case#*:}"
    compile "$name"
    status=$?
    if [ "$status" -eq 1 ] && grep -q "$message" "$scratch/$name.log"; then
        echo "store-layout: $name: refused (\"... $message ...\")"
    else
        tail -n 20 "$scratch/$name.log" >&2
        echo "store-layout: $name: expected a build error \"$message\" (exit $status)" >&2
        failed=1
    fi
done
exit "$failed"
