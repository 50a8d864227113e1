//! The DSP extension's SIMD instructions the int8 kernels use, and the
//! dot products built on them.
//!
//! On a core with the extension (`cfg(synaptic_dsp)`, see `build.rs`) each
//! function below is one instruction; elsewhere it is the same arithmetic
//! in portable Rust, so that host tests run the packed kernels exactly as
//! the core does and compare them with the portable ones.

use crate::quant::Requant;

/// `SXTB16`: bytes 0 and 2 of `x`, sign-extended into the low and high
/// int16 halves.
#[inline(always)]
pub(crate) fn sxtb16(x: u32) -> u32 {
    #[cfg(synaptic_dsp)]
    {
        let r: u32;
        // SAFETY: one register-to-register instruction of the DSP extension,
        // which `cfg(synaptic_dsp)` guarantees the core has; no memory, no
        // stack, no flags. `.cpu` lets LLVM's assembler accept it on the
        // plain thumbv8m.main targets Zephyr builds for.
        unsafe {
            core::arch::asm!(
                ".cpu cortex-m33",
                "sxtb16 {r}, {x}",
                r = lateout(reg) r,
                x = in(reg) x,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        r
    }
    #[cfg(not(synaptic_dsp))]
    {
        let lo = u32::from(x as u8 as i8 as i16 as u16);
        let hi = u32::from((x >> 16) as u8 as i8 as i16 as u16);
        lo | hi << 16
    }
}

/// `SXTB16 ..., ROR #8`: bytes 1 and 3 of `x`, sign-extended into the low
/// and high int16 halves.
#[inline(always)]
pub(crate) fn sxtb16_ror8(x: u32) -> u32 {
    #[cfg(synaptic_dsp)]
    {
        let r: u32;
        // SAFETY: as in `sxtb16`.
        unsafe {
            core::arch::asm!(
                ".cpu cortex-m33",
                "sxtb16 {r}, {x}, ror #8",
                r = lateout(reg) r,
                x = in(reg) x,
                options(pure, nomem, nostack, preserves_flags)
            );
        }
        r
    }
    #[cfg(not(synaptic_dsp))]
    {
        sxtb16(x >> 8)
    }
}

/// An instruction of the DSP extension on two registers' int16 halves, as
/// a function: one instruction where the core has it, else the portable
/// arithmetic given.
macro_rules! halves_op {
    ($(#[$doc:meta])* $name:ident, $template:literal, |$a:ident, $b:ident| $portable:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub(crate) fn $name($a: u32, $b: u32) -> u32 {
            #[cfg(synaptic_dsp)]
            {
                let r: u32;
                // SAFETY: as in `sxtb16`; the instruction writes at most the
                // GE flags besides `r`, which no Rust code reads
                // (`preserves_flags` covers N, Z, C, V).
                unsafe {
                    core::arch::asm!(
                        ".cpu cortex-m33",
                        $template,
                        r = lateout(reg) r,
                        a = in(reg) $a,
                        b = in(reg) $b,
                        options(pure, nomem, nostack, preserves_flags)
                    );
                }
                r
            }
            #[cfg(not(synaptic_dsp))]
            {
                $portable
            }
        }
    };
}

halves_op!(
    /// `SADD16`: the int16 halves of `a` and `b` added (each wraps on its
    /// own).
    sadd16, "sadd16 {r}, {a}, {b}", |a, b| {
        let lo = (a as u16).wrapping_add(b as u16);
        let hi = ((a >> 16) as u16).wrapping_add((b >> 16) as u16);
        u32::from(lo) | u32::from(hi) << 16
    }
);

halves_op!(
    /// `SXTAB16`: `acc`'s int16 halves plus bytes 0 and 2 of `x`,
    /// sign-extended (each half wraps on its own).
    sxtab16, "sxtab16 {r}, {a}, {b}", |acc, x| sadd16(acc, sxtb16(x))
);

halves_op!(
    /// `SXTAB16 ..., ROR #8`: `acc`'s int16 halves plus bytes 1 and 3 of `x`.
    sxtab16_ror8, "sxtab16 {r}, {a}, {b}, ror #8", |acc, x| sadd16(acc, sxtb16_ror8(x))
);

/// Four int8 channels summed over the pixels at `offsets` of `x` (each a
/// word: channels 0 to 3), as int16 halves: channels 0 and 2 in the first
/// word, 1 and 3 in the second. Exact while there are at most 256 offsets
/// (`|Σ| <= 128 * 256`); `None` if an offset lies outside `x`.
#[inline(always)]
pub(crate) fn sum4(x: &[u8], offsets: impl Iterator<Item = usize>) -> Option<(u32, u32)> {
    let (mut even, mut odd) = (0u32, 0u32);
    for o in offsets {
        let w = word(x.get(o..o + 4)?);
        even = sxtab16(even, w);
        odd = sxtab16_ror8(odd, w);
    }
    Some((even, odd))
}

/// A multiply-accumulate instruction of the DSP extension on int16
/// halves, as a function: one instruction where the core has it, else the
/// portable arithmetic given (all wrap: the instructions set the Q flag
/// on overflow and keep the low 32 bits).
macro_rules! multiply_accumulate {
    ($(#[$doc:meta])* $name:ident, $instruction:literal, |$a:ident, $b:ident, $acc:ident| $portable:expr) => {
        $(#[$doc])*
        #[inline(always)]
        pub(crate) fn $name($a: u32, $b: u32, $acc: i32) -> i32 {
            #[cfg(synaptic_dsp)]
            {
                let r: i32;
                // SAFETY: as in `sxtb16`; the instruction writes only the Q
                // flag, which no Rust code reads (`preserves_flags` covers
                // N, Z, C, V).
                unsafe {
                    core::arch::asm!(
                        ".cpu cortex-m33",
                        concat!($instruction, " {r}, {a}, {b}, {acc}"),
                        r = lateout(reg) r,
                        a = in(reg) $a,
                        b = in(reg) $b,
                        acc = in(reg) $acc,
                        options(pure, nomem, nostack, preserves_flags)
                    );
                }
                r
            }
            #[cfg(not(synaptic_dsp))]
            {
                $portable
            }
        }
    };
}

/// The low int16 half of `x`, and the high one.
#[cfg(not(synaptic_dsp))]
#[inline(always)]
fn halves(x: u32) -> (i32, i32) {
    (i32::from(x as i16), i32::from((x >> 16) as i16))
}

multiply_accumulate!(
    /// `SMLAD`: `acc` plus the products of the low int16 halves and of
    /// the high ones.
    smlad, "smlad", |a, b, acc| {
        let ((a0, a1), (b0, b1)) = (halves(a), halves(b));
        acc.wrapping_add(a0 * b0).wrapping_add(a1 * b1)
    }
);

multiply_accumulate!(
    /// `SMLABB`: `acc` plus the product of the low int16 halves (`mac4`'s;
    /// `mac_taps_loop` writes it out).
    #[cfg(any(test, not(synaptic_dsp)))]
    smlabb, "smlabb", |a, b, acc| acc.wrapping_add(halves(a).0 * halves(b).0)
);

multiply_accumulate!(
    /// `SMLATT`: `acc` plus the product of the high int16 halves.
    #[cfg(any(test, not(synaptic_dsp)))]
    smlatt, "smlatt", |a, b, acc| acc.wrapping_add(halves(a).1 * halves(b).1)
);

/// A little-endian word from four bytes (one unaligned load on
/// Cortex-M33).
#[inline(always)]
fn word(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

/// A word split into its even and its odd bytes, as int16 pairs.
#[inline(always)]
fn split(b: &[u8]) -> (u32, u32) {
    let w = word(b);
    (sxtb16(w), sxtb16_ror8(w))
}

/// `acc[i] + Σ x[o + i] * w[p + i]` over the taps `(o, p)` of `offsets`,
/// for the four lanes `i` (four channels of a depthwise window), or `None`
/// if a tap lies outside `x` or `w`. On the DSP extension the loop over
/// the taps is written out (`mac_taps_loop`) once the last, farthest tap
/// is checked (the offsets increase).
#[inline(always)]
pub(crate) fn mac_taps(
    x: Option<&[u8]>,
    w: Option<&[u8]>,
    offsets: &[(u32, u32)],
    acc: [i32; 4],
) -> Option<[i32; 4]> {
    let (x, w) = (x?, w?);
    let &(last_x, last_w) = offsets.last()?;
    if last_x as usize + 4 > x.len() || last_w as usize + 4 > w.len() {
        return None;
    }
    #[cfg(synaptic_dsp)]
    {
        Some(mac_taps_loop(x, w, offsets, acc))
    }
    #[cfg(not(synaptic_dsp))]
    {
        offsets.iter().try_fold(acc, |acc, &(o, p)| {
            let (o, p) = (o as usize, p as usize);
            Some(mac4(x.get(o..o + 4)?, w.get(p..p + 4)?, acc))
        })
    }
}

/// [`mac_taps`]' loop in assembly: 14 instructions for a tap's 4
/// products. `offsets` is not empty and every tap lies inside `x` and `w`
/// (checked by the caller).
#[cfg(synaptic_dsp)]
#[inline(always)]
fn mac_taps_loop(x: &[u8], w: &[u8], offsets: &[(u32, u32)], acc: [i32; 4]) -> [i32; 4] {
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    // SAFETY: reads `offsets.len()` pairs of `offsets` and, for each, a
    // word of `x` and of `w` at its offsets (unaligned loads, which
    // Cortex-M33 allows), all inside the slices: the caller checked the
    // last, farthest tap and the offsets increase. Writes only register
    // operands and the flags.
    unsafe {
        core::arch::asm!(
            ".cpu cortex-m33",
            "2:",
            "ldrd {ox}, {ow}, [{tp}], #8",
            "ldr {ox}, [{xb}, {ox}]",
            "ldr {ow}, [{wb}, {ow}]",
            "sxtb16 {xe}, {ox}",
            "sxtb16 {ox}, {ox}, ror #8",
            "sxtb16 {we}, {ow}",
            "sxtb16 {ow}, {ow}, ror #8",
            "smlabb {a0}, {xe}, {we}, {a0}",
            "smlatt {a2}, {xe}, {we}, {a2}",
            "smlabb {a1}, {ox}, {ow}, {a1}",
            "smlatt {a3}, {ox}, {ow}, {a3}",
            "subs {n}, {n}, #1",
            "bne 2b",
            a0 = inout(reg) a0,
            a1 = inout(reg) a1,
            a2 = inout(reg) a2,
            a3 = inout(reg) a3,
            tp = inout(reg) offsets.as_ptr() => _,
            n = inout(reg) offsets.len() => _,
            xb = in(reg) x.as_ptr(),
            wb = in(reg) w.as_ptr(),
            ox = out(reg) _,
            ow = out(reg) _,
            xe = out(reg) _,
            we = out(reg) _,
            options(nostack, readonly)
        );
    }
    [a0, a1, a2, a3]
}

/// `acc[i] + x[i] * w[i]` for four int8 lanes (four channels of a
/// depthwise convolution): 4 products for 2 loads, 4 splits and 4
/// multiply-accumulates (the portable form of `mac_taps_loop`'s step).
#[cfg(any(test, not(synaptic_dsp)))]
#[inline(always)]
fn mac4(x: &[u8], w: &[u8], acc: [i32; 4]) -> [i32; 4] {
    let ((xe, xo), (we, wo)) = (split(x), split(w));
    [
        smlabb(xe, we, acc[0]),
        smlabb(xo, wo, acc[1]),
        smlatt(xe, we, acc[2]),
        smlatt(xo, wo, acc[3]),
    ]
}

/// `L` int8 rows of one length (a multiple of 4) as the split words
/// [`dot_windows`] reads: for each word of each row, its even and its odd
/// bytes as int16 pairs, the rows' in turn (`out` holds `L / 2` words
/// for each byte of a row).
#[inline(never)]
pub(crate) fn interleave<const L: usize>(xs: [&[u8]; L], out: &mut [u32]) {
    for (g, out) in out.chunks_exact_mut(2 * L).enumerate() {
        for (x, out) in xs.iter().zip(out.chunks_exact_mut(2)) {
            let (even, odd) = x.get(4 * g..4 * g + 4).map_or((0, 0), split);
            out[0] = even;
            out[1] = odd;
        }
    }
}

/// `Σ x * w` of `L` int8 rows, given as their [`interleave`]d split
/// words, with one int8 filter row, added to `acc`: each filter word is
/// split once for all rows, so `4 L` products cost a filter load and
/// split, the rows' split words and `2 L` `SMLAD`s.
///
/// On the DSP extension the loops for 2 and 4 rows are written out
/// (`dot2x1_loop`, `dot4x1_loop`).
#[inline(always)]
pub(crate) fn dot_windows<const L: usize>(xs: &[u32], w: &[u8], acc: [i32; L]) -> [i32; L] {
    #[cfg(synaptic_dsp)]
    {
        if let Ok(&acc2) = <&[i32; 2]>::try_from(&acc[..]) {
            let r = dot2x1_loop(xs, w, acc2);
            return core::array::from_fn(|i| r[i]);
        }
        if let Ok(&acc4) = <&[i32; 4]>::try_from(&acc[..]) {
            let r = dot4x1_loop(xs, w, acc4);
            return core::array::from_fn(|i| r[i]);
        }
    }
    let mut acc = acc;
    for (x, w) in xs.chunks_exact(2 * L).zip(w.chunks_exact(4)) {
        let (we, wo) = split(w);
        for (a, x) in acc.iter_mut().zip(x.chunks_exact(2)) {
            *a = smlad(x[1], wo, smlad(x[0], we, *a));
        }
    }
    acc
}

/// One group of four filter bytes in [`dot4x1_loop`]: the filter word
/// split, the four rows' split words (LDRD each), 8 `SMLAD`s.
#[cfg(synaptic_dsp)]
macro_rules! dot4x1_group {
    () => {
        "ldr {w}, [{wp}], #4
        ldrd {x0}, {x1}, [{xp}], #8
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a0}, {x0}, {we}, {a0}
        smlad {a0}, {x1}, {w}, {a0}
        ldrd {x0}, {x1}, [{xp}], #8
        smlad {a1}, {x0}, {we}, {a1}
        smlad {a1}, {x1}, {w}, {a1}
        ldrd {x0}, {x1}, [{xp}], #8
        smlad {a2}, {x0}, {we}, {a2}
        smlad {a2}, {x1}, {w}, {a2}
        ldrd {x0}, {x1}, [{xp}], #8
        smlad {a3}, {x0}, {we}, {a3}
        smlad {a3}, {x1}, {w}, {a3}"
    };
}

/// [`dot_windows`]' loop for four rows in assembly, over the whole groups
/// of four bytes both `xs` and `w` have: an odd group first, then two a
/// turn (16 instructions for 16 products).
#[cfg(synaptic_dsp)]
#[inline(always)]
fn dot4x1_loop(xs: &[u32], w: &[u8], acc: [i32; 4]) -> [i32; 4] {
    let groups = (xs.len() / 8).min(w.len() / 4);
    let [mut a0, mut a1, mut a2, mut a3] = acc;
    // SAFETY: the loop reads `groups` words of `w` (unaligned loads, which
    // Cortex-M33 allows) and `8 * groups` words of `xs` (aligned; LDRD
    // needs only word alignment), within both slices by `groups`' bound
    // (none when it is 0); it writes only its register operands and the
    // flags.
    unsafe {
        core::arch::asm!(
            ".cpu cortex-m33",
            "lsrs {n}, {n}, #1",
            "bcc 3f",
            dot4x1_group!(),
            "3:",
            "cmp {n}, #0",
            "beq 4f",
            "2:",
            dot4x1_group!(),
            dot4x1_group!(),
            "subs {n}, {n}, #1",
            "bne 2b",
            "4:",
            a0 = inout(reg) a0,
            a1 = inout(reg) a1,
            a2 = inout(reg) a2,
            a3 = inout(reg) a3,
            xp = inout(reg) xs.as_ptr() => _,
            wp = inout(reg) w.as_ptr() => _,
            n = inout(reg) groups => _,
            w = out(reg) _,
            we = out(reg) _,
            x0 = out(reg) _,
            x1 = out(reg) _,
            options(nostack, readonly)
        );
    }
    [a0, a1, a2, a3]
}

/// One group of four filter bytes in [`dot2x1_loop`]: the filter word
/// split, the four split input words, four `SMLAD`s.
#[cfg(synaptic_dsp)]
macro_rules! dot2x1_group {
    () => {
        "ldr {w}, [{wp}], #4
        ldrd {x0}, {x1}, [{xp}], #8
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a0}, {x0}, {we}, {a0}
        smlad {a0}, {x1}, {w}, {a0}
        ldrd {x0}, {x1}, [{xp}], #8
        smlad {a1}, {x0}, {we}, {a1}
        smlad {a1}, {x1}, {w}, {a1}"
    };
}

/// [`dot2x1`]'s loop in assembly, over the whole groups of four bytes
/// both `xs` and `w` have: an odd group first, then two a turn (10
/// instructions for 8 products; LLVM's loop had 13).
#[cfg(synaptic_dsp)]
#[inline(always)]
fn dot2x1_loop(xs: &[u32], w: &[u8], acc: [i32; 2]) -> [i32; 2] {
    let groups = (xs.len() / 4).min(w.len() / 4);
    let [mut a0, mut a1] = acc;
    // SAFETY: the loop reads `groups` words of `w` (unaligned loads, which
    // Cortex-M33 allows) and `4 * groups` words of `xs` (aligned; LDRD needs
    // only word alignment), within both slices by `groups`' bound (none
    // when it is 0); it writes only its register operands and the flags
    // (no `preserves_flags`).
    unsafe {
        core::arch::asm!(
            ".cpu cortex-m33",
            "lsrs {n}, {n}, #1",
            "bcc 3f",
            dot2x1_group!(),
            "3:",
            "cmp {n}, #0",
            "beq 4f",
            "2:",
            dot2x1_group!(),
            dot2x1_group!(),
            "subs {n}, {n}, #1",
            "bne 2b",
            "4:",
            a0 = inout(reg) a0,
            a1 = inout(reg) a1,
            xp = inout(reg) xs.as_ptr() => _,
            wp = inout(reg) w.as_ptr() => _,
            n = inout(reg) groups => _,
            w = out(reg) _,
            we = out(reg) _,
            x0 = out(reg) _,
            x1 = out(reg) _,
            options(nostack, readonly)
        );
    }
    [a0, a1]
}

/// `Σ x * w` over int8 rows of one length, added to `acc`: rows `x0` and
/// `x1` with filter rows `w0` and `w1`, as `[x0 w0, x0 w1, x1 w0, x1 w1]`.
///
/// Four bytes at a time: `SXTB16` splits a word into its even and its odd
/// bytes as int16 pairs, the same split for `x` and `w`, so `SMLAD` adds
/// byte 0's product and byte 2's, then byte 1's and byte 3's. Every
/// product fits an int16 x int16 and the sums wrap, so any order gives the
/// reference's value. Each word is split once and used twice: 16 products
/// cost 4 loads, 8 splits and 8 `SMLAD`s.
// Not inlined: on Cortex-M its four accumulators and four pointers then
// stay in registers.
#[inline(never)]
pub(crate) fn dot2x2(x0: &[u8], x1: &[u8], w0: &[u8], w1: &[u8], acc: [i32; 4]) -> [i32; 4] {
    let [mut a00, mut a01, mut a10, mut a11] = acc;
    let n = x0.len().min(x1.len()).min(w0.len()).min(w1.len());
    let (x0, x1, w0, w1) = (&x0[..n], &x1[..n], &w0[..n], &w1[..n]);
    // One index for the four rows (one register, not four iterators).
    let mut i = 0;
    while i + 4 <= n {
        let (x0e, x0o) = split(&x0[i..i + 4]);
        let (w0e, w0o) = split(&w0[i..i + 4]);
        a00 = smlad(x0o, w0o, smlad(x0e, w0e, a00));
        let (w1e, w1o) = split(&w1[i..i + 4]);
        a01 = smlad(x0o, w1o, smlad(x0e, w1e, a01));
        let (x1e, x1o) = split(&x1[i..i + 4]);
        a10 = smlad(x1o, w0o, smlad(x1e, w0e, a10));
        a11 = smlad(x1o, w1o, smlad(x1e, w1e, a11));
        i += 4;
    }
    while i < n {
        let (x0, x1) = (i32::from(x0[i] as i8), i32::from(x1[i] as i8));
        let (w0, w1) = (i32::from(w0[i] as i8), i32::from(w1[i] as i8));
        a00 = a00.wrapping_add(x0 * w0);
        a01 = a01.wrapping_add(x0 * w1);
        a10 = a10.wrapping_add(x1 * w0);
        a11 = a11.wrapping_add(x1 * w1);
        i += 1;
    }
    [a00, a01, a10, a11]
}

/// An int8 row (a multiple of 4 long) plus `offset` (an input offset:
/// every sum fits an int16), as the split words [`dot_split_rows`] reads:
/// for each word, bytes 0 and 2, then bytes 1 and 3, as int16 pairs
/// (`SXTB16` and `SADD16`: 6 instructions a word).
pub(crate) fn split_offset(x: &[u8], offset: i32, out: &mut [u32]) {
    let offsets = u32::from(offset as u16) * 0x0001_0001;
    for (out, x) in out.chunks_exact_mut(2).zip(x.chunks_exact(4)) {
        let w = word(x);
        out[0] = sadd16(sxtb16(w), offsets);
        out[1] = sadd16(sxtb16_ror8(w), offsets);
    }
}

/// `acc[j] += Σ x * w_j` for the filter rows `w_j` (int8, `stride` bytes
/// apart from the first, at `filter[j * stride..]`) of one row `x`, given
/// as its [`split_offset`] words: four rows at a time, each word of `x`
/// loaded once for all four (each row's 4 products a step cost its filter
/// load and split and 2 `SMLAD`s), then a pair, then one. On the DSP
/// extension the loops are written out (`dot_split1x4_loop`,
/// `dot_split1x2_loop`). `None` if a row lies outside `filter`.
#[inline(never)]
pub(crate) fn dot_split_rows(
    xs: &[u32],
    filter: &[u8],
    stride: usize,
    acc: &mut [i32],
) -> Option<()> {
    let len = 2 * xs.len();
    let row = |j: usize| filter.get(j * stride..j * stride + len);
    let quads = acc.len() / 4 * 4;
    let (by_four, rest) = acc.split_at_mut(quads);
    for (q, a) in by_four.chunks_exact_mut(4).enumerate() {
        // Rows 4q to 4q + 3, all inside `filter`.
        let rows = filter.get(4 * q * stride..(4 * q + 3) * stride + len)?;
        let d = dot_split1x4(xs, rows, stride);
        for (a, d) in a.iter_mut().zip(d) {
            *a = a.wrapping_add(d);
        }
    }
    let mut j = quads;
    for a in rest.chunks_mut(2) {
        let w0 = row(j)?;
        let w1 = if a.len() == 2 { row(j + 1)? } else { w0 };
        let d = dot_split1x2(xs, w0, w1);
        for (a, d) in a.iter_mut().zip(d) {
            *a = a.wrapping_add(d);
        }
        j += a.len();
    }
    Some(())
}

/// `Σ x * w_j` of one row, given as its [`split_offset`] words, with the
/// four int8 filter rows `rows[j * stride..]` (each `2 * xs.len()` bytes,
/// all inside `rows`).
#[inline(always)]
fn dot_split1x4(xs: &[u32], rows: &[u8], stride: usize) -> [i32; 4] {
    #[cfg(synaptic_dsp)]
    {
        dot_split1x4_loop(xs, rows, stride)
    }
    #[cfg(not(synaptic_dsp))]
    {
        let len = 2 * xs.len();
        core::array::from_fn(|j| {
            let w = &rows[j * stride..j * stride + len];
            dot_split1x2(xs, w, w)[0]
        })
    }
}

/// One group of four bytes in [`dot_split1x4_loop`]: the two split input
/// words, then for each row its filter word loaded, split and 2 `SMLAD`s
/// (rows 1 and 3 read at `stride` past rows 0 and 2, before those move on).
#[cfg(synaptic_dsp)]
macro_rules! dot_split1x4_group {
    () => {
        "ldrd {x0}, {x1}, [{xp}], #8
        ldr {w}, [{p0}, {st}]
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a1}, {x0}, {we}, {a1}
        smlad {a1}, {x1}, {w}, {a1}
        ldr {w}, [{p0}], #4
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a0}, {x0}, {we}, {a0}
        smlad {a0}, {x1}, {w}, {a0}
        ldr {w}, [{p2}, {st}]
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a3}, {x0}, {we}, {a3}
        smlad {a3}, {x1}, {w}, {a3}
        ldr {w}, [{p2}], #4
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a2}, {x0}, {we}, {a2}
        smlad {a2}, {x1}, {w}, {a2}"
    };
}

/// [`dot_split1x4`]'s loop in assembly, over the whole groups of four
/// bytes of `xs`: an odd group first, then two a turn (22 instructions for
/// 16 products).
#[cfg(synaptic_dsp)]
#[inline(always)]
fn dot_split1x4_loop(xs: &[u32], rows: &[u8], stride: usize) -> [i32; 4] {
    let groups = xs.len() / 2;
    let [mut a0, mut a1, mut a2, mut a3] = [0i32; 4];
    // Every row's last group inside `rows` (else no products).
    if groups == 0 || 3 * stride + 4 * groups > rows.len() {
        return [0; 4];
    }
    // SAFETY: reads `2 * groups` words of `xs` (aligned; LDRD needs only
    // word alignment) and `groups` words of each of the four rows starting
    // at `rows`, `rows + stride`, `rows + 2 stride`, `rows + 3 stride`
    // (unaligned loads, which Cortex-M33 allows), all inside the slices:
    // checked above. Writes only register operands and the flags.
    unsafe {
        core::arch::asm!(
            ".cpu cortex-m33",
            "lsrs {n}, {n}, #1",
            "bcc 3f",
            dot_split1x4_group!(),
            "3:",
            "cmp {n}, #0",
            "beq 4f",
            "2:",
            dot_split1x4_group!(),
            dot_split1x4_group!(),
            "subs {n}, {n}, #1",
            "bne 2b",
            "4:",
            a0 = inout(reg) a0,
            a1 = inout(reg) a1,
            a2 = inout(reg) a2,
            a3 = inout(reg) a3,
            xp = inout(reg) xs.as_ptr() => _,
            p0 = inout(reg) rows.as_ptr() => _,
            p2 = inout(reg) rows.as_ptr().wrapping_add(2 * stride) => _,
            st = in(reg) stride,
            n = inout(reg) groups => _,
            w = out(reg) _,
            we = out(reg) _,
            x0 = out(reg) _,
            x1 = out(reg) _,
            options(nostack, readonly)
        );
    }
    [a0, a1, a2, a3]
}

/// `Σ x * w` of one row, given as its [`split_offset`] words, with two
/// int8 filter rows, as `[x w0, x w1]`.
#[inline(always)]
fn dot_split1x2(xs: &[u32], w0: &[u8], w1: &[u8]) -> [i32; 2] {
    #[cfg(synaptic_dsp)]
    {
        dot_split1x2_loop(xs, w0, w1)
    }
    #[cfg(not(synaptic_dsp))]
    {
        let (mut a0, mut a1) = (0i32, 0i32);
        let filters = w0.chunks_exact(4).zip(w1.chunks_exact(4));
        for (x, (w0, w1)) in xs.chunks_exact(2).zip(filters) {
            let ((w0e, w0o), (w1e, w1o)) = (split(w0), split(w1));
            a0 = smlad(x[1], w0o, smlad(x[0], w0e, a0));
            a1 = smlad(x[1], w1o, smlad(x[0], w1e, a1));
        }
        [a0, a1]
    }
}

/// One group of four bytes in [`dot_split1x2_loop`].
#[cfg(synaptic_dsp)]
macro_rules! dot_split1x2_group {
    () => {
        "ldrd {x0}, {x1}, [{xp}], #8
        ldr {w}, [{w0p}], #4
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a0}, {x0}, {we}, {a0}
        smlad {a0}, {x1}, {w}, {a0}
        ldr {w}, [{w1p}], #4
        sxtb16 {we}, {w}
        sxtb16 {w}, {w}, ror #8
        smlad {a1}, {x0}, {we}, {a1}
        smlad {a1}, {x1}, {w}, {a1}"
    };
}

/// [`dot_split1x2`]'s loop in assembly, over the whole groups of four
/// bytes all three rows have: an odd group first, then two a turn (12
/// instructions for 8 products).
#[cfg(synaptic_dsp)]
#[inline(always)]
fn dot_split1x2_loop(xs: &[u32], w0: &[u8], w1: &[u8]) -> [i32; 2] {
    let groups = (xs.len() / 2).min(w0.len() / 4).min(w1.len() / 4);
    let (mut a0, mut a1) = (0i32, 0i32);
    // SAFETY: reads `groups` words of `w0` and of `w1` (unaligned loads,
    // which Cortex-M33 allows) and `2 * groups` words of `xs` (aligned;
    // LDRD needs only word alignment), within all three by `groups`'
    // bound (none when it is 0); writes only register operands and the
    // flags.
    unsafe {
        core::arch::asm!(
            ".cpu cortex-m33",
            "lsrs {n}, {n}, #1",
            "bcc 3f",
            dot_split1x2_group!(),
            "3:",
            "cmp {n}, #0",
            "beq 4f",
            "2:",
            dot_split1x2_group!(),
            dot_split1x2_group!(),
            "subs {n}, {n}, #1",
            "bne 2b",
            "4:",
            a0 = inout(reg) a0,
            a1 = inout(reg) a1,
            xp = inout(reg) xs.as_ptr() => _,
            w0p = inout(reg) w0.as_ptr() => _,
            w1p = inout(reg) w1.as_ptr() => _,
            n = inout(reg) groups => _,
            w = out(reg) _,
            we = out(reg) _,
            x0 = out(reg) _,
            x1 = out(reg) _,
            options(nostack, readonly)
        );
    }
    [a0, a1]
}

/// `dst` from as many bytes of `src`, for the short rows of a copied
/// window: on the DSP extension's core a loop of word loads and stores
/// (`words_loop`), then the last bytes one by one (LLVM turns a short copy
/// loop into a call to `memcpy`, dearer than the copy of a few bytes).
#[inline(always)]
pub(crate) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    let n = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..n], &src[..n]);
    #[cfg(synaptic_dsp)]
    if n <= SHORT {
        let words = n / 4 * 4;
        words_loop(&mut dst[..words], Some(&src[..words]), 0);
        tail(&mut dst[words..], |i| src[words + i]);
        return;
    }
    dst.copy_from_slice(src);
}

/// The longest copy or fill [`copy_bytes`] and [`fill_bytes`] write out
/// (a window's rows are at most 1 KB); past it, `memcpy` and `memset`
/// (whose unaligned paths are slower on rows of a few words).
#[cfg(synaptic_dsp)]
const SHORT: usize = 1024;

/// `dst` filled with `value`, as [`copy_bytes`] copies.
#[inline(always)]
pub(crate) fn fill_bytes(dst: &mut [u8], value: u8) {
    #[cfg(synaptic_dsp)]
    if dst.len() <= SHORT {
        let words = dst.len() / 4 * 4;
        let (body, rest) = dst.split_at_mut(words);
        words_loop(body, None, u32::from(value) * 0x0101_0101);
        tail(rest, |_| value);
        return;
    }
    dst.fill(value);
}

/// The last 0 to 3 bytes of a copy or fill, written out (no loop for LLVM
/// to turn into a call).
#[cfg(synaptic_dsp)]
#[inline(always)]
fn tail(dst: &mut [u8], byte: impl Fn(usize) -> u8) {
    match dst {
        [a] => *a = byte(0),
        [a, b] => (*a, *b) = (byte(0), byte(1)),
        [a, b, c] => (*a, *b, *c) = (byte(0), byte(1), byte(2)),
        _ => {}
    }
}

/// `dst` (a multiple of 4 long) word by word from `src` (as long), or
/// filled with `value` without one.
#[cfg(synaptic_dsp)]
#[inline(always)]
fn words_loop(dst: &mut [u8], src: Option<&[u8]>, value: u32) {
    let words = dst.len() / 4;
    if words == 0 {
        return;
    }
    match src {
        // SAFETY: reads and writes `words` words (unaligned accesses,
        // which Cortex-M33 allows) inside `src` and `dst`, both at least
        // `4 * words` bytes long (the callers cut them to one length); a
        // shared and a mutable borrow do not overlap. Writes only register
        // operands and the flags otherwise.
        Some(src) if src.len() >= 4 * words => unsafe {
            core::arch::asm!(
                // An odd word first, then two a turn.
                "lsrs {n}, {n}, #1",
                "bcc 3f",
                "ldr {w}, [{sp}], #4",
                "str {w}, [{dp}], #4",
                "3:",
                "cmp {n}, #0",
                "beq 4f",
                "2:",
                "ldr {w}, [{sp}], #4",
                "ldr {v}, [{sp}], #4",
                "str {w}, [{dp}], #4",
                "str {v}, [{dp}], #4",
                "subs {n}, {n}, #1",
                "bne 2b",
                "4:",
                sp = inout(reg) src.as_ptr() => _,
                dp = inout(reg) dst.as_mut_ptr() => _,
                n = inout(reg) words => _,
                w = out(reg) _,
                v = out(reg) _,
                options(nostack)
            );
        },
        Some(_) => {}
        // SAFETY: writes `words` words (unaligned stores, which Cortex-M33
        // allows) inside `dst`, `4 * words` bytes long. Writes only
        // register operands and the flags otherwise.
        None => unsafe {
            core::arch::asm!(
                "2:",
                "str {v}, [{dp}], #4",
                "subs {n}, {n}, #1",
                "bne 2b",
                dp = inout(reg) dst.as_mut_ptr() => _,
                n = inout(reg) words => _,
                v = in(reg) value,
                options(nostack)
            );
        },
    }
}

/// The fully-connected outputs `out[j]`: `acc[j]` requantised with the
/// single rounding of [`Requant::once`] by the `(multiplier, shift)`
/// records of `channels` (8 bytes each, little-endian; one per output, or
/// one for all unless `per_channel`), `offset` added, clamped to int8
/// (`SSAT`). Every shift must be -1 to -23 and `offset` an int8 zero point
/// (the caller checks). On the DSP extension the loop is written out
/// (`requantize_once_loop`: the record's rounding constant worked out in
/// 6 instructions, 17 an output).
#[inline(never)]
pub(crate) fn requantize_once(
    acc: &[i32],
    channels: &[u8],
    per_channel: bool,
    offset: i32,
    out: &mut [u8],
) {
    let records = if per_channel {
        channels.len() / 8
    } else {
        usize::MAX
    };
    let n = acc.len().min(out.len()).min(records);
    if channels.len() < 8 {
        return;
    }
    #[cfg(synaptic_dsp)]
    {
        requantize_once_loop(&acc[..n], channels, per_channel, offset, &mut out[..n]);
    }
    #[cfg(not(synaptic_dsp))]
    {
        for (j, (o, &a)) in out[..n].iter_mut().zip(acc).enumerate() {
            let c = &channels[if per_channel { 8 * j } else { 0 }..];
            let m = i32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            let shift = i32::from_le_bytes([c[4], c[5], c[6], c[7]]);
            let (r, _) = Requant::once_checked(m, shift, offset);
            *o = r.apply(a).clamp(-128, 127) as i8 as u8;
        }
    }
}

/// [`requantize_once`]'s loop in assembly. `acc` and `out` have one
/// length; `channels` holds that many records (`per_channel`) or one.
#[cfg(synaptic_dsp)]
#[inline(always)]
fn requantize_once_loop(
    acc: &[i32],
    channels: &[u8],
    per_channel: bool,
    offset: i32,
    out: &mut [u8],
) {
    if out.is_empty() {
        return;
    }
    // SAFETY: reads `out.len()` words of `acc` and as many 8-byte records
    // of `channels` (two LDRs each: the arena, so the records, may be
    // unaligned, which Cortex-M33 allows for LDR) or the first one
    // `out.len()` times (`step` 0), and writes `out.len()` bytes of `out`:
    // all inside the slices, which the caller cut to those lengths. Writes
    // only register operands and the flags otherwise.
    unsafe {
        core::arch::asm!(
            ".cpu cortex-m33",
            "2:",
            "ldr {a}, [{ap}], #4",
            "ldr {m}, [{cp}]",
            "ldr {e}, [{cp}, #4]",
            "add {cp}, {cp}, {step}",
            // e = right - 1 = -shift - 1.
            "mvn {e}, {e}",
            // round = 2^(31 + e) + offset 2^(32 + e): the low word is 2^31
            // for e = 0 (LSL by 32 or more gives 0), the high word
            // 2^31 >> (32 - e) plus offset << e.
            "mov {t}, #0x80000000",
            "lsl {lo}, {t}, {e}",
            "rsb {hi}, {e}, #32",
            "lsr {t}, {t}, {hi}",
            "lsl {hi}, {off}, {e}",
            "add {hi}, {hi}, {t}",
            "smlal {lo}, {hi}, {a}, {m}",
            "asr {hi}, {hi}, {e}",
            "ssat {hi}, #8, {hi}",
            "strb {hi}, [{op}], #1",
            "subs {n}, {n}, #1",
            "bne 2b",
            ap = inout(reg) acc.as_ptr() => _,
            cp = inout(reg) channels.as_ptr() => _,
            op = inout(reg) out.as_mut_ptr() => _,
            n = inout(reg) out.len() => _,
            step = in(reg) if per_channel { 8u32 } else { 0 },
            off = in(reg) offset,
            a = out(reg) _,
            m = out(reg) _,
            e = out(reg) _,
            lo = out(reg) _,
            hi = out(reg) _,
            t = out(reg) _,
            options(nostack)
        );
    }
}

/// One lane of `acc` requantised into `out` by `requant` (one per
/// channel) and clamped to int8 (`SSAT`): `out[j] =
/// requant[j].apply(acc[j][lane]) as i8`, over as many channels as all
/// three have (`lane` below `L`). On the DSP extension the loop is written out
/// (`requantize_lane_loop`).
#[inline(never)]
pub(crate) fn requantize_lane<const L: usize, const TIES: bool>(
    acc: &[[i32; L]],
    lane: usize,
    requant: &[Requant<TIES>],
    out: &mut [u8],
) {
    let n = acc.len().min(requant.len()).min(out.len());
    let lane = lane.min(L - 1);
    #[cfg(synaptic_dsp)]
    {
        requantize_lane_loop(&acc[..n], lane, &requant[..n], &mut out[..n]);
    }
    #[cfg(not(synaptic_dsp))]
    {
        for ((o, a), r) in out[..n].iter_mut().zip(acc).zip(requant) {
            *o = r.apply(a[lane]).clamp(-128, 127) as i8 as u8;
        }
    }
}

/// [`requantize_lane`]'s loop in assembly: 12 instructions an output
/// (LLVM's had 23), the ties' correction masked out for `TIES = false`. The slices have one length; `lane` is below `L`.
#[cfg(synaptic_dsp)]
#[inline(always)]
fn requantize_lane_loop<const L: usize, const TIES: bool>(
    acc: &[[i32; L]],
    lane: usize,
    requant: &[Requant<TIES>],
    out: &mut [u8],
) {
    if out.is_empty() {
        return;
    }
    // SAFETY: reads `out.len()` accumulators of lane `lane` (word-aligned
    // `i32`s `4 L` bytes apart, inside `acc`) and as many `Requant`s (16-byte
    // `repr(C)` records: `round` as low and high words, then `multiplier`
    // and `shift`; LDRD needs word alignment, which they have), and writes
    // `out.len()` bytes of `out`; all three have that length (the caller
    // cut them). Writes only register operands and the flags otherwise.
    unsafe {
        core::arch::asm!(
            ".cpu cortex-m33",
            "2:",
            "ldr {a}, [{ap}], #{stride}",
            "ldrd {lo}, {hi}, [{rp}], #8",
            // round - [a < 0] 2^31, the ties' correction (none when
            // `ties` is 0).
            "and {sh}, {a}, {ties}",
            "subs {lo}, {lo}, {sh}",
            "sbc {hi}, {hi}, #0",
            "ldrd {m}, {sh}, [{rp}], #8",
            "smlal {lo}, {hi}, {a}, {m}",
            "asr {hi}, {hi}, {sh}",
            "ssat {hi}, #8, {hi}",
            "strb {hi}, [{op}], #1",
            "subs {n}, {n}, #1",
            "bne 2b",
            ap = inout(reg) acc.as_ptr().cast::<i32>().wrapping_add(lane) => _,
            rp = inout(reg) requant.as_ptr() => _,
            op = inout(reg) out.as_mut_ptr() => _,
            n = inout(reg) out.len() => _,
            a = out(reg) _,
            lo = out(reg) _,
            hi = out(reg) _,
            m = out(reg) _,
            sh = out(reg) _,
            ties = in(reg) if TIES { 1u32 << 31 } else { 0 },
            stride = const 4 * L,
            options(nostack)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The portable instructions against their definitions, over words
    /// whose bytes take every sign and magnitude.
    #[test]
    fn instructions_match_their_definitions() {
        let mut state = 0x1234_5678u32;
        for _ in 0..100_000 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            let (a, b) = (state, state.rotate_left(11) ^ 0x8080_7f01);
            let bytes = a.to_le_bytes().map(|b| i32::from(b as i8));
            let even = sxtb16(a);
            let odd = sxtb16_ror8(a);
            assert_eq!(i32::from(even as i16), bytes[0]);
            assert_eq!(i32::from((even >> 16) as i16), bytes[2]);
            assert_eq!(i32::from(odd as i16), bytes[1]);
            assert_eq!(i32::from((odd >> 16) as i16), bytes[3]);
            let acc = a as i32;
            let want = i64::from(acc)
                + i64::from(a as i16) * i64::from(b as i16)
                + i64::from((a >> 16) as i16) * i64::from((b >> 16) as i16);
            assert_eq!(smlad(a, b, acc), want as i32);
            let low = i64::from(acc) + i64::from(a as i16) * i64::from(b as i16);
            let high = i64::from(acc) + i64::from((a >> 16) as i16) * i64::from((b >> 16) as i16);
            assert_eq!(smlabb(a, b, acc), low as i32);
            assert_eq!(smlatt(a, b, acc), high as i32);
            let (xs, ws) = (a.to_le_bytes(), b.to_le_bytes());
            let got = mac4(&xs, &ws, [1, 2, 3, 4]);
            for i in 0..4 {
                let product = i32::from(xs[i] as i8) * i32::from(ws[i] as i8);
                assert_eq!(got[i], 1 + i as i32 + product);
            }
        }
    }

    /// The dot products against the plain sums for every length up to 40
    /// (all four remainders) and random bytes.
    #[test]
    fn dots_are_the_plain_sums() {
        extern crate std;
        let mut state = 0x9e37_79b9u32;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            state as u8
        };
        for len in 0..40 {
            let rows: [[u8; 40]; 4] = core::array::from_fn(|_| core::array::from_fn(|_| next()));
            let [x0, x1, w0, w1] = rows.each_ref().map(|r| &r[..len]);
            let plain = |x: &[u8], w: &[u8]| {
                x.iter().zip(w).fold(0i32, |s, (&x, &w)| {
                    s + i32::from(x as i8) * i32::from(w as i8)
                })
            };
            let got = dot2x2(x0, x1, w0, w1, [7, 8, 9, 10]);
            let want = [
                7 + plain(x0, w0),
                8 + plain(x0, w1),
                9 + plain(x1, w0),
                10 + plain(x1, w1),
            ];
            assert_eq!(got, want, "len {len}");
            let words = len / 4 * 4;
            let (x0, x1, w0, w1) = (&x0[..words], &x1[..words], &w0[..words], &w1[..words]);
            let mut split = [0u32; 80];
            interleave([x0, x1], &mut split[..words]);
            let got = dot_windows(&split[..words], w0, [5, 6]);
            assert_eq!(got, [5 + plain(x0, w0), 6 + plain(x1, w0)], "len {len}");
            interleave([x0, x1, w1, x0], &mut split[..2 * words]);
            let got = dot_windows(&split[..2 * words], w0, [1, 2, 3, 4]);
            let want: [i32; 4] =
                core::array::from_fn(|i| 1 + i as i32 + plain([x0, x1, w1, x0][i], w0));
            assert_eq!(got, want, "len {len}");
            for offset in [-127, 0, 128] {
                split_offset(x0, offset, &mut split[..words / 2]);
                let with_offset = |w: &[u8]| {
                    (0..words).fold(0i32, |s, i| {
                        s + (i32::from(x0[i] as i8) + offset) * i32::from(w[i] as i8)
                    })
                };
                let got = dot_split1x2(&split[..words / 2], w0, w1);
                assert_eq!(got, [with_offset(w0), with_offset(w1)], "len {len}");
                // Three rows 40 bytes apart (an odd count: the last alone).
                let mut acc = [1, 2, 3];
                let filter: std::vec::Vec<u8> = rows.concat();
                dot_split_rows(&split[..words / 2], &filter, 40, &mut acc).unwrap();
                let want: std::vec::Vec<i32> = (0..3)
                    .map(|j| 1 + j as i32 + with_offset(&filter[40 * j..40 * j + words]))
                    .collect();
                assert_eq!(acc[..], want[..], "len {len}");
            }
        }
    }
}
