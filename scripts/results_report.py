#!/usr/bin/env python3
"""One table of this run's figures next to the paper's and the peers'.

    results_report.py OUT_DIR

Reads what scripts/bench.sh left in OUT_DIR (console.txt of the offload
benchmark, tflite.md, placement.md, signature.md, ring.txt, footprint.txt) and writes
OUT_DIR/results.md (also printed). A figure whose source is missing reads
"not measured". The paper's figures are DESIGN.md's anchors (FRDM-MCXN947
hardware unless noted, so its microseconds are not emulated ticks); RPMsg's
are OpenAMP on the same emulated silicon (mps2/an521, -icount), measured
once by throw-away apps (issue 9); they are deterministic, like ours.
"""
import pathlib
import re
import sys

MISSING = "not measured"

# The paper's figures (DESIGN.md's anchors), by row.
PAPER = {
    "ring": "25 / 41 cycles (QEMU)",
    "status": "15 µs typical, 81 µs worst (hardware)",
    "frame": "one 20-byte message at a time",
    "busy": "6 % (one request in flight)",
    "boot": "1,514 µs / 2,554-2,577 µs (hardware)",
    "cpu0": "98.9 KB / 205.9 KB",
    "cpu1": "32.4 KB / 42.6 KB",
    "hello": "42.0 KB / 30.4 KB",
}
RPMSG_STATUS_P50 = 8069
RPMSG_FRAME = "689,165-1,499,856"


def read(path: pathlib.Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""


def bench_rows(console: str) -> dict[str, list[int]]:
    """The offload benchmark's BENCH lines by name (first of each name)."""
    rows: dict[str, list[int]] = {}
    for line in console.splitlines():
        fields = line.strip().split(",")
        if len(fields) >= 10 and fields[0] == "BENCH":
            key = fields[1] if fields[1] != "throughput" else f"throughput{fields[2]}"
            rows.setdefault(key, [int(f) for f in fields[2:10]])
    return rows


def ring(text: str) -> dict[str, tuple[str, str]]:
    """Push and push+pop cost per queue name (first line of each name)."""
    costs = {}
    for name, push, both in re.findall(
            r"^(\S+(?: \S+)?) cost: push (\S+) cycles, pop \S+ cycles, push\+pop (\S+) cycles",
            text, re.M):
        costs.setdefault(name, (push, both))
    return costs


def footprint(text: str) -> dict[str, tuple[int, int]]:
    """Each image's flash and RAM from image_report.py's image lines, per
    build (`== NAME` headers written by bench.sh)."""
    sizes = {}
    build = ""
    for line in text.splitlines():
        if line.startswith("== "):
            build = line[3:].strip()
            continue
        m = re.match(r"^  (\S+)\s+(\d+)\s+(\d+)$", line)
        if m:
            sizes[f"{build}/{m.group(1)}"] = (int(m.group(2)), int(m.group(3)))
    return sizes


def kb(size: tuple[int, int] | None) -> str:
    if size is None:
        return MISSING
    return f"{size[0] / 1024:.1f} KB / {size[1] / 1024:.1f} KB"


def main() -> int:
    out = pathlib.Path(sys.argv[1])
    console = read(out / "console.txt")
    rows = bench_rows(console)
    lines = ["| what | synaptic, this run | paper | peer |", "|---|---|---|---|"]

    def row(what, ours, paper="", peer=""):
        lines.append(f"| {what} | {ours} | {paper} | {peer} |")

    costs = ring(read(out / "ring.txt"))
    ours = costs.get("ring")
    peers = "; ".join(f"{n} {c[0]} / {c[1]}" for n, c in costs.items() if n != "ring")
    row("ring push / push+pop, emulated cycles (qemu_cortex_m3)",
        f"{ours[0]} / {ours[1]}" if ours else MISSING, PAPER["ring"], peers or MISSING)

    st = rows.get("status_poll")
    row("STATUS round trip p50 / p99, polled, emulated ticks (an521)",
        f"{st[3]:,} / {st[4]:,} ({st[3] / RPMSG_STATUS_P50:.2f}x RPMsg)" if st else MISSING,
        PAPER["status"], f"RPMsg p50 {RPMSG_STATUS_P50:,}")
    fr = rows.get("infer_27648_4096")
    row("27,648 B in + 4,096 B out, transport p50 beyond CPU1's bytes, emulated ticks",
        f"{fr[3] - fr[6]:,}" if fr else MISSING, PAPER["frame"], f"RPMsg {RPMSG_FRAME} in all")
    busy = [rows.get(f"throughput{k}") for k in (1, 4)]
    row("NPU busy under saturation, 1 / 4 requests in flight",
        f"{busy[0][7] / 10:.1f} % / {busy[1][7] / 10:.1f} %" if all(busy) else MISSING,
        PAPER["busy"])
    boot = re.search(r"cpu1_ready (\d+) us after release, first STATUS_REQ answered (\d+) us", console)
    row("CPU1 release to ready / to first STATUS answered (emulated µs)",
        f"{int(boot[1]):,} / {int(boot[2]):,}" if boot else MISSING, PAPER["boot"])

    tflite = read(out / "tflite.md")
    for model in ("person_detect", "micro_speech"):
        m = re.search(rf"^\| {model} \| ([\d,]+) \| ([\d,]+) \| ([\d.]+x) \| [\d,]+ \| ([\d,]+) \|",
                      tflite, re.M)
        row(f"{model}: host instructions per inference; emulated an521 cycles",
            f"{m[1]} ({m[3]} the reference); {m[4]}" if m else MISSING, "(a hash, no network)",
            f"TFLite reference kernels {m[2]}" if m else MISSING)

    ratios = [float(r) for r in re.findall(r"NPU-only [\d.]+/s \(([\d.]+)x\)", read(out / "placement.md"))]
    row("EFT throughput over NPU-only, best load (host simulator)",
        f"{max(ratios):.2f}x" if ratios else MISSING, "NPU only", "MEERKAT: up to ~2x")

    # The store's check of the signed micro_speech container, beside the
    # bare crate it verifies with (scripts/signature-bench.sh).
    signature = read(out / "signature.md")
    for algorithm in ("Ed25519", "P-256"):
        m = re.search(rf"^\| \S+ \| synaptic-store \S+ \({algorithm}\), micro_speech container \| (\S+) \| "
                      r"(\d+) \| (\d+) \| (\d+) \| (\d+) \|", signature, re.M)
        row(f"signed micro_speech container check, {algorithm}: emulated CPU0 ticks; flash B",
            f"{int(m[4]):,}; {int(m[2]):,} B" if m else MISSING, "",
            f"{m[1]} alone, over a digest: {int(m[4]) - int(m[5]):,}; {int(m[2]) - int(m[3]):,} B"
            if m else MISSING)

    sizes = footprint(read(out / "footprint.txt"))
    row("FRDM dual_model CPU0 flash / RAM", kb(sizes.get("frdm/dual_model")), PAPER["cpu0"])
    row("FRDM dual_model CPU1 flash / RAM", kb(sizes.get("frdm/dual_model_cpu1")), PAPER["cpu1"])
    row("hello_inference flash / RAM (qemu_cortex_m3)", kb(sizes.get("hello/hello")),
        PAPER["hello"])

    plots = sorted(p.name for p in out.glob("*.png"))
    text = "\n".join(lines) + "\n\nPlots: " + (", ".join(plots) if plots else "none") + "\n"
    (out / "results.md").write_text(text)
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
