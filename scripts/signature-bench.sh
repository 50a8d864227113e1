#!/usr/bin/env bash
# Flash and time of verifying one signature over a 32-byte SHA-256 digest on
# emulated CPU0, per no_std crate, to choose the model container's verifier
# (Ed25519 or ECDSA P-256, as MCUboot signs). bench/signature_cost is a bare
# metal cortex-m-rt program for thumbv8m.main-none-eabihf with
# -C target-cpu=cortex-m33 (DSP extension), one build per cargo feature,
# run on QEMU's mps2-an521 with -icount shift=7 and CPU0's DSP extension and
# FPU turned on (QEMU's SSE-200 leaves them off; the MCXN947's CPU0 has
# them, as CONFIG_SYNAPTIC_EMULATE_MCXN947_CPU0 emulates):
#
# * flash: .text + .rodata + .data of a candidate's build minus the
#   `baseline` build (the same program, a byte comparison in place of the
#   check), from arm-none-eabi-size;
# * ticks: SysTick on the processor clock, wraps counted, as Zephyr's
#   k_cycle_get_32 on mps2/an521 reads it; median of 5 verifications, each
#   parsing the public key and signature from bytes. QEMU clocks it at
#   20 MHz, so with -icount shift=7 (128 ns an instruction) one instruction
#   is 2.56 ticks;
# * each build also checks that a one-bit-flipped signature is rejected;
#   `sha2` reports hashing the 64 KiB stand-in model instead.
#
# Each figure with the firmware profile (opt-level "s", LTO, one codegen
# unit) and with opt-level 3; ratios are against the smallest and the
# fastest of the same algorithm at opt-level "s". Prints the table and
# writes it to <out>/signature.md.
#
#   scripts/signature-bench.sh [output directory]   (default: build/bench)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/bench}"

# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

for tool in qemu-system-arm arm-none-eabi-size arm-none-eabi-gcc; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "signature-bench: needs $tool (scripts/setup.sh installs it)" >&2
        exit 1
    fi
done

bench="$root/bench/signature_cost"
target=thumbv8m.main-none-eabihf
mkdir -p "$out"
elfs="$(mktemp -d)"
trap 'rm -rf "$elfs"' EXIT

# feature  algorithm  package (as in Cargo.lock)
variants=(
    "ed25519-dalek Ed25519 ed25519-dalek"
    "ed25519-dalek-fast Ed25519 ed25519-dalek"
    "ed25519-dalek-2 Ed25519 ed25519-dalek"
    "ed25519-compact Ed25519 ed25519-compact"
    "ed25519-compact-opt-size Ed25519 ed25519-compact"
    "salty Ed25519 salty"
    "p256 P-256 p256"
    "p256-13 P-256 p256"
    "p256-cortex-m4 P-256 p256-cortex-m4"
    "sha2 SHA-256 sha2"
)

build() { # feature profile -> path of its ELF
    (cd "$bench" && cargo build --quiet --locked --profile "$2" --features "$1")
    cp "$bench/target/$target/$2/signature_cost" "$elfs/$1-$2.elf"
    echo "$elfs/$1-$2.elf"
}

flash() { # elf -> .text + .rodata + .data bytes
    arm-none-eabi-size -A "$1" | awk '$1 == ".text" || $1 == ".rodata" || $1 == ".data" { n += $2 } END { print n }'
}

# Runs an ELF in QEMU; prints the ticks of its result line, fails on FAIL.
ticks() { # elf
    local console
    console="$(timeout 300 qemu-system-arm -M mps2-an521 -nographic \
        -global sse-200.CPU0_DSP=on -global sse-200.CPU0_FPU=on \
        -semihosting-config enable=on,target=native \
        -icount shift=7,align=off,sleep=off -kernel "$1" 2>&1)" || {
        echo "signature-bench: $(basename "$1") failed:" >&2
        echo "$console" >&2
        return 1
    }
    local n
    n="$(sed -n 's/^\(verify\|hash\) .*: \([0-9]*\) ticks$/\2/p' <<<"$console")"
    if [ -z "$n" ]; then
        echo "signature-bench: no result line from $(basename "$1"):" >&2
        echo "$console" >&2
        return 1
    fi
    echo "$n"
}

version() { # feature package
    (cd "$bench" && cargo tree --locked --features "$1" -e normal --depth 1 --prefix none) |
        awk -v p="$2" '$1 == p { sub(/^v/, "", $2); print $2; exit }'
}

rows="$elfs/rows"
for profile in release release-o3; do
    base="$(flash "$(build baseline "$profile")")"
    for variant in "${variants[@]}"; do
        read -r feature algorithm package <<<"$variant"
        elf="$(build "$feature" "$profile")"
        crate_version="$(version "$feature" "$package")"
        bytes="$(($(flash "$elf") - base))"
        measured="$(ticks "$elf")"
        echo "$profile $feature $algorithm $package $crate_version $bytes $measured" >>"$rows"
    done
done

awk '
    { flash[$2, $1] = $6; ticks[$2, $1] = $7 }
    $1 == "release" { order[++n] = $2; algorithm[$2] = $3; package[$2] = $4; version[$2] = $5
      if (!($3 in minflash) || $6 < minflash[$3]) minflash[$3] = $6
      if (!($3 in minticks) || $7 < minticks[$3]) minticks[$3] = $7 }
    END {
      print "Signature verification over a 32-byte digest on emulated CPU0 (QEMU mps2-an521 with DSP and FPU, -icount shift=7)."
      print "Flash: bytes over the baseline build. Ticks: SysTick, processor clock, median of 5 (2.56 an instruction)."
      print "SHA-256 hashes the 64 KiB stand-in model instead of verifying.\n"
      print "| build | algorithm | crate | version | flash B (s) | x smallest | ticks (s) | x fastest | flash B (O3) | ticks (O3) |"
      print "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
      for (i = 1; i <= n; i++) {
        k = order[i]; a = algorithm[k]
        printf "| %s | %s | %s | %s | %d | %.2f | %d | %.2f | %d | %d |\n", k, a, package[k], version[k],
          flash[k, "release"], flash[k, "release"] / minflash[a], ticks[k, "release"],
          ticks[k, "release"] / minticks[a], flash[k, "release-o3"], ticks[k, "release-o3"]
      }
    }' "$rows" | tee "$out/signature.md"
