#!/usr/bin/env bash
# Install what synaptic needs on a Debian 12 machine that has Rust, gcc and
# Python: Debian packages, the Rust thumb targets and cargo tools, and a
# Python virtual environment with west and Zephyr's build/test requirements.
# Idempotent and quiet when everything is already there.
#
#   scripts/setup.sh                    install, then report the workspace
#   scripts/setup.sh --fetch-workspace  also create ~/zephyrproject from
#                                       upstream with west (needs GitHub)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
fetch_workspace=0
for arg in "$@"; do
    case "$arg" in
        --fetch-workspace) fetch_workspace=1 ;;
        -h | --help) sed -n '2,11p' "$0"; exit 0 ;;
        *) echo "setup: unknown argument '$arg'" >&2; exit 2 ;;
    esac
done

say() { echo "setup: $*"; }

# Debian packages: cross compiler and C library, build tools, QEMU for the
# emulated targets, libclang for bindgen; picolibc and its C++ library for
# the benchmark's peer (bench/tflm_peer, TFLite Micro is C++ and needs the
# toolchain's full C++ library: scripts/peer-bench.sh).
apt_packages=(
    gcc-arm-none-eabi libnewlib-arm-none-eabi binutils-arm-none-eabi
    picolibc-arm-none-eabi libstdc++-arm-none-eabi-picolibc
    cmake ninja-build device-tree-compiler qemu-system-arm valgrind
    libclang-19-dev file xz-utils
)
missing=()
for pkg in "${apt_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    say "installing Debian packages: ${missing[*]}"
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Rust targets: Cortex-M3 (qemu_cortex_m3), M33 without FPU (CPU1), M33 with FPU (CPU0).
rust_targets=(thumbv7m-none-eabi thumbv8m.main-none-eabi thumbv8m.main-none-eabihf)
installed_targets="$(rustup target list --installed)"
for target in "${rust_targets[@]}"; do
    if ! grep -qx "$target" <<<"$installed_targets"; then
        say "adding Rust target $target"
        rustup target add "$target" >/dev/null
    fi
done
for component in rustfmt clippy; do
    rustup component list --installed | grep -q "^$component" || rustup component add "$component" >/dev/null
done
# miri, for the host tier's check of the ring, the shared-region views and
# the arena, runs on the nightly toolchain (present on CI machines). Without
# nightly, setup says so and that check fails; it is never skipped.
if grep -q '^nightly-[^0-9]' <<<"$(rustup toolchain list)"; then
    installed_nightly="$(rustup +nightly component list --installed)"
    if ! grep -q '^miri' <<<"$installed_nightly" || ! grep -q '^rust-src' <<<"$installed_nightly"; then
        say "adding nightly components miri and rust-src"
        rustup +nightly component add miri rust-src >/dev/null 2>&1 || say "could not add miri to nightly; the miri check will fail"
    fi
    # Build miri's own sysroot here (once per nightly, under a minute), not
    # inside the first test run; a no-op when it is already built.
    cargo +nightly miri setup >/dev/null 2>&1 || say "cargo +nightly miri setup failed; the miri check will fail"
else
    say "no nightly Rust toolchain (rustup toolchain list): the miri check of the host tier will fail; install it with 'rustup toolchain install nightly'"
fi

# cbindgen regenerates the C headers that CI checks are up to date.
cbindgen_version="0.29.4"
if ! command -v cbindgen >/dev/null 2>&1 || [ "$(cbindgen --version | awk '{print $2}')" != "$cbindgen_version" ]; then
    say "installing cbindgen $cbindgen_version"
    cargo install --quiet --locked cbindgen --version "$cbindgen_version"
fi

# cargo-fuzz and a nightly toolchain run the fuzz targets (scripts/fuzz.sh).
if ! rustup toolchain list | grep -q '^nightly'; then
    say "installing the nightly Rust toolchain"
    rustup toolchain install --profile minimal nightly >/dev/null
fi
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    say "installing cargo-fuzz"
    cargo install --quiet --locked cargo-fuzz
fi

# Python: west, twister and the Zephyr build scripts' requirements.
venv="${SYNAPTIC_VENV:-$HOME/.venv/synaptic}"
if [ ! -x "$venv/bin/python" ]; then
    say "creating Python virtual environment $venv"
    python3 -m venv "$venv"
fi
python_requirements="$root/scripts/requirements.txt"
stamp="$venv/.synaptic-requirements"
if ! cmp -s "$python_requirements" "$stamp"; then
    say "installing Python requirements into $venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet -r "$python_requirements"
    cp "$python_requirements" "$stamp"
fi

# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"

if [ -z "${ZEPHYR_BASE:-}" ] && [ "$fetch_workspace" -eq 1 ]; then
    # The usual manifest-repository layout: ~/zephyrproject/synaptic holds
    # this repository and its west.yml names everything else.
    say "creating ~/zephyrproject from upstream with west (manifest: this repository's west.yml)"
    mkdir -p "$HOME/zephyrproject"
    [ -d "$HOME/zephyrproject/synaptic/.git" ] || git clone --quiet "$root" "$HOME/zephyrproject/synaptic"
    (cd "$HOME/zephyrproject" && west init -l synaptic && west update --narrow -o=--depth=1)
    # shellcheck source=scripts/env.sh
    . "$root/scripts/env.sh"
fi

if [ -n "${ZEPHYR_BASE:-}" ]; then
    say "Zephyr workspace: $SYNAPTIC_WORKSPACE (Zephyr $(tr -d ' \n' <"$ZEPHYR_BASE/VERSION" | sed 's/VERSION_MAJOR=\([0-9]*\)VERSION_MINOR=\([0-9]*\)PATCHLEVEL=\([0-9]*\).*/\1.\2.\3/'))"
else
    say "Zephyr workspace: none (looked at ZEPHYR_BASE, west topdir, ~/zephyrproject) and upstream is not fetched without --fetch-workspace; host and cross tiers run, Zephyr tiers are skipped"
fi
