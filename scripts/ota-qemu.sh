#!/usr/bin/env bash
# A model update end to end on the emulated AN521: boot samples/model_update
# in QEMU with its shell on a TCP socket, pack the keyword spotter with
# synaptic-pack, stream it with scripts/syn_ota_send.py, and check that
# `syn store list` shows it active.
#
#   scripts/ota-qemu.sh ZEPHYR_ELF
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"
elf="${1:?usage: ota-qemu.sh ZEPHYR_ELF (samples/model_update for mps2/an521/cpu0)}"
work="$(mktemp -d)"
qemu_pid=""
cleanup() {
    [ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

(cd "$root/rust" && cargo run --quiet --release -p synaptic-pack -- pack \
    "$root/models/micro_speech.tflite" --name speech --version 1 --out "$work/speech.syn") || exit 1
# shellcheck source=scripts/lib/qemu-uart.sh
. "$root/scripts/lib/qemu-uart.sh"
qemu_uart_start "$elf" "$work"
start=$(date +%s)
timeout 300 python3 "$root/scripts/syn_ota_send.py" --port "socket://127.0.0.1:$port" --list \
    "$work/speech.syn" | tee "$work/sent"
status=${PIPESTATUS[0]}
echo "($(($(date +%s) - start)) s wall clock)"
[ "$status" -eq 0 ] && grep -q "store: speech: active v1, previous v0; slot A valid" "$work/sent"
