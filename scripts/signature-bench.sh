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
# Then the project's own code: `store-ed25519` and `store-ecdsa-p256` link
# rust/synaptic-store with that one algorithm and time
# synaptic_store::container::check of a whole signed container in flash
# (models/micro_speech.tflite as its 18,800-byte payload, signed on the
# host by build.rs) under Trust::with_verifier(key, required,
# verify_<algorithm>): header and its CRC, the payload's CRC32 and
# SHA-256, the signed digest and the signature, as CPU0's store checks an
# update at its end; a flipped payload bit and a flipped signature bit
# must each be refused. A second build with `breakdown` times the CRC32,
# the SHA-256 and the signature alone (opt-level "s" only), for the
# figure per payload byte.
#
# Each figure with the firmware profile (opt-level "s", LTO, one codegen
# unit) and with opt-level 3; ratios are against the smallest and the
# fastest of the same algorithm at opt-level "s". Prints the tables and
# writes them to <out>/signature.md.
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

# feature  algorithm  package (as in Cargo.lock)  [bare crate's feature]
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
    "store-ed25519 Ed25519 synaptic-store ed25519-dalek"
    "store-ecdsa-p256 P-256 synaptic-store p256"
)
payload_len="$(wc -c <"$root/models/micro_speech.tflite")"

build() { # features profile -> path of its ELF
    local elf="$elfs/${1// /+}-$2.elf"
    (cd "$bench" && cargo build --quiet --locked --profile "$2" --features "$1")
    cp "$bench/target/$target/$2/signature_cost" "$elf"
    echo "$elf"
}

flash() { # elf -> .text + .rodata + .data bytes
    arm-none-eabi-size -A "$1" | awk '$1 == ".text" || $1 == ".rodata" || $1 == ".data" { n += $2 } END { print n }'
}

# Runs an ELF in QEMU; prints the ticks of its result line, fails on FAIL.
# The console stays in <elf>.console.
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
    echo "$console" >"$1.console"
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

part() { # elf name -> ticks of its `part <name> ...` line
    local n
    n="$(sed -n "s/^part $2\( .*\)\?: \([0-9]*\) ticks$/\2/p" "$1.console")"
    if [ -z "$n" ]; then
        echo "signature-bench: no $2 part from $(basename "$1")" >&2
        return 1
    fi
    echo "$n"
}

# One line a build: profile feature algorithm package version flash ticks
# bare-crate CRC32 SHA-256 signature (the last four "-" but for the store
# variants, their parts only at opt-level "s").
rows="$elfs/rows"
for profile in release release-o3; do
    base="$(flash "$(build baseline "$profile")")"
    for variant in "${variants[@]}"; do
        read -r feature algorithm package bare <<<"$variant"
        elf="$(build "$feature" "$profile")"
        crate_version="$(version "$feature" "$package")"
        bytes="$(($(flash "$elf") - base))"
        measured="$(ticks "$elf")"
        parts="- - -"
        if [ -n "$bare" ] && [ "$profile" = release ]; then
            elf="$(build "$feature breakdown" "$profile")"
            ticks "$elf" >/dev/null
            parts="$(part "$elf" crc32) $(part "$elf" sha256) $(part "$elf" signature)"
        fi
        echo "$profile $feature $algorithm $package $crate_version $bytes $measured ${bare:--} $parts" >>"$rows"
    done
done

awk -v payload="$payload_len" '
    { flash[$2, $1] = $6; ticks[$2, $1] = $7 }
    $1 == "release" && $8 != "-" { store[++m] = $2; algorithm[$2] = $3; version[$2] = $5; bare[$2] = $8
      crc[$2] = $9; sha[$2] = $10; signature[$2] = $11 }
    $1 == "release" && $8 == "-" { order[++n] = $2; algorithm[$2] = $3; package[$2] = $4; version[$2] = $5
      if (!($3 in minflash) || $6 < minflash[$3]) minflash[$3] = $6
      if (!($3 in minticks) || $7 < minticks[$3]) minticks[$3] = $7 }
    END {
      print "Verification cycles and flash bytes: a signature over a 32-byte digest on emulated CPU0 (QEMU mps2-an521 with DSP and FPU, -icount shift=7)."
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
      print "\nThe project\047s own check of a whole signed container: synaptic_store::container::check of the micro_speech"
      printf "container in flash (96-byte header, 136-byte signature block, %d-byte payload) under Trust::with_verifier\n", payload
      print "(its key, signatures required, that algorithm\047s verifier alone): header and CRC, payload CRC32 and SHA-256, the"
      print "signed digest, the signature; as CPU0\047s store checks an update at its end. \"+ crate\": over that crate\047s row above."
      print "Per payload byte: the payload\047s CRC32 and SHA-256 timed alone, over its length. \"signature\": the verifier alone"
      print "(not the crate\047s row: LTO makes different code of it in this build).\n"
      print "| build | what | crate | flash B (s) | + crate | ticks (s) | + crate | ticks per payload byte (CRC32 + SHA-256) | signature ticks | flash B (O3) | ticks (O3) |"
      print "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
      for (i = 1; i <= m; i++) {
        k = store[i]; b = bare[k]
        printf "| %s | synaptic-store %s (%s), micro_speech container | %s | %d | %d | %d | %d | %.1f (%.1f + %.1f) | %d | %d | %d |\n",
          k, version[k], algorithm[k], b, flash[k, "release"], flash[k, "release"] - flash[b, "release"],
          ticks[k, "release"], ticks[k, "release"] - ticks[b, "release"],
          (crc[k] + sha[k]) / payload, crc[k] / payload, sha[k] / payload, signature[k],
          flash[k, "release-o3"], ticks[k, "release-o3"]
      }
      if (m) printf "\nSo a container of N payload bytes takes about the signature plus %.1f N ticks (the sha2 row alone: %.1f a byte).\n",
          (crc[store[1]] + sha[store[1]]) / payload, ticks["sha2", "release"] / 65536
    }' "$rows" | tee "$out/signature.md"
