"""scripts/image_report.py over hand-made linker-map, readelf and nm text:
input sections land in the right component with the right flash/RAM split,
Rust paths name their crate, and the CPU1 budget line is a check only where
it is enforced."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import image_report as ir  # noqa: E402

RUSTAPP = "rust/target/thumbv8m.main-none-eabi/release/librustapp.a"
MAP = f"""\
Archive member included to satisfy reference by file (symbol)

zephyr/kernel/libkernel.a(sem.c.obj)
                              app/libapp.a(main.c.obj) (k_sem_give)

Linker script and memory map

LOAD zephyr/kernel/libkernel.a

text            0x0038b1c0     0x1000
 .text          0x0038b1c0       0x30 gcc/thumb/nofp/libgcc.a(_udivmoddi4.o)
                0x0038b1c0                __udivmoddi4
 .text.z_impl_k_sem_give
                0x0038b1f0       0x54 zephyr/kernel/libkernel.a(sem.c.obj)
                0x0038b1f0                z_impl_k_sem_give
 .text.z_cbvprintf_impl
                0x0038b244      0x774 zephyr/libzephyr.a(cbprintf_complete.c.obj)
                0x0038b244                z_cbvprintf_impl
 .text._ZN14synaptic_serve6client19Client$LT$_$C$D$GT$8dispatch17hc3497c135cb23957E
                0x0038b9b8      0x690 {RUSTAPP}(rustapp-6538.rustapp.da5d-cgu.0.rcgu.o)
 .text._ZN42_$LT$u32$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE
                0x0038c048       0xdc {RUSTAPP}(rustapp-6538.rustapp.da5d-cgu.0.rcgu.o)
 .text.memcpy   0x0038c124       0x40 {RUSTAPP}(compiler_builtins-66ec.compiler_builtins.3bc1-cgu.167.rcgu.o)
                0x0038c124                memcpy
 .text.rust_main
                0x0038c164       0x20 app/libapp.a(main.c.obj)
                0x0038c164                rust_main
                [!provide]                        PROVIDE (__etext = .)

datas           0x28058000       0x28 load address 0x00392050
 .data.curr_tick
                0x28058000        0x8 zephyr/kernel/libkernel.a(timeout.c.obj)

bss             0x28058030      0x600
 .bss._ZN15synaptic_zephyr6client8dispatch5STACK17h0000000000000001E
                0x28058030      0x600 {RUSTAPP}(rustapp-6538.rustapp.da5d-cgu.0.rcgu.o)

.debug_info     0x00000000     0x9999
 .debug_info    0x00000000     0x9999 zephyr/kernel/libkernel.a(sem.c.obj)
"""

READELF_S = """\
  [ 2] text              PROGBITS        0038b1c0 0002b4 001000 00  AX  0   0  4
  [10] datas             PROGBITS        28058000 007144 000028 00  WA  0   0  4
  [14] .debug_info       PROGBITS        00000000 0087d0 009999 00      0   0  1
  [26] bss               NOBITS          28058030 007178 000600 00  WA  0   0  8
"""
SEGMENTS = [(0x0038b000, 0x0038b000, 0x7050, 0x7050), (0x28058000, 0x00392050, 0x2c, 0x2c),
            (0x28058030, 0x28058030, 0, 0x2890)]

NM = """\
0038c124 00000040 T memcpy
0038b9b8 00000690 t synaptic_serve::client::Client<_,D>::dispatch
28058030 00000600 b synaptic_zephyr::client::dispatch::STACK
0038b244 00000774 T z_cbvprintf_impl
"""


def test_demangles_legacy_rust_paths_without_the_hash():
    assert ir.demangle("_ZN42_$LT$u32$u20$as$u20$core..fmt..Display$GT$3fmt17h0123456789abcdefE") \
        == "<u32 as core::fmt::Display>::fmt"
    assert ir.demangle("_ZN14synaptic_serve6client19Client$LT$_$C$D$GT$8dispatch17hc3497c135cb23957E") \
        == "synaptic_serve::client::Client<_,D>::dispatch"
    assert ir.demangle("z_impl_k_sem_give") == "z_impl_k_sem_give"


def test_rust_crate_is_the_first_path_segment():
    assert ir.rust_crate("synaptic_serve::client::Client<_,D>::dispatch") == "synaptic_serve"
    assert ir.rust_crate("<u32 as core::fmt::Display>::fmt") == "core"
    assert ir.rust_crate("<synaptic_abi::Message as core::fmt::Debug>::fmt") == "synaptic_abi"
    assert ir.rust_crate("memcpy") is None


def test_parses_input_sections_on_one_or_two_lines_after_the_memory_map():
    sections = ir.parse_map(MAP)
    names = [(out, name, size) for out, name, size, _, _ in sections]
    assert ("text", ".text", 0x30) in names
    assert ("text", ".text.z_impl_k_sem_give", 0x54) in names
    assert ("text", ".text.memcpy", 0x40) in names
    assert ("bss", ".bss._ZN15synaptic_zephyr6client8dispatch5STACK17h0000000000000001E", 0x600) in names
    # The archive-member table before the memory map is not read.
    assert all(not n.startswith("(") for _, n, _ in names)
    symbols = {name: syms for _, name, _, _, syms in sections}
    assert symbols[".text.z_impl_k_sem_give"] == ["z_impl_k_sem_give"]
    assert symbols[".text.rust_main"] == ["rust_main"]  # PROVIDE lines are not symbols


def test_breakdown_by_component_with_flash_and_ram():
    classes = ir.section_classes(READELF_S, SEGMENTS)
    assert classes == {"text": (True, False), "datas": (True, True), "bss": (False, True)}
    totals = ir.breakdown(ir.parse_map(MAP), classes)
    assert totals["libgcc (compiler builtins)"] == [0x30, 0]
    assert totals["zephyr kernel"] == [0x54 + 0x8, 0x8]          # .data: flash and RAM
    assert totals["zephyr lib (printk, cbprintf, heap, ...)"] == [0x774, 0]
    assert totals["rust synaptic_serve"] == [0x690, 0]
    assert totals["rust core"] == [0xdc, 0]
    assert totals["rust compiler_builtins"] == [0x40, 0]          # #[no_mangle]: by object
    assert totals["rust synaptic_zephyr"] == [0, 0x600]
    assert totals["application C"] == [0x20, 0]
    assert sum(f for f, _ in totals.values()) == 0x30 + 0x54 + 0x774 + 0x690 + 0xdc + 0x40 + 0x20 + 0x8
    assert not any(".debug" in c for c in totals)


def test_top_symbols_largest_first():
    top = ir.top_symbols(NM, 2)
    assert top == [(0x774, "T", "z_cbvprintf_impl"),
                   (0x690, "t", "synaptic_serve::client::Client<_,D>::dispatch")]


def test_budget_line_is_a_check_only_when_enforced(monkeypatch):
    line, verdict = ir.budget_line("frdm: a/cpu1", 30_064)
    assert verdict == 0 and "13,680 B over the 16 KB budget" in line
    monkeypatch.setattr(ir, "BUDGET_ENFORCED", frozenset({"frdm: a/cpu1"}))
    assert ir.budget_line("frdm: a/cpu1", 16_384)[1] == 1
    line, verdict = ir.budget_line("frdm: a/cpu1", 16_385)
    assert verdict == -1 and line.lstrip().startswith("FAIL")


def test_cpu0_budget_is_a_check():
    line, verdict = ir.cpu0_budget_line("frdm: a/cpu0", 76_400)
    assert verdict == 1 and "76,400 B flash, within the 75 KB budget" in line
    assert ir.cpu0_budget_line("frdm: a/cpu0", 75 * 1024)[1] == 1
    line, verdict = ir.cpu0_budget_line("frdm: a/cpu0", 75 * 1024 + 1)
    assert verdict == -1 and line.lstrip().startswith("FAIL")
    assert "1 B over the 75 KB budget" in line


def test_components_of_c_archives_and_link_time_optimised_objects():
    assert ir.component("k_sem_give", "zephyr/kernel/libkernel.a(sem.c.obj)") == "zephyr kernel"
    assert ir.component("memcpy", "zephyr/lib/libc/minimal/liblib__libc__minimal.a(string.c.obj)") == "libc"
    assert ir.component("z_cstart", "ccjW3T5S.ltrans0.ltrans.o").startswith("C after link-time")


# `objdump -d` text: address, encoding, mnemonic, operands, comment, split by tabs.
OBJDUMP = """\
Disassembly of section text:

0038b1c0 <_ZN14synaptic_serve5serve17h0123456789abcdefE>:
  38b1c0:\tb5d0      \tpush\t{r4, r6, r7, lr}
  38b1c2:\taf02      \tadd\tr7, sp, #8
  38b1c4:\tf5ad 4d05 \tsub.w\tsp, sp, #34048\t@ 0x8500
  38b1c8:\tf000 f800 \tbl\t38b1cc <memcpy>
  38b1cc:\tb081      \tsub\tsp, #4

0038b1d0 <small>:
  38b1d0:\tb500      \tpush\t{lr}
  38b1d2:\tf6ad 3dbc \tsubw\tsp, sp, #3004\t@ 0xbbc
  38b1d6:\tf3c0 0001 \tbic.w\tr0, r0, #1
  38b1da:\tb08f      \tsub\tsp, #60

0038b1e0 <twice>:
  38b1e0:\tf5ad 3d88 \tsub.w\tsp, sp, #69632\t@ 0x11000
  38b1e4:\tb0df      \tsub\tsp, #380
  38b1e6:\td001      \tbeq.n\t38b1ec <twice+0xc>
  38b1e8:\tb0df      \tsub\tsp, #380

0038b1f0 <by_register>:
  38b1f0:\te92d 4ff0 \tpush.w\t{r4, r5, r6, r7, r8, r9, sl, fp, lr}
  38b1f4:\ted2d 8b04 \tvpush\t{d8-d9}
  38b1f8:\tf241 0100 \tmovw\tr1, #4352\t@ 0x1100
  38b1fc:\tf2c0 0101 \tmovt\tr1, #1
  38b200:\tebad 0d01 \tsub.w\tsp, sp, r1
"""


def test_register_lists_count_ranges():
    assert ir.register_count("{r4-r7, lr}") == 5
    assert ir.register_count("{d8-d9}") == 2
    assert ir.register_count("{lr}") == 1


def test_stack_frames_sum_the_prologue_up_to_the_first_branch():
    frames = dict((name, size) for size, name in ir.stack_frames(OBJDUMP))
    assert frames["_ZN14synaptic_serve5serve17h0123456789abcdefE"] == 16 + 34048
    # bic is not a branch: the prologue goes on to the second decrement.
    assert frames["small"] == 4 + 3004 + 60
    assert frames["twice"] == 69632 + 380
    assert frames["by_register"] == 9 * 4 + 2 * 8 + 65536 + 4352
    assert ir.stack_frames(OBJDUMP)[0] == (70012, "twice")


def test_frame_check_fails_past_the_limit(capsys):
    assert not ir.frame_check("an521: s/cpu0", OBJDUMP)
    assert "FAIL    stack frames of an521: s/cpu0: largest 70,012 B (twice)" in capsys.readouterr().out
    assert ir.frame_check("an521: s/cpu0", OBJDUMP.split("0038b1e0")[0].replace("#34048", "#3000"))
