#!/usr/bin/env python3
"""Stream a model container into a board's flash model store through the
`syn ota` shell commands (CONFIG_SYNAPTIC_STORE_SHELL), then activate it.

    syn_ota_send.py --port URL CONTAINER [--chunk BYTES] [--no-activate] [--list]

CONTAINER is what `synaptic-pack pack` writes (96-byte header, for a
signed container (format 2) its 136-byte signature block, then the
.tflite); the model's name comes from its header. URL is anything pyserial
opens: a device (/dev/ttyACM0), or socket://HOST:PORT for QEMU's
`-serial tcp:HOST:PORT,server`. Each command waits for its answer line
("ota: ok ..." or "ota: ... failed: <errno> ...") before the next is sent,
so the board's UART never overruns. Exits 0 when the update is verified
(and activated), 1 with the board's error line otherwise.
"""
import argparse
import base64
import re
import struct
import sys
import time

HEADER_LEN = 96
# Format 2 (signed): the signature block between header and payload.
SIGNATURE_LEN = 136
MAGIC = b"SYNM"
ANSWER = re.compile(r"ota: (ok \w+|\w+ failed: -?\d+.*)")


class OtaError(Exception):
    """The board refused a step, or did not answer."""


def parse_header(data: bytes) -> tuple[str, int]:
    """The container's model name and version; raises ValueError if it is
    no container (either format)."""
    if len(data) < HEADER_LEN or data[:4] != MAGIC:
        raise ValueError("not a synaptic model container (no SYNM header)")
    (fmt,) = struct.unpack_from("<H", data, 4)
    (version, payload_len) = struct.unpack_from("<II", data, 40)
    preamble = HEADER_LEN + (SIGNATURE_LEN if fmt == 2 else 0)
    if preamble + payload_len != len(data):
        raise ValueError(
            f"header says {payload_len} payload bytes, file has {len(data) - preamble}"
        )
    name = data[8:40].split(b"\0", 1)[0].decode("utf-8")
    if not name:
        raise ValueError("container names no model")
    return name, version


def parse_container(data: bytes) -> str:
    """The container's model name; raises ValueError if it is no container."""
    return parse_header(data)[0]


class Link:
    """A line-based shell connection (a pyserial port, or a test double with
    write(bytes) and read(n) -> bytes)."""

    def __init__(self, port, timeout: float):
        self.port = port
        self.timeout = timeout
        self.pending = b""

    def command(self, line: str) -> str:
        """Send one command; return its answer line (raises OtaError on a
        refusal or no answer within the timeout)."""
        self.port.write(line.encode("ascii") + b"\r\n")
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            while b"\n" in self.pending:
                raw, self.pending = self.pending.split(b"\n", 1)
                text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw.decode("utf-8", "replace"))
                match = ANSWER.search(text)
                if match:
                    answer = match.group(0)
                    if "failed" in answer:
                        raise OtaError(answer)
                    return answer
            self.pending += self.port.read(256)
        raise OtaError(f"no answer to '{line[:40]}' within {self.timeout} s")


def store_list(link: Link) -> list:
    """`syn store list`'s lines, up to its summary ("store: N models ...")."""
    link.port.write(b"syn store list\r\n")
    lines = []
    deadline = time.monotonic() + link.timeout
    while time.monotonic() < deadline:
        while b"\n" in link.pending:
            raw, link.pending = link.pending.split(b"\n", 1)
            text = re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", raw.decode("utf-8", "replace")).strip()
            match = re.search(r"store: .*", text)
            if match and "syn store list" not in text:
                lines.append(match.group(0))
                if re.match(r"store: (\d+ models|cannot open)", match.group(0)):
                    return lines
        link.pending += link.port.read(256)
    raise OtaError("no answer to 'syn store list'")


def sync(link: Link, tries: int = 20) -> str:
    """Ask `syn ota state` until the shell answers (a board still booting
    drops what it is sent); the answer, or OtaError after `tries`."""
    patience = link.timeout
    link.timeout = min(patience, 1.0)
    try:
        for _ in range(tries - 1):
            try:
                return link.command("syn ota state")
            except OtaError as error:
                if "failed" in str(error):
                    raise
        link.timeout = patience
        return link.command("syn ota state")
    finally:
        link.timeout = patience


def send(link: Link, data: bytes, chunk: int, activate: bool, log=print) -> None:
    """Wait for the shell, begin, write `data` in `chunk`-byte base64 lines,
    finish, activate."""
    name = parse_container(data)
    log(sync(link))
    log(link.command(f"syn ota begin {name} {len(data)}"))
    lines = 0
    for at in range(0, len(data), chunk):
        link.command("syn ota write " + base64.b64encode(data[at : at + chunk]).decode("ascii"))
        lines += 1
    log(f"{len(data)} bytes of '{name}' sent in {lines} lines of at most {chunk} bytes")
    log(link.command("syn ota finish"))
    if activate:
        log(link.command("syn ota activate"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("container", help="file written by synaptic-pack pack")
    parser.add_argument("--port", required=True, help="pyserial URL of the board's shell")
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument(
        "--chunk",
        type=int,
        default=96,
        help="bytes per line, at most CONFIG_SYNAPTIC_STORE_SHELL_CHUNK (default 96)",
    )
    parser.add_argument("--no-activate", action="store_true", help="stop after finish")
    parser.add_argument("--list", action="store_true", help="print `syn store list` after")
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per answer")
    args = parser.parse_args()
    if not 1 <= args.chunk <= 180:
        parser.error("--chunk must be 1 to 180 bytes")
    with open(args.container, "rb") as handle:
        data = handle.read()
    try:
        parse_container(data)
    except ValueError as error:
        print(f"syn_ota_send: {args.container}: {error}", file=sys.stderr)
        return 1
    import serial  # pyserial, from scripts/requirements.txt

    port = serial.serial_for_url(args.port, baudrate=args.baud, timeout=0.1)
    try:
        link = Link(port, args.timeout)
        send(link, data, args.chunk, not args.no_activate)
        if args.list:
            print("\n".join(store_list(link)))
    except OtaError as error:
        print(f"syn_ota_send: {error}", file=sys.stderr)
        return 1
    finally:
        port.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
