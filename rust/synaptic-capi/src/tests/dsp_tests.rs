use super::*;
use crate::dsp::*;

#[test]
fn init_succeeds() {
    assert_eq!(syn_hal_dsp_init(), 0);
}

#[test]
fn normalize_int8_scales_offsets_and_saturates() {
    let input = [0u8, 10, 100, 255];
    let mut out = [0i8; 4];
    // SAFETY: both buffers hold 4 elements.
    let rc = unsafe { syn_hal_dsp_normalize_int8(input.as_ptr(), out.as_mut_ptr(), 4, 0.5, -10) };
    assert_eq!(rc, 0);
    assert_eq!(out, [-10, -5, 40, 117]);
    // SAFETY: as above; saturates at both ends.
    unsafe { syn_hal_dsp_normalize_int8(input.as_ptr(), out.as_mut_ptr(), 4, 2.0, -128) };
    assert_eq!(out, [-128, -108, 72, 127]);
    // In place.
    let mut buf = [4u8, 8, 12, 16];
    let p = buf.as_mut_ptr();
    // SAFETY: in == out, 4 bytes.
    let rc = unsafe { syn_hal_dsp_normalize_int8(p, p.cast(), 4, 1.0, -8) };
    assert_eq!(rc, 0);
    assert_eq!(buf.map(|b| b as i8), [-4, 0, 4, 8]);
    // SAFETY: NULLs, zero length and a partial overlap are refused.
    unsafe {
        assert_eq!(
            syn_hal_dsp_normalize_int8(core::ptr::null(), out.as_mut_ptr(), 4, 1.0, 0),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_normalize_int8(input.as_ptr(), core::ptr::null_mut(), 4, 1.0, 0),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_normalize_int8(input.as_ptr(), out.as_mut_ptr(), 0, 1.0, 0),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_normalize_int8(p, p.add(1).cast(), 3, 1.0, 0),
            err(Errno::Inval)
        );
    }
}

#[test]
fn softmax_sums_to_one_in_and_out_of_place() {
    let input = [1.0f32, 2.0, 3.0, 1000.0];
    let mut out = [0f32; 4];
    // SAFETY: 4 floats each.
    let rc = unsafe { syn_hal_dsp_softmax_f32(input.as_ptr(), out.as_mut_ptr(), 4) };
    assert_eq!(rc, 0);
    assert!((out.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    assert!(out[3] > 0.999, "large logits do not overflow");
    let mut buf = [0.0f32, 0.0];
    let p = buf.as_mut_ptr();
    // SAFETY: in == out, 2 floats.
    assert_eq!(unsafe { syn_hal_dsp_softmax_f32(p, p, 2) }, 0);
    assert_eq!(buf, [0.5, 0.5]);
    let mut wide = [0f32; 4];
    let w = wide.as_mut_ptr();
    // SAFETY: refused before any access.
    unsafe {
        assert_eq!(syn_hal_dsp_softmax_f32(w, w.add(1), 3), err(Errno::Inval));
        assert_eq!(
            syn_hal_dsp_softmax_f32(input.as_ptr(), out.as_mut_ptr(), 0),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_softmax_f32(core::ptr::null(), out.as_mut_ptr(), 4),
            err(Errno::Inval)
        );
        let misaligned = (input.as_ptr() as *const u8).add(1).cast::<f32>();
        assert_eq!(
            syn_hal_dsp_softmax_f32(misaligned, out.as_mut_ptr(), 2),
            err(Errno::Inval)
        );
    }
}

#[test]
fn argmax_takes_the_first_maximum() {
    let data = [-5i8, 7, 3, 7];
    let mut index = 99u32;
    // SAFETY: 4 values and a live local.
    let rc = unsafe { syn_hal_dsp_argmax(data.as_ptr(), 4, &mut index) };
    assert_eq!(rc, 0);
    assert_eq!(index, 1);
    // SAFETY: refused before any access.
    unsafe {
        assert_eq!(
            syn_hal_dsp_argmax(data.as_ptr(), 0, &mut index),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_argmax(core::ptr::null(), 4, &mut index),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_argmax(data.as_ptr(), 4, core::ptr::null_mut()),
            err(Errno::Inval)
        );
    }
}

#[test]
fn fft_of_an_impulse_is_flat_and_lengths_are_checked() {
    let mut input = [0f32; 16];
    input[0] = 1.0;
    let mut out = [7f32; 16];
    // SAFETY: 8 complex points = 16 floats each.
    let rc = unsafe { syn_hal_dsp_fft_f32(input.as_ptr(), out.as_mut_ptr(), 8) };
    assert_eq!(rc, 0);
    for k in 0..8 {
        assert!(
            (out[2 * k] - 1.0).abs() < 1e-6 && out[2 * k + 1].abs() < 1e-6,
            "bin {k}"
        );
    }
    // In place: a constant signal has all its energy in bin 0.
    let mut buf = [0f32; 8];
    for k in 0..4 {
        buf[2 * k] = 1.0;
    }
    let p = buf.as_mut_ptr();
    // SAFETY: in == out, 4 points.
    assert_eq!(unsafe { syn_hal_dsp_fft_f32(p, p, 4) }, 0);
    assert!((buf[0] - 4.0).abs() < 1e-6);
    assert!(buf[2..].iter().all(|v| v.abs() < 1e-6));
    // SAFETY: refused before any access.
    unsafe {
        assert_eq!(
            syn_hal_dsp_fft_f32(input.as_ptr(), out.as_mut_ptr(), 3),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_fft_f32(input.as_ptr(), out.as_mut_ptr(), 1),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_fft_f32(input.as_ptr(), out.as_mut_ptr(), 2048),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_fft_f32(core::ptr::null(), out.as_mut_ptr(), 8),
            err(Errno::Inval)
        );
        assert_eq!(syn_hal_dsp_fft_f32(p, p.add(2), 2), err(Errno::Inval));
    }
}

#[test]
fn q15_matrix_vector_product() {
    // [[0.5, 0.5], [1.0 - 2^-15, -1.0]] x [0.5, 0.25]
    let a = [16384i16, 16384, 32767, -32768];
    let b = [16384i16, 8192];
    let mut out = [0i16; 2];
    // SAFETY: a is 2x2, b has 2 entries, out has 2.
    let rc = unsafe { syn_hal_dsp_mat_mult_q15(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), 2, 2) };
    assert_eq!(rc, 0);
    assert_eq!(out, [12288, 8192]);
    // Saturation.
    let big = [32767i16, 32767];
    let ones = [32767i16, 32767];
    let mut one = [0i16; 1];
    // SAFETY: 1x2 by 2.
    let rc =
        unsafe { syn_hal_dsp_mat_mult_q15(big.as_ptr(), ones.as_ptr(), one.as_mut_ptr(), 1, 2) };
    assert_eq!(rc, 0);
    assert_eq!(one, [i16::MAX]);
    // SAFETY: refused before any access.
    unsafe {
        assert_eq!(
            syn_hal_dsp_mat_mult_q15(a.as_ptr(), b.as_ptr(), out.as_mut_ptr(), 0, 2),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_hal_dsp_mat_mult_q15(a.as_ptr(), b.as_ptr(), core::ptr::null_mut(), 2, 2),
            err(Errno::Inval)
        );
        let mut shared = [0i16; 4];
        let s = shared.as_mut_ptr();
        assert_eq!(
            syn_hal_dsp_mat_mult_q15(s, b.as_ptr(), s.add(2), 2, 2),
            err(Errno::Inval)
        );
    }
}
