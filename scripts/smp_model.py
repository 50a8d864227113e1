#!/usr/bin/env python3
"""Model updates over MCUmgr's SMP: the model store's command group
(CONFIG_SYNAPTIC_STORE_SMP, include/synaptic/syn_smp.h), on smpclient.

    smp_model.py --port URL state [--json]
    smp_model.py --port URL upload CONTAINER [--name N] [--chunk BYTES] [--stop-after BYTES]
    smp_model.py --port URL activate | confirm | rollback [--name N]

URL is a serial device (/dev/ttyACM0) or anything pyserial opens, such as
socket://HOST:PORT for QEMU's `-chardev socket,server=on`; the SMP frames
share the port with the shell (the MCUmgr shell transport) or have a UART of
their own (the UART transport). CONTAINER is what `synaptic-pack pack`
writes (signed with --key where the device requires signatures).

`upload` streams the container as img_mgmt streams an image: chunks at
offsets, the first with the total length and the container's SHA-256. It
first reads the device's state: when the device is in the middle of an
upload of the same name and SHA-256 (a link that dropped, or --stop-after),
it continues from the device's offset instead of starting over. The last
chunk is answered with the store's verdict: it reads the container back
from its flash and checks CRCs, digest and signature. `activate` makes the
verified version the one served, `confirm` raises the model's
anti-rollback counter to it, `rollback` returns to the previous version.

A refusal is an SMP version 2 group error; it is printed with its name
(`Rc` below, the enum of syn_smp.h), e.g. `upload: refused: UNTRUSTED_KEY
(rc 3, group 64)`, and the exit status is 1. smpmgr and the mcumgr CLI speak
only the groups they know (image, OS, shell, file ...): without a plugin
for this group they cannot drive it, hence this script.

Exit status: 0 done, 1 refused by the device, 2 no answer or a bad reply.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import sys
import time
from enum import IntEnum, unique
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from syn_ota_send import parse_header  # noqa: E402

SLOT_NAMES = {0: "empty", 1: "valid", 2: "staging"}


@unique
class Rc(IntEnum):
    """The group's error codes (enum syn_smp_rc in include/synaptic/syn_smp.h)."""

    OK = 0
    UNKNOWN = 1
    UNSIGNED = 2
    UNTRUSTED_KEY = 3
    BAD_CONTAINER = 4
    LENGTH = 5
    DOWNGRADE = 6
    STATE = 7
    TOO_LARGE = 8
    BUSY = 9
    NO_ENTRY = 10
    IO = 11
    INVALID = 12
    INCOMPLETE = 13
    UNRUNNABLE = 14
    NO_ROOM = 15
    BAD_REQUEST = 16


class Refused(Exception):
    """The device answered with an error."""


def parse_container(data: bytes) -> tuple[str, int]:
    """The container's model name and version; ValueError if it is none
    (the shell sender's check: both formats)."""
    return parse_header(data)


def messages(group_id: int):
    """The group's smp request, response and error classes, for `group_id`
    (CONFIG_SYNAPTIC_STORE_SMP_GROUP_ID)."""
    from pydantic import BaseModel, ConfigDict
    from smp import error as smperror
    from smp import message as smpmsg

    class ErrorV1(smperror.ErrorV1):
        _GROUP_ID = group_id

    class ErrorV2(smperror.ErrorV2[Rc]):
        _GROUP_ID = group_id

    class Model(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        name: str
        active: int
        previous: int
        security: int
        slots: list[int]

    class StateResponse(smpmsg.ReadResponse):
        _GROUP_ID = group_id
        _COMMAND_ID = 0
        models: list[Model]
        generation: int
        state: str
        off: int
        name: str | None = None
        len: int | None = None
        sha: bytes | None = None

    class State(smpmsg.ReadRequest):
        _GROUP_ID = group_id
        _COMMAND_ID = 0
        _Response = StateResponse
        _ErrorV1 = ErrorV1
        _ErrorV2 = ErrorV2

    class UploadResponse(smpmsg.WriteResponse):
        _GROUP_ID = group_id
        _COMMAND_ID = 1
        off: int
        rc: int | None = None

    class Upload(smpmsg.WriteRequest):
        _GROUP_ID = group_id
        _COMMAND_ID = 1
        _Response = UploadResponse
        _ErrorV1 = ErrorV1
        _ErrorV2 = ErrorV2
        name: str
        off: int
        data: bytes
        len: int | None = None
        sha: bytes | None = None

    steps = {}
    for command, step in ((2, "activate"), (3, "confirm"), (4, "rollback")):

        class StepResponse(smpmsg.WriteResponse):
            _GROUP_ID = group_id
            _COMMAND_ID = command
            name: str | None = None
            # The model's active version after the step ("version" is
            # the SMP version of every smp message).
            active: int | None = None

        class Step(smpmsg.WriteRequest):
            _GROUP_ID = group_id
            _COMMAND_ID = command
            _Response = StepResponse
            _ErrorV1 = ErrorV1
            _ErrorV2 = ErrorV2
            name: str | None = None

        steps[step] = Step
    return State, Upload, steps


class UrlTransport:
    """smpclient's serial transport over any pyserial URL (serial_for_url:
    a device, socket://, rfc2217:// ...): its own transport opens only local
    ports."""

    @staticmethod
    def create(buf_size: int, baud: int):
        import serial
        from smpclient.transport.serial import BufferSize, SMPSerialTransport

        class _Port:
            """A pyserial port for the transport: reads what has arrived,
            and has out_waiting where the URL handler lacks it."""

            def __init__(self, port):
                self._port = port

            def __getattr__(self, name):
                return getattr(self._port, name)

            @property
            def out_waiting(self) -> int:
                return getattr(self._port, "out_waiting", 0)

            def read_all(self) -> bytes:
                return self._port.read(4096)

        class Transport(SMPSerialTransport):
            async def connect(self, address: str, timeout_s: float) -> None:
                self._reset_state()
                deadline = time.monotonic() + timeout_s
                while True:
                    try:
                        self._conn = _Port(serial.serial_for_url(address, baudrate=baud, timeout=0))
                        self._conn.reset_input_buffer()
                        return
                    except (serial.SerialException, OSError):
                        if time.monotonic() > deadline:
                            raise TimeoutError(f"cannot open {address}") from None
                        await asyncio.sleep(0.25)

        return Transport(BufferSize(buf_size=buf_size))


class Device:
    """The group's requests on one SMP connection."""

    def __init__(self, client, group_id: int, timeout: float):
        self.client = client
        self.group_id = group_id
        self.timeout = timeout
        self.State, self.Upload, self.steps = messages(group_id)

    async def request(self, request, timeout: float | None = None):
        from smpclient.generics import error, error_v2

        response = await self.client.request(request, timeout_s=timeout or self.timeout)
        if error_v2(response):
            try:
                name = Rc(response.err.rc).name
            except ValueError:
                name = "?"
            raise Refused(f"{name} (rc {int(response.err.rc)}, group {int(response.err.group)})")
        if error(response):
            raise Refused(f"SMP error rc {int(response.rc)} (is the group built in?)")
        return response

    async def state(self, tries: int = 1):
        """The group's state; `tries` requests before giving up (a device
        still booting drops what it is sent)."""
        for attempt in range(tries):
            try:
                return await self.request(
                    self.State(), timeout=min(self.timeout, 3.0) if attempt < tries - 1 else None
                )
            except TimeoutError:
                if attempt == tries - 1:
                    raise
        raise AssertionError("unreachable")

    async def upload(self, data: bytes, name: str, chunk: int, stop_after: int | None, log):
        sha = hashlib.sha256(data).digest()
        total = len(data)
        state = await self.state(tries=10)
        off = 0
        if state.state == "downloading" and state.name == name and state.sha == sha and (
            state.len == total
        ):
            off = state.off
            log(f"upload: resuming '{name}' at {off} of {total} bytes")
        else:
            log(f"upload: '{name}', {total} bytes, sha256 {sha.hex()[:16]}..., chunks of {chunk}")
        start = time.monotonic()
        requests = 0
        while True:
            first = off == 0
            request = self.Upload(
                name=name,
                off=off,
                data=data[off : off + chunk],
                len=total if first else None,
                sha=sha if first else None,
            )
            response = await self.request(request)
            requests += 1
            if response.rc is not None:
                log(
                    f"upload: verified by the store: {total} bytes in {requests} requests, "
                    f"{time.monotonic() - start:.1f} s"
                )
                return
            if response.off > total:
                raise Refused(f"device expects offset {response.off} past the end ({total})")
            off = response.off
            if stop_after is not None and off >= stop_after:
                log(f"upload: stopped at {off} of {total} bytes (--stop-after {stop_after})")
                return

    async def step(self, step: str, name: str | None, log):
        response = await self.request(self.steps[step](name=name) if name else self.steps[step]())
        if response.name is not None:
            log(f"{step}: {response.name} v{response.active}")
        else:
            log(f"{step}: done")


def show_state(state, as_json: bool, log) -> None:
    models = [m.model_dump() for m in state.models]
    if as_json:
        log(
            json.dumps(
                {
                    "models": models,
                    "generation": state.generation,
                    "state": state.state,
                    "off": state.off,
                    "name": state.name,
                    "len": state.len,
                    "sha": state.sha.hex() if state.sha else None,
                },
                sort_keys=True,
            )
        )
        return
    for m in models:
        slots = ", ".join(
            f"{slot} {SLOT_NAMES.get(s, s)}" for slot, s in zip(("A", "B"), m["slots"])
        )
        log(
            f"model {m['name']}: active v{m['active']}, previous v{m['previous']}, "
            f"security {m['security']}, slots {slots}"
        )
    line = f"update: {state.state}, {state.off} bytes in"
    if state.name is not None:
        line += f", uploading '{state.name}' ({state.len} bytes, sha256 {state.sha.hex()[:16]}...)"
    log(f"{len(models)} models, registry generation {state.generation}; {line}")


async def run(args) -> int:
    from smpclient import SMPClient

    transport = UrlTransport.create(args.buf_size, args.baud)
    client = SMPClient(transport, args.port, timeout_s=args.timeout)
    # The transport alone: SMPClient.connect would first read the OS
    # group's MCUmgr parameters, which the device need not have (the
    # buffer size is --buf-size).
    await transport.connect(args.port, args.timeout)
    device = Device(client, args.group, args.timeout)
    try:
        if args.command == "state":
            show_state(await device.state(tries=10), args.json, print)
        elif args.command == "upload":
            with open(args.container, "rb") as handle:
                data = handle.read()
            name, _ = parse_container(data)
            if args.name and args.name != name:
                print(f"smp_model: {args.container} is a container of '{name}', not '{args.name}'",
                      file=sys.stderr)
                return 2
            await device.upload(data, name, args.chunk, args.stop_after, print)
        else:
            await device.state(tries=10)
            await device.step(args.command, args.name, print)
    except Refused as refusal:
        print(f"{args.command}: refused: {refusal}")
        return 1
    finally:
        await client.disconnect()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", required=True, help="serial device or pyserial URL")
    parser.add_argument("--baud", type=int, default=115200)
    parser.add_argument(
        "--group", type=int, default=64, help="CONFIG_SYNAPTIC_STORE_SMP_GROUP_ID (default 64)"
    )
    parser.add_argument(
        "--buf-size",
        type=int,
        default=512,
        help="the device's CONFIG_MCUMGR_TRANSPORT_NETBUF_SIZE (default 512)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds per answer")
    parser.add_argument("--verbose", action="store_true", help="smpclient's log on stderr")
    commands = parser.add_subparsers(dest="command", required=True)
    state = commands.add_parser("state", help="models, versions, counters, the update")
    state.add_argument("--json", action="store_true", help="one line of JSON")
    upload = commands.add_parser("upload", help="stream a container (resumes)")
    upload.add_argument("container", help="file written by synaptic-pack pack")
    upload.add_argument("--name", help="the model (checked against the container)")
    upload.add_argument(
        "--chunk", type=int, default=384, help="bytes per request (default 384: --buf-size 512)"
    )
    upload.add_argument(
        "--stop-after", type=int, metavar="BYTES", help="stop once the device has this many"
    )
    for step in ("activate", "confirm", "rollback"):
        sub = commands.add_parser(step, help=f"syn_ota_{step}()")
        sub.add_argument("--name", help="the model the step must act on")
    args = parser.parse_args()
    # smpclient logs every timeout and refusal with the whole frame; the
    # outcome is printed here, once.
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.CRITICAL)
    if args.command == "upload":
        if args.chunk < 1:
            parser.error("--chunk must be positive")
        try:
            with open(args.container, "rb") as handle:
                parse_container(handle.read())
        except (OSError, ValueError) as error:
            print(f"smp_model: {args.container}: {error}", file=sys.stderr)
            return 2
    try:
        return asyncio.run(run(args))
    except TimeoutError:
        print(f"smp_model: {args.command}: no answer within {args.timeout} s", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"smp_model: {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
