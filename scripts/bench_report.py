#!/usr/bin/env python3
"""Turn the offload benchmark's console output (tests/offload_bench) into a
Markdown table beside the peers' figures and three PNG plots.

    bench_report.py CONSOLE_TXT OUT_DIR

Reads the `BENCH,<kind>,<param>,<n>,<min>,<p50>,<p99>,<max>,<extra1>,<extra2>`,
`RATIO,<name>,<numerator>,<denominator>` (the loaded STATUS round trip's p99
over the unloaded one's) and `SAMPLES,<set>,<v>...` lines; every figure is emulated k_cycle_get_32
ticks on mps2/an521 unless a column says otherwise. Prints the table too.
"""
import csv
import os
import sys
from collections import defaultdict

# Measured on the same emulated silicon (QEMU 7.2 mps2-an521, -icount
# shift=7, k_cycle_get_32 ticks), see issue 9: OpenAMP/RPMsg and this
# project's previous transport.
RPMSG_STATUS_P50 = 8069
RPMSG_BULK_P50 = (689165, 1499856)
V1_STATUS_P50 = 7839
# The stub NPU's latency in the throughput rows (tests/offload_bench's
# LOAD_LATENCY_US): inferences/s times it is the device's own occupancy.
LOAD_LATENCY_US = 1500


def parse(path):
    rows, samples = [], defaultdict(list)
    ratios = {}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.strip()
            if line.startswith("BENCH,"):
                kind, *nums = next(csv.reader([line[6:]]))
                rows.append((kind, *map(int, nums)))
            elif line.startswith("RATIO,"):
                name, num, den = line[6:].split(",")
                ratios[name] = (int(num), int(den))
            elif line.startswith("SAMPLES,"):
                name, *vals = line[8:].split(",")
                samples[name].extend(int(v) for v in vals if v)
    return rows, samples, ratios


RATIO_LABELS = {
    "p99_loaded_unloaded_irq": "loaded/unloaded p99 (irq)",
    "p99_loaded_unloaded_poll": "loaded/unloaded p99 (poll)",
}


def table(rows, ratios=None):
    by = defaultdict(list)
    for r in rows:
        by[r[0]].append(r)
    out = ["| measurement | min | p50 | p99 | max | note |", "|---|---:|---:|---:|---:|---|"]

    def line(label, r, note=""):
        out.append(f"| {label} | {r[3]:,} | {r[4]:,} | {r[5]:,} | {r[6]:,} | {note} |")

    names = {
        "status_poll": "STATUS round trip, polled",
        "status_irq": "STATUS round trip, interrupt",
        "status_poll_loaded": "STATUS polled, both models being served",
        "status_irq_loaded": "STATUS interrupt, both models being served",
    }
    for key, label in names.items():
        for r in by.get(key, []):
            note = f"p50 {r[4] / RPMSG_STATUS_P50:.2f}x RPMsg's {RPMSG_STATUS_P50:,}" if r[4] else ""
            if key.endswith("loaded"):
                note += f"; p99/p50 {r[5] / max(r[4], 1):.2f}"
            line(label, r, note)
    for key, label in (("infer_490_16", "INFER 490 B in / 16 B out, null executor, polled"),
                       ("infer_27648_4096", "INFER 27,648 B in / 4,096 B out, null executor, polled")):
        for r in by.get(key, []):
            note = f"CPU1 bytes alone p50 {r[7]:,}; transport p50 {r[4] - r[7]:,}"
            if key == "infer_27648_4096":
                note += f"; p50 {r[4] / RPMSG_BULK_P50[0]:.2f}x RPMsg's best {RPMSG_BULK_P50[0]:,}"
            line(label, r, note)
    for name, (num, den) in (ratios or {}).items():
        label = RATIO_LABELS.get(name, name)
        out.append(f"| {label} | | | {num / max(den, 1):.2f}x | | "
                   f"STATUS p99 loaded {num:,} / unloaded {den:,} ticks |")
    out.append("")
    out.append("| requests in flight | inferences/s | NPU busy (profiler) | device occupancy | ticks per inference |")
    out.append("|---:|---:|---:|---:|---:|")
    for r in by.get("throughput", []):
        occupancy = r[7] * LOAD_LATENCY_US / 1e4
        out.append(f"| {r[1]} | {r[7]:,} | {r[8] / 10:.1f}% | {occupancy:.1f}% | {r[4]:,} |")
    out.append("")
    out.append("| stub latency (µs) | polled p50 | interrupt p50 | CPU1 busy per request, polled | interrupt |")
    out.append("|---:|---:|---:|---:|---:|")
    poll = {r[1]: r for r in by.get("sweep_poll", [])}
    irq = {r[1]: r for r in by.get("sweep_irq", [])}
    for us in sorted(set(poll) | set(irq)):
        p, i = poll.get(us), irq.get(us)
        out.append(f"| {us:,} | {p[4] if p else '-':,} | {i[4] if i else '-':,} | "
                   f"{p[7] if p else '-':,} | {i[7] if i else '-':,} |")
    return "\n".join(out), poll, irq, by


def plots(out_dir, samples, poll, irq, by):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for name, vals in samples.items():
        if vals:
            ax.hist(vals, bins=60, histtype="step", label=name)
    ax.axvline(RPMSG_STATUS_P50, color="k", linestyle="--", label="RPMsg p50")
    ax.set_xlabel("STATUS round trip (emulated k_cycle_get_32 ticks)")
    ax.set_ylabel("count")
    ax.set_title("STATUS round trips on mps2/an521 (1,000 each)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "status_rtt.png"), dpi=120)

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    xs = sorted(set(poll) & set(irq))
    a1.plot(xs, [poll[x][4] for x in xs], "o-", label="poll")
    a1.plot(xs, [irq[x][4] for x in xs], "s-", label="interrupt")
    a1.set_xlabel("stub NPU latency (µs)")
    a1.set_ylabel("round trip p50 (ticks)")
    a1.legend()
    a2.plot(xs, [poll[x][7] for x in xs], "o-", label="poll")
    a2.plot(xs, [irq[x][7] for x in xs], "s-", label="interrupt")
    a2.set_xlabel("stub NPU latency (µs)")
    a2.set_ylabel("CPU1 busy per request (cycles)")
    a2.legend()
    fig.suptitle("Polling against interrupt-driven completion")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "sweep.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(6, 4))
    tp = by.get("throughput", [])
    ax.bar([str(r[1]) for r in tp], [r[8] / 10 for r in tp])
    for k, r in enumerate(tp):
        ax.text(k, r[8] / 10, f"{r[7]}/s", ha="center", va="bottom")
    ax.set_xlabel("requests in flight")
    ax.set_ylabel("NPU busy (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Saturated throughput, 1.5 ms stub latency")
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "throughput.png"), dpi=120)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    console, out_dir = sys.argv[1], sys.argv[2]
    os.makedirs(out_dir, exist_ok=True)
    rows, samples, ratios = parse(console)
    if not rows:
        sys.exit(f"bench_report: no BENCH lines in {console}")
    text, poll, irq, by = table(rows, ratios)
    header = ("Emulated k_cycle_get_32 ticks on mps2/an521 (QEMU -icount, deterministic); "
              f"RPMsg on the same silicon: 20-byte round trip p50 {RPMSG_STATUS_P50:,}, "
              f"27,648 B + 4,096 B exchange {RPMSG_BULK_P50[0]:,}-{RPMSG_BULK_P50[1]:,}; "
              f"this transport before (ABI v1) p50 {V1_STATUS_P50:,}.\n\n")
    with open(os.path.join(out_dir, "bench.md"), "w", encoding="utf-8") as f:
        f.write(header + text + "\n")
    print(header + text)
    try:
        plots(out_dir, samples, poll, irq, by)
        print(f"plots: {out_dir}/status_rtt.png, sweep.png, throughput.png")
    except ImportError:
        print("bench_report: matplotlib missing (scripts/setup.sh installs it): no plots")


if __name__ == "__main__":
    main()
