"""scripts/syn_ota_send.py against a scripted `syn ota` shell: what the
board receives is the container, byte for byte, in the protocol's order;
refusals and silence end the run with the board's words."""
import base64
import os
import struct
import sys
import zlib

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import syn_ota_send as sender  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def container(name: str, payload: bytes, version: int = 1) -> bytes:
    """A container as synaptic-store's header layout has it."""
    head = struct.pack("<4sHH32sIII", b"SYNM", 1, 96, name.encode(), version, len(payload),
                       zlib.crc32(payload))
    head += bytes(40)  # shapes and reserved: the sender does not read them
    head += struct.pack("<I", zlib.crc32(head))
    assert len(head) == 96
    return head + payload


class Board:
    """The shell as the firmware answers: an echo, a coloured prompt, one
    answer line per command; `refuse` names a command to fail."""

    def __init__(self, refuse=None, silent=False, deaf=0):
        self.deaf = deaf  # commands lost while the board boots
        self.out = b""
        self.commands = []
        self.received = bytearray()
        self.refuse = refuse
        self.silent = silent

    def write(self, data: bytes):
        line = data.decode("ascii").strip()
        if line == "syn store list":
            self.out += b"syn store list\r\nstore: m: active v1, previous v0; ...\r\n"
            self.out += b"\x1b[1;32mstore: 1 models, registry generation 3\x1b[m\r\n"
            return
        self.commands.append(line.split(" ")[2] if line.startswith("syn ota") else line)
        self.out += b"\x1b[1;32muart:~$ \x1b[m" + line.encode() + b"\r\n"
        if self.silent:
            return
        step = line.split(" ")[2]
        if self.deaf > 0:
            self.deaf -= 1
            return
        if step == self.refuse:
            self.out += f"\x1b[1;31mota: {step} failed: -84 (state error)\x1b[m\r\n".encode()
            return
        if step == "write":
            self.received += base64.b64decode(line.split(" ")[3])
        self.out += f"ota: ok {step}, {len(self.received)} bytes, state x\r\n".encode()

    def read(self, n: int) -> bytes:
        chunk, self.out = self.out[:n], self.out[n:]
        return chunk


def speech() -> bytes:
    with open(os.path.join(ROOT, "models", "micro_speech.tflite"), "rb") as handle:
        return handle.read()


def test_the_board_receives_the_container_byte_for_byte_in_order():
    data = container("speech", speech())
    board = Board()
    sender.send(sender.Link(board, 1.0), data, 96, activate=True, log=lambda _: None)
    assert bytes(board.received) == data
    writes = len(data) // 96 + (len(data) % 96 != 0)
    assert board.commands == ["state", "begin"] + ["write"] * writes + ["finish", "activate"]


def test_the_sender_waits_for_a_booting_shell():
    board = Board(deaf=3)
    sender.send(sender.Link(board, 0.2), container("m", b"abc"), 96, True, log=lambda _: None)
    assert board.commands[:5] == ["state"] * 4 + ["begin"]
    assert bytes(board.received) == container("m", b"abc")


def test_a_refusal_stops_the_stream_with_the_boards_line():
    board = Board(refuse="finish")
    with pytest.raises(sender.OtaError, match=r"ota: finish failed: -84"):
        sender.send(sender.Link(board, 1.0), container("speech", b"x" * 500), 96, True,
                    log=lambda _: None)
    assert "activate" not in board.commands


def test_silence_is_an_error_not_a_hang():
    with pytest.raises(sender.OtaError, match="no answer"):
        sender.send(sender.Link(Board(silent=True), 0.2), container("m", b"abc"), 96, True,
                    log=lambda _: None)


def test_only_containers_are_sent():
    with pytest.raises(ValueError, match="no SYNM header"):
        sender.parse_container(speech())
    with pytest.raises(ValueError, match="payload bytes"):
        sender.parse_container(container("m", b"abcd")[:-1])
    assert sender.parse_container(container("person", b"abcd")) == "person"


def test_the_store_list_is_read_to_its_summary():
    board = Board()
    link = sender.Link(board, 1.0)
    assert sender.store_list(link) == [
        "store: m: active v1, previous v0; ...",
        "store: 1 models, registry generation 3",
    ]


def test_a_signed_container_is_sent_whole():
    # Format 2: the 136-byte signature block between header and payload.
    plain = container("kws", b"abcd")
    signed = plain[:4] + struct.pack("<H", 2) + plain[6:96] + bytes(136) + plain[96:]
    assert sender.parse_container(signed) == "kws"
    with pytest.raises(ValueError, match="payload bytes"):
        sender.parse_container(signed[:-1])
    with pytest.raises(ValueError, match="payload bytes"):
        sender.parse_container(plain[:4] + struct.pack("<H", 2) + plain[6:])
