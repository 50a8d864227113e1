#!/usr/bin/env python3
"""Emulated instructions per function and per core, from a QEMU trace.

Where a round trip's instructions go on two emulated cores: run the images
in QEMU with `-d in_asm,exec,nochain -D trace.log` (icount keeps the figures
the same as an untraced run's), then

    scripts/qemu_profile.py trace.log cpu0.elf cpu1.elf \\
        --mark 'rustapp::infer_once' --mark-cpu 1 --skip 250 --count 100

Windows run from one entry of the marked function (on the marked core) to
the next, or with `--until NAME` to the next entry of NAME on that core
(a gap inside a cycle: a device's completion to its next start); after
`--skip` windows, `--count` windows are counted, and the table gives each function's instructions and calls per window, both cores
together. `--blocks NAME` also lists the translation blocks of the functions
whose name contains NAME (address, size, executions per window), to read
against `objdump -d`. The log is large (a few GB for the offload
benchmark's first phases); the script reads it once, as a stream.

How it counts: `in_asm` prints each translation block's instructions once,
when it is translated; with `nochain` every execution of a block prints
one `Trace` line with the core's index, the block's address, flags and
cflags. A block's size is bound to the first execution after its
translation, so blocks QEMU translated again with another size (icount cuts
blocks at I/O) are counted with their own size.
"""
import argparse
import bisect
import collections
import re
import subprocess
import sys

TRACE = re.compile(r"^Trace (\d+): \S+ \[[0-9a-f]+/([0-9a-f]+)/([0-9a-f]+)/([0-9a-f]+)\]")
INSTRUCTION = re.compile(r"^0x([0-9a-f]+):")


class Symbols:
    """An image's function symbols, for address lookups."""

    def __init__(self, pairs):
        pairs = sorted(pairs)
        self.addresses = [a for a, _ in pairs]
        self.names = [n for _, n in pairs]
        self.starts = set(self.addresses)

    @classmethod
    def from_elf(cls, elf, nm="arm-none-eabi-nm"):
        out = subprocess.run([nm, "-C", "--defined-only", elf], capture_output=True,
                             text=True, check=True).stdout
        pairs = []
        for line in out.splitlines():
            fields = line.split(" ", 2)
            if len(fields) == 3 and fields[1] in "tTwW":
                # Thumb functions have bit 0 set in the symbol, not the PC.
                pairs.append((int(fields[0], 16) & ~1, fields[2]))
        return cls(pairs)

    def name(self, address):
        i = bisect.bisect_right(self.addresses, address) - 1
        return self.names[i] if i >= 0 else hex(address)

    def address(self, name):
        for a, n in zip(self.addresses, self.names):
            if n == name:
                return a
        return None


class Profile:
    """Instructions and calls per (core, function) over the counted windows."""

    def __init__(self, symbols, mark, mark_core, skip, count, blocks=None, until=None):
        self.symbols = symbols
        self.mark = mark
        self.until = until
        self.closed = 0
        self.mark_core = mark_core
        self.skip = skip
        self.count = count
        self.blocks = blocks
        self.instructions = collections.Counter()
        self.calls = collections.Counter()
        self.per_core = collections.Counter()
        self.block_runs = collections.Counter()
        self.marks = 0

    def read(self, lines):
        sizes = {}
        bound = {}
        translated = None
        counting = False
        for line in lines:
            if line.startswith("IN:"):
                translated = None
                continue
            m = INSTRUCTION.match(line)
            if m:
                if translated is None:
                    translated = int(m.group(1), 16)
                    sizes[translated] = 0
                sizes[translated] += 1
                continue
            m = TRACE.match(line)
            if not m:
                continue
            core, pc = int(m.group(1)), int(m.group(2), 16)
            key = (core, pc, m.group(3), m.group(4))
            if translated is not None and translated == pc:
                bound[key] = sizes[pc]
            translated = None
            if core == self.mark_core and self.until is not None and pc == self.until:
                if counting:
                    counting = False
                    self.closed += 1
                    if self.closed == self.count:
                        return
            elif core == self.mark_core and pc == self.mark:
                self.marks += 1
                if self.until is not None:
                    counting = counting or self.marks > self.skip
                elif self.marks == self.skip + 1:
                    counting = True
                elif self.marks == self.skip + self.count + 1:
                    return
            if not counting:
                continue
            size = bound.get(key, sizes.get(pc, 0))
            symbols = self.symbols[core]
            name = symbols.name(pc)
            self.instructions[(core, name)] += size
            self.per_core[core] += size
            if pc in symbols.starts:
                self.calls[(core, name)] += 1
            if self.blocks and self.blocks in name:
                self.block_runs[(core, pc, size)] += 1

    def windows(self):
        """Windows counted (fewer than asked when the trace ends early)."""
        if self.until is not None:
            return self.closed
        return max(0, min(self.count, self.marks - self.skip - 1))

    def report(self, top):
        n = self.windows() or 1
        lines = [f"windows {self.windows()} (marks seen {self.marks})"]
        for core in sorted(self.per_core):
            lines.append(f"cpu{core}: {self.per_core[core] / n:.1f} instructions per window")
        lines.append("core  instr/window  calls/window  function")
        for (core, name), total in self.instructions.most_common(top):
            calls = self.calls[(core, name)] / n
            lines.append(f"cpu{core}  {total / n:12.1f}  {calls:12.2f}  {name}")
        if self.blocks:
            lines.append(f"blocks of functions named like '{self.blocks}':")
            for (core, pc, size), runs in sorted(self.block_runs.items()):
                lines.append(f"cpu{core}  {pc:#010x}  size {size:3d}  runs/window {runs / n:6.2f}")
        return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("elf", nargs="+", help="each core's image, core 0 first")
    ap.add_argument("--mark", required=True, help="function whose entries delimit windows")
    ap.add_argument("--mark-cpu", type=int, default=1, help="core of the marked function")
    ap.add_argument("--until", help="end each window at this function's next entry on the "
                    "marked core (default: at the mark's next entry)")
    ap.add_argument("--skip", type=int, default=100, help="windows to pass over first")
    ap.add_argument("--count", type=int, default=100, help="windows to count")
    ap.add_argument("--top", type=int, default=40, help="rows of the table")
    ap.add_argument("--blocks", help="list the blocks of functions whose name contains this")
    ap.add_argument("--nm", default="arm-none-eabi-nm")
    args = ap.parse_args(argv)
    symbols = [Symbols.from_elf(e, args.nm) for e in args.elf]
    if args.mark_cpu >= len(symbols):
        ap.error(f"--mark-cpu {args.mark_cpu}: only {len(symbols)} images")
    mark = symbols[args.mark_cpu].address(args.mark)
    if mark is None:
        ap.error(f"no function '{args.mark}' in {args.elf[args.mark_cpu]}")
    until = None
    if args.until is not None:
        until = symbols[args.mark_cpu].address(args.until)
        if until is None:
            ap.error(f"no function '{args.until}' in {args.elf[args.mark_cpu]}")
    profile = Profile(symbols, mark, args.mark_cpu, args.skip, args.count, args.blocks, until)
    with open(args.trace, errors="replace") as f:
        profile.read(f)
    print(profile.report(args.top))
    return 0 if profile.windows() > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
