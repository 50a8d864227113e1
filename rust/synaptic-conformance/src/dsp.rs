//! Suite `dsp`: the DSP kernels' behaviour at their edges: int8
//! normalisation (offset, scale, rounding, saturation), softmax (sums,
//! stability, errors), argmax (ties, NaN), Q15 matrix multiply (saturation,
//! dimension checks) and the saturation helpers.
//!
//! Known-answer checks against references are in `dsp_verify`, the FFT in
//! `dsp_fft`.

use synaptic_abi::Errno;
use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::dsp::{
    argmax_f32, argmax_i8, mat_mult_q15, normalize_int8, saturate_i16, saturate_i8, softmax_f32,
    DspError,
};

use crate::support::{close, xorshift};

cases![
    normalize_int8_offsets_scales_and_saturates,
    normalize_int8_rounds_half_up,
    normalize_int8_rejects_length_mismatch,
    softmax_uniform_and_sums_to_one,
    softmax_is_stable_for_large_inputs,
    softmax_rejects_empty_and_mismatch,
    argmax_i8_picks_first_maximum,
    argmax_f32_first_maximum_and_nan_never_wins,
    argmax_against_a_linear_scan,
    mat_mult_saturates,
    mat_mult_checks_dimensions,
    saturation_helpers_clamp,
];

/// `(x - offset) * multiplier / 256`, saturated to int8, at scales 1 and 4.
pub fn normalize_int8_offsets_scales_and_saturates() -> Outcome {
    let mut out = [0i8; 5];
    ok!(normalize_int8(&[0, 10, 20, 127, -128], &mut out, 10, 256));
    check!(out == [-10, 0, 10, 117, -128]);
    ok!(normalize_int8(&[0, 10, 20, 127, -128], &mut out, 0, 1024));
    check!(out == [0, 40, 80, 127, -128]);
    Ok(())
}

/// At scale 0.5, 1.5 rounds to 2 and -1.5 to -1 (half up).
pub fn normalize_int8_rounds_half_up() -> Outcome {
    let mut two = [0i8; 2];
    ok!(normalize_int8(&[3, -3], &mut two, 0, 128));
    check!(two == [2, -1]);
    let mut neg = [0i8; 1];
    ok!(normalize_int8(&[100], &mut neg, 0, -256));
    check_eq!(neg[0], -100);
    Ok(())
}

/// Input and output of different lengths are refused, nothing written.
pub fn normalize_int8_rejects_length_mismatch() -> Outcome {
    let mut out = [7i8; 2];
    check!(
        normalize_int8(&[1, 2, 3], &mut out, 0, 256)
            == Err(DspError::LengthMismatch {
                expected: 3,
                actual: 2
            })
    );
    check!(out == [7, 7]);
    Ok(())
}

/// Equal inputs give equal probabilities (tolerance 1e-7); any input sums
/// to 1 (tolerance 1e-6) with every value in [0, 1].
pub fn softmax_uniform_and_sums_to_one() -> Outcome {
    let mut out = [0f32; 4];
    ok!(softmax_f32(&[5.0; 4], &mut out));
    check!(out.iter().all(|&p| close(p, 0.25, 1e-7)));
    let mut out = [0f32; 6];
    ok!(softmax_f32(&[-3.0, 0.5, 2.0, 7.0, -1.0, 0.0], &mut out));
    check!(close(out.iter().sum::<f32>(), 1.0, 1e-6));
    check!(out.iter().all(|&p| (0.0..=1.0).contains(&p)));
    Ok(())
}

/// Inputs of +-1000 neither overflow nor underflow to NaN (max subtraction).
pub fn softmax_is_stable_for_large_inputs() -> Outcome {
    let mut out = [0f32; 2];
    ok!(softmax_f32(&[1000.0, 1000.0], &mut out));
    check!(out == [0.5, 0.5]);
    ok!(softmax_f32(&[1000.0, 0.0], &mut out));
    check!(out.iter().all(|p| p.is_finite()));
    check!(close(out[0], 1.0, 1e-7));
    ok!(softmax_f32(&[-1000.0, -1001.0], &mut out));
    // 1 / (1 + e^-1).
    check!(close(out[0], 0.731_058_6, 1e-6));
    Ok(())
}

/// Empty input and a length mismatch are errors (`-EINVAL`).
pub fn softmax_rejects_empty_and_mismatch() -> Outcome {
    check!(softmax_f32(&[], &mut []) == Err(DspError::Empty));
    let mut out = [0f32; 1];
    check!(matches!(
        softmax_f32(&[1.0, 2.0], &mut out),
        Err(DspError::LengthMismatch { .. })
    ));
    check!(DspError::Empty.to_errno() == Errno::Inval);
    Ok(())
}

/// The first of equal maxima wins; all-minimum input gives index 0.
pub fn argmax_i8_picks_first_maximum() -> Outcome {
    check!(argmax_i8(&[3, -5, 9, 9, 1]) == Ok((2, 9)));
    check!(argmax_i8(&[-128, -128]) == Ok((0, -128)));
    check!(argmax_i8(&[]) == Err(DspError::Empty));
    Ok(())
}

/// Float argmax: first maximum, and a NaN never wins over a number.
pub fn argmax_f32_first_maximum_and_nan_never_wins() -> Outcome {
    check!(argmax_f32(&[0.1, 0.7, 0.2, 0.7]) == Ok((1, 0.7)));
    check!(argmax_f32(&[f32::NAN, 0.5]) == Ok((1, 0.5)));
    check!(argmax_f32(&[0.5, f32::NAN, 0.25]) == Ok((0, 0.5)));
    check!(argmax_f32(&[]) == Err(DspError::Empty));
    Ok(())
}

/// On 50 pseudo-random vectors argmax agrees with a plain scan.
pub fn argmax_against_a_linear_scan() -> Outcome {
    let mut state = 0x1234_5678;
    for _ in 0..50 {
        let v: [i8; 37] = core::array::from_fn(|_| xorshift(&mut state) as i8);
        let max = some!(v.iter().max().copied());
        let first = some!(v.iter().position(|&x| x == max));
        check!(argmax_i8(&v) == Ok((first, max)));
    }
    Ok(())
}

/// Sums beyond the Q15 range saturate to `i16::MAX` / `i16::MIN`.
pub fn mat_mult_saturates() -> Outcome {
    let a = [32767i16, 32767];
    let mut c = [0i16; 1];
    ok!(mat_mult_q15(&a, &[32767, 32767], &mut c, 1, 2, 1));
    check_eq!(c[0], i16::MAX);
    ok!(mat_mult_q15(&a, &[-32768, -32768], &mut c, 1, 2, 1));
    check_eq!(c[0], i16::MIN);
    Ok(())
}

/// Slices that disagree with `m x k`, `k x n`, `m x n`, and zero dimensions,
/// are refused.
pub fn mat_mult_checks_dimensions() -> Outcome {
    let mut c = [0i16; 4];
    check!(
        mat_mult_q15(&[1; 3], &[1; 4], &mut c, 2, 2, 2)
            == Err(DspError::LengthMismatch {
                expected: 4,
                actual: 3
            })
    );
    check!(matches!(
        mat_mult_q15(&[1; 4], &[1; 4], &mut c[..3], 2, 2, 2),
        Err(DspError::LengthMismatch { .. })
    ));
    check!(mat_mult_q15(&[], &[], &mut [], 0, 2, 2) == Err(DspError::Empty));
    check!(DspError::UnsupportedLength(3).to_errno() == Errno::NotSup);
    Ok(())
}

/// The saturation helpers clamp to their type's range and pass values inside it.
pub fn saturation_helpers_clamp() -> Outcome {
    check_eq!(saturate_i8(200), 127);
    check_eq!(saturate_i8(-200), -128);
    check_eq!(saturate_i8(-5), -5);
    check_eq!(saturate_i16(1 << 20), i16::MAX);
    check_eq!(saturate_i16(-(1 << 20)), i16::MIN);
    check_eq!(saturate_i16(1234), 1234);
    Ok(())
}
