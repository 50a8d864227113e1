#!/usr/bin/env bash
# Check the C view of the syn_* API:
#   1. include/synaptic/syn_capi.h is what cbindgen generates from
#      rust/synaptic-capi today (fails when the committed header is stale);
#   2. tests/capi_c/capi_check.c (every header, syn_ipc.h included; struct
#      sizes and offsets; every function assigned to a pointer of its
#      frozen signature)
#      compiles with -Werror under host gcc, host g++ (C++ users), and
#      arm-none-eabi-gcc for Cortex-M3 and Cortex-M33 (soft and hard float);
#   3. tests/capi_c/host_test.c, linked with the C API as a host static
#      library (rust/synaptic-capi/examples/capi_host.rs), runs and passes:
#      C callers, C callbacks and C stages against the Rust runtime, with
#      threads contending for its lock.
# Usage: scripts/check-capi.sh [--write]   (--write regenerates the header)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/header-check.sh
. "$root/scripts/lib/header-check.sh"

cbindgen_header_check synaptic-capi syn_capi.h check-capi.sh "${1:-}"

src="$root/tests/capi_c/capi_check.c"
warn=(-Wall -Wextra -Werror -Wstrict-prototypes -Wmissing-prototypes)
if gcc -std=c11 -pedantic "${warn[@]}" -I"$root/include" -c "$src" -o "$work/host.o"; then
    ok "host gcc -std=c11 -pedantic: capi_check.c ($(gcc -dumpmachine))"
else
    bad "host gcc: capi_check.c"
fi
if g++ -x c++ -std=c++17 -Wall -Wextra -Werror -I"$root/include" -fsyntax-only \
    -include "$root/include/synaptic/syn_api.h" /dev/null; then
    ok "host g++ -std=c++17: syn_api.h (every header) compiles as C++"
else
    bad "host g++: syn_api.h"
fi
# syn_api.h includes syn_ipc.h only with CONFIG_SYNAPTIC_DUAL_CORE.
if g++ -x c++ -std=c++17 -Wall -Wextra -Werror -I"$root/include" -fsyntax-only \
    -include "$root/include/synaptic/syn_ipc.h" /dev/null; then
    ok "host g++ -std=c++17: syn_ipc.h compiles as C++"
else
    bad "host g++: syn_ipc.h"
fi
for target in "-mcpu=cortex-m3" "-mcpu=cortex-m33 -mfloat-abi=soft" \
    "-mcpu=cortex-m33 -mfloat-abi=hard -mfpu=fpv5-sp-d16"; do
    # shellcheck disable=SC2086
    if arm-none-eabi-gcc -std=c11 "${warn[@]}" -mthumb $target \
        -I"$root/include" -c "$src" -o "$work/arm.o"; then
        ok "arm-none-eabi-gcc -mthumb $target: capi_check.c"
    else
        bad "arm-none-eabi-gcc $target: capi_check.c"
    fi
done

target_dir="${CARGO_TARGET_DIR:-$work/target}"
if (cd "$root/rust" && CARGO_TARGET_DIR="$target_dir" cargo build -q -p synaptic-capi --example capi_host) &&
    gcc -std=c11 "${warn[@]}" -I"$root/include" "$root/tests/capi_c/host_test.c" \
        "$target_dir/debug/examples/libcapi_host.a" -lpthread -ldl -lm -o "$work/host_test"; then
    if out="$("$work/host_test")"; then
        ok "host_test.c against the Rust runtime: ${out#capi host test: }"
    else
        echo "$out"
        bad "host_test.c failed"
    fi
else
    bad "host_test.c: build"
fi

if [[ $fail -ne 0 ]]; then
    echo "check-capi: FAILED"
    exit 1
fi
echo "check-capi: all checks passed"
