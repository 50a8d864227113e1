"""scripts/smp_model.py against a scripted model-store group: the rc table
is syn_smp.h's, an upload resumes at the device's offset after a dropped
link and the device gets the container once, byte for byte, and a refusal
is reported by its name."""
import asyncio
import hashlib
import os
import re
import struct
import sys
import zlib

import pytest

pytest.importorskip("smpclient")
sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import smp_model  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")


def container(name: str, payload: bytes, version: int = 1, signed: bool = False) -> bytes:
    head = struct.pack("<4sHH32sIII", b"SYNM", 2 if signed else 1, 96, name.encode(), version,
                       len(payload), zlib.crc32(payload))
    head += bytes(40)
    head += struct.pack("<I", zlib.crc32(head))
    return head + (bytes(136) if signed else b"") + payload


def test_rc_table_is_the_headers():
    with open(os.path.join(ROOT, "include", "synaptic", "syn_smp.h")) as header:
        table = dict(re.findall(r"SYN_SMP_RC_(\w+) = (\d+),", header.read()))
    assert {name: int(value) for name, value in table.items()} == {
        rc.name: rc.value for rc in smp_model.Rc
    }


def test_parse_container_both_formats():
    assert smp_model.parse_container(container("kws", b"x" * 10, 3)) == ("kws", 3)
    assert smp_model.parse_container(container("kws", b"x" * 10, 4, signed=True)) == ("kws", 4)
    with pytest.raises(ValueError):
        smp_model.parse_container(container("kws", b"x" * 10)[:-1])


class Group:
    """The device's group as src/synaptic_smp.c answers, over the messages
    smp_model.py builds; `refuse_at` fails the chunk holding that offset."""

    def __init__(self, refuse_at=None):
        self.received = bytearray()
        self.upload = None  # (name, sha, len) of the upload in progress
        self.refuse_at = refuse_at
        self.requests = 0

    async def request(self, request, timeout_s=None):
        from smp import error as smperror
        from smp import header as smphdr

        self.requests += 1
        if type(request).__name__ == "State":
            body = {"models": [], "generation": 0, "off": len(self.received),
                    "state": "downloading" if self.upload else "idle"}
            if self.upload:
                body.update(name=self.upload[0], sha=self.upload[1], len=self.upload[2])
            return request._Response(**body)
        off = request.off
        resumes = self.upload and off == 0 and (request.name, request.sha, request.len) == self.upload
        if off == 0 and not resumes:
            self.upload = (request.name, request.sha, request.len)
            self.received = bytearray()
        if off == len(self.received) and request.data:
            if self.refuse_at is not None and off <= self.refuse_at < off + len(request.data):
                self.upload = None
                hdr = smphdr.Header(op=smphdr.OP.WRITE_RSP, version=smphdr.Version.V2,
                                    flags=smphdr.Flag(0), length=0, group_id=64,
                                    sequence=request.header.sequence, command_id=1)
                return request._ErrorV2(header=hdr, err=smperror.Err[smp_model.Rc](
                    group=64, rc=smp_model.Rc.UNTRUSTED_KEY), smp_data=b"")
            self.received += request.data
            if len(self.received) == self.upload[2]:
                self.upload = None
                return request._Response(off=len(self.received), rc=0)
        return request._Response(off=len(self.received))


def run_upload(group, data, chunk, stop_after=None):
    device = smp_model.Device(group, 64, 1.0)
    lines = []
    asyncio.run(device.upload(data, "kws", chunk, stop_after, lines.append))
    return lines


def test_upload_resumes_after_a_dropped_link():
    data = container("kws", bytes(range(256)) * 9)
    group = Group()
    first = run_upload(group, data, 100, stop_after=len(data) // 2)
    assert "stopped at" in first[-1]
    done = run_upload(group, data, 100)
    assert re.search(r"resuming 'kws' at \d+ of %d" % len(data), done[0])
    assert "verified by the store" in done[-1]
    assert bytes(group.received) == data


def test_another_container_starts_over():
    group = Group()
    run_upload(group, container("kws", b"a" * 500), 64, stop_after=200)
    other = container("kws", b"b" * 500)
    lines = run_upload(group, other, 64)
    assert "resuming" not in lines[0]
    assert bytes(group.received) == other
    assert group.upload is None
    assert hashlib.sha256(other).digest() != hashlib.sha256(container("kws", b"a" * 500)).digest()


def test_refusal_is_named():
    group = Group(refuse_at=0)
    with pytest.raises(smp_model.Refused, match=r"UNTRUSTED_KEY \(rc 3, group 64\)"):
        run_upload(group, container("kws", b"c" * 300), 128)
