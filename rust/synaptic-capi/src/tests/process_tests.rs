use synaptic_runtime::arena::DType;

use super::*;
use crate::process::*;

type Processor =
    unsafe extern "C" fn(*const syn_tensor_t, *mut syn_tensor_t, *const c_void) -> c_int;

/// The function an exported processor pointer holds.
fn exported(p: syn_preprocess_fn_t) -> Processor {
    p.expect("the exported pointer is set")
}

fn run<C>(f: Processor, input: &syn_tensor_t, out: &mut syn_tensor_t, config: Option<&C>) -> c_int {
    let cfg = config.map_or(core::ptr::null(), |c| (c as *const C).cast::<c_void>());
    // SAFETY: the descriptors point to live buffers of their sizes; the
    // config is NULL or a live value of the processor's config type.
    unsafe { f(input, out, cfg) }
}

fn f32s(bytes: &[u8]) -> std::vec::Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Reads the exported pointers by value (they are `static mut` only to
/// match the reference's non-const declarations).
macro_rules! builtin {
    ($name:ident) => {
        // SAFETY: a plain read of an initialised static that nothing writes.
        exported(unsafe { $name })
    };
}

#[test]
fn resize_keeps_rank_and_dtype() {
    let mut src = [0u8, 100, 200, 255];
    let input = tensor(&mut src, DType::UInt8, &[1, 2, 2, 1]);
    let mut dst = [0u8; 16];
    let mut out = tensor(&mut dst, DType::Int8, &[16]);
    let cfg = syn_resize_config_t { w: 4, h: 4 };
    assert_eq!(
        run(
            builtin!(syn_preprocess_image_resize),
            &input,
            &mut out,
            Some(&cfg)
        ),
        0
    );
    assert_eq!(
        (out.size, out.ndim, out.shape, out.dtype),
        (16, 4, [1, 4, 4, 1], RawDtype::of(DType::UInt8))
    );
    assert_eq!(dst[0], 0, "corner");
    assert_eq!(dst[15], 255, "corner");
    let mut small = [0u8; 15];
    let mut out = tensor(&mut small, DType::UInt8, &[15]);
    assert_eq!(
        run(
            builtin!(syn_preprocess_image_resize),
            &input,
            &mut out,
            Some(&cfg)
        ),
        err(Errno::NoMem)
    );
    assert_eq!(
        run::<u8>(
            builtin!(syn_preprocess_image_resize),
            &input,
            &mut out,
            None
        ),
        err(Errno::Inval)
    );
    let zero = syn_resize_config_t { w: 0, h: 4 };
    assert_eq!(
        run(
            builtin!(syn_preprocess_image_resize),
            &input,
            &mut out,
            Some(&zero)
        ),
        err(Errno::Inval)
    );
}

#[test]
fn normalize_uint8_and_int8_to_float() {
    let cfg = syn_normalize_config_t {
        mean: [100.0, 0.0, 0.0, 0.0],
        std: [2.0, 1.0, 1.0, 1.0],
        channels: 2,
    };
    let mut src = [100u8, 5, 104, 7];
    let input = tensor(&mut src, DType::UInt8, &[1, 1, 2, 2]);
    let mut dst = [0u8; 16];
    let mut out = tensor(&mut dst, DType::UInt8, &[16]);
    assert_eq!(
        run(
            builtin!(syn_preprocess_image_normalize),
            &input,
            &mut out,
            Some(&cfg)
        ),
        0
    );
    assert_eq!(f32s(&dst), [0.0, 5.0, 2.0, 7.0]);
    assert_eq!(
        (out.ndim, out.shape, out.dtype),
        (4, [1, 1, 2, 2], RawDtype::of(DType::Float32))
    );
    let mut signed = [0x9Cu8, 1, 0x9Cu8, 3]; // -100 as int8
    let input = tensor(&mut signed, DType::Int8, &[2, 2]);
    let mut out = tensor(&mut dst, DType::UInt8, &[16]);
    assert_eq!(
        run(
            builtin!(syn_preprocess_image_normalize),
            &input,
            &mut out,
            Some(&cfg)
        ),
        0
    );
    assert_eq!(f32s(&dst), [-100.0, 1.0, -100.0, 3.0]);
    let three = syn_normalize_config_t { channels: 3, ..cfg };
    assert_eq!(
        run(
            builtin!(syn_preprocess_image_normalize),
            &input,
            &mut out,
            Some(&three)
        ),
        err(Errno::Inval)
    );
}

#[test]
fn quantize_and_dequantize_round_trip() {
    let values = [0.0f32, 0.5, -0.25, 100.0];
    let mut src: std::vec::Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let input = tensor(&mut src, DType::Float32, &[4]);
    let mut q = [0u8; 4];
    let mut out = tensor(&mut q, DType::Int8, &[4]);
    let qcfg = syn_quantize_config_t {
        scale: 0.25,
        zero_point: 1,
    };
    assert_eq!(
        run(
            builtin!(syn_preprocess_quantize_int8),
            &input,
            &mut out,
            Some(&qcfg)
        ),
        0
    );
    assert_eq!(q.map(|b| b as i8), [1, 3, 0, 127]);
    assert_eq!(out.dtype, RawDtype::of(DType::Int8));
    let qinput = tensor(&mut q, DType::Int8, &[4]);
    let mut back = [0u8; 16];
    let mut out = tensor(&mut back, DType::UInt8, &[16]);
    let dcfg = syn_dequantize_config_t {
        scale: 0.25,
        zero_point: 1,
    };
    assert_eq!(
        run(
            builtin!(syn_postprocess_dequantize),
            &qinput,
            &mut out,
            Some(&dcfg)
        ),
        0
    );
    assert_eq!(f32s(&back), [0.0, 0.5, -0.25, 31.5]);
    let bad = syn_quantize_config_t {
        scale: 0.0,
        zero_point: 0,
    };
    assert_eq!(
        run(
            builtin!(syn_preprocess_quantize_int8),
            &input,
            &mut out,
            Some(&bad)
        ),
        err(Errno::Inval)
    );
    // Wrong input type.
    assert_eq!(
        run(
            builtin!(syn_preprocess_quantize_int8),
            &qinput,
            &mut out,
            Some(&qcfg)
        ),
        err(Errno::Inval)
    );
}

#[test]
fn mfcc_frames_float_and_pcm_audio() {
    // The working memory comes from the scratch pool: the arena must exist.
    let _t = super::host::fresh();
    assert_eq!(crate::api::syn_init(), 0);
    let cfg = syn_mfcc_config_t {
        sample_rate_hz: 16_000,
        frame_len: 256,
        num_mel: 20,
        num_coeffs: 10,
    };
    let samples: std::vec::Vec<f32> = (0..600).map(|i| libm::sinf(i as f32 * 0.3) * 0.5).collect();
    let mut src: std::vec::Vec<u8> = samples.iter().flat_map(|v| v.to_ne_bytes()).collect();
    let input = tensor(&mut src, DType::Float32, &[1, 600]);
    let mut dst = [0u8; 2 * 10 * 4];
    let mut out = tensor(&mut dst, DType::UInt8, &[80]);
    assert_eq!(
        run(
            builtin!(syn_preprocess_audio_mfcc),
            &input,
            &mut out,
            Some(&cfg)
        ),
        0
    );
    assert_eq!((out.ndim, out.shape, out.size), (2, [2, 10, 0, 0], 80));
    let float_features = f32s(&dst);
    assert!(float_features.iter().all(|v| v.is_finite()));
    // The same audio as 16-bit PCM gives the same features.
    let mut pcm: std::vec::Vec<u8> = samples
        .iter()
        .flat_map(|v| ((v * 32768.0).round() as i16).to_ne_bytes())
        .collect();
    let input = tensor(&mut pcm, DType::Int16, &[600]);
    let mut out = tensor(&mut dst, DType::UInt8, &[80]);
    assert_eq!(
        run(
            builtin!(syn_preprocess_audio_mfcc),
            &input,
            &mut out,
            Some(&cfg)
        ),
        0
    );
    assert_eq!(f32s(&dst), float_features);
    let bad = syn_mfcc_config_t {
        frame_len: 100,
        ..cfg
    };
    assert_eq!(
        run(
            builtin!(syn_preprocess_audio_mfcc),
            &input,
            &mut out,
            Some(&bad)
        ),
        err(Errno::Inval)
    );
    let mut one_frame_only = [0u8; 40];
    let mut out = tensor(&mut one_frame_only, DType::UInt8, &[40]);
    assert_eq!(
        run(
            builtin!(syn_preprocess_audio_mfcc),
            &input,
            &mut out,
            Some(&cfg)
        ),
        err(Errno::NoMem)
    );
    // Frames whose working memory (4 x (1.5 x frame_len + 1 + num_mel +
    // num_coeffs) bytes) the pool cannot
    // give fail with -ENOMEM instead of taking it from the stack.
    let big = syn_mfcc_config_t {
        frame_len: 1024,
        ..cfg
    };
    let mut long: std::vec::Vec<u8> = std::vec![0; 2048];
    let input = tensor(&mut long, DType::Int16, &[1024]);
    let mut dst = [0u8; 40];
    let mut out = tensor(&mut dst, DType::UInt8, &[40]);
    let expected = if (1024 + 513 + 20 + 10) * 4 > crate::SCRATCH_SIZE {
        err(Errno::NoMem)
    } else {
        0
    };
    assert_eq!(
        run(
            builtin!(syn_preprocess_audio_mfcc),
            &input,
            &mut out,
            Some(&big)
        ),
        expected
    );
}

#[test]
fn softmax_argmax_and_top_k() {
    let mut logits = [10u8, 250, 30, 20]; // int8: 10, -6, 30, 20
    let input = tensor(&mut logits, DType::Int8, &[4]);
    let mut probs = [0u32; 4]; // 4-byte aligned
                               // SAFETY: viewing a u32 array as its 16 bytes.
    let probs_bytes =
        unsafe { core::slice::from_raw_parts_mut(probs.as_mut_ptr().cast::<u8>(), 16) };
    let mut out = tensor(probs_bytes, DType::UInt8, &[16]);
    let dq = syn_dequantize_config_t {
        scale: 0.1,
        zero_point: 0,
    };
    assert_eq!(
        run(
            builtin!(syn_postprocess_softmax),
            &input,
            &mut out,
            Some(&dq)
        ),
        0
    );
    let p = f32s(probs_bytes);
    assert!((p.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    assert!(p[2] > p[3] && p[3] > p[0] && p[0] > p[1]);
    assert_eq!(out.dtype, RawDtype::of(DType::Float32));

    let mut record = [0u8; 8];
    let mut out = tensor(&mut record, DType::UInt8, &[8]);
    assert_eq!(
        run::<u8>(builtin!(syn_postprocess_argmax), &input, &mut out, None),
        0
    );
    assert_eq!(
        (
            u32::from_ne_bytes(record[..4].try_into().unwrap()),
            f32s(&record[4..])[0]
        ),
        (2, 30.0)
    );
    assert_eq!((out.size, out.ndim, out.shape[0]), (8, 1, 1));
    let mut tiny = [0u8; 7];
    let mut out = tensor(&mut tiny, DType::UInt8, &[7]);
    assert_eq!(
        run::<u8>(builtin!(syn_postprocess_argmax), &input, &mut out, None),
        err(Errno::NoMem)
    );

    let mut records = [0u8; 24];
    let mut out = tensor(&mut records, DType::UInt8, &[24]);
    let k3 = syn_topk_config_t { k: 3 };
    assert_eq!(
        run(builtin!(syn_postprocess_top_k), &input, &mut out, Some(&k3)),
        0
    );
    let idx = |i: usize| u32::from_ne_bytes(records[8 * i..8 * i + 4].try_into().unwrap());
    assert_eq!([idx(0), idx(1), idx(2)], [2, 3, 0]);
    assert_eq!((out.size, out.shape[0]), (24, 3));
    let k0 = syn_topk_config_t { k: 0 };
    assert_eq!(
        run(builtin!(syn_postprocess_top_k), &input, &mut out, Some(&k0)),
        err(Errno::Inval)
    );
}

#[test]
fn nms_suppresses_overlaps_within_a_class() {
    let boxes = [
        syn_bbox_t {
            x1: 0.0,
            y1: 0.0,
            x2: 10.0,
            y2: 10.0,
            score: 0.9,
            class_id: 0.0,
        },
        syn_bbox_t {
            x1: 1.0,
            y1: 1.0,
            x2: 11.0,
            y2: 11.0,
            score: 0.8,
            class_id: 0.0,
        },
        syn_bbox_t {
            x1: 1.0,
            y1: 1.0,
            x2: 11.0,
            y2: 11.0,
            score: 0.7,
            class_id: 1.0,
        },
        syn_bbox_t {
            x1: 50.0,
            y1: 50.0,
            x2: 60.0,
            y2: 60.0,
            score: 0.1,
            class_id: 0.0,
        },
    ];
    let mut src: std::vec::Vec<u8> = boxes
        .iter()
        .flat_map(|b| [b.x1, b.y1, b.x2, b.y2, b.score, b.class_id])
        .flat_map(f32::to_ne_bytes)
        .collect();
    let input = tensor(&mut src, DType::Float32, &[4, 6]);
    let mut dst = [0u8; 4 * 24];
    let mut out = tensor(&mut dst, DType::UInt8, &[96]);
    let cfg = syn_nms_config_t {
        iou_threshold: 0.5,
        score_threshold: 0.2,
        max_boxes: 10,
    };
    assert_eq!(
        run(builtin!(syn_postprocess_nms), &input, &mut out, Some(&cfg)),
        0
    );
    assert_eq!(
        (out.size, out.ndim, out.shape[..2].to_vec()),
        (48, 2, std::vec![2, 6])
    );
    let kept = f32s(&dst[..48]);
    assert_eq!((kept[4], kept[5]), (0.9, 0.0));
    assert_eq!((kept[10], kept[11]), (0.7, 1.0));
    let one = syn_nms_config_t {
        max_boxes: 1,
        ..cfg
    };
    assert_eq!(
        run(builtin!(syn_postprocess_nms), &input, &mut out, Some(&one)),
        0
    );
    assert_eq!(out.shape[0], 1);
    let mut many = std::vec![0u8; 65 * 24];
    let input = tensor(&mut many, DType::Float32, &[65, 6]);
    let mut out = tensor(&mut dst, DType::UInt8, &[96]);
    assert_eq!(
        run(builtin!(syn_postprocess_nms), &input, &mut out, Some(&cfg)),
        err(Errno::Inval)
    );
}

#[test]
fn processors_refuse_null_and_overlapping_buffers() {
    let mut buf = [0u8; 32];
    let input = tensor(&mut buf[..16], DType::Int8, &[16]);
    let base = buf.as_mut_ptr();
    let mut overlapping = syn_tensor_t {
        // SAFETY: 8 bytes into a 32-byte buffer.
        data: unsafe { base.add(8) }.cast(),
        size: 24,
        ..syn_tensor_t::EMPTY
    };
    let dq = syn_dequantize_config_t {
        scale: 1.0,
        zero_point: 0,
    };
    let f = builtin!(syn_postprocess_dequantize);
    assert_eq!(
        run(f, &input, &mut overlapping, Some(&dq)),
        err(Errno::Inval)
    );
    let mut null_data = syn_tensor_t {
        size: 64,
        ..syn_tensor_t::EMPTY
    };
    assert_eq!(run(f, &input, &mut null_data, Some(&dq)), err(Errno::Inval));
    // SAFETY: NULL descriptors are refused before any access.
    unsafe {
        assert_eq!(
            f(core::ptr::null(), &mut null_data, core::ptr::null()),
            err(Errno::Inval)
        );
    }
    let mut bad_shape = input;
    bad_shape.ndim = 5;
    let mut out_buf = [0u8; 64];
    let mut out = tensor(&mut out_buf, DType::UInt8, &[64]);
    assert_eq!(run(f, &bad_shape, &mut out, Some(&dq)), err(Errno::Inval));
    bad_shape.ndim = 2;
    bad_shape.shape = [4, 8, 0, 0]; // 32 elements in 16 bytes
    assert_eq!(run(f, &bad_shape, &mut out, Some(&dq)), err(Errno::Inval));
}
