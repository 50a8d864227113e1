"""scripts/qemu_profile.py over a hand-made trace: instructions and calls
per function and core land in the right windows, and a block QEMU
translated again with another size is counted with that size."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import qemu_profile as qp  # noqa: E402


def tb(pc, size):
    """`in_asm` lines of a block of `size` instructions at `pc`."""
    return ["IN: f\n"] + [f"0x{pc + 2 * i:08x}:  bf00      nop\n" for i in range(size)]


def run(core, pc, cflags="00000000"):
    return f"Trace {core}: 0x7f00 [00000000/{pc:08x}/00000000/{cflags}] f\n"


def symbols():
    cpu0 = qp.Symbols([(0x1000, "serve"), (0x1100, "isr")])
    cpu1 = qp.Symbols([(0x2000, "ping"), (0x2100, "dispatch")])
    return [cpu0, cpu1]


def test_counts_each_window_between_marks():
    lines = []
    lines += tb(0x2000, 3) + [run(1, 0x2000)]   # mark 1: not counted (skip 1)
    lines += tb(0x1000, 5) + [run(0, 0x1000)]
    lines += [run(1, 0x2000)]                   # mark 2: window 1 starts
    lines += [run(0, 0x1000)]
    lines += tb(0x1108, 4) + [run(0, 0x1108)]   # inside isr: no call
    lines += tb(0x2100, 2) + [run(1, 0x2100), run(1, 0x2100)]
    lines += [run(1, 0x2000)]                   # mark 3: window 2
    lines += [run(0, 0x1000)]
    lines += [run(1, 0x2000)]                   # mark 4: ends counting
    lines += [run(0, 0x1000)]
    profile = qp.Profile(symbols(), 0x2000, 1, skip=1, count=2)
    profile.read(lines)
    assert profile.windows() == 2
    assert profile.instructions[(0, "serve")] == 10
    assert profile.calls[(0, "serve")] == 2
    assert profile.instructions[(0, "isr")] == 4
    assert profile.calls[(0, "isr")] == 0
    assert profile.instructions[(1, "dispatch")] == 4
    assert profile.calls[(1, "dispatch")] == 2
    assert profile.instructions[(1, "ping")] == 6
    report = profile.report(10)
    assert "cpu0: 7.0 instructions per window" in report
    assert "cpu1: 5.0 instructions per window" in report


def test_a_block_translated_again_keeps_each_size():
    lines = []
    lines += tb(0x2000, 1) + [run(1, 0x2000)]
    lines += tb(0x1000, 6) + [run(0, 0x1000, "00000000")]
    # The same address cut to one instruction (icount at I/O), own cflags.
    lines += tb(0x1000, 1) + [run(0, 0x1000, "00010000")]
    lines += [run(0, 0x1000, "00000000"), run(0, 0x1000, "00010000")]
    lines += [run(1, 0x2000)]
    profile = qp.Profile(symbols(), 0x2000, 1, skip=0, count=1)
    profile.read(lines)
    assert profile.instructions[(0, "serve")] == 6 + 1 + 6 + 1


def test_a_short_trace_counts_the_windows_it_has():
    lines = tb(0x2000, 1) + [run(1, 0x2000)] + tb(0x1000, 2) + [run(0, 0x1000)]
    profile = qp.Profile(symbols(), 0x2000, 1, skip=0, count=5)
    profile.read(lines)
    assert profile.windows() == 0
    assert "windows 0" in profile.report(5)


def test_until_ends_each_window_at_the_named_function():
    lines = []
    lines += tb(0x1000, 2) + [run(0, 0x1000)]   # mark 1: skipped
    lines += tb(0x1100, 3) + [run(0, 0x1100)]   # until: nothing open
    lines += [run(0, 0x1000)]                   # mark 2: window 1 opens
    lines += tb(0x2000, 4) + [run(1, 0x2000)]   # the other core, inside
    lines += [run(0, 0x1100)]                   # until: window 1 closes
    lines += [run(1, 0x2000)]                   # outside every window
    lines += [run(0, 0x1000)]                   # mark 3: window 2 opens
    lines += [run(0, 0x1100)]                   # closes; count reached
    lines += [run(0, 0x1000), run(0, 0x1100)]   # never read
    profile = qp.Profile(symbols(), 0x1000, 0, skip=1, count=2, until=0x1100)
    profile.read(lines)
    assert profile.windows() == 2
    assert profile.instructions[(0, "serve")] == 2 + 2
    assert profile.instructions[(1, "ping")] == 4
    assert (0, "isr") not in profile.instructions
