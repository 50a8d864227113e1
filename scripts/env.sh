# shellcheck shell=bash
# Environment for building synaptic against a Zephyr workspace. Source it:
#   . scripts/env.sh
# It finds the workspace (ZEPHYR_BASE, `west topdir`, or ~/zephyrproject),
# activates the Python virtual environment that scripts/setup.sh made, and
# sets the toolchain and bindgen variables. It changes nothing on disk.

SYNAPTIC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export SYNAPTIC_ROOT
SYNAPTIC_VENV="${SYNAPTIC_VENV:-$HOME/.venv/synaptic}"
export SYNAPTIC_VENV

# Tools that scripts/setup.sh installs with cargo.
case ":$PATH:" in
    *":${CARGO_HOME:-$HOME/.cargo}/bin:"*) ;;
    *) PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH" ;;
esac
export PATH

if [ -f "$SYNAPTIC_VENV/bin/activate" ] && [ "${VIRTUAL_ENV:-}" != "$SYNAPTIC_VENV" ]; then
    # shellcheck disable=SC1091
    . "$SYNAPTIC_VENV/bin/activate"
fi

# Debian's cross compiler instead of the Zephyr SDK.
export ZEPHYR_TOOLCHAIN_VARIANT="${ZEPHYR_TOOLCHAIN_VARIANT:-gnuarmemb}"
export GNUARMEMB_TOOLCHAIN_PATH="${GNUARMEMB_TOOLCHAIN_PATH:-/usr}"

# zephyr-sys runs bindgen over Zephyr's headers: clang 19's libclang, and
# clang's own arm_acle.h instead of GCC's (which libclang cannot parse).
if [ -d /usr/lib/llvm-19/lib ]; then
    export LIBCLANG_PATH="${LIBCLANG_PATH:-/usr/lib/llvm-19/lib}"
    export BINDGEN_EXTRA_CLANG_ARGS="${BINDGEN_EXTRA_CLANG_ARGS:--D_GCC_ARM_ACLE_H -include /usr/lib/llvm-19/lib/clang/19/include/arm_acle.h}"
fi

# The workspace: an explicit ZEPHYR_BASE wins, then west's idea, then the
# Getting Started convention.
synaptic_find_workspace() {
    if [ -n "${ZEPHYR_BASE:-}" ] && [ -f "$ZEPHYR_BASE/VERSION" ]; then
        return 0
    fi
    local top=""
    if command -v west >/dev/null 2>&1; then
        top="$(west topdir 2>/dev/null || true)"
    fi
    if [ -n "$top" ] && [ -f "$top/zephyr/VERSION" ]; then
        export ZEPHYR_BASE="$top/zephyr"
        return 0
    fi
    if [ -f "$HOME/zephyrproject/zephyr/VERSION" ]; then
        export ZEPHYR_BASE="$HOME/zephyrproject/zephyr"
        return 0
    fi
    unset ZEPHYR_BASE
    return 1
}

if synaptic_find_workspace; then
    SYNAPTIC_WORKSPACE="$(cd "$ZEPHYR_BASE/.." && pwd)"
    export SYNAPTIC_WORKSPACE
else
    unset SYNAPTIC_WORKSPACE
fi
