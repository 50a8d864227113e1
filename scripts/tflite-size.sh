#!/usr/bin/env bash
# Flash of the int8 TFLite interpreter (rust/synaptic-tflite) without model
# data: builds its size probe (examples/size_probe.rs: parse, plan, invoke
# behind one C function) for a Cortex-M target with the workspace's release
# profile, links it with --gc-sections and prints .text and .rodata, once
# with the seven first operators only (`--no-default-features`) and once
# with every operator family (the default features).
#
#   scripts/tflite-size.sh [target]     (default thumbv8m.main-none-eabihf)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
target="${1:-thumbv8m.main-none-eabihf}"
cd "$root/rust"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
size() {
    local label="$1"
    shift
    cargo build --quiet --release -p synaptic-tflite --example size_probe --target "$target" \
        --config 'profile.release.panic="abort"' "$@"
    arm-none-eabi-ld --gc-sections -e tflite_probe -o "$out/probe.elf" \
        "target/$target/release/examples/libsize_probe.a"
    arm-none-eabi-size -A "$out/probe.elf" | awk -v t="$target" -v l="$label" '
        $1 == ".text" { text = $2 } $1 == ".rodata" { ro = $2 }
        END { printf "synaptic-tflite on %s, %s: .text %d B, .rodata %d B, flash %d B\n", t, l, text, ro, text + ro }'
}
size "seven operators" --no-default-features
size "every operator family"
