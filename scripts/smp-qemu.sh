#!/usr/bin/env bash
# Model updates over MCUmgr's SMP end to end on the emulated AN521: boot
# samples/model_update's SMP variant (overlay-smp.conf) in QEMU with its
# UART on a TCP socket, sign the keyword spotter with the sample's test key,
# upload half of it with scripts/smp_model.py, drop the connection,
# reconnect and resume, see the store verify it, activate and confirm it;
# then send what the store must refuse, each with its own rc and the store
# as it was: a payload changed after signing, a container signed by another
# key, an unsigned one, and a downgrade below the confirmed version.
# One line per check, `PASS name` or `FAIL name`; exits non-zero on any
# failure.
#
#   scripts/smp-qemu.sh ZEPHYR_ELF
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=scripts/env.sh
. "$root/scripts/env.sh"
elf="${1:?usage: smp-qemu.sh ZEPHYR_ELF (samples/model_update with overlay-smp.conf, mps2/an521/cpu0)}"
key="$root/samples/model_update/keys/test-ed25519.pem"
model="$root/models/micro_speech.tflite"
work="$(mktemp -d)"
qemu_pid=""
cleanup() {
    [ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null
    [ -n "${SMP_QEMU_KEEP:-}" ] && echo "kept $work" || rm -rf "$work"
}
trap cleanup EXIT

failed=0
pass() { echo "PASS $1"; }
fail() {
    echo "FAIL $1"
    failed=$((failed + 1))
}

pack() {
    (cd "$root/rust" && cargo run --quiet --release -p synaptic-pack -- "$@") >>"$work/pack.log" 2>&1
}
# The update (version 2), and what must be refused: version 3 with its
# payload's last byte flipped after signing, version 3 signed by a fresh key,
# version 3 unsigned, version 1 (below the counter once 2 is confirmed).
pack keygen --type ed25519 --out "$work/fresh.pem" &&
    pack pack "$model" --name speech --version 2 --key "$key" --out "$work/v2.syn" &&
    pack pack "$model" --name speech --version 3 --key "$key" --out "$work/tampered.syn" &&
    pack pack "$model" --name speech --version 3 --key "$work/fresh.pem" --out "$work/fresh.syn" &&
    pack pack "$model" --name speech --version 3 --out "$work/unsigned.syn" &&
    pack pack "$model" --name speech --version 1 --key "$key" --out "$work/v1.syn" || {
    cat "$work/pack.log"
    fail "containers packed and signed (synaptic-pack)"
    exit 1
}
python3 - "$work/tampered.syn" <<'EOF'
import sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
data[-1] ^= 0x01
open(path, "wb").write(bytes(data))
EOF

# shellcheck source=scripts/lib/qemu-uart.sh
. "$root/scripts/lib/qemu-uart.sh"
qemu_uart_start "$elf" "$work"

url="socket://127.0.0.1:$port"
smp() {
    timeout 300 python3 "$root/scripts/smp_model.py" --port "$url" "$@"
}
# The store's models (versions, counters, slots), one JSON line.
models() {
    smp state --json | python3 -c 'import json, sys; print(json.dumps(json.loads(sys.stdin.read())["models"], sort_keys=True))'
}

size=$(stat -c %s "$work/v2.syn")
half=$((size / 2))

if smp state >"$work/out" 2>&1; then
    pass "the group answers its state: $(tail -n 1 "$work/out")"
else
    cat "$work/out"
    fail "the group answers its state"
    exit 1
fi

smp upload "$work/v2.syn" --name speech --stop-after "$half" >"$work/out" 2>&1
if grep -q "stopped at" "$work/out"; then
    pass "half of v2 uploaded, then the link dropped: $(grep "stopped at" "$work/out")"
else
    cat "$work/out"
    fail "half of v2 uploaded, then the link dropped"
fi

smp state >"$work/out" 2>&1
if grep -q "update: downloading" "$work/out" && grep -q "uploading 'speech'" "$work/out"; then
    pass "after reconnecting, the device reports the interrupted upload: $(tail -n 1 "$work/out")"
else
    cat "$work/out"
    fail "after reconnecting, the device reports the interrupted upload"
fi

start=$(date +%s)
smp upload "$work/v2.syn" --name speech >"$work/out" 2>&1
resumed_at="$(sed -n 's/.*resuming .* at \([0-9]*\) of.*/\1/p' "$work/out")"
if [ -n "$resumed_at" ] && [ "$resumed_at" -ge "$half" ] && grep -q "verified by the store" "$work/out"; then
    pass "resumed at $resumed_at of $size bytes, verified by the store from flash ($(($(date +%s) - start)) s wall clock)"
else
    cat "$work/out"
    fail "resumed where the device stopped, verified by the store"
fi

smp activate --name speech >"$work/out" 2>&1
if grep -q "activate: speech v2" "$work/out"; then
    pass "activated: $(cat "$work/out")"
else
    cat "$work/out"
    fail "activated"
fi
smp confirm >"$work/out" 2>&1
confirmed="$(models)"
if grep -q "confirm: speech v2" "$work/out" &&
    echo "$confirmed" | grep -q '"active": 2, "name": "speech", "previous": 0, "security": 2'; then
    pass "confirmed: security counter 2: $confirmed"
else
    cat "$work/out"
    echo "$confirmed"
    fail "confirmed: security counter 2"
fi

# Each refusal: its rc, and the store's models as they were: every field
# (versions, counter, both slots) for a container refused by its preamble,
# before the store is touched; the served part (active and previous
# versions, counter, slot A where v2 lies) for one refused at finish, whose
# payload was written to the other slot first (the registry keeps that slot
# as staging: never loaded, overwritten by the next update).
served() {
    python3 -c 'import json, sys
for m in json.loads(sys.stdin.read()):
    print(m["name"], m["active"], m["previous"], m["security"], m["slots"][0])'
}
refused() {
    local what="$1" container="$2" rc="$3" compare="${4:-cat}"
    local before after
    before="$(models)"
    smp upload "$container" --name speech >"$work/out" 2>&1
    local status=$?
    after="$(models)"
    if [ "$status" -eq 1 ] && grep -q "upload: refused: $rc " "$work/out" && [ -n "$before" ] &&
        [ "$(echo "$before" | $compare)" = "$(echo "$after" | $compare)" ]; then
        local kept="store unchanged"
        [ "$before" = "$after" ] || kept="served version unchanged ($after)"
        pass "$what refused: $(sed -n 's/upload: refused: //p' "$work/out"), $kept"
    else
        cat "$work/out"
        echo "before: $before"
        echo "after:  $after"
        fail "$what refused with $rc, store unchanged"
    fi
}
refused "v3 with a payload byte flipped after signing" "$work/tampered.syn" BAD_CONTAINER served
refused "v3 signed by a key the device does not trust" "$work/fresh.syn" UNTRUSTED_KEY
refused "v3 unsigned" "$work/unsigned.syn" UNSIGNED
refused "v1 below the confirmed v2 (downgrade)" "$work/v1.syn" DOWNGRADE

# The shell shares the UART with SMP: its commands still answer.
if timeout 120 python3 - "$url" >"$work/out" 2>&1 <<'EOF'
import re
import sys
import time

import serial

port = serial.serial_for_url(sys.argv[1], timeout=0.1)
seen = b""
deadline = time.monotonic() + 60
port.write(b"syn store list\r\n")
while time.monotonic() < deadline:
    seen += port.read(256)
    text = seen.decode("utf-8", "replace")
    match = re.search(r"store: speech: active v2[^\r\n]*", text)
    if match:
        print(match.group(0))
        sys.exit(0)
print(text[-500:])
sys.exit(1)
EOF
then
    pass "the shell answers on the same UART: $(cat "$work/out")"
else
    cat "$work/out"
    fail "the shell answers on the same UART"
fi

echo "smp-qemu: $failed failed"
[ "$failed" -eq 0 ]
