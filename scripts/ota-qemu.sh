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
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
qemu-system-arm -cpu cortex-m33 -machine mps2-an521 -nographic -m 16 -vga none -net none \
    -chardev "socket,id=shell,host=127.0.0.1,port=$port,server=on,wait=on,logfile=$work/console" \
    -serial chardev:shell -monitor none -icount shift=7,align=off,sleep=off -rtc clock=vm \
    -kernel "$elf" >"$work/qemu.log" 2>&1 </dev/null &
qemu_pid=$!
for _ in $(seq 50); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()" 2>/dev/null && break
    sleep 0.1
done
# The probe above was QEMU's first client; the sender is the next.
start=$(date +%s)
timeout 300 python3 "$root/scripts/syn_ota_send.py" --port "socket://127.0.0.1:$port" --list \
    "$work/speech.syn" | tee "$work/sent"
status=${PIPESTATUS[0]}
echo "($(($(date +%s) - start)) s wall clock)"
[ "$status" -eq 0 ] && grep -q "store: speech: active v1, previous v0; slot A valid" "$work/sent"
