#!/usr/bin/env bash
# Check the C view of the ABI contract:
#   1. include/synaptic/syn_abi.h is what cbindgen generates from
#      rust/synaptic-abi today (fails when the committed header is stale);
#   2. tests/abi_c/abi_check.c (static asserts on every size and offset)
#      compiles with host gcc and with arm-none-eabi-gcc for Cortex-M33.
# Usage: scripts/check-abi.sh [--write]   (--write regenerates the header)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/lib/header-check.sh
. "$root/scripts/lib/header-check.sh"

cbindgen_header_check synaptic-abi syn_abi.h check-abi.sh "${1:-}"

src="$root/tests/abi_c/abi_check.c"
if gcc -std=c11 -Wall -Wextra -Werror -I"$root/include" -c "$src" -o "$work/host.o"; then
    ok "host gcc -std=c11: abi_check.c static asserts hold ($(gcc -dumpmachine))"
else
    bad "host gcc: abi_check.c"
fi
for fpu in "-mfloat-abi=soft" "-mfloat-abi=hard -mfpu=fpv5-sp-d16"; do
    # shellcheck disable=SC2086
    if arm-none-eabi-gcc -std=c11 -Wall -Wextra -Werror -mcpu=cortex-m33 -mthumb $fpu \
        -I"$root/include" -c "$src" -o "$work/m33.o"; then
        ok "arm-none-eabi-gcc -mcpu=cortex-m33 -mthumb $fpu: abi_check.c static asserts hold"
    else
        bad "arm-none-eabi-gcc -mcpu=cortex-m33 $fpu: abi_check.c"
    fi
done

if [[ $fail -ne 0 ]]; then
    echo "check-abi: FAILED"
    exit 1
fi
echo "check-abi: all checks passed"
