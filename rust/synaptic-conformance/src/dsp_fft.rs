//! Suite `dsp_fft`: the forward FFT against signals whose spectra are
//! known, and against its own algebra, each with its tolerance stated:
//!
//! | case | expected | tolerance |
//! |---|---|---|
//! | impulse (64 points) | every bin 1 + 0i | 1e-4 |
//! | delayed impulse (16) | bin k = e^(-2 pi i k / N) | 1e-4 |
//! | DC 0.5 (128) | bin 0 = 64, others 0 | 1e-4 |
//! | sine at bin 10 (256) | \|X\| = 128 at 10 and 246, X\[10\] = -128i, others 0 | 1e-2 |
//! | linearity (32) | F(2a + b) = 2 F(a) + F(b) | 1e-3 |
//! | Parseval (512) | sum \|X\|^2 / N = sum \|x\|^2 | 1e-4 relative |
//! | every length 2..=512 | bin 0 of all-ones = N | 1e-2 |
//! | real FFT (64) | the complex FFT's bins, Nyquist packed in bin 0 | 1e-3 |
//! | two points | (4 - i, 2 + 3i), exact |  0 |
//! | inverse round trip (256) | conj(F(conj(F(x)))) / N = x | 1e-4 |
//!
//! Lengths above 512 (up to [`synaptic_runtime::dsp::MAX_FFT_LEN`]) need
//! more RAM than the target has to spare and are covered by the runtime's
//! host tests.

use core::f32::consts::PI;

use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::dsp::{fft_f32, rfft_f32, Complex32, DspError};

use crate::support::{close, xorshift, Exclusive};

cases![
    impulse_is_flat,
    delayed_impulse_has_unit_magnitude_and_linear_phase,
    dc_lands_in_bin_zero,
    sine_peaks_at_its_bin,
    fft_is_linear,
    fft_satisfies_parseval,
    every_power_of_two_up_to_512_and_no_other_length,
    rfft_matches_complex_fft,
    two_point_butterfly_is_exact,
    inverse_round_trip_recovers_the_signal,
];

const ZERO: Complex32 = Complex32::new(0.0, 0.0);
const SIGNAL_LEN: usize = 512;
static SIGNAL: Exclusive<[Complex32; SIGNAL_LEN]> = Exclusive::new([ZERO; SIGNAL_LEN]);

fn norm(c: Complex32) -> f32 {
    libm::sqrtf(c.norm_sqr())
}

/// A unit impulse has a flat spectrum: every bin is 1 + 0i (tolerance 1e-4).
pub fn impulse_is_flat() -> Outcome {
    let mut x = [ZERO; 64];
    x[0] = Complex32::new(1.0, 0.0);
    ok!(fft_f32(&mut x));
    for bin in x {
        check!(close(bin.re, 1.0, 1e-4) && close(bin.im, 0.0, 1e-4));
    }
    Ok(())
}

/// An impulse delayed by one sample gives unit magnitude and phase
/// -2 pi k / N (tolerance 1e-4).
pub fn delayed_impulse_has_unit_magnitude_and_linear_phase() -> Outcome {
    let n = 16;
    let mut x = [ZERO; 16];
    x[1] = Complex32::new(1.0, 0.0);
    ok!(fft_f32(&mut x));
    for (k, bin) in x.iter().enumerate() {
        let angle = -2.0 * PI * k as f32 / n as f32;
        check!(close(bin.re, libm::cosf(angle), 1e-4));
        check!(close(bin.im, libm::sinf(angle), 1e-4));
    }
    Ok(())
}

/// A constant 0.5 over 128 points puts 64 in bin 0 and nothing elsewhere
/// (tolerance 1e-4).
pub fn dc_lands_in_bin_zero() -> Outcome {
    let mut x = [Complex32::new(0.5, 0.0); 128];
    ok!(fft_f32(&mut x));
    check!(close(x[0].re, 64.0, 1e-4) && close(x[0].im, 0.0, 1e-4));
    check!(x[1..].iter().all(|b| norm(*b) < 1e-4));
    Ok(())
}

/// sin(2 pi 10 n / 256) has magnitude N/2 = 128 at bins 10 and 246, -128i
/// at bin 10, and nothing else (tolerance 1e-2).
pub fn sine_peaks_at_its_bin() -> Outcome {
    const N: usize = 256;
    const K0: usize = 10;
    let mut signal = claim!(SIGNAL);
    let x = &mut signal[..N];
    for (i, v) in x.iter_mut().enumerate() {
        *v = Complex32::new(libm::sinf(2.0 * PI * (K0 * i) as f32 / N as f32), 0.0);
    }
    ok!(fft_f32(x));
    check!(close(norm(x[K0]), 128.0, 1e-2));
    check!(close(norm(x[N - K0]), 128.0, 1e-2));
    check!(close(x[K0].im, -128.0, 1e-2));
    for (k, b) in x.iter().enumerate() {
        if k != K0 && k != N - K0 {
            check!(norm(*b) < 1e-2, "energy outside the sine's bins");
        }
    }
    Ok(())
}

/// F(2a + b) = 2 F(a) + F(b) bin by bin (tolerance 1e-3).
pub fn fft_is_linear() -> Outcome {
    let mut a = [ZERO; 32];
    let mut b = [ZERO; 32];
    let mut sum = [ZERO; 32];
    for i in 0..32 {
        a[i] = Complex32::new(i as f32 * 0.1, 0.0);
        b[i] = Complex32::new(libm::cosf(i as f32), 0.3);
        sum[i] = a[i] * 2.0 + b[i];
    }
    ok!(fft_f32(&mut a));
    ok!(fft_f32(&mut b));
    ok!(fft_f32(&mut sum));
    for i in 0..32 {
        check!(norm(sum[i] - (a[i] * 2.0 + b[i])) < 1e-3);
    }
    Ok(())
}

/// Energy is the same in both domains: sum |X|^2 / N over sum |x|^2 is 1
/// within 1e-4, on 512 points.
pub fn fft_satisfies_parseval() -> Outcome {
    let mut x = claim!(SIGNAL);
    let mut energy = 0.0f32;
    for (i, v) in x.iter_mut().enumerate() {
        *v = Complex32::new(libm::sinf(i as f32 * 0.37), libm::cosf(i as f32 * 1.3));
        energy += v.norm_sqr();
    }
    ok!(fft_f32(&mut x[..]));
    let spectral: f32 = x.iter().map(|b| b.norm_sqr()).sum::<f32>() / SIGNAL_LEN as f32;
    check!(close(spectral / energy, 1.0, 1e-4));
    Ok(())
}

/// Every power of two from 2 to 512 transforms (bin 0 of all ones is N,
/// tolerance 1e-2); 0, 3, 12 and 384 points are refused with `-ENOTSUP`.
pub fn every_power_of_two_up_to_512_and_no_other_length() -> Outcome {
    let mut buf = claim!(SIGNAL);
    let mut n = 2;
    while n <= SIGNAL_LEN {
        buf[..n].fill(Complex32::new(1.0, 0.0));
        ok!(fft_f32(&mut buf[..n]));
        check!(close(buf[0].re, n as f32, 1e-2));
        n *= 2;
    }
    for bad in [0usize, 3, 12, 384] {
        check!(fft_f32(&mut buf[..bad]) == Err(DspError::UnsupportedLength(bad)));
    }
    check!(
        DspError::UnsupportedLength(3).to_errno() == synaptic_abi::Errno::NotSup,
        "unsupported length is not -ENOTSUP"
    );
    Ok(())
}

/// The real FFT of 64 samples gives the complex FFT's first 32 bins, with
/// the Nyquist bin's real part in bin 0's imaginary part (tolerance 1e-3);
/// 6 samples are refused.
pub fn rfft_matches_complex_fft() -> Outcome {
    let mut real = [0f32; 64];
    let mut cplx = [ZERO; 64];
    for i in 0..64 {
        let v = libm::sinf(i as f32 * 0.7) + 0.25;
        real[i] = v;
        cplx[i].re = v;
    }
    ok!(fft_f32(&mut cplx));
    let bins = ok!(rfft_f32(&mut real));
    check_eq!(bins.len(), 32);
    check!(close(bins[0].re, cplx[0].re, 1e-3));
    check!(close(bins[0].im, cplx[32].re, 1e-3));
    for k in 1..32 {
        check!(norm(bins[k] - cplx[k]) < 1e-3);
    }
    check!(rfft_f32(&mut [0.0; 6]).err() == Some(DspError::UnsupportedLength(6)));
    Ok(())
}

/// Two points: X0 = x0 + x1, X1 = x0 - x1, exactly.
pub fn two_point_butterfly_is_exact() -> Outcome {
    let mut x = [Complex32::new(3.0, 1.0), Complex32::new(1.0, -2.0)];
    ok!(fft_f32(&mut x));
    check!(x == [Complex32::new(4.0, -1.0), Complex32::new(2.0, 3.0)]);
    Ok(())
}

fn random_point(state: &mut u32) -> Complex32 {
    let re = (xorshift(state) % 2000) as f32 / 1000.0 - 1.0;
    let im = (xorshift(state) % 2000) as f32 / 1000.0 - 1.0;
    Complex32::new(re, im)
}

/// The inverse computed with the forward transform, conj(F(conj(X))) / N,
/// recovers 256 pseudo-random points within 1e-4.
pub fn inverse_round_trip_recovers_the_signal() -> Outcome {
    const N: usize = 256;
    const SEED: u32 = 42;
    let mut signal = claim!(SIGNAL);
    let x = &mut signal[..N];
    let mut state = SEED;
    for v in x.iter_mut() {
        *v = random_point(&mut state);
    }
    ok!(fft_f32(x));
    for v in x.iter_mut() {
        *v = v.conj();
    }
    ok!(fft_f32(x));
    // Regenerate the original instead of keeping a copy.
    let mut state = SEED;
    for v in x.iter() {
        let back = v.conj() / N as f32;
        check!(norm(back - random_point(&mut state)) < 1e-4);
    }
    Ok(())
}
