"""scripts/results_report.py over a hand-made bench folder: each figure is
read from its source, computed where it is derived (the frame's transport,
the ratio to RPMsg), and a missing source reads "not measured"."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import results_report as rr  # noqa: E402

CONSOLE = """\
synaptic: CPU1 up: cpu1_ready 2031 us after release, first STATUS_REQ answered 2038 us after release
BENCH,status_poll,0,1000,2385,2386,2430,30005,0,0
BENCH,infer_27648_4096,0,200,105305,105367,114575,115707,95585,0
BENCH,throughput,1,493,52225,52225,52225,52225,478,739
BENCH,throughput,4,659,40599,40599,40599,40599,615,969
"""
RING = """\
ring cost: push 20.50 cycles, pop 18.00 cycles, push+pop 40.25 cycles (1000 round trips, k_cycle_get_32 units)
heapless::spsc::Queue cost: push 10.00 cycles, pop 10.00 cycles, push+pop 22.00 cycles (1000 round trips, k_cycle_get_32 units)
ring cost: push 99.00 cycles, pop 99.00 cycles, push+pop 99.00 cycles (1000 round trips, k_cycle_get_32 units)
"""
SIGNATURE = """\
| store-ed25519 | synaptic-store 0.1.0 (Ed25519), micro_speech container | ed25519-dalek | 55784 | 11628 | 6846959 | 2149021 | 107.9 (20.5 + 87.4) | 4765617 | 69720 | 6395728 |
"""
FOOTPRINT = """\
== frdm
  image                      flash B     RAM B
  dual_model                  116864    104072
      rust rustapp               20328     12294
  dual_model_cpu1              16320      8308
== hello
  hello                        43008     31130
"""


def test_bench_rows_keep_the_first_line_of_each_name():
    rows = rr.bench_rows(CONSOLE + "BENCH,status_poll,0,1,1,1,1,1,0,0\n")
    assert rows["status_poll"][3] == 2386
    assert rows["throughput4"][7] == 969


def test_ring_costs_by_name_first_wins():
    costs = rr.ring(RING)
    assert costs["ring"] == ("20.50", "40.25")
    assert costs["heapless::spsc::Queue"] == ("10.00", "22.00")


def test_footprint_per_build_and_image():
    sizes = rr.footprint(FOOTPRINT)
    assert sizes == {
        "frdm/dual_model": (116864, 104072),
        "frdm/dual_model_cpu1": (16320, 8308),
        "hello/hello": (43008, 31130),
    }


def test_report(tmp_path, monkeypatch):
    (tmp_path / "console.txt").write_text(CONSOLE)
    (tmp_path / "ring.txt").write_text(RING)
    (tmp_path / "footprint.txt").write_text(FOOTPRINT)
    (tmp_path / "signature.md").write_text(SIGNATURE)
    (tmp_path / "sweep.png").write_bytes(b"")
    monkeypatch.setattr(sys, "argv", ["results_report.py", str(tmp_path)])
    assert rr.main() == 0
    text = (tmp_path / "results.md").read_text()
    assert "| 2,386 / 2,430 (0.30x RPMsg) |" in text
    # 105,367 - 95,585: the round trip beyond CPU1's own bytes.
    assert "| 9,782 |" in text
    assert "| 73.9 % / 96.9 % |" in text
    assert "| 2,031 / 2,038 |" in text
    assert "| 20.50 / 40.25 |" in text
    assert "15.9 KB / 8.1 KB" in text
    # The store's check and, beside it, the bare crate's (the difference).
    assert "| 6,846,959; 55,784 B |  | ed25519-dalek alone, over a digest: 4,697,938; 44,156 B |" in text
    # No tflite.md or placement.md in the folder, and no P-256 row.
    assert text.count(rr.MISSING) == 7
    assert text.rstrip().endswith("Plots: sweep.png")
