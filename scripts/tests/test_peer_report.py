"""scripts/peer_report.py over hand-made consoles of bench/tflm_peer and
tests/tflite_golden: one parser reads both, a failing line of an input
makes it differ from LiteRT, the ratio is ours over the peer's, and a
network only one side ran keeps its row."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import peer_report as pr  # noqa: E402

PEER = """\
*** Booting Zephyr OS build v4.3.0 ***
tflm_peer: TFLite Micro with CMSIS-NN kernels, k_cycle_get_32 ticks, emulated (QEMU -icount)
tflm_peer: person_detect/person MATCH (0 of 2 bytes differ from LiteRT's), 59923863 emulated cycles
tflm_peer:   scores -113 113, LiteRT -113 113
tflm_peer: person_detect/no_person MATCH (0 of 2 bytes differ from LiteRT's), 59923945 emulated cycles
tflm_peer: person_detect: 59923904 emulated cycles/inference, 7157888 MACs, 8.37 emulated cycles/MAC, arena 82740 B
tflm_peer: autoencoder/0 output 0: FNV-1a 64 6e307f8d86e76b3a, LiteRT 3a65b601a932a46f
tflm_peer: autoencoder/0 DIFFERS (1 of 1 output hashes differ from LiteRT's), 1813450 emulated cycles
tflm_peer: autoencoder/1 MATCH (0 of 1 output hashes differ from LiteRT's), 1810936 emulated cycles
tflm_peer: autoencoder: 1812193 emulated cycles/inference, 264192 MACs, 6.86 emulated cycles/MAC, arena 18720 B
tflm_peer: speech_v2/0 MATCH (0 of 1 output hashes differ from LiteRT's), 5164687 emulated cycles
tflm_peer: speech_v2: 5164705 emulated cycles/inference, 336000 MACs, 15.37 emulated cycles/MAC, arena 9108 B
tflm_peer: DONE
"""
OURS = """\
tflite_golden: k_cycle_get_32 ticks, emulated (QEMU -icount)
tflite_golden: person_detect/person PASS (0 of 2 bytes differ), 30000000 emulated cycles
tflite_golden:   no_person -113
tflite_golden: person_detect/no_person PASS (0 of 2 bytes differ), 30000000 emulated cycles
tflite_golden: person_detect: 29961952 emulated cycles/inference, 7157888 MACs, 4.18 emulated cycles/MAC, arena 79872 B
tflite_golden: person_detect arena 79872 B vs TFLite Micro's published 139264 B (57%)
tflite_golden: autoencoder/0 PASS (0 of 1 output hashes differ from LiteRT's), 3000000 emulated cycles
tflite_golden: autoencoder/1 FAIL output 0: FNV-1a 64 0000000000000001, LiteRT 0000000000000002
tflite_golden: autoencoder/1 PASS (0 of 1 output hashes differ from LiteRT's), 3000000 emulated cycles
tflite_golden: autoencoder: 3624386 emulated cycles/inference, 264000 MACs, 13.72 emulated cycles/MAC, arena 4096 B
tflm_peer: resnet8: 1 emulated cycles/inference, 1 MACs, 1.00 emulated cycles/MAC, arena 1 B
tflite_golden: resnet8/0 PASS (0 of 1 output hashes differ from LiteRT's), 9 emulated cycles
tflite_golden: ops/conv_2d PASS (10 models, 1280 inputs, 0 differing from LiteRT)
tflite_golden: ops/fully_connected_per_tensor FAIL (10 models, 1280 inputs, 3 differing from LiteRT)
tflite_golden: PASS
"""


def test_one_parser_for_both_consoles():
    peer = pr.parse(PEER, "tflm_peer")
    assert list(peer) == ["person_detect", "autoencoder", "speech_v2"]
    assert peer["person_detect"]["cycles"] == 59923904
    assert peer["person_detect"]["arena"] == 82740
    assert peer["autoencoder"]["inputs"] == {"0": False, "1": True}
    ours = pr.parse(OURS, "tflite_golden")
    assert ours["person_detect"]["macs"] == 7157888
    assert ours["person_detect"]["inputs"] == {"person": True, "no_person": True}
    # A FAIL line of an input outweighs a later PASS of the same input.
    assert ours["autoencoder"]["inputs"] == {"0": True, "1": False}
    # The other side's tag is not read; a network without summary keeps None.
    assert ours["resnet8"]["cycles"] is None
    # The generated operator models are families, not networks.
    assert "ops" not in ours
    assert pr.families(OURS) == [
        ("conv_2d", 10, 1280, 0),
        ("fully_connected_per_tensor", 10, 1280, 3),
    ]


def test_rows_ratio_and_one_sided_networks():
    table = pr.rows(pr.parse(PEER, "tflm_peer"), pr.parse(OURS, "tflite_golden"))
    by_name = {r[0]: r for r in table}
    assert [r[0] for r in table] == ["person_detect", "autoencoder", "speech_v2", "resnet8"]
    name, macs, pc, oc, ratio, pa, oa, pe, oe = by_name["person_detect"]
    assert (macs, pc, oc, pa, oa) == (7157888, 59923904, 29961952, 82740, 79872)
    assert abs(ratio - 0.5) < 1e-9
    assert (pe, oe) == ("yes (2/2)", "yes (2/2)")
    # Ours' MAC count serves both sides; equality is per input.
    assert by_name["autoencoder"][1] == 264000
    assert by_name["autoencoder"][7:] == ("no (1/2)", "no (1/2)")
    assert by_name["speech_v2"][3] is None and by_name["speech_v2"][4] is None
    assert by_name["speech_v2"][8] == "-"


def test_report_files(tmp_path):
    (tmp_path / "peer.txt").write_text(PEER)
    (tmp_path / "ours.txt").write_text(OURS)
    out = tmp_path / "out"
    assert pr.main([str(tmp_path / "peer.txt"), str(tmp_path / "ours.txt"), str(out),
                    "--commit", "abc1234", "--date", "2025-01-01"]) == 0
    text = (out / "peer.md").read_text()
    assert "commit abc1234, 2025-01-01" in text
    assert "QEMU -icount shift=7" in text and "DSP extension and FPU on" in text
    assert "| person_detect | 7,157,888 | 59,923,904 | 29,961,952 | 0.50x | 8.37 | 4.18 |" in text
    assert "| speech_v2 | 336,000 | 5,164,705 | - | - |" in text
    assert (out / "peer.png").exists()


def test_no_result_line_is_an_error(tmp_path):
    (tmp_path / "empty.txt").write_text("nothing\n")
    assert pr.main([str(tmp_path / "empty.txt"), str(tmp_path / "empty.txt"), str(tmp_path)]) == 1
