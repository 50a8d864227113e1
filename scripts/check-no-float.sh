#!/usr/bin/env bash
# Check that the CPU1 client executes no floating point: CPU1 (MCXN947
# CPU1, AN521 stand-in) is a Cortex-M33 without FPU, so float code there is
# slow soft-float at best and a sign of a layering mistake at worst.
#
# Builds synaptic-serve and its dependencies in release for the CPU1 targets
# with `--cfg synaptic_probe` (which adds non-generic #[no_mangle] entry
# points instantiating the client: attach, infer, model_lookup, ping and the
# dispatch-thread handler), emits assembly for every crate, follows every
# direct call and tail branch from the probes across crates, and fails if a
# reached function contains a floating-point instruction (v*) or calls a
# soft-float helper (__aeabi_f*/d*, __addsf3, ...) or libm/microfft code.
# Calls into `core` (precompiled, no assembly here) are listed, not followed.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
targets=(thumbv8m.main-none-eabi thumbv7m-none-eabi)
target_dir="${CARGO_TARGET_DIR:-$root/rust/target}/no-float-probe"
fail=0

for target in "${targets[@]}"; do
    deps="$target_dir/$target/release/deps"
    # Assembly is emitted whenever cargo (re)builds a crate, so it always
    # matches the crate's current source; when several builds of a crate
    # left files, the newest one is used.
    (cd "$root/rust" && RUSTFLAGS="--cfg synaptic_probe --emit=link,asm" CARGO_TARGET_DIR="$target_dir" \
        cargo build -q -p synaptic-serve --lib --release --target "$target")
    if python3 - "$target" "$deps"/*.s <<'PY'
import os, re, sys

target, paths = sys.argv[1], sys.argv[2:]
newest = {}
for path in paths:
    crate = path.rsplit('/', 1)[-1].split('-')[0]
    if crate not in newest or os.path.getmtime(path) > os.path.getmtime(newest[crate]):
        newest[crate] = path
body = {}
for crate, path in newest.items():
    lines = open(path).read().splitlines()
    functions = set()
    for line in lines:
        m = re.match(r'\s*\.type\s+([^,\s]+),%function', line)
        if m:
            functions.add(m.group(1))
    current = None
    for line in lines:
        m = re.match(r'^([^\s:.][^\s:]*):', line)
        if m and m.group(1) in functions:
            current = m.group(1)
            body.setdefault(current, (crate, []))
            continue
        if current and line.startswith('\t') and not line.lstrip().startswith(('.', '@')):
            body[current][1].append(line.strip())

roots = [f for f in body if f.startswith('synaptic_probe_client_')]
if len(roots) < 5:
    print(f"FAIL: {target}: probe functions not found (got {roots})")
    sys.exit(1)

soft_float = re.compile(
    r'^(__aeabi_(f|d|[iu]?l?2[fd]|[iu]2[fd])|__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|un)[sdt]f[23]$'
    r'|__(float|fix|extend|trunc)\w*[sd]f)')
call = re.compile(r'^(bl|blx|b|b\.w|beq|bne|b\.n)\s+([^\s,]+)$')
seen, todo, external, bad = [], list(roots), set(), []
while todo:
    f = todo.pop()
    if f in seen:
        continue
    seen.append(f)
    crate, ins = body[f]
    if crate in ('libm', 'microfft'):
        bad.append(f"{f}: in crate {crate}")
    for i in ins:
        mnemonic = i.split()[0]
        if mnemonic.startswith('v'):
            bad.append(f"{f}: {i}")
        m = call.match(i)
        if not m or m.group(2).startswith('.L'):
            continue
        callee = m.group(2)
        if soft_float.match(callee):
            bad.append(f"{f}: calls {callee}")
        elif callee in body:
            todo.append(callee)
        else:
            external.add(callee)

crates = sorted({body[f][0] for f in seen})
print(f"  {target}: {len(seen)} functions reached from {len(roots)} probes, "
      f"in {', '.join(crates)}; {sum(len(body[f][1]) for f in seen)} instructions")
print(f"  {target}: {len(external)} callees outside the inspected assembly (core, compiler builtins):")
for e in sorted(external):
    print(f"    {e if len(e) < 100 else e[:97] + '...'}")
for b in bad:
    print(f"    FLOAT: {b}")
sys.exit(1 if bad else 0)
PY
    then
        echo "ok:   $target: the CPU1 client reaches no floating-point instruction or soft-float helper"
    else
        echo "FAIL: $target: floating point on the CPU1 client's paths"
        fail=1
    fi
done

if [[ $fail -ne 0 ]]; then
    echo "check-no-float: FAILED"
    exit 1
fi
echo "check-no-float: all checks passed"
