#!/usr/bin/env bash
# The int8 TFLite interpreter's benchmark rows (scripts/bench.sh runs this):
#
# * host: instructions per inference under valgrind --tool=callgrind for
#   rust/synaptic-tflite (examples/bench.rs, workspace release profile) and,
#   in the same run, for TFLite's reference kernels (LiteRT's interpreter
#   with OpResolverType.BUILTIN_REF, scripts/tflite_ref_bench.py); only the
#   invokes are counted (--toggle-collect on each side's invoke function),
#   N of them, divided by N; and the ratio ours / reference.
# * mps2/an521 (if a Zephyr workspace is present): tests/tflite_golden in
#   QEMU, whose emulated k_cycle_get_32 cycles per inference and per MAC
#   and each network's arena (TFLite Micro's own, measured in the same
#   run, is in scripts/peer-bench.sh's table)
#   are copied into the table.
#
#   scripts/tflite-bench.sh [output directory]   (default: build/bench)
#
# Writes <out>/tflite.md (also printed). LiteRT goes into a virtual
# environment (TFLITE_REF_VENV, default ~/.venv/golden) from
# scripts/golden-requirements.txt when missing.
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/build/bench}"
invokes="${TFLITE_BENCH_INVOKES:-3}"
venv="${TFLITE_REF_VENV:-$HOME/.venv/golden}"
mkdir -p "$out"

command -v valgrind >/dev/null || { echo "tflite-bench: needs valgrind (Debian package valgrind)" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import ai_edge_litert" 2>/dev/null; then
    echo "tflite-bench: installing LiteRT into $venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet -r "$root/scripts/golden-requirements.txt"
fi

(cd "$root/rust" && cargo build --quiet --release -p synaptic-tflite --example bench)
ours="$root/rust/target/release/examples/bench"

# Instructions callgrind collected inside the toggle function, over N invokes.
collected() {
    local log="$1"
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$log" | tail -n 1
}

rows="$out/tflite-host.txt"
: >"$rows"
for case in person_detect:person micro_speech:yes; do
    model="${case%%:*}"
    input="${case##*:}"
    tflite="$root/models/$model.tflite"
    data="$root/models/inputs/$input.u8"
    nice -n 10 valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.ours.$model" \
        --toggle-collect=synaptic_tflite_bench_invoke \
        "$ours" "$tflite" "$data" "$invokes" >"$out/ours.$model.log" 2>&1
    nice -n 10 valgrind --tool=callgrind --callgrind-out-file="$out/callgrind.ref.$model" \
        '--toggle-collect=tflite::Subgraph::Invoke()' \
        "$venv/bin/python" "$root/scripts/tflite_ref_bench.py" "$tflite" "$data" "$invokes" \
        >"$out/ref.$model.log" 2>&1
    ours_out="$(sed -n 's/^bench: .* output \([0-9a-f]*\),.*/\1/p' "$out/ours.$model.log")"
    ref_out="$(sed -n 's/^reference: .* output \([0-9a-f]*\)$/\1/p' "$out/ref.$model.log")"
    macs="$(sed -n 's/^bench: .* macs \([0-9]*\),.*/\1/p' "$out/ours.$model.log")"
    if [ -z "$ours_out" ] || [ "$ours_out" != "$ref_out" ]; then
        echo "tflite-bench: $model/$input: outputs differ (ours '$ours_out', reference '$ref_out')" >&2
        exit 1
    fi
    echo "$model $input $invokes $(collected "$out/ours.$model.log") $(collected "$out/ref.$model.log") $macs" >>"$rows"
done

target="$out/tflite-an521.txt"
: >"$target"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"
if [ -n "${ZEPHYR_BASE:-}" ]; then
    build="$out/build-tflite"
    (cd "$SYNAPTIC_WORKSPACE" &&
        nice -n 10 west build -p always -b mps2/an521/cpu0 -d "$build" "$root/tests/tflite_golden" \
            -- -DZEPHYR_EXTRA_MODULES="$root") >"$out/tflite-build.log" 2>&1 ||
        { tail -n 40 "$out/tflite-build.log"; echo "tflite-bench: build failed (log: $out/tflite-build.log)"; exit 1; }
    (cd "$SYNAPTIC_WORKSPACE" &&
        "$root/scripts/run_until.py" --timeout 600 \
            --pass "tflite_golden: PASS" --fail "tflite_golden: FAIL|FAIL \(|FATAL ERROR" \
            -- west build -d "$build" -t run) >"$out/tflite-console.txt" 2>&1 ||
        { grep -E "^tflite_golden:" "$out/tflite-console.txt" || tail -n 40 "$out/tflite-console.txt"; echo "tflite-bench: run failed"; exit 1; }
    grep -E "^tflite_golden: [a-z_0-9]+: " "$out/tflite-console.txt" >"$target" || true
else
    echo "tflite-bench: no Zephyr workspace, mps2/an521 rows skipped" >&2
fi

python3 - "$rows" "$target" >"$out/tflite.md" <<'EOF'
import re, sys
host = [l.split() for l in open(sys.argv[1]) if l.strip()]
target = {}
arena_tflm = None
for line in open(sys.argv[2]):
    m = re.match(r"tflite_golden: (\w+): (\d+) emulated cycles/inference, (\d+) MACs, ([\d.]+) emulated cycles/MAC, arena (\d+) B", line)
    if m:
        target[m[1]] = (int(m[2]), int(m[3]), m[4], int(m[5]))
print("Int8 TFLite interpreter (rust/synaptic-tflite) vs TFLite's reference kernels (LiteRT, BUILTIN_REF)\n")
print("| model | host instructions/inference, ours | reference | ours / reference | MACs | an521 cycles/inference (emulated) | cycles/MAC (emulated) | arena |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for model, _inp, n, ours, ref, macs in host:
    n, ours, ref = int(n), int(ours), int(ref)
    o, r = ours / n, ref / n
    cyc, _, per_mac, arena = target.get(model, (None, None, "-", None))
    arena_s = f"{arena:,} B" if arena else "-"
    print(f"| {model} | {o:,.0f} | {r:,.0f} | {o / r:.2f}x | {int(macs):,} | "
          f"{f'{cyc:,}' if cyc else '-'} | {per_mac} | {arena_s} |")
# The networks measured on the target only (the MLPerf Tiny ones).
for model, (cyc, macs, per_mac, arena) in target.items():
    if model not in {h[0] for h in host}:
        print(f"| {model} | - | - | - | {macs:,} | {cyc:,} | {per_mac} | {arena:,} B |")
print("\nHost: callgrind instruction counts of the invokes only (mean of "
      f"{host[0][2]} per model, same run, same input: person.u8 / yes.u8). "
      "an521: QEMU -icount k_cycle_get_32 ticks (emulated, deterministic) on CPU0 with the DSP extension and FPU "
      "(the MCXN947's CPU0, CONFIG_SYNAPTIC_EMULATE_MCXN947_CPU0), interpreter at opt-level 3, "
      "mean over the two shipped inputs "
      "(the MLPerf Tiny networks: over inputs 0-2 of their LiteRT comparison).")
EOF
cat "$out/tflite.md"
