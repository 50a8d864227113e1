#!/usr/bin/env bash
# Build and run every fuzz target of rust/fuzz (cargo-fuzz, libFuzzer) for
# a while each, from its committed seed corpus (docs/testing.md).
#
#   scripts/fuzz.sh [seconds] [--no-liveness] [--sanitizer NAME]
#                   [--no-trace-compares] [--target NAME]...
#
# seconds        time per target (default 60)
# --no-liveness  build request_path without its liveness check (feature
#                `liveness`), to fuzz the request path alone
# --sanitizer    cargo-fuzz's sanitizer (default address); `none` suits the
#                targets whose code forbids `unsafe` (model: the interpreter)
# --no-trace-compares
#                no compare tracing: fewer hints for the mutator, but the
#                interpreter's kernels run about 3x faster (long campaigns)
# --target NAME  run only these targets
#
# Runs work on a scratch copy of each corpus, so the repository stays
# clean; new crash inputs are kept in rust/fuzz/artifacts/<target>/ (not
# committed). A target stops at its first crash (libFuzzer's default).
# Prints, per target: executions, executions per second, crashes; exits
# nonzero if any target crashed or failed to build.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
seconds=60
features=()
build=()
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-liveness) features=(--no-default-features); shift ;;
        --sanitizer) build+=(--sanitizer "$2"); shift 2 ;;
        --no-trace-compares) build+=(--no-trace-compares); shift ;;
        --target) targets+=("$2"); shift 2 ;;
        -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
        [0-9]*) seconds="$1"; shift ;;
        *) echo "fuzz: unknown argument '$1'" >&2; exit 2 ;;
    esac
done

command -v cargo-fuzz >/dev/null 2>&1 || cargo install --quiet --locked cargo-fuzz || {
    echo "fuzz: cannot install cargo-fuzz" >&2
    exit 1
}

cd "$root/rust/fuzz" || exit 1
[ "${#targets[@]}" -gt 0 ] || mapfile -t targets < <(cargo +nightly fuzz list)
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
if ! cargo +nightly fuzz build "${build[@]}" "${features[@]}" >/dev/null 2>"$scratch/build.log"; then
    tail -n 40 "$scratch/build.log" >&2
    echo "fuzz: build failed" >&2
    exit 1
fi

failed=0
printf '%-16s %12s %10s %8s\n' target executions exec/s crashes
for target in "${targets[@]}"; do
    mkdir -p "$scratch/$target" "artifacts/$target"
    [ -d "corpus/$target" ] && cp -r "corpus/$target/." "$scratch/$target/"
    log="$scratch/$target.log"
    # libFuzzer stops at the first crash and saves its input.
    cargo +nightly fuzz run "${build[@]}" "${features[@]}" "$target" "$scratch/$target" -- \
        -max_total_time="$seconds" -print_final_stats=1 \
        -artifact_prefix="artifacts/$target/" >"$log" 2>&1
    status=$?
    execs="$(awk -F: '/stat::number_of_executed_units/ { n = $NF } END { print n + 0 }' "$log")"
    rate="$(awk -F: '/stat::average_exec_per_sec/ { n = $NF } END { print n + 0 }' "$log")"
    crashes="$(grep -cE '^==[0-9]+== ERROR: libFuzzer' "$log")"
    printf '%-16s %12s %10s %8s\n' "$target" "$execs" "$rate" "$crashes"
    if [ "$crashes" -ne 0 ] || [ "$status" -ne 0 ]; then
        failed=1
        grep -m 1 -A 1 'panicked at' "$log" | sed 's/^/    | /'
        grep -m 1 'Test unit written to' "$log" | sed 's/^/    | /'
        [ "$crashes" -ne 0 ] || tail -n 20 "$log" | sed 's/^/    | /'
    fi
done
exit "$failed"
