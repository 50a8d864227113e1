#!/usr/bin/env python3
"""Plot the placement benchmark's CSV (synaptic-sim's placement_bench).

    placement_plots.py CSV OUT_DIR

    cargo run --release -p synaptic-sim --example placement_bench -- --csv pb.csv
    ~/.venv/synaptic/bin/python scripts/placement_plots.py pb.csv out/

Writes placement_throughput.png (throughput and device utilisation against
load, per policy), placement_p99.png (p99 latency per class against load)
and placement_model.png (the latency model's predicted mean against the
measured mean, every class, policy and load the model calls stable).
matplotlib comes from scripts/requirements.txt (scripts/setup.sh).
"""
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CLASSES = ["realtime", "normal", "best_effort"]
POLICIES = ["npu", "cpu", "busy", "random", "eft"]


def load(path):
    rows = []
    with open(path, newline="", encoding="utf-8") as f:
        for r in csv.DictReader(f):
            r["load"] = float(r["load"])
            for k in ("throughput_per_s", "mean_us", "npu_util", "cpu_util"):
                r[k] = float(r[k])
            r["p99_us"] = int(r["p99_us"])
            r["predicted_mean_us"] = (
                float(r["predicted_mean_us"]) if r["predicted_mean_us"] else None
            )
            rows.append(r)
    return rows


def series(rows, policy, key, cls="realtime"):
    pts = sorted(
        (r["load"], r[key]) for r in rows if r["policy"] == policy and r["class"] == cls
    )
    return [p[0] for p in pts], [p[1] for p in pts]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rows = load(sys.argv[1])
    out = sys.argv[2]
    os.makedirs(out, exist_ok=True)

    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    for p in POLICIES:
        a.plot(*series(rows, p, "throughput_per_s"), marker="o", label=p)
        x, npu = series(rows, p, "npu_util")
        _, cpu = series(rows, p, "cpu_util")
        b.plot(x, [n + c for n, c in zip(npu, cpu)], marker="o", label=p)
    a.set(xlabel="offered load (NPU utilisation)", ylabel="inferences/s",
          title="throughput")
    b.set(xlabel="offered load (NPU utilisation)",
          ylabel="NPU + CPU utilisation", title="devices busy (sum, max 2)")
    a.legend()
    a.grid(alpha=0.3)
    b.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "placement_throughput.png"), dpi=120)

    fig, axes = plt.subplots(1, 3, figsize=(14, 4), sharey=True)
    for ax, cls in zip(axes, CLASSES):
        for p in POLICIES:
            x, y = series(rows, p, "p99_us", cls)
            ax.plot(x, [v / 1000 for v in y], marker="o", label=p)
        ax.set(xlabel="offered load", title=f"{cls} p99", yscale="log")
        ax.grid(alpha=0.3, which="both")
    axes[0].set_ylabel("latency, ms")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "placement_p99.png"), dpi=120)

    fig, ax = plt.subplots(figsize=(6, 6))
    by_class = defaultdict(list)
    for r in rows:
        if r["predicted_mean_us"] is not None and int(r["n"]) > 0:
            by_class[r["class"]].append((r["mean_us"] / 1000, r["predicted_mean_us"] / 1000))
    lo, hi = 50, 1e5
    for cls in CLASSES:
        pts = by_class[cls]
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], label=cls, s=18)
    ax.plot([lo, hi], [lo, hi], "k-", lw=0.8, label="exact")
    ax.plot([lo, hi], [lo * 1.1, hi * 1.1], "k:", lw=0.8, label="+/-10 %")
    ax.plot([lo, hi], [lo * 0.9, hi * 0.9], "k:", lw=0.8)
    ax.set(xscale="log", yscale="log", xlim=(lo, hi), ylim=(lo, hi),
           xlabel="measured mean, ms", ylabel="predicted mean, ms",
           title="latency model (M/G/1 priority per device)")
    ax.legend()
    ax.grid(alpha=0.3, which="both")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "placement_model.png"), dpi=120)
    print("wrote", ", ".join(
        os.path.join(out, n)
        for n in ("placement_throughput.png", "placement_p99.png", "placement_model.png")))


if __name__ == "__main__":
    main()
