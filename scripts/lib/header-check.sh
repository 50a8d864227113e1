# shellcheck shell=bash
# Shared by scripts/check-*.sh that guard a cbindgen-generated C header:
# the verdict helpers and the "committed header == cbindgen output" check.
# Source it after setting `root`; it sets `work` (a temporary directory,
# removed on exit) and `fail` (1 once any check failed).

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fail=0
ok() { echo "ok:   $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# cbindgen_header_check CRATE HEADER SCRIPT [--write]
#   Regenerate include/synaptic/HEADER from rust/CRATE into $work and compare
#   it with the committed one; with --write, replace the committed one first.
cbindgen_header_check() {
    local crate="$1" header="$2" script="$3" mode="${4:-}"
    local committed="$root/include/synaptic/$header"
    if ! command -v cbindgen >/dev/null 2>&1; then
        echo "FAIL: cbindgen not found (install with: cargo install cbindgen --locked)"
        exit 1
    fi
    (cd "$root/rust/$crate" && cbindgen -q --config cbindgen.toml --crate "$crate" . -o "$work/$header")
    if [[ "$mode" == "--write" ]]; then
        cp "$work/$header" "$committed"
        ok "header regenerated: include/synaptic/$header"
    fi
    if diff -u "$committed" "$work/$header" >"$work/diff"; then
        ok "header up to date: include/synaptic/$header matches cbindgen $(cbindgen --version | awk '{print $2}')"
    else
        cat "$work/diff"
        bad "header stale: run scripts/$script --write and commit include/synaptic/$header"
    fi
}
