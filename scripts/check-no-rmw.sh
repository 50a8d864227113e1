#!/usr/bin/env bash
# Check that the ring's push and pop paths use no read-modify-write
# (exclusive) instruction on the thumb targets: the cross-core bus offers
# none, so ordering must come from plain loads/stores and barriers only.
#
# Builds synaptic-ring in release with `--cfg synaptic_probe` (which adds two
# non-generic #[no_mangle] wrappers, synaptic_probe_push / synaptic_probe_pop,
# instantiating Producer::push / Consumer::pop for the default ring size),
# emits assembly, follows every call from the two probes, and fails if any
# reached function contains ldrex/strex/ldaex/stlex/clrex (any width).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
targets=(thumbv7m-none-eabi thumbv8m.main-none-eabi)
target_dir="${CARGO_TARGET_DIR:-$root/rust/target}/no-rmw-probe"
fail=0

for target in "${targets[@]}"; do
    deps="$target_dir/$target/release/deps"
    # Assembly is written only when the crate is compiled: forget the last
    # build so a rerun on an unchanged tree emits it again.
    rm -f "$deps"/synaptic_ring-*.s
    rm -rf "$target_dir/$target/release/.fingerprint"/synaptic-ring-*
    (cd "$root/rust" && RUSTFLAGS="--cfg synaptic_probe" CARGO_TARGET_DIR="$target_dir" \
        cargo rustc -q -p synaptic-ring --lib --release --target "$target" -- --emit asm)
    asm="$(ls "$deps"/synaptic_ring-*.s | head -n 1)"
    if python3 - "$target" "$asm" <<'PY'
import re, sys

target, path = sys.argv[1], sys.argv[2]
functions, current, body = set(), None, {}
lines = open(path).read().splitlines()
for line in lines:
    m = re.match(r'\s*\.type\s+([^,\s]+),%function', line)
    if m:
        functions.add(m.group(1))
for line in lines:
    m = re.match(r'^([^\s:.][^\s:]*):', line)
    if m and m.group(1) in functions:
        current = m.group(1)
        body[current] = []
        continue
    if current and line.startswith('\t') and not line.lstrip().startswith(('.', '@')):
        body[current].append(line.strip())

roots = ['synaptic_probe_push', 'synaptic_probe_pop']
missing = [r for r in roots if r not in body]
if missing:
    print(f"FAIL: {target}: probe functions not found: {missing}")
    sys.exit(1)
seen, todo = [], list(roots)
while todo:
    f = todo.pop()
    if f in seen:
        continue
    seen.append(f)
    for ins in body.get(f, []):
        m = re.match(r'(bl|b|b\.w|blx)\s+(\S+)$', ins)
        if m and m.group(2) in body:
            todo.append(m.group(2))

exclusive = re.compile(r'^(ldrex|strex|ldaex|stlex|clrex)[bhd]?(\.w)?\b')
bad = False
for f in seen:
    ins = body[f]
    mnemonics = [i.split()[0] for i in ins]
    hits = [i for i in ins if exclusive.match(i)]
    barriers = sum(m.startswith('dmb') for m in mnemonics)
    acq_rel = sum(m in ('lda', 'stl') for m in mnemonics)
    short = f if len(f) < 60 else f[:57] + '...'
    print(f"  {target}: {short}: {len(ins)} instructions, {barriers} dmb, "
          f"{acq_rel} lda/stl, {len(hits)} exclusive")
    if hits:
        bad = True
        for h in hits:
            print(f"    exclusive: {h}")
whole = sum(1 for f in body for i in body[f] if exclusive.match(i))
print(f"  {target}: {len(body)} functions in the crate's code, {whole} exclusive instructions in all")
sys.exit(1 if bad else 0)
PY
    then
        echo "ok:   $target: push/pop paths use no ldrex/strex (acquire/release are plain loads/stores + barriers)"
    else
        echo "FAIL: $target: read-modify-write instruction on the push/pop path"
        fail=1
    fi
done

if [[ $fail -ne 0 ]]; then
    echo "check-no-rmw: FAILED"
    exit 1
fi
echo "check-no-rmw: all checks passed"
