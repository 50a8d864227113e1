//! DSP kernels: int8 normalisation, numerically stable softmax, argmax, FFT
//! (microfft) and saturating Q15 matrix multiply.
//!
//! Limits: FFT lengths are powers of two from 2 to [`MAX_FFT_LEN`]; every
//! kernel checks slice lengths and returns [`DspError`] instead of
//! panicking or writing a partial result.

use synaptic_abi::Errno;

pub use microfft::Complex32;

/// Longest FFT, in points.
pub const MAX_FFT_LEN: usize = 4096;

/// Errors of the DSP kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DspError {
    /// An input is empty.
    Empty,
    /// Two slices that must agree in length do not.
    LengthMismatch {
        /// Length required.
        expected: usize,
        /// Length given.
        actual: usize,
    },
    /// The FFT length is not a power of two in 2..=[`MAX_FFT_LEN`].
    UnsupportedLength(usize),
}

impl DspError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            DspError::Empty | DspError::LengthMismatch { .. } => Errno::Inval,
            DspError::UnsupportedLength(_) => Errno::NotSup,
        }
    }
}

fn same_len(expected: usize, actual: usize) -> Result<(), DspError> {
    if expected == actual {
        Ok(())
    } else {
        Err(DspError::LengthMismatch { expected, actual })
    }
}

/// Saturates to the `i8` range.
pub fn saturate_i8(x: i32) -> i8 {
    x.clamp(i32::from(i8::MIN), i32::from(i8::MAX)) as i8
}

/// Saturates to the `i16` range.
pub fn saturate_i16(x: i64) -> i16 {
    x.clamp(i64::from(i16::MIN), i64::from(i16::MAX)) as i16
}

/// `output[i] = sat8(((input[i] - offset) * multiplier + 128) >> 8)`:
/// subtracts `offset` and scales by `multiplier` in Q8.8 (256 is 1.0),
/// rounding half up and saturating to int8.
///
/// # Errors
///
/// [`DspError::LengthMismatch`] when the slices differ in length.
///
/// # Examples
///
/// ```
/// let mut out = [0i8; 3];
/// synaptic_runtime::dsp::normalize_int8(&[10, 20, -128], &mut out, 10, 512).unwrap();
/// assert_eq!(out, [0, 20, -128]);
/// ```
pub fn normalize_int8(
    input: &[i8],
    output: &mut [i8],
    offset: i8,
    multiplier: i16,
) -> Result<(), DspError> {
    same_len(input.len(), output.len())?;
    for (o, &x) in output.iter_mut().zip(input) {
        let v = (i32::from(x) - i32::from(offset)) * i32::from(multiplier);
        *o = saturate_i8((v + 128) >> 8);
    }
    Ok(())
}

/// Softmax, computed as `exp(x - max) / sum`, so large inputs do not
/// overflow. Outputs are in `[0, 1]` and sum to 1 within rounding.
///
/// # Errors
///
/// [`DspError::Empty`]; [`DspError::LengthMismatch`].
pub fn softmax_f32(input: &[f32], output: &mut [f32]) -> Result<(), DspError> {
    if input.is_empty() {
        return Err(DspError::Empty);
    }
    same_len(input.len(), output.len())?;
    let max = input.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for (o, &x) in output.iter_mut().zip(input) {
        *o = libm::expf(x - max);
        sum += *o;
    }
    for o in output.iter_mut() {
        *o /= sum;
    }
    Ok(())
}

/// Index and value of the largest element; the first on ties.
///
/// # Errors
///
/// [`DspError::Empty`].
pub fn argmax_i8(input: &[i8]) -> Result<(usize, i8), DspError> {
    let mut best: Option<(usize, i8)> = None;
    for (i, &x) in input.iter().enumerate() {
        if best.is_none_or(|(_, b)| x > b) {
            best = Some((i, x));
        }
    }
    best.ok_or(DspError::Empty)
}

/// Index and value of the largest element; the first on ties, NaN never wins.
///
/// # Errors
///
/// [`DspError::Empty`].
pub fn argmax_f32(input: &[f32]) -> Result<(usize, f32), DspError> {
    let mut best: Option<(usize, f32)> = None;
    for (i, &x) in input.iter().enumerate() {
        if best.is_none_or(|(_, b)| x > b || b.is_nan() && !x.is_nan()) {
            best = Some((i, x));
        }
    }
    best.ok_or(DspError::Empty)
}

macro_rules! dispatch_fft {
    ($data:expr, $module:ident, $( $n:literal => $f:ident ),* ) => {
        match $data.len() {
            $( $n => {
                let array: &mut [_; $n] = $data
                    .try_into()
                    .map_err(|_| DspError::UnsupportedLength($n))?;
                let _ = microfft::$module::$f(array);
            } )*
            other => return Err(DspError::UnsupportedLength(other)),
        }
    };
}

/// In-place forward complex FFT (no scaling): `X[k] = sum x[n] e^(-2 pi i k n / N)`.
///
/// # Errors
///
/// [`DspError::UnsupportedLength`] unless the length is a power of two in
/// 2..=[`MAX_FFT_LEN`].
///
/// # Examples
///
/// ```
/// use synaptic_runtime::dsp::{fft_f32, Complex32};
/// let mut x = [Complex32::new(1.0, 0.0); 8];
/// fft_f32(&mut x).unwrap();
/// assert_eq!(x[0], Complex32::new(8.0, 0.0));
/// ```
pub fn fft_f32(data: &mut [Complex32]) -> Result<(), DspError> {
    dispatch_fft!(data, complex,
        2 => cfft_2, 4 => cfft_4, 8 => cfft_8, 16 => cfft_16, 32 => cfft_32,
        64 => cfft_64, 128 => cfft_128, 256 => cfft_256, 512 => cfft_512,
        1024 => cfft_1024, 2048 => cfft_2048, 4096 => cfft_4096);
    Ok(())
}

macro_rules! rfft_dispatch {
    ($data:expr, $( $n:literal => $f:ident ),* ) => {
        match $data.len() {
            $( $n => {
                let array: &mut [f32; $n] = $data
                    .try_into()
                    .map_err(|_| DspError::UnsupportedLength($n))?;
                &microfft::real::$f(array)[..]
            } )*
            other => return Err(DspError::UnsupportedLength(other)),
        }
    };
}

/// In-place FFT of real input. On return the first `N/2` complex bins
/// (DC up to, not including, Nyquist) occupy the buffer, read through the
/// returned slice; the real Nyquist term is packed into the imaginary part
/// of bin 0 (microfft's layout).
///
/// # Errors
///
/// [`DspError::UnsupportedLength`] unless the length is a power of two in
/// 4..=[`MAX_FFT_LEN`].
pub fn rfft_f32(data: &mut [f32]) -> Result<&[Complex32], DspError> {
    let bins: &[Complex32] = rfft_dispatch!(data,
        4 => rfft_4, 8 => rfft_8, 16 => rfft_16, 32 => rfft_32, 64 => rfft_64,
        128 => rfft_128, 256 => rfft_256, 512 => rfft_512, 1024 => rfft_1024,
        2048 => rfft_2048, 4096 => rfft_4096);
    Ok(bins)
}

/// Q15 matrix multiply `C = A x B` with `A` `m x k`, `B` `k x n`, `C` `m x n`,
/// all row-major. Products accumulate in 64 bits, then
/// `C[i][j] = sat16((sum + 2^14) >> 15)` (round half up, saturate).
///
/// # Errors
///
/// [`DspError::Empty`] when a dimension is zero; [`DspError::LengthMismatch`]
/// when a slice is not the size its dimensions say.
///
/// # Examples
///
/// ```
/// // 0.5 * 0.5 = 0.25 in Q15.
/// let mut c = [0i16; 1];
/// synaptic_runtime::dsp::mat_mult_q15(&[16384], &[16384], &mut c, 1, 1, 1).unwrap();
/// assert_eq!(c, [8192]);
/// ```
pub fn mat_mult_q15(
    a: &[i16],
    b: &[i16],
    c: &mut [i16],
    m: usize,
    k: usize,
    n: usize,
) -> Result<(), DspError> {
    if m == 0 || k == 0 || n == 0 {
        return Err(DspError::Empty);
    }
    same_len(m * k, a.len())?;
    same_len(k * n, b.len())?;
    same_len(m * n, c.len())?;
    for i in 0..m {
        for j in 0..n {
            let mut acc: i64 = 0;
            for p in 0..k {
                acc += i64::from(a[i * k + p]) * i64::from(b[p * n + j]);
            }
            c[i * n + j] = saturate_i16((acc + (1 << 14)) >> 15);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::f32::consts::PI;

    const TOL: f32 = 1e-4;

    trait Norm {
        fn norm(&self) -> f32;
    }

    impl Norm for Complex32 {
        fn norm(&self) -> f32 {
            libm::sqrtf(self.norm_sqr())
        }
    }

    fn close(a: f32, b: f32, tol: f32) -> bool {
        (a - b).abs() <= tol
    }

    // --- basic kernels ---

    #[test]
    fn normalize_int8_offsets_scales_and_saturates() {
        let mut out = [0i8; 5];
        normalize_int8(&[0, 10, 20, 127, -128], &mut out, 10, 256).unwrap();
        assert_eq!(out, [-10, 0, 10, 117, -128]);
        normalize_int8(&[0, 10, 20, 127, -128], &mut out, 0, 1024).unwrap();
        assert_eq!(out, [0, 40, 80, 127, -128]);
        // 0.5 scale with rounding half up: 3 * 0.5 = 1.5 -> 2, -3 * 0.5 = -1.5 -> -1.
        let mut two = [0i8; 2];
        normalize_int8(&[3, -3], &mut two, 0, 128).unwrap();
        assert_eq!(two, [2, -1]);
    }

    #[test]
    fn normalize_int8_rejects_length_mismatch() {
        let mut out = [0i8; 2];
        assert_eq!(
            normalize_int8(&[1, 2, 3], &mut out, 0, 256),
            Err(DspError::LengthMismatch {
                expected: 3,
                actual: 2
            })
        );
    }

    #[test]
    fn softmax_of_known_inputs() {
        let mut out = [0f32; 3];
        softmax_f32(&[1.0, 2.0, 3.0], &mut out).unwrap();
        // exp(-2), exp(-1), 1 over their sum.
        let expected = [0.090_030_57, 0.244_728_47, 0.665_240_96];
        for (o, e) in out.iter().zip(expected) {
            assert!(close(*o, e, 1e-6), "{o} vs {e}");
        }
    }

    #[test]
    fn softmax_uniform_and_sums_to_one() {
        let mut out = [0f32; 4];
        softmax_f32(&[5.0; 4], &mut out).unwrap();
        assert!(out.iter().all(|&p| close(p, 0.25, 1e-7)));
        let mut out = [0f32; 6];
        softmax_f32(&[-3.0, 0.5, 2.0, 7.0, -1.0, 0.0], &mut out).unwrap();
        assert!(close(out.iter().sum::<f32>(), 1.0, 1e-6));
    }

    #[test]
    fn softmax_is_stable_for_large_inputs() {
        let mut out = [0f32; 2];
        softmax_f32(&[1000.0, 1000.0], &mut out).unwrap();
        assert_eq!(out, [0.5, 0.5]);
        softmax_f32(&[1000.0, 0.0], &mut out).unwrap();
        assert!(out.iter().all(|p| p.is_finite()));
        assert!(close(out[0], 1.0, 1e-7));
        softmax_f32(&[-1000.0, -1001.0], &mut out).unwrap();
        assert!(close(out[0], 0.731_058_6, 1e-6));
    }

    #[test]
    fn softmax_rejects_empty_and_mismatch() {
        assert_eq!(softmax_f32(&[], &mut []), Err(DspError::Empty));
        let mut out = [0f32; 1];
        assert!(matches!(
            softmax_f32(&[1.0, 2.0], &mut out),
            Err(DspError::LengthMismatch { .. })
        ));
    }

    #[test]
    fn argmax_picks_first_maximum() {
        assert_eq!(argmax_i8(&[3, -5, 9, 9, 1]), Ok((2, 9)));
        assert_eq!(argmax_i8(&[-128, -128]), Ok((0, -128)));
        assert_eq!(argmax_i8(&[]), Err(DspError::Empty));
        assert_eq!(argmax_f32(&[0.1, 0.7, 0.2]), Ok((1, 0.7)));
        assert_eq!(argmax_f32(&[f32::NAN, 0.5]), Ok((1, 0.5)));
    }

    #[test]
    fn mat_mult_identity_returns_the_input() {
        // Q15 "one" is 32767; rounding keeps |x| <= 16384 exact, larger within 1.
        let id = [32767i16, 0, 0, 32767];
        let x = [1000i16, -2000, 16384, -32768];
        let mut c = [0i16; 4];
        mat_mult_q15(&x, &id, &mut c, 2, 2, 2).unwrap();
        for (got, want) in c.iter().zip(x) {
            assert!(
                (i32::from(*got) - i32::from(want)).abs() <= 1,
                "{got} vs {want}"
            );
        }
        assert_eq!(&c[..3], &[1000, -2000, 16384]);
    }

    #[test]
    fn mat_mult_known_values() {
        // A = [[0.5, 0.25], [-0.5, 0.125]], B = [[0.5], [0.5]] -> [[0.375], [-0.1875]].
        let a = [16384i16, 8192, -16384, 4096];
        let b = [16384i16, 16384];
        let mut c = [0i16; 2];
        mat_mult_q15(&a, &b, &mut c, 2, 2, 1).unwrap();
        assert_eq!(c, [12288, -6144]);
        // Non-square: 1x3 times 3x2.
        let a = [8192i16, 8192, 8192];
        let b = [32767i16, 0, 0, 32767, 16384, 16384];
        let mut c = [0i16; 2];
        mat_mult_q15(&a, &b, &mut c, 1, 3, 2).unwrap();
        assert_eq!(c, [12288, 12288]);
    }

    #[test]
    fn mat_mult_saturates() {
        let a = [32767i16, 32767];
        let b = [32767i16, 32767];
        let mut c = [0i16; 1];
        mat_mult_q15(&a, &b, &mut c, 1, 2, 1).unwrap();
        assert_eq!(c, [i16::MAX]);
        let b = [-32768i16, -32768];
        mat_mult_q15(&a, &b, &mut c, 1, 2, 1).unwrap();
        assert_eq!(c, [i16::MIN]);
    }

    #[test]
    fn mat_mult_checks_dimensions() {
        let mut c = [0i16; 4];
        assert!(matches!(
            mat_mult_q15(&[1; 3], &[1; 4], &mut c, 2, 2, 2),
            Err(DspError::LengthMismatch {
                expected: 4,
                actual: 3
            })
        ));
        assert_eq!(
            mat_mult_q15(&[], &[], &mut [], 0, 2, 2),
            Err(DspError::Empty)
        );
        assert_eq!(DspError::UnsupportedLength(3).to_errno(), Errno::NotSup);
    }

    // --- FFT ---

    #[test]
    fn fft_impulse_is_flat() {
        let mut x = [Complex32::new(0.0, 0.0); 64];
        x[0] = Complex32::new(1.0, 0.0);
        fft_f32(&mut x).unwrap();
        for bin in x {
            assert!(close(bin.re, 1.0, TOL) && close(bin.im, 0.0, TOL));
        }
    }

    #[test]
    fn fft_delayed_impulse_has_unit_magnitude_and_linear_phase() {
        let n = 16;
        let mut x = [Complex32::new(0.0, 0.0); 16];
        x[1] = Complex32::new(1.0, 0.0);
        fft_f32(&mut x).unwrap();
        for (k, bin) in x.iter().enumerate() {
            let angle = -2.0 * PI * k as f32 / n as f32;
            assert!(close(bin.re, libm::cosf(angle), TOL));
            assert!(close(bin.im, libm::sinf(angle), TOL));
        }
    }

    #[test]
    fn fft_dc_lands_in_bin_zero() {
        let mut x = [Complex32::new(0.5, 0.0); 128];
        fft_f32(&mut x).unwrap();
        assert!(close(x[0].re, 64.0, TOL));
        assert!(x[1..].iter().all(|b| b.norm() < TOL));
    }

    #[test]
    fn fft_sine_peaks_at_its_bin() {
        let n = 256;
        let k0 = 10;
        let mut x = [Complex32::new(0.0, 0.0); 256];
        for (i, v) in x.iter_mut().enumerate() {
            v.re = libm::sinf(2.0 * PI * k0 as f32 * i as f32 / n as f32);
        }
        fft_f32(&mut x).unwrap();
        // A real sine of amplitude 1 gives N/2 at bins k0 and N - k0.
        assert!(close(x[k0].norm(), 128.0, 1e-2));
        assert!(close(x[n - k0].norm(), 128.0, 1e-2));
        assert!(close(x[k0].im, -128.0, 1e-2));
        for (k, b) in x.iter().enumerate() {
            if k != k0 && k != n - k0 {
                assert!(b.norm() < 1e-2, "bin {k}: {}", b.norm());
            }
        }
    }

    #[test]
    fn fft_is_linear() {
        let mut a = [Complex32::new(0.0, 0.0); 32];
        let mut b = [Complex32::new(0.0, 0.0); 32];
        let mut sum = [Complex32::new(0.0, 0.0); 32];
        for i in 0..32 {
            a[i] = Complex32::new(i as f32 * 0.1, 0.0);
            b[i] = Complex32::new(libm::cosf(i as f32), 0.3);
            sum[i] = a[i] * 2.0 + b[i];
        }
        fft_f32(&mut a).unwrap();
        fft_f32(&mut b).unwrap();
        fft_f32(&mut sum).unwrap();
        for i in 0..32 {
            let d = sum[i] - (a[i] * 2.0 + b[i]);
            assert!(d.norm() < 1e-3);
        }
    }

    #[test]
    fn fft_satisfies_parseval() {
        let mut x = [Complex32::new(0.0, 0.0); 512];
        let mut energy = 0.0f32;
        for (i, v) in x.iter_mut().enumerate() {
            *v = Complex32::new(libm::sinf(i as f32 * 0.37), libm::cosf(i as f32 * 1.3));
            energy += v.norm_sqr();
        }
        fft_f32(&mut x).unwrap();
        let spectral: f32 = x.iter().map(|b| b.norm_sqr()).sum::<f32>() / 512.0;
        assert!(close(spectral / energy, 1.0, 1e-4));
    }

    #[test]
    fn fft_supports_every_power_of_two_and_rejects_others() {
        let mut buf = [Complex32::new(1.0, 0.0); MAX_FFT_LEN];
        let mut n = 2;
        while n <= MAX_FFT_LEN {
            buf[..n].fill(Complex32::new(1.0, 0.0));
            fft_f32(&mut buf[..n]).unwrap();
            assert!(close(buf[0].re, n as f32, 1e-2), "n = {n}");
            n *= 2;
        }
        let mut odd = [Complex32::new(0.0, 0.0); 12];
        assert_eq!(fft_f32(&mut odd), Err(DspError::UnsupportedLength(12)));
        assert_eq!(fft_f32(&mut []), Err(DspError::UnsupportedLength(0)));
        let mut big = [Complex32::new(0.0, 0.0); 8192];
        assert_eq!(fft_f32(&mut big), Err(DspError::UnsupportedLength(8192)));
    }

    #[test]
    fn rfft_matches_complex_fft() {
        let mut real = [0f32; 64];
        let mut cplx = [Complex32::new(0.0, 0.0); 64];
        for i in 0..64 {
            let v = libm::sinf(i as f32 * 0.7) + 0.25;
            real[i] = v;
            cplx[i].re = v;
        }
        fft_f32(&mut cplx).unwrap();
        let bins = rfft_f32(&mut real).unwrap();
        assert_eq!(bins.len(), 32);
        assert!(close(bins[0].re, cplx[0].re, 1e-3));
        // Nyquist packed into bin 0's imaginary part.
        assert!(close(bins[0].im, cplx[32].re, 1e-3));
        for k in 1..32 {
            assert!((bins[k] - cplx[k]).norm() < 1e-3, "bin {k}");
        }
        assert_eq!(
            rfft_f32(&mut [0.0; 6]).err(),
            Some(DspError::UnsupportedLength(6))
        );
    }

    #[test]
    fn fft_two_point_butterfly() {
        let mut x = [Complex32::new(3.0, 1.0), Complex32::new(1.0, -2.0)];
        fft_f32(&mut x).unwrap();
        assert_eq!(x, [Complex32::new(4.0, -1.0), Complex32::new(2.0, 3.0)]);
    }

    // --- verification against references and invariants ---

    /// Deterministic pseudo-random values (xorshift32) for reference checks.
    fn xorshift(state: &mut u32) -> u32 {
        *state ^= *state << 13;
        *state ^= *state >> 17;
        *state ^= *state << 5;
        *state
    }

    #[test]
    fn verify_normalize_identity_over_the_whole_int8_range() {
        let input: [i8; 256] = core::array::from_fn(|i| (i as i32 - 128) as i8);
        let mut out = [0i8; 256];
        normalize_int8(&input, &mut out, 0, 256).unwrap();
        assert_eq!(out, input);
    }

    #[test]
    fn verify_softmax_preserves_order_and_ignores_shifts() {
        let x = [0.3f32, -1.2, 2.5, 0.0, 1.1];
        let shifted = x.map(|v| v + 40.0);
        let mut a = [0f32; 5];
        let mut b = [0f32; 5];
        softmax_f32(&x, &mut a).unwrap();
        softmax_f32(&shifted, &mut b).unwrap();
        for i in 0..5 {
            assert!(close(a[i], b[i], 1e-6));
            for j in 0..5 {
                if x[i] > x[j] {
                    assert!(a[i] > a[j]);
                }
            }
        }
        assert_eq!(argmax_f32(&a).unwrap().0, 2);
    }

    #[test]
    fn verify_argmax_against_a_linear_scan() {
        let mut state = 0x1234_5678;
        for _ in 0..50 {
            let v: [i8; 37] = core::array::from_fn(|_| xorshift(&mut state) as i8);
            let max = *v.iter().max().unwrap();
            let first = v.iter().position(|&x| x == max).unwrap();
            assert_eq!(argmax_i8(&v), Ok((first, max)));
        }
    }

    #[test]
    fn verify_mat_mult_against_a_float_reference() {
        let mut state = 0xDEAD_BEEF;
        const M: usize = 3;
        const K: usize = 5;
        const N: usize = 4;
        // Small values so no result saturates.
        let a: [i16; M * K] = core::array::from_fn(|_| (xorshift(&mut state) as i16) / 8);
        let b: [i16; K * N] = core::array::from_fn(|_| (xorshift(&mut state) as i16) / 8);
        let mut c = [0i16; M * N];
        mat_mult_q15(&a, &b, &mut c, M, K, N).unwrap();
        for i in 0..M {
            for j in 0..N {
                let exact: f64 = (0..K)
                    .map(|p| f64::from(a[i * K + p]) * f64::from(b[p * N + j]) / 32768.0)
                    .sum();
                let got = f64::from(c[i * N + j]);
                assert!(
                    (got - exact).abs() <= 0.5 + 1e-9,
                    "({i},{j}): {got} vs {exact}"
                );
            }
        }
    }

    #[test]
    fn verify_fft_inverse_round_trip() {
        // ifft(X) = conj(fft(conj(X))) / N recovers the signal within 1e-4.
        let mut state = 42;
        let original: [Complex32; 256] = core::array::from_fn(|_| {
            let re = (xorshift(&mut state) % 2000) as f32 / 1000.0 - 1.0;
            let im = (xorshift(&mut state) % 2000) as f32 / 1000.0 - 1.0;
            Complex32::new(re, im)
        });
        let mut x = original;
        fft_f32(&mut x).unwrap();
        for v in x.iter_mut() {
            *v = v.conj();
        }
        fft_f32(&mut x).unwrap();
        for (v, o) in x.iter().zip(original.iter()) {
            let back = v.conj() / 256.0;
            assert!((back - o).norm() < 1e-4);
        }
    }
}
