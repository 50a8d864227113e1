#!/usr/bin/env bash
# Set up what is missing, then run every test tier (docs/testing.md):
#   host    formatting, clippy, unit/property/loom/miri tests, fuzzing, ABI
#           header checks
#   cross   every no_std crate for the three Cortex-M targets
#   zephyr  twister on qemu_cortex_m3 (tests/), mps2/an521/cpu0 with
#           sysbuild (both cores in QEMU), frdm_mcxn947 build-only, then
#           every image's footprint and no floating point in CPU1 images;
#           run whenever a Zephyr workspace is present, SKIPPED otherwise.
# Each tier ends with `TIER <name>: N passed, N failed` (or SKIPPED), and the
# run with `N passed, N failed` over every executed case.
#
#   scripts/test.sh [--tier host|cross|zephyr]...
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
tiers=()
while [ $# -gt 0 ]; do
    case "$1" in
        --tier) tiers+=("$2"); shift 2 ;;
        -h | --help) sed -n '2,13p' "$0"; exit 0 ;;
        *) echo "test: unknown argument '$1'" >&2; exit 2 ;;
    esac
done
[ "${#tiers[@]}" -gt 0 ] || tiers=(host cross zephyr)

"$root/scripts/setup.sh" || { echo "test: setup failed"; echo "0 passed, 1 failed"; exit 1; }
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

total_passed=0
total_failed=0
tier_passed=0
tier_failed=0
log_dir="$(mktemp -d)"
trap 'rm -rf "$log_dir"' EXIT

# One named check = one case.
check() {
    local name="$1"
    shift
    local log="$log_dir/check.log" start=$SECONDS
    if "$@" >"$log" 2>&1; then
        echo "  PASS    $name ($((SECONDS - start)) s)"
        tier_passed=$((tier_passed + 1))
    else
        echo "  FAIL    $name ($((SECONDS - start)) s)"
        sed 's/^/          | /' "$log" | tail -n 60
        tier_failed=$((tier_failed + 1))
    fi
}

# A cargo test run: every test counts; a run that does not build is one failure.
cargo_tests() {
    local name="$1"
    shift
    local log="$log_dir/cargo.log" start=$SECONDS
    "$@" >"$log" 2>&1
    local status=$?
    local passed failed
    passed="$(awk '/^test result:/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^passed/) n += $i } END { print n + 0 }' "$log")"
    failed="$(awk '/^test result:/ { for (i = 1; i < NF; i++) if ($(i + 1) ~ /^failed/) n += $i } END { print n + 0 }' "$log")"
    passed="${passed:-0}"
    failed="${failed:-0}"
    if [ "$status" -ne 0 ] && [ "$failed" -eq 0 ]; then
        failed=1
    fi
    grep -E '^test .* \.\.\. FAILED$|^---- ' "$log" | sed 's/^/          | /' | head -n 40
    if [ "$status" -ne 0 ]; then
        tail -n 40 "$log" | sed 's/^/          | /'
    fi
    echo "  $( [ "$failed" -eq 0 ] && echo PASS || echo FAIL )    $name: $passed passed, $failed failed ($((SECONDS - start)) s)"
    tier_passed=$((tier_passed + passed))
    tier_failed=$((tier_failed + failed))
}

end_tier() {
    echo "TIER $1: $tier_passed passed, $tier_failed failed ($((SECONDS - tier_start)) s)"
    total_passed=$((total_passed + tier_passed))
    total_failed=$((total_failed + tier_failed))
    tier_passed=0
    tier_failed=0
}

# Every published member of the host workspace is a portable no_std crate;
# host-only tools (the two-core simulator) say `publish = false`.
portable_crates() {
    (cd "$root/rust" && cargo metadata --no-deps --format-version 1) |
        python3 -c 'import json, sys; print("\n".join(sorted(p["name"] for p in json.load(sys.stdin)["packages"] if p.get("publish") != [])))'
}
thumb_targets=(thumbv7m-none-eabi thumbv8m.main-none-eabi thumbv8m.main-none-eabihf)
# Rust that only builds inside Zephyr: formatted here, linted by every Zephyr build.
zephyr_rust_files() {
    find "$root/rust/synaptic-zephyr" "$root/tests" "$root/samples" -name '*.rs' -not -path '*/target/*' | sort
}

# miri over the code that reads and writes memory it does not own: the ring
# (unit, property and host tests, the two-thread sweep checked for data
# races), the shared-region and exchange views (synaptic-serve's unit tests
# and its serving-layer tests, which hand out every slot's tensor slices),
# the ABI's layout and exchange tests, the tensor arena, and the model
# store's container lengths on a 32-bit target. The client tests
# stay with `cargo test`: many threads, minutes under the interpreter.
# MIRIFLAGS: strict provenance, so no pointer is ever made from an integer.
miri_tests() {
    if ! grep -q '^nightly-[^0-9]' <<<"$(rustup toolchain list)"; then
        echo "no nightly toolchain: miri cannot run (see scripts/setup.sh)"
        return 1
    fi
    local status=0
    local miri=(env MIRIFLAGS="-Zmiri-strict-provenance" CARGO_TARGET_DIR="$root/rust/target/miri"
        cargo +nightly miri test)
    "${miri[@]}" -p synaptic-ring || status=1
    "${miri[@]}" -p synaptic-abi --lib || status=1
    "${miri[@]}" -p synaptic-serve --lib --test server || status=1
    "${miri[@]}" -p synaptic-runtime --lib -- arena:: || status=1
    # A container's lengths on a 32-bit usize, as on the cores: a hostile
    # header's total must not wrap (found by fuzzing signed_container).
    "${miri[@]}" -p synaptic-store --target i686-unknown-linux-gnu --test hostile_lengths || status=1
    return "$status"
}

tier_host() {
    echo "=== tier host"
    cd "$root/rust" || return
    check "cargo fmt --check" cargo fmt --all --check
    check "rustfmt --check (Zephyr crates)" bash -c 'rustfmt --check --edition 2021 $0 "$@"' $(zephyr_rust_files)
    check "cargo clippy -D warnings" cargo clippy --workspace --all-targets --quiet -- -D warnings
    # The serving layer as a CPU0 image without a model store links it:
    # no `updates` feature (the workspace's lint above unifies it on).
    check "cargo clippy -D warnings (synaptic-serve, no features)" \
        cargo clippy -p synaptic-serve --quiet -- -D warnings
    cargo_tests "cargo test --workspace" cargo test --workspace
    if [ -f "$root/rust/synaptic-ring/tests/loom.rs" ]; then
        cargo_tests "loom model check of the ring" \
            env RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR="$root/rust/target/loom" \
            cargo test -p synaptic-ring --test loom --release
    fi
    # The interpreter's property suites again through the convolutions'
    # DSP-extension paths (their instructions in portable Rust): every
    # operator family's generated models and the networks, byte for byte
    # against LiteRT, as a core with the extension runs them.
    cargo_tests "synaptic-tflite property suites, packed kernels (release)" \
        cargo test --release -p synaptic-tflite --features packed-kernels --test ops --test networks
    cargo_tests "miri: ring, region and exchange views, arena (nightly)" miri_tests
    cargo_tests "100,000-serve soak in the two-core simulator (release)" \
        cargo test --release -p synaptic-sim --test soak -- --ignored
    # Every fuzz target for 18 s from its committed corpus (about 4 minutes
    # with a clean build on 2 cores), request_path with its liveness phase;
    # each run starts by replaying the corpus (regression inputs included),
    # and any crash fails.
    check "fuzz: every target 18 s (scripts/fuzz.sh)" "$root/scripts/fuzz.sh" 18
    # Benchmarks print numbers; nothing asserts on time.
    check "ring benchmark (ns per message, ours vs heapless vs rtrb)" \
        cargo run --quiet --release -p synaptic-ring --example ring_bench
    sed 's/^/          | /' "$log_dir/check.log"
    # Host-testable helper crates of the Zephyr applications (the shared
    # protocol of a two-image test, say); the `rustapp` crates themselves only
    # build inside Zephyr.
    local manifest
    for manifest in $(find "$root/tests" "$root/samples" -name Cargo.toml -not -path '*/target/*' | sort); do
        grep -q '^name = "rustapp"' "$manifest" && continue
        cargo_tests "cargo test ${manifest#"$root"/}" \
            env CARGO_TARGET_DIR="$root/rust/target/apps" cargo test --manifest-path "$manifest"
    done
    # The host tools' own tests (the model-update sender, ...).
    check "pytest scripts/tests" python3 -m pytest -q "$root/scripts/tests"
    # Every scripts/check-*.sh: C headers up to date and compiling, no
    # read-modify-write in the ring, ...
    local script
    for script in "$root"/scripts/check-*.sh; do
        check "scripts/${script##*/}" "$script"
    done
    cd "$root" || return
    end_tier host
}

tier_cross() {
    echo "=== tier cross"
    cd "$root/rust" || return
    for target in "${thumb_targets[@]}"; do
        for crate in $(portable_crates); do
            check "$crate for $target" cargo build --quiet --release -p "$crate" --target "$target"
        done
    done
    cd "$root" || return
    end_tier cross
}

tier_zephyr() {
    echo "=== tier zephyr"
    if [ -z "${ZEPHYR_BASE:-}" ]; then
        echo "TIER zephyr: SKIPPED (no Zephyr workspace: set ZEPHYR_BASE, or create ~/zephyrproject; see README)"
        return
    fi
    local out="${SYNAPTIC_TWISTER_OUT:-$root/build/twister}"
    rm -rf "$out"
    echo "  twister against $ZEPHYR_BASE, output in $out"
    local twister_start=$SECONDS
    (
        cd "$SYNAPTIC_WORKSPACE" &&
            west twister \
                -p qemu_cortex_m3 -p mps2/an521/cpu0 \
                -p frdm_mcxn947/mcxn947/cpu0 -p frdm_mcxn947_cpu1/mcxn947/cpu1 \
                -T "$root/tests" -T "$root/samples" \
                -x "ZEPHYR_EXTRA_MODULES=$root" --board-root "$root/boards" \
                --outdir "$out" --inline-logs --jobs "$(nproc)"
    ) >"$log_dir/twister.log" 2>&1
    local status=$?
    echo "  twister took $((SECONDS - twister_start)) s"
    # Twister's progress lines (joined by carriage returns) would bury the
    # summary and any failure: leave them out.
    tr '\r' '\n' <"$log_dir/twister.log" | grep -E "INFO|ERROR|WARNING" |
        grep -vE "^\s*$|Total complete" | tail -n 25 | sed 's/^/          | /'
    if [ ! -f "$out/twister.json" ]; then
        tail -n 60 "$log_dir/twister.log" | sed 's/^/          | /'
        echo "  FAIL    twister produced no report (exit $status)"
        tier_failed=$((tier_failed + 1))
        end_tier zephyr
        return
    fi
    local counts
    python3 "$root/scripts/twister_summary.py" "$out/twister.json" >"$log_dir/summary.txt"
    sed '$d' "$log_dir/summary.txt"
    counts="$(tail -n 1 "$log_dir/summary.txt")"
    read -r zp zf zs <<<"$counts"
    tier_passed=$((tier_passed + zp))
    tier_failed=$((tier_failed + zf))
    if [ "$status" -ne 0 ] && [ "$zf" -eq 0 ]; then
        echo "  FAIL    twister exited $status"
        tier_failed=$((tier_failed + 1))
    fi
    [ "$zs" -eq 0 ] || echo "  ($zs cases skipped by their own choice)"
    # A model update through the shell, from the host's sender, on the
    # image twister built (interactive: twister's harnesses cannot type).
    local update_elf
    update_elf="$(find "$out" -path '*sample.synaptic.model_update/zephyr/zephyr.elf' | head -n 1)"
    if [ -n "$update_elf" ]; then
        check "model update streamed over the shell in QEMU (scripts/ota-qemu.sh)" \
            "$root/scripts/ota-qemu.sh" "$update_elf"
        grep -E "bytes of|store: |wall clock" "$log_dir/check.log" | sed 's/^/          | /'
    else
        echo "  FAIL    model update over the shell: twister built no samples/model_update"
        tier_failed=$((tier_failed + 1))
    fi
    # The same over MCUmgr's SMP, on the SMP variant twister built: each of
    # scripts/smp-qemu.sh's checks (upload, resume, verify, activate, confirm,
    # the refusals) is a case.
    local smp_elf
    smp_elf="$(find "$out" -path '*sample.synaptic.model_update.smp/zephyr/zephyr.elf' | head -n 1)"
    if [ -n "$smp_elf" ]; then
        "$root/scripts/smp-qemu.sh" "$smp_elf" >"$log_dir/smp.log" 2>&1
        local smp_status=$? smp_passed smp_failed
        smp_passed="$(grep -c '^PASS ' "$log_dir/smp.log")"
        smp_failed="$(grep -c '^FAIL ' "$log_dir/smp.log")"
        sed -n 's/^PASS /  PASS    SMP: /p; s/^FAIL /  FAIL    SMP: /p' "$log_dir/smp.log"
        if [ "$smp_failed" -gt 0 ] || [ "$smp_status" -ne 0 ]; then
            grep -vE '^(PASS|FAIL) ' "$log_dir/smp.log" | tail -n 40 | sed 's/^/          | /'
            [ "$smp_failed" -gt 0 ] || smp_failed=1
        fi
        tier_passed=$((tier_passed + smp_passed))
        tier_failed=$((tier_failed + smp_failed))
    else
        echo "  FAIL    model update over SMP: twister built no samples/model_update SMP variant"
        tier_failed=$((tier_failed + 1))
    fi
    # The model store's build-time layout check: a store over CPU1's image
    # or the running one does not build (FRDM-MCXN947 devicetree).
    check "model store clear of every image at build time (scripts/store-layout-check.sh)" \
        "$root/scripts/store-layout-check.sh"
    grep -E "^store-layout:" "$log_dir/check.log" | sed 's/^/          | /'
    # Footprint of every image built, and no floating point in CPU1's.
    echo "  images (flash and RAM in bytes; CPU1 images checked for floating point):"
    python3 "$root/scripts/image_report.py" "$out" >"$log_dir/images.txt" 2>&1
    sed '$d' "$log_dir/images.txt"
    read -r ip if_ <<<"$(tail -n 1 "$log_dir/images.txt")"
    if [ "${ip:-0}" -eq 0 ] && [ "${if_:-0}" -eq 0 ]; then
        echo "  FAIL    no CPU1 image to check"
        tier_failed=$((tier_failed + 1))
    else
        tier_passed=$((tier_passed + ip))
        tier_failed=$((tier_failed + if_))
    fi
    end_tier zephyr
}

for tier in "${tiers[@]}"; do
    tier_start=$SECONDS
    case "$tier" in
        host) tier_host ;;
        cross) tier_cross ;;
        zephyr) tier_zephyr ;;
        *) echo "test: unknown tier '$tier'" >&2; exit 2 ;;
    esac
done

echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
