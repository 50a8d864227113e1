#!/usr/bin/env bash
# The build-time check that the model store never overlaps an image
# (src/synaptic_dt.c), on the FRDM-MCXN947's devicetree: CPU0's image of
# samples/dual_model configured with each overlay of tests/store_layout,
# then only synaptic_dt.c compiled.
#
#   scripts/store-layout-check.sh   (needs a Zephyr workspace: scripts/env.sh)
#
# fits.overlay (a store in bank 0) and in_cpu1_bank.overlay (a store beside
# CPU1's image in its flash bank) must compile, the second marking the
# store's writes as parking CPU1 and the first not; over_cpu1.overlay (the
# store on CPU1's image) and over_cpu0.overlay (the store inside CPU0's own
# code partition) must stop with their messages.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"
[ -n "${ZEPHYR_BASE:-}" ] || { echo "store-layout: no Zephyr workspace" >&2; exit 1; }
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
object=modules/synaptic/CMakeFiles/synaptic.dir/src/synaptic_dt.c.obj

# compile <overlay>: configure, then build synaptic_dt.c's object; its
# output in $scratch/<overlay>.log. Without link-time optimisation, which
# the sample turns on: an LTO object carries its constants only as the
# compiler's intermediate code, not as the section read below.
compile() {
    local name="$1" dir="$scratch/$1"
    (cd "$SYNAPTIC_WORKSPACE" &&
        west build -b frdm_mcxn947/mcxn947/cpu0 -d "$dir" --cmake-only \
            "$root/samples/dual_model" -- -DZEPHYR_EXTRA_MODULES="$root" \
            -DCONFIG_LTO=n \
            -DEXTRA_DTC_OVERLAY_FILE="$root/tests/store_layout/$name.overlay") \
        >"$scratch/$name.log" 2>&1 || { echo "store-layout: $name does not configure" >&2; return 2; }
    ninja -C "$dir" "$object" >>"$scratch/$name.log" 2>&1
}

# parks <overlay>: the compiled object's syn_dt_store_in_cpu1_bank (0 or 1).
parks() {
    local obj="$scratch/$1/$object"
    arm-none-eabi-objcopy -O binary -j .rodata.syn_dt_store_in_cpu1_bank "$obj" "$scratch/$1.parks" &&
        od -An -tu4 "$scratch/$1.parks" | tr -d ' '
}

failed=0
for case in "fits:0:store 0xc0000-0x100000 in bank 0, CPU1's image from 0x100000" \
    "in_cpu1_bank:1:store 0x180000-0x200000 beside CPU1's image in bank 1"; do
    name="${case%%:*}" rest="${case#*:}"
    expected="${rest%%:*}" what="${rest#*:}"
    if compile "$name"; then
        found="$(parks "$name")"
        if [ "$found" = "$expected" ]; then
            echo "store-layout: $name: compiles ($what), writes park CPU1: $found"
        else
            echo "store-layout: $name: writes park CPU1: '$found', expected $expected" >&2
            failed=1
        fi
    else
        tail -n 20 "$scratch/$name.log" >&2
        echo "store-layout: $name: FAILED to compile" >&2
        failed=1
    fi
done
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
