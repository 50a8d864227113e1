#!/usr/bin/env python3
"""Footprint of every image twister built, and the CPU1 float check.

Usage: image_report.py <twister output directory>

For each zephyr.elf under the directory prints its path, flash (what is
programmed: code, read-only data, the initial values of .data) and RAM
(what it reserves at run time: .data, .bss, noinit, stacks) from the ELF's
program headers. Numbers, no limits.

Every CPU1 image (its .config selects a *_CPU1 SoC) must link no
soft-float helper (__aeabi_f*, __aeabi_d*, __addsf3, ...) and contain no
FPU instruction: CPU1 has no FPU, so float there would be slow emulation at
best and a layering mistake at worst. Each CPU1 image is one check; the
last line is `passed failed` for scripts/test.sh.
"""
import pathlib
import re
import subprocess
import sys

SOFT_FLOAT = re.compile(
    r"^(__aeabi_(f|d|[iu]?l?2[fd]|[fd]2)\w*"
    r"|__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|un)[sd]f[23]"
    r"|__(float|fix|extend|trunc)\w*[sd]f\w*)$")
FPU_INSN = re.compile(r"\tv(ldr|str|mov|add|sub|mul|div|cmp|cvt|push|pop|abs|neg|sqrt|fma)\S*\s")


def config(elf: pathlib.Path) -> str:
    path = elf.parent / ".config"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def sizes(elf: pathlib.Path) -> tuple[int, int]:
    """Flash = file bytes of every LOAD segment (code, rodata, the load image
    of .data); RAM = memory bytes of every segment that lives in RAM (loaded
    at one address and run at another, or not in the file: .data, .bss,
    noinit, stacks)."""
    out = subprocess.run(["arm-none-eabi-readelf", "-lW", str(elf)], check=True,
                         capture_output=True, text=True).stdout
    flash = ram = 0
    for line in out.splitlines():
        parts = line.split()
        if not parts or parts[0] != "LOAD":
            continue
        virt, phys = int(parts[2], 16), int(parts[3], 16)
        filesz, memsz = int(parts[4], 16), int(parts[5], 16)
        flash += filesz
        if virt != phys or filesz == 0:
            ram += memsz
    return flash, ram


def short_name(rel: pathlib.Path) -> str:
    """platform/toolchain/<absolute source path>/scenario[/image] as
    platform: scenario[/image] (the rest is the same for every image)."""
    parts = rel.parts
    for k, part in enumerate(parts):
        if part in ("tests", "samples") and k + 2 < len(parts):
            return f"{parts[0]}: " + "/".join(parts[k + 2:])
    return str(rel)


def main(outdir: str) -> int:
    passed = failed = 0
    elves = sorted(pathlib.Path(outdir).glob("**/zephyr/zephyr.elf"))
    print(f"  {'image':72} {'flash B':>9} {'RAM B':>9}")
    for elf in elves:
        if any(part.startswith("empty_cpu0") for part in elf.parts):
            # mps2/an521/cpu1 builds make the board's own placeholder CPU0
            # image too; it is Zephyr's, not ours.
            continue
        rel = short_name(elf.relative_to(outdir).parent.parent)
        flash, ram = sizes(elf)
        print(f"  {rel:72} {flash:9} {ram:9}")
        cfg = config(elf)
        if not re.search(r"^CONFIG_SOC_\w+_CPU1=y", cfg, re.M):
            continue
        syms = subprocess.run(["arm-none-eabi-nm", str(elf)], check=True,
                              capture_output=True, text=True).stdout.split("\n")
        soft = sorted({s.split()[-1] for s in syms if s.split() and SOFT_FLOAT.match(s.split()[-1])})
        dis = subprocess.run(["arm-none-eabi-objdump", "-d", str(elf)], check=True,
                             capture_output=True, text=True).stdout
        fpu = [l.strip() for l in dis.splitlines() if FPU_INSN.search(l)][:5]
        if soft or fpu:
            print(f"  FAIL    CPU1 image {rel}: soft-float {soft[:8]} FPU {fpu}")
            failed += 1
        else:
            print(f"  PASS    CPU1 image {rel}: no soft-float helper, no FPU instruction")
            passed += 1
    print(f"{passed} {failed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
