# shellcheck shell=bash
# Boot an mps2/an521 CPU0 image in QEMU with its UART on a TCP socket of
# this host (QEMU serves it, waits for the first client, and takes the next
# after one leaves). Sets `port` and `qemu_pid`; the console is logged to
# WORK/console, QEMU's own output to WORK/qemu.log.
#
#   qemu_uart_start ELF WORK
qemu_uart_start() {
    local elf="$1" work="$2"
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    qemu-system-arm -cpu cortex-m33 -machine mps2-an521 -nographic -m 16 -vga none -net none \
        -chardev "socket,id=uart,host=127.0.0.1,port=$port,server=on,wait=on,logfile=$work/console" \
        -serial chardev:uart -monitor none -icount shift=7,align=off,sleep=off -rtc clock=vm \
        -kernel "$elf" >"$work/qemu.log" 2>&1 </dev/null &
    qemu_pid=$!
    local _
    for _ in $(seq 50); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port)).close()" 2>/dev/null && break
        sleep 0.1
    done
    # The probe above was QEMU's first client; the caller's is the next.
}
