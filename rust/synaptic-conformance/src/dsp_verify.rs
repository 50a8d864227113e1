//! Suite `dsp_verify`: known answers and reference computations for the
//! DSP kernels, each with its tolerance stated:
//!
//! | case | reference | tolerance |
//! |---|---|---|
//! | softmax of [1, 2, 3] | e^-2, e^-1, 1 over their sum | 1e-6 absolute |
//! | softmax order and shift | the same softmax of x + 40 | 1e-6 absolute |
//! | Q15 identity | the input | 1 LSB (exact for \|x\| <= 16384) |
//! | Q15 known values | hand-computed products | exact |
//! | Q15 against floating point | `sum(a b) / 32768` in f64 | 0.5 LSB |
//! | normalise identity | the input over all 256 values | exact |

use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::dsp::{argmax_f32, mat_mult_q15, normalize_int8, softmax_f32};

use crate::support::{close, xorshift};

cases![
    softmax_of_known_inputs,
    softmax_preserves_order_and_ignores_shifts,
    mat_mult_q15_identity_returns_the_input,
    mat_mult_q15_known_values,
    mat_mult_q15_against_a_float_reference,
    normalize_identity_over_the_whole_int8_range,
];

/// softmax([1, 2, 3]) = [0.09003057, 0.24472847, 0.66524096] within 1e-6.
pub fn softmax_of_known_inputs() -> Outcome {
    let mut out = [0f32; 3];
    ok!(softmax_f32(&[1.0, 2.0, 3.0], &mut out));
    let expected = [0.090_030_57, 0.244_728_47, 0.665_240_96];
    for (o, e) in out.iter().zip(expected) {
        check!(close(*o, e, 1e-6));
    }
    let mut two = [0f32; 2];
    ok!(softmax_f32(&[0.0, core::f32::consts::LN_2], &mut two));
    // e^0 : e^ln2 = 1 : 2.
    check!(close(two[0], 1.0 / 3.0, 1e-6) && close(two[1], 2.0 / 3.0, 1e-6));
    Ok(())
}

/// Softmax keeps the order of its inputs and is unchanged (within 1e-6) by
/// adding a constant; the largest input has the largest probability.
pub fn softmax_preserves_order_and_ignores_shifts() -> Outcome {
    let x = [0.3f32, -1.2, 2.5, 0.0, 1.1];
    let shifted = x.map(|v| v + 40.0);
    let mut a = [0f32; 5];
    let mut b = [0f32; 5];
    ok!(softmax_f32(&x, &mut a));
    ok!(softmax_f32(&shifted, &mut b));
    for i in 0..5 {
        check!(close(a[i], b[i], 1e-6));
        for j in 0..5 {
            if x[i] > x[j] {
                check!(a[i] > a[j]);
            }
        }
    }
    check_eq!(ok!(argmax_f32(&a)).0, 2);
    Ok(())
}

/// Multiplying by the Q15 identity (32767 on the diagonal) returns the input
/// within 1 LSB, exactly for |x| <= 16384.
pub fn mat_mult_q15_identity_returns_the_input() -> Outcome {
    let id = [32767i16, 0, 0, 32767];
    let x = [1000i16, -2000, 16384, -32768];
    let mut c = [0i16; 4];
    ok!(mat_mult_q15(&x, &id, &mut c, 2, 2, 2));
    for (got, want) in c.iter().zip(x) {
        check!((i32::from(*got) - i32::from(want)).abs() <= 1);
    }
    check!(c[..3] == [1000, -2000, 16384]);
    Ok(())
}

/// [[0.5, 0.25], [-0.5, 0.125]] x [[0.5], [0.5]] = [[0.375], [-0.1875]], and
/// a 1x3 by 3x2 product; exact in Q15.
pub fn mat_mult_q15_known_values() -> Outcome {
    let mut c = [0i16; 2];
    ok!(mat_mult_q15(
        &[16384, 8192, -16384, 4096],
        &[16384, 16384],
        &mut c,
        2,
        2,
        1
    ));
    check!(c == [12288, -6144]);
    ok!(mat_mult_q15(
        &[8192, 8192, 8192],
        &[32767, 0, 0, 32767, 16384, 16384],
        &mut c,
        1,
        3,
        2
    ));
    check!(c == [12288, 12288]);
    ok!(mat_mult_q15(&[16384], &[16384], &mut c[..1], 1, 1, 1));
    check_eq!(c[0], 8192);
    Ok(())
}

/// A 3x5 by 5x4 product of pseudo-random Q15 values (small enough not to
/// saturate) is within 0.5 LSB of the exact product computed in f64.
pub fn mat_mult_q15_against_a_float_reference() -> Outcome {
    const M: usize = 3;
    const K: usize = 5;
    const N: usize = 4;
    let mut state = 0xDEAD_BEEF;
    let a: [i16; M * K] = core::array::from_fn(|_| (xorshift(&mut state) as i16) / 8);
    let b: [i16; K * N] = core::array::from_fn(|_| (xorshift(&mut state) as i16) / 8);
    let mut c = [0i16; M * N];
    ok!(mat_mult_q15(&a, &b, &mut c, M, K, N));
    for i in 0..M {
        for j in 0..N {
            let mut exact = 0.0f64;
            for p in 0..K {
                exact += f64::from(a[i * K + p]) * f64::from(b[p * N + j]) / 32768.0;
            }
            let error = f64::from(c[i * N + j]) - exact;
            check!(error.abs() <= 0.5 + 1e-9);
        }
    }
    Ok(())
}

/// Offset 0 and multiplier 256 (1.0 in Q8.8) return every int8 value unchanged.
pub fn normalize_identity_over_the_whole_int8_range() -> Outcome {
    let input: [i8; 256] = core::array::from_fn(|i| (i as i32 - 128) as i8);
    let mut out = [0i8; 256];
    ok!(normalize_int8(&input, &mut out, 0, 256));
    check!(out == input);
    Ok(())
}
