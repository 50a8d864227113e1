#!/usr/bin/env python3
"""Footprint of every image twister built, where its bytes go, and the CPU1
checks.

Usage: image_report.py <twister output directory or build directory>

For each zephyr.elf under the directory prints its path, flash (what is
programmed: code, read-only data, the initial values of .data) and RAM
(what it reserves at run time: .data, .bss, noinit, stacks) from the ELF's
program headers; then, from the linker map next to it, the same bytes by
component (each Rust crate by the demangled path of its functions and data,
the Zephyr kernel, arch, drivers and libraries, libc, libgcc's compiler
builtins, the application's C) and the largest symbols (nm --size-sort).

Every CPU1 image (its .config selects a *_CPU1 SoC) must link no
soft-float helper (__aeabi_f*, __aeabi_d*, __addsf3, ...) and contain no
FPU instruction: CPU1 has no FPU, so float there would be slow emulation at
best and a layering mistake at worst. Each CPU1 image is one check. Each
CPU1 image also gets a line against the 16 KB flash budget of the
application core's client; for the images named in BUDGET_ENFORCED it is a
check (they met it, and must not grow past it again).

The FRDM dual_model CPU0 image (shell, MPU guard, serving) is one more
check: its flash against the 75 KB budget of the capable core's runtime.

Every image is one more check: no function's stack frame (what its
prologue pushes and reserves) may exceed FRAME_LIMIT. A larger frame is a
value built on the stack that was meant to be built in place: seen once, a
31 KB stub NPU copied through the serving thread's stack, a fault at boot
that a small change to the stub's layout had turned on. The last line is
`passed failed` for scripts/test.sh.
"""
import pathlib
import re
import subprocess
import sys
from collections import defaultdict

SOFT_FLOAT = re.compile(
    r"^(__aeabi_(f|d|[iu]?l?2[fd]|[fd]2)\w*"
    r"|__(add|sub|mul|div|neg|cmp|eq|ne|lt|le|gt|ge|un)[sd]f[23]"
    r"|__(float|fix|extend|trunc)\w*[sd]f\w*)$")
FPU_INSN = re.compile(r"\tv(ldr|str|mov|add|sub|mul|div|cmp|cvt|push|pop|abs|neg|sqrt|fma)\S*\s")

# Flash budget of a CPU1 image (issue: the client may cost the application
# core's flash bank at most this much).
CPU1_FLASH_BUDGET = 16 * 1024
# CPU1 images (short names as printed) whose budget line is a check: they
# met the budget, and must not grow past it again: the dual_model client on
# the AN521 stand-in (16,332 B) and on the FRDM (16,320 B, its interrupt
# tables cut to the lines CPU1 connects).
BUDGET_ENFORCED: frozenset[str] = frozenset({
    "mps2_an521_cpu0: sample.synaptic.dual_model/dual_model_cpu1",
    "frdm_mcxn947_mcxn947_cpu0: sample.synaptic.dual_model.frdm/dual_model_cpu1",
})
# Flash budget of the FRDM dual_model CPU0 image (76,400 B when the check
# was made: LTO, trimmed shell and devicetree, a scheduler without the CPU
# device's paths, opt-level "z").
CPU0_FLASH_BUDGET = 75 * 1024
CPU0_BUDGET_IMAGES: frozenset[str] = frozenset({
    "frdm_mcxn947_mcxn947_cpu0: sample.synaptic.dual_model.frdm/dual_model",
})
# The largest stack frame a function may have: the serving thread's stack
# (SERVING_STACK in synaptic-zephyr, the largest of the module's threads);
# a frame past it overflows whatever thread runs it. Measured largest:
# 8,560 B (the placement build's serving loop).
FRAME_LIMIT = 12 * 1024
# How many components and symbols each image lists.
TOP_COMPONENTS = 14
TOP_SYMBOLS = 12


def config(elf: pathlib.Path) -> str:
    path = elf.parent / ".config"
    return path.read_text(encoding="utf-8") if path.exists() else ""


def run(*args: str) -> str:
    return subprocess.run(list(args), check=True, capture_output=True, text=True).stdout


def load_segments(readelf_l: str) -> list[tuple[int, int, int, int]]:
    """(virt, phys, filesz, memsz) of every LOAD program header."""
    segments = []
    for line in readelf_l.splitlines():
        parts = line.split()
        if parts and parts[0] == "LOAD":
            segments.append((int(parts[2], 16), int(parts[3], 16),
                             int(parts[4], 16), int(parts[5], 16)))
    return segments


def sizes(elf: pathlib.Path) -> tuple[int, int]:
    """Flash = file bytes of every LOAD segment (code, rodata, the load image
    of .data); RAM = memory bytes of every segment that lives in RAM (loaded
    at one address and run at another, or not in the file: .data, .bss,
    noinit, stacks)."""
    flash = ram = 0
    for virt, phys, filesz, memsz in load_segments(run("arm-none-eabi-readelf", "-lW", str(elf))):
        flash += filesz
        if virt != phys or filesz == 0:
            ram += memsz
    return flash, ram


def section_classes(readelf_s: str, segments: list[tuple[int, int, int, int]]) -> dict[str, tuple[bool, bool]]:
    """Output section name -> (costs flash, costs RAM), by the same rule as
    sizes(): NOBITS is RAM only, a section loaded at one address and run at
    another (.data) is both, the rest of what is allocated is flash."""
    classes = {}
    for line in readelf_s.splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+([0-9a-f]{8})\s+[0-9a-f]+\s+([0-9a-f]+)\s+\S+\s+(\S*)", line)
        if not m or "A" not in m.group(5) or int(m.group(4), 16) == 0:
            continue
        name, kind, addr = m.group(1), m.group(2), int(m.group(3), 16)
        if kind == "NOBITS":
            classes[name] = (False, True)
            continue
        relocated = any(virt <= addr < virt + memsz and virt != phys
                        for virt, phys, _, memsz in segments)
        classes[name] = (True, relocated)
    return classes


def parse_map(text: str) -> list[tuple[str, str, int, str, list[str]]]:
    """Input sections of a GNU ld map: (output section, input section, size,
    file, symbols defined in it), in the order of the map."""
    start = text.find("Linker script and memory map")
    lines = text[start:].splitlines() if start >= 0 else []
    out: list[tuple[str, str, int, str, list[str]]] = []
    output = ""
    pending = None  # an input section whose address line follows
    for line in lines:
        m = re.match(r"^(\S+)(\s+0x[0-9a-f]+\s+0x[0-9a-f]+)?", line)
        if m and not line.startswith(("LOAD ", "OUTPUT(")):
            output, pending = m.group(1), None
            continue
        m = re.match(r"^ (\.\S+|COMMON)(?:\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*))?$", line)
        if m:
            if m.group(2) is None:
                pending = m.group(1)
            else:
                out.append((output, m.group(1), int(m.group(3), 16), m.group(4).strip(), []))
                pending = None
            continue
        m = re.match(r"^\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+(\S.*)$", line)
        if m and pending is not None:
            out.append((output, pending, int(m.group(2), 16), m.group(3).strip(), []))
            pending = None
            continue
        m = re.match(r"^\s+0x[0-9a-f]+\s{2,}([^\s=][^=]*)$", line)
        if m and out and not m.group(1).startswith(("PROVIDE", "[")):
            out[-1][4].append(m.group(1).strip())
    return out


LEGACY_ESCAPES = [("$LT$", "<"), ("$GT$", ">"), ("$u20$", " "), ("$C$", ","),
                  ("$RF$", "&"), ("$BP$", "*"), ("$u5b$", "["), ("$u5d$", "]"),
                  ("$u7b$", "{"), ("$u7d$", "}"), ("$u3b$", ";"), ("$u27$", "'"),
                  ("$u2b$", "+"), ("$u22$", '"'), ("..", "::")]


def demangle(name: str) -> str:
    """Rust's legacy (`_ZN...E`) mangling to a path, without the hash; any
    other name as it is."""
    m = re.search(r"_ZN(.*)E$", name)
    if not m:
        return name
    rest, parts = m.group(1), []
    while rest and rest[0].isdigit():
        n = re.match(r"\d+", rest).group(0)
        part, rest = rest[len(n):len(n) + int(n)], rest[len(n) + int(n):]
        if part.startswith("_$"):
            part = part[1:]
        for old, new in LEGACY_ESCAPES:
            part = part.replace(old, new)
        parts.append(part)
    if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
        parts.pop()
    return "::".join(parts) if parts else name


def rust_crate(path: str) -> str | None:
    """The crate a demangled Rust path belongs to: the first path segment
    (for `<Type as Trait>::f`, the type's crate, or the trait's when the
    type is a primitive)."""
    m = re.search(r"([A-Za-z_][A-Za-z0-9_]*)::", path)
    return m.group(1) if m else None


def component(symbol: str, file: str) -> str:
    """What an input section belongs to, from the file it came from and, for
    Rust, the path of the symbol that it defines."""
    archive = re.sub(r"\(.*\)$", "", file).rsplit("/", 1)[-1]
    member = re.search(r"\((.*)\)$", file)
    if archive.startswith("librustapp"):
        crate = rust_crate(demangle(symbol))
        if crate is None and member:
            # #[no_mangle] symbols (memcpy, rust_main): the object's crate.
            crate = member.group(1).split("-", 1)[0]
        return f"rust {crate or '?'}"
    if archive == "libkernel.a":
        return "zephyr kernel"
    if archive.startswith("libarch__") or archive == "libisr_tables.a":
        return "zephyr arch"
    if archive.startswith("libdrivers__"):
        return "zephyr drivers"
    if archive == "libzephyr.a":
        return "zephyr lib (printk, cbprintf, heap, ...)"
    if archive.startswith(("liblib__libc", "liblib__posix", "libc.a", "libc_nano")):
        return "libc"
    if archive == "libgcc.a":
        return "libgcc (compiler builtins)"
    if archive.startswith("libsynaptic"):
        return "synaptic C"
    if archive == "libapp.a":
        return "application C"
    if ".ltrans" in file:
        # CONFIG_LTO: the C sources the link optimised together.
        return "C after link-time optimisation (kernel, arch, drivers, libc)"
    if "zephyr_final" in file or "zephyr_pre" in file or "offsets" in file:
        return "zephyr generated (isr tables, ...)"
    if archive.startswith("libsubsys__"):
        return "zephyr subsys"
    if archive.startswith("libmodules__") or archive.startswith("lib..__modules"):
        return "modules"
    return archive or "?"


def breakdown(sections, classes) -> dict[str, list[int]]:
    """Component -> [flash bytes, RAM bytes] over the map's input sections."""
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for output, name, size, file, symbols in sections:
        if output not in classes or size == 0:
            continue
        in_flash, in_ram = classes[output]
        suffix = re.sub(r"^\.(text|rodata|data|bss|noinit)\.", "", name)
        symbol = symbols[0] if symbols else suffix
        comp = component(symbol, file)
        totals[comp][0] += size if in_flash else 0
        totals[comp][1] += size if in_ram else 0
    return totals


# The crates of the model store's signature check (synaptic-store's
# `signature` module, its hash and its two algorithms with what they pull
# in): their flash is one line of each image that links them.
VERIFY_CRATES = frozenset({
    "ed25519_dalek", "curve25519_dalek", "ed25519", "sha2", "digest", "block_buffer",
    "crypto_common", "p256", "ecdsa", "elliptic_curve", "primeorder", "primefield",
    "crypto_bigint", "ff", "group", "sec1", "subtle", "signature", "hybrid_array",
})


def verification_bytes(totals: dict[str, list[int]]) -> int:
    """Flash of the signature check's crates in one image's breakdown."""
    return sum(flash for comp, (flash, _) in totals.items()
               if comp.startswith("rust ") and comp[5:] in VERIFY_CRATES)


def top_symbols(nm_out: str, count: int) -> list[tuple[int, str, str]]:
    """(size, nm type, demangled name) of the largest symbols, largest
    first, from `nm -S --size-sort --demangle` output."""
    rows = []
    for line in nm_out.splitlines():
        m = re.match(r"^[0-9a-f]+ ([0-9a-f]+) (\w) (.+)$", line)
        if m:
            rows.append((int(m.group(1), 16), m.group(2), m.group(3)))
    rows.sort(key=lambda r: -r[0])
    return rows[:count]


def report_breakdown(elf: pathlib.Path) -> None:
    mapfile = elf.with_suffix(".map")
    if mapfile.exists():
        segments = load_segments(run("arm-none-eabi-readelf", "-lW", str(elf)))
        classes = section_classes(run("arm-none-eabi-readelf", "-SW", str(elf)), segments)
        totals = breakdown(parse_map(mapfile.read_text(encoding="utf-8", errors="replace")), classes)
        ranked = sorted(totals.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
        verify = verification_bytes(totals)
        if verify:
            print(f"      signature verification (model store; "
                  f"{', '.join(sorted(c[5:] for c in totals if c[5:] in VERIFY_CRATES))}): "
                  f"{verify:,} B flash")
        for comp, (flash, ram) in ranked[:TOP_COMPONENTS]:
            print(f"      {comp:60} {flash:9} {ram:9}")
        rest = ranked[TOP_COMPONENTS:]
        if rest:
            print(f"      {'(' + str(len(rest)) + ' more)':60} {sum(v[0] for _, v in rest):9} "
                  f"{sum(v[1] for _, v in rest):9}")
    nm_out = run("arm-none-eabi-nm", "-S", "--size-sort", "--demangle", str(elf))
    for size, kind, name in top_symbols(nm_out, TOP_SYMBOLS):
        shown = name if len(name) <= 86 else name[:83] + "..."
        print(f"      {size:7} {kind} {shown}")


def budget_line(rel: str, flash: int) -> tuple[str, int]:
    """The CPU1 budget line and what it adds to (passed, failed): a check only
    for the images in BUDGET_ENFORCED."""
    enforced = rel in BUDGET_ENFORCED
    if flash <= CPU1_FLASH_BUDGET:
        word = "PASS   " if enforced else "BUDGET "
        return (f"  {word} CPU1 image {rel}: {flash:,} B flash, within the "
                f"{CPU1_FLASH_BUDGET // 1024} KB budget", 1 if enforced else 0)
    word = "FAIL   " if enforced else "BUDGET "
    return (f"  {word} CPU1 image {rel}: {flash:,} B flash, {flash - CPU1_FLASH_BUDGET:,} B over "
            f"the {CPU1_FLASH_BUDGET // 1024} KB budget", -1 if enforced else 0)


def cpu0_budget_line(rel: str, flash: int) -> tuple[str, int]:
    """The CPU0 budget check and what it adds to (passed, failed)."""
    if flash <= CPU0_FLASH_BUDGET:
        return (f"  PASS    CPU0 image {rel}: {flash:,} B flash, within the "
                f"{CPU0_FLASH_BUDGET // 1024} KB budget", 1)
    return (f"  FAIL    CPU0 image {rel}: {flash:,} B flash, {flash - CPU0_FLASH_BUDGET:,} B over "
            f"the {CPU0_FLASH_BUDGET // 1024} KB budget", -1)


FUNC_HEADER = re.compile(r"^[0-9a-f]+ <(.+)>:$")
SUB_SP_IMM = re.compile(r"^sp, (?:sp, )?#(\d+)")
SUB_SP_REG = re.compile(r"^sp, (?:sp, )?(r\d+|ip|lr)$")
MOV_IMM = re.compile(r"^(r\d+|ip|lr), #(\d+)")
# Branch mnemonics (with condition and width suffixes): the prologue ends
# at the first one.
BRANCH = re.compile(r"^(b|bl|blx|bx|cbz|cbnz|tbb|tbh|pop)"
                    r"(eq|ne|cs|cc|hs|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le|al)?(\.w|\.n)?$")


def register_count(operands: str) -> int:
    """Registers in a push list, `{r4-r7, lr}` -> 5."""
    count = 0
    for item in operands.strip().strip("{}").split(","):
        bounds = re.findall(r"\d+", item)
        count += int(bounds[1]) - int(bounds[0]) + 1 if "-" in item and len(bounds) == 2 else 1
    return count


def stack_frames(disassembly: str) -> list[tuple[int, str]]:
    """(frame bytes, function) for each function of `objdump -d` output,
    largest first: its prologue's pushes (4 bytes a core register, 8 a
    double) and stack-pointer decrements (immediate, or a register set by
    movw/movt), up to its first branch. Approximate (a prologue placed
    after a branch is missed), which a guard against huge frames needs no
    more than."""
    frames, name, size, open_, regs = [], None, 0, False, {}

    def close():
        if name is not None:
            frames.append((size, name))

    for line in disassembly.splitlines():
        header = FUNC_HEADER.match(line)
        if header:
            close()
            name, size, open_, regs = header.group(1), 0, True, {}
            continue
        fields = line.split("\t")
        if not open_ or len(fields) < 3 or not fields[0].strip().endswith(":"):
            continue
        op, operands = fields[2].strip(), fields[3].strip() if len(fields) > 3 else ""
        if op in ("push", "push.w", "stmdb") and "{" in operands:
            size += 4 * register_count(operands[operands.index("{"):])
        elif op == "vpush":
            size += (8 if "d" in operands else 4) * register_count(operands)
        elif op in ("sub", "sub.w", "subw") and SUB_SP_IMM.match(operands):
            size += int(SUB_SP_IMM.match(operands).group(1))
        elif op in ("sub", "sub.w") and SUB_SP_REG.match(operands):
            size += regs.get(SUB_SP_REG.match(operands).group(1), 0)
        elif op in ("movw", "mov.w", "mov") and MOV_IMM.match(operands):
            reg, value = MOV_IMM.match(operands).groups()
            regs[reg] = int(value)
        elif op == "movt" and MOV_IMM.match(operands):
            reg, value = MOV_IMM.match(operands).groups()
            regs[reg] = regs.get(reg, 0) + (int(value) << 16)
        elif BRANCH.match(op):
            open_ = False
    close()
    return sorted(frames, reverse=True)


def frame_check(rel: str, disassembly: str) -> bool:
    """Prints the image's largest stack frame as a check against FRAME_LIMIT."""
    frames = stack_frames(disassembly)
    size, name = frames[0] if frames else (0, "-")
    ok = size <= FRAME_LIMIT
    verdict = "PASS" if ok else "FAIL"
    print(f"  {verdict}    stack frames of {rel}: largest {size:,} B ({demangle(name)}), "
          f"limit {FRAME_LIMIT:,}")
    return ok


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
    budget_lines = []
    elves = sorted(pathlib.Path(outdir).glob("**/zephyr/zephyr.elf"))
    print(f"  {'image':72} {'flash B':>9} {'RAM B':>9}")
    for elf in elves:
        if any(part.startswith("empty_cpu0") for part in elf.parts):
            # mps2/an521/cpu1 builds make the board's own placeholder CPU0
            # image too; it is Zephyr's, not ours.
            continue
        rel = short_name(elf.relative_to(outdir).parent.parent)
        if rel == ".":
            # A build directory of its own (west build -d DIR): name it.
            rel = pathlib.Path(outdir).resolve().name
        flash, ram = sizes(elf)
        print(f"  {rel:72} {flash:9} {ram:9}")
        report_breakdown(elf)
        dis = run("arm-none-eabi-objdump", "-d", str(elf))
        if frame_check(rel, dis):
            passed += 1
        else:
            failed += 1
        if rel in CPU0_BUDGET_IMAGES:
            line, verdict = cpu0_budget_line(rel, flash)
            budget_lines.append(line)
            passed += verdict > 0
            failed += verdict < 0
        cfg = config(elf)
        if not re.search(r"^CONFIG_SOC_\w+_CPU1=y", cfg, re.M):
            continue
        line, verdict = budget_line(rel, flash)
        budget_lines.append(line)
        passed += verdict > 0
        failed += verdict < 0
        syms = run("arm-none-eabi-nm", str(elf)).split("\n")
        soft = sorted({s.split()[-1] for s in syms if s.split() and SOFT_FLOAT.match(s.split()[-1])})
        fpu = [l.strip() for l in dis.splitlines() if FPU_INSN.search(l)][:5]
        if soft or fpu:
            print(f"  FAIL    CPU1 image {rel}: soft-float {soft[:8]} FPU {fpu}")
            failed += 1
        else:
            print(f"  PASS    CPU1 image {rel}: no soft-float helper, no FPU instruction")
            passed += 1
    for line in budget_lines:
        print(line)
    print(f"{passed} {failed}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
