#!/usr/bin/env python3
"""Run a command that never exits by itself (QEMU) until its output says
pass or fail, echoing the output; then stop it and exit 0 (pass) or 1.

    run_until.py --pass REGEX [--fail REGEX] [--timeout SECONDS] -- CMD...
"""
import argparse
import os
import re
import selectors
import signal
import subprocess
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pass", dest="passed", required=True, help="regex meaning success")
    parser.add_argument("--fail", dest="failed", help="regex meaning failure")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before giving up")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given")

    passed = re.compile(args.passed)
    failed = re.compile(args.failed) if args.failed else None
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    selector = selectors.DefaultSelector()
    selector.register(proc.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + args.timeout
    verdict = None
    pending = b""
    while verdict is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            print(f"run_until: no verdict within {args.timeout:.0f} s", flush=True)
            verdict = 1
            break
        if not selector.select(timeout=min(remaining, 1.0)):
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            line = raw.decode("utf-8", "replace").rstrip("\r")
            print(line, flush=True)
            if failed is not None and failed.search(line):
                verdict = 1
            elif passed.search(line):
                verdict = 0
            if verdict is not None:
                break
    if verdict is None:
        print(f"run_until: command ended (status {proc.wait()}) without a verdict", flush=True)
        verdict = 1
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    return verdict


if __name__ == "__main__":
    sys.exit(main())
