#!/usr/bin/env python3
"""synaptic's interpreter beside TFLite Micro with CMSIS-NN kernels, from
the two consoles scripts/peer-bench.sh collects on emulated mps2/an521/cpu0:

    peer_report.py PEER_CONSOLE OURS_CONSOLE OUT_DIR [--commit C] [--date D]

PEER_CONSOLE is bench/tflm_peer's output (lines `tflm_peer: ...`),
OURS_CONSOLE tests/tflite_golden's (`tflite_golden: ...`); both print, per
network, `<tag>: <name>: <N> emulated cycles/inference, <M> MACs, <a>.<bb>
emulated cycles/MAC, arena <B> B` and, per input, `<tag>: <name>/<input>`
followed by PASS or MATCH (outputs equal LiteRT's reference kernels) or
FAIL, DIFFERS or ERROR. Writes OUT_DIR/peer.md (also printed) and
OUT_DIR/peer.png (matplotlib from scripts/requirements.txt, installed by
scripts/setup.sh; without it, no plot).
"""
import argparse
import datetime
import math
import os
import re
import subprocess
import sys

TAGS = ("tflite_golden", "tflm_peer")
SUMMARY = re.compile(
    r"^(?P<tag>\w+): (?P<name>\w+): (?P<cycles>\d+) emulated cycles/inference, "
    r"(?P<macs>\d+) MACs, (?P<per_mac>\d+\.\d+) emulated cycles/MAC, arena (?P<arena>\d+) B"
)
VERDICT = re.compile(r"^(?P<tag>\w+): (?P<name>\w+)/(?P<input>\w+) (?P<verdict>PASS|MATCH|FAIL|DIFFERS|ERROR)\b")
EQUAL = {"PASS", "MATCH"}
# Our test's generated operator models (models/ops), a line per family.
FAMILY = re.compile(
    r"^tflite_golden: ops/(?P<family>\w+) (?P<verdict>PASS|FAIL) \((?P<models>\d+) models, "
    r"(?P<inputs>\d+) inputs, (?P<differing>\d+) differing"
)


def parse(text, tag=None):
    """Per network, in the order the console first names it: a dict with
    cycles, macs, arena (None if no summary line) and inputs, each input's
    verdict (True: outputs equal LiteRT's). Lines of another tag than `tag`
    (any of TAGS if None) are ignored; a later summary of the same network
    replaces an earlier one, and any failing line of an input makes it
    False."""
    tags = (tag,) if tag else TAGS
    networks = {}

    def network(name):
        return networks.setdefault(name, {"cycles": None, "macs": None, "arena": None, "inputs": {}})

    for line in text.splitlines():
        line = line.strip()
        if FAMILY.match(line):
            continue
        m = SUMMARY.match(line)
        if m and m["tag"] in tags:
            n = network(m["name"])
            n["cycles"], n["macs"], n["arena"] = int(m["cycles"]), int(m["macs"]), int(m["arena"])
            continue
        m = VERDICT.match(line)
        if m and m["tag"] in tags:
            inputs = network(m["name"])["inputs"]
            inputs[m["input"]] = inputs.get(m["input"], True) and m["verdict"] in EQUAL
    return networks


def families(text):
    """Our console's generated-model families: (family, models, inputs,
    differing), in console order."""
    out = []
    for line in text.splitlines():
        m = FAMILY.match(line.strip())
        if m:
            out.append((m["family"], int(m["models"]), int(m["inputs"]), int(m["differing"])))
    return out


def equal_text(net):
    """`yes (3/3)`, `no (0/3)`, or `-` when nothing ran."""
    if not net or not net["inputs"]:
        return "-"
    good = sum(net["inputs"].values())
    total = len(net["inputs"])
    return f"{'yes' if good == total else 'no'} ({good}/{total})"


def rows(peer, ours):
    """One row per network (the peer's order, then networks only ours ran):
    (name, macs, peer cycles, our cycles, ratio ours/peer, peer arena, our
    arena, peer equal text, our equal text). The MACs are ours when we ran
    the network (one count for both cycles/MAC), the peer's otherwise."""
    names = list(peer) + [n for n in ours if n not in peer]
    out = []
    for name in names:
        p, o = peer.get(name), ours.get(name)
        pc = p["cycles"] if p else None
        oc = o["cycles"] if o else None
        macs = (o and o["macs"]) or (p and p["macs"]) or None
        ratio = oc / pc if pc and oc else None
        out.append((name, macs, pc, oc, ratio, p and p["arena"], o and o["arena"], equal_text(p), equal_text(o)))
    return out


def fmt(value, unit=""):
    return "-" if value is None else f"{value:,}{unit}"


def per_mac(cycles, macs):
    """Ticks per MAC with two decimals, truncated as both consoles print it."""
    if not cycles or not macs:
        return "-"
    centi = cycles * 100 // macs
    return f"{centi // 100}.{centi % 100:02d}"


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def markdown(table, commit, date, generated=()):
    lines = [
        "synaptic's interpreter (tests/tflite_golden) vs TFLite Micro with CMSIS-NN kernels "
        "(bench/tflm_peer), same networks and inputs",
        "",
        f"Emulated mps2/an521/cpu0 with the DSP extension and FPU on (the MCXN947's CPU0: "
        f"CONFIG_SYNAPTIC_EMULATE_MCXN947_CPU0), QEMU -icount shift=7; k_cycle_get_32 ticks per "
        f"inference, mean over the inputs; TFLite Micro at -O2 (bench/tflm_peer: "
        f"CONFIG_SPEED_OPTIMIZATIONS), CMSIS-NN at -Ofast (Zephyr's cmsis-nn module), synaptic "
        f"in tests/tflite_golden's release profile; commit {commit}, {date}.",
        "",
        "| network | MACs | TFLite Micro + CMSIS-NN ticks/inference | synaptic ticks/inference "
        "| ours / peer | ticks/MAC peer | ticks/MAC ours | arena peer | arena ours "
        "| peer = LiteRT | ours = LiteRT |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for name, macs, pc, oc, ratio, pa, oa, pe, oe in table:
        lines.append(
            f"| {name} | {fmt(macs)} | {fmt(pc)} | {fmt(oc)} | "
            f"{'-' if ratio is None else f'{ratio:.2f}x'} | {per_mac(pc, macs)} | {per_mac(oc, macs)} | "
            f"{fmt(pa, ' B')} | {fmt(oa, ' B')} | {pe} | {oe} |"
        )
    mean = geomean([r[4] for r in table])
    lines += [
        "",
        "ours / peer: synaptic's ticks over TFLite Micro's (below 1: synaptic is faster)"
        + (f"; geometric mean over the networks both ran: {mean:.2f}x." if mean else "."),
        "Arena: synaptic's plan (Interpreter::arena_required) and TFLite Micro's "
        "MicroInterpreter::arena_used_bytes(). = LiteRT: every output of every input equals "
        "LiteRT's reference kernels (the golden bytes of models/golden/ for person_detect and "
        "micro_speech, the FNV-1a 64 of the .expect files for the others); CMSIS-NN is not "
        "bit-exact with them everywhere, and a difference is reported, not failed.",
    ]
    if generated:
        lines.append(
            "Generated operator models through the same kernels (synaptic only, every input of "
            "the host's property test): "
            + "; ".join(f"{f}: {m} models, {i:,} inputs, {d} differing" for f, m, i, d in generated)
            + "."
        )
    return "\n".join(lines) + "\n"


def plot(table, path):
    """Grouped bars per network (log scale), the ratio above each group;
    False without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    table = [r for r in table if r[2] or r[3]]
    fig, ax = plt.subplots(figsize=(max(6, 1.4 * len(table) + 2), 4.5))
    width = 0.38
    xs = range(len(table))
    peer = [r[2] or 0 for r in table]
    ours = [r[3] or 0 for r in table]
    ax.bar([x - width / 2 for x in xs], peer, width, label="TFLite Micro + CMSIS-NN", color="#9e9e9e")
    ax.bar([x + width / 2 for x in xs], ours, width, label="synaptic", color="#1f77b4")
    ax.set_yscale("log")
    for x, r in zip(xs, table):
        if r[4] is not None:
            ax.annotate(f"{r[4]:.2f}x", (x, max(r[2], r[3])), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=9)
        else:
            side = "synaptic" if not r[3] else "TFLite Micro"
            ax.annotate(f"{side}: not run", (x, r[2] or r[3]), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=8)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([r[0] for r in table])
    ax.set_ylabel("k_cycle_get_32 ticks / inference (log)")
    ax.set_title("mps2/an521/cpu0 + DSP + FPU (QEMU -icount): ours / TFLite Micro")
    ax.legend()
    ax.margins(y=0.15)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def head_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        return subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("peer_console")
    parser.add_argument("ours_console")
    parser.add_argument("out_dir")
    parser.add_argument("--commit", help="commit named in the header (default: git rev-parse --short HEAD)")
    parser.add_argument("--date", help="date named in the header (default: today, UTC)")
    args = parser.parse_args(argv)
    with open(args.peer_console, errors="replace") as f:
        peer = parse(f.read(), "tflm_peer")
    with open(args.ours_console, errors="replace") as f:
        ours_text = f.read()
    ours = parse(ours_text, "tflite_golden")
    if not peer and not ours:
        print("peer_report: neither console has a result line", file=sys.stderr)
        return 1
    table = rows(peer, ours)
    commit = args.commit or head_commit()
    date = args.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    text = markdown(table, commit, date, families(ours_text))
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "peer.md"), "w") as f:
        f.write(text)
    print(text, end="")
    if not plot(table, os.path.join(args.out_dir, "peer.png")):
        print("peer_report: matplotlib missing (scripts/setup.sh installs it): no plot", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
