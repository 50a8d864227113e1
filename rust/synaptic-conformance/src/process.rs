//! Suite `process`: pre- and post-processing (resize, channel
//! normalisation, quantisation, MFCC, int8 softmax, argmax, top-k, IoU,
//! NMS) and their pipeline stage wrappers.
//!
//! MFCC runs on a few frames instead of a whole second of audio (a second of
//! 16 kHz PCM is 32 KB, half the target's RAM); the 49 x 10 geometry of one
//! second is checked arithmetically. Audio lives in a static buffer.

use core::f32::consts::PI;

use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::arena::{DType, Shape, TensorMeta, TensorRef};
use synaptic_runtime::dsp::argmax_f32;
use synaptic_runtime::process::stages::{
    dequantize_stage, mfcc_stage, nms_stage, normalize_stage, quantize_stage, resize_stage,
    softmax_stage, top_k_stage, StageConfig,
};
use synaptic_runtime::process::{
    argmax, dequantize, hz_to_mel, iou, mel_energies, mel_to_hz, mfcc, nms, normalize_channels,
    quantize, resize, softmax_int8, top_k, BBox, Classification, ImageDims, MfccConfig, NmsConfig,
    ProcessError, QuantParams, ResizeMethod, SOFTMAX_OUTPUT,
};

use crate::support::{close, f32_at, put_f32s, Exclusive};

cases![
    resize_nearest_upscales_by_replication,
    resize_nearest_downscales_and_keeps_channels,
    resize_bilinear_interpolates_and_preserves_constants,
    resize_rejects_bad_geometry,
    normalize_channels_per_channel_mean_and_std,
    quantize_round_trip_and_saturation,
    mel_scale_round_trips,
    mfcc_of_a_periodic_tone_repeats_frame_by_frame,
    mfcc_energy_peaks_in_the_band_of_the_tone_and_c0_tracks_loudness,
    mfcc_rejects_bad_configs_and_short_input,
    softmax_int8_known_values,
    argmax_and_top_k_order,
    iou_known_values,
    nms_suppresses_overlaps_and_low_scores,
    stages_chain_resize_normalize_quantize,
    mfcc_stage_matches_the_slice_api,
    softmax_and_dequantize_stages,
    top_k_stage_streams_and_merges,
    nms_stage_reads_and_writes_box_rows,
];

/// Samples of three default MFCC frames (640 + 2 x 320).
const AUDIO_SAMPLES: usize = 1280;
static AUDIO: Exclusive<[i16; AUDIO_SAMPLES]> = Exclusive::new([0; AUDIO_SAMPLES]);
/// The same audio as little-endian bytes, for the stage.
static PCM: Exclusive<[u8; 1024]> = Exclusive::new([0; 1024]);

/// The MFCC kernel keeps about 6.5 KB of arrays on the stack. Called
/// through this one function that is never inlined, a case holds a single
/// copy of that frame however often it runs the kernel (inlined twice, the
/// frames add up on the ztest thread's stack).
#[inline(never)]
fn run_mfcc(
    samples: &[i16],
    config: &MfccConfig,
    output: &mut [f32],
) -> Result<usize, ProcessError> {
    mfcc(samples, config, output)
}

/// [`mel_energies`] behind the same stack-frame fence as [`run_mfcc`].
#[inline(never)]
fn run_mel_energies(
    frame: &[i16],
    config: &MfccConfig,
    mel: &mut [f32],
) -> Result<(), ProcessError> {
    mel_energies(frame, config, mel)
}

/// [`mfcc_stage`] behind the same stack-frame fence as [`run_mfcc`].
#[inline(never)]
fn run_mfcc_stage(
    input: &TensorRef<'_>,
    output: &mut [u8],
    config: &StageConfig,
) -> Result<TensorMeta, ProcessError> {
    mfcc_stage(input, output, config)
}

fn dims(width: usize, height: usize, channels: usize) -> ImageDims {
    ImageDims {
        width,
        height,
        channels,
    }
}

fn tone(out: &mut [i16], amplitude: f32, hz: f32) {
    for (i, s) in out.iter_mut().enumerate() {
        *s = (libm::sinf(2.0 * PI * hz * i as f32 / 16_000.0) * amplitude) as i16;
    }
}

/// Nearest-neighbour upscaling by 2 replicates every pixel into a 2 x 2 block.
pub fn resize_nearest_upscales_by_replication() -> Outcome {
    let mut dst = [0u8; 16];
    ok!(resize(
        &[1, 2, 3, 4],
        dims(2, 2, 1),
        &mut dst,
        dims(4, 4, 1),
        ResizeMethod::Nearest
    ));
    check!(dst == [1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4]);
    Ok(())
}

/// Halving an RGB row picks the pixels under the output centres, all three
/// channels together.
pub fn resize_nearest_downscales_and_keeps_channels() -> Outcome {
    let src = [0u8, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32];
    let mut dst = [0u8; 6];
    ok!(resize(
        &src,
        dims(4, 1, 3),
        &mut dst,
        dims(2, 1, 3),
        ResizeMethod::Nearest
    ));
    check!(dst == [10, 11, 12, 30, 31, 32]);
    Ok(())
}

/// Bilinear with half-pixel centres: known values on a ramp, a constant
/// image stays constant, a 2 x 2 block averages to its mean.
pub fn resize_bilinear_interpolates_and_preserves_constants() -> Outcome {
    let mut dst = [0u8; 4];
    ok!(resize(
        &[0, 100],
        dims(2, 1, 1),
        &mut dst,
        dims(4, 1, 1),
        ResizeMethod::Bilinear
    ));
    // Source x = -0.25 (clamped to 0), 0.25, 0.75, 1.25 (clamped to 1).
    check!(dst == [0, 25, 75, 100]);
    let flat = [77u8; 5 * 3 * 2];
    let mut out = [0u8; 2 * 7 * 2];
    ok!(resize(
        &flat,
        dims(5, 3, 2),
        &mut out,
        dims(7, 2, 2),
        ResizeMethod::Bilinear
    ));
    check!(out.iter().all(|&v| v == 77));
    let mut down = [0u8; 1];
    ok!(resize(
        &[0, 100, 100, 200],
        dims(2, 2, 1),
        &mut down,
        dims(1, 1, 1),
        ResizeMethod::Bilinear
    ));
    check_eq!(down[0], 100);
    Ok(())
}

/// A zero dimension, a channel change and a wrong buffer length are refused.
pub fn resize_rejects_bad_geometry() -> Outcome {
    let mut dst = [0u8; 4];
    let nearest = ResizeMethod::Nearest;
    check!(
        resize(&[0; 4], dims(2, 2, 1), &mut dst, dims(0, 2, 1), nearest)
            == Err(ProcessError::InvalidDimensions)
    );
    check!(
        resize(&[0; 3], dims(2, 2, 1), &mut dst, dims(2, 2, 1), nearest)
            == Err(ProcessError::LengthMismatch {
                expected: 4,
                actual: 3
            })
    );
    check!(
        resize(&[0; 4], dims(2, 2, 1), &mut dst, dims(1, 1, 4), nearest)
            == Err(ProcessError::InvalidDimensions)
    );
    Ok(())
}

/// Each channel gets its own mean and standard deviation; a zero deviation
/// and a partial pixel are refused.
pub fn normalize_channels_per_channel_mean_and_std() -> Outcome {
    let mut out = [0f32; 4];
    ok!(normalize_channels(
        &[128, 0, 255, 64],
        &mut out,
        &[128.0, 0.0],
        &[64.0, 2.0]
    ));
    check!(out == [0.0, 0.0, 1.984375, 32.0]);
    check!(
        normalize_channels(&[1, 2], &mut out[..2], &[0.0], &[0.0])
            == Err(ProcessError::InvalidConfig)
    );
    check!(matches!(
        normalize_channels(&[1, 2, 3], &mut out[..3], &[0.0; 2], &[1.0; 2]),
        Err(ProcessError::LengthMismatch { .. })
    ));
    Ok(())
}

/// Quantisation rounds and saturates to int8, dequantisation inverts it
/// exactly on the grid, and a zero scale is refused.
pub fn quantize_round_trip_and_saturation() -> Outcome {
    let q = QuantParams {
        scale: 0.5,
        zero_point: -10,
    };
    let mut qs = [0i8; 5];
    ok!(quantize(&[0.0, 1.0, -1.25, 1000.0, -1000.0], &mut qs, q));
    check!(qs == [-10, -8, -13, 127, -128]);
    let mut back = [0f32; 3];
    ok!(dequantize(&qs[..3], &mut back, q));
    check!(back == [0.0, 1.0, -1.5]);
    let bad = QuantParams {
        scale: 0.0,
        zero_point: 0,
    };
    check!(quantize(&[1.0], &mut qs[..1], bad) == Err(ProcessError::InvalidConfig));
    check!(dequantize(&[1], &mut back[..1], bad) == Err(ProcessError::InvalidConfig));
    Ok(())
}

/// 1000 Hz is about 1000 mel, and mel-to-hertz inverts hertz-to-mel
/// (tolerance 5% + 0.05 Hz).
pub fn mel_scale_round_trips() -> Outcome {
    check!(close(hz_to_mel(1000.0), 1000.0, 0.5));
    for hz in [0.0f32, 20.0, 440.0, 4000.0, 8000.0] {
        check!(close(
            mel_to_hz(hz_to_mel(hz)),
            hz,
            0.05 * (1.0 + hz / 100.0)
        ));
    }
    Ok(())
}

/// One second gives 49 frames of the default geometry; a 500 Hz tone
/// repeats every 32 samples, so every 320-sample hop sees the same frame and
/// the coefficients repeat (relative tolerance 1e-3).
pub fn mfcc_of_a_periodic_tone_repeats_frame_by_frame() -> Outcome {
    let cfg = MfccConfig::default();
    check_eq!(cfg.frames(16_000), 49);
    check_eq!(cfg.frames(AUDIO_SAMPLES), 3);
    let mut audio = claim!(AUDIO);
    for (i, s) in audio.iter_mut().enumerate() {
        let phase = (i % 32) as f32 / 32.0;
        *s = (libm::sinf(2.0 * PI * phase) * 8000.0) as i16;
    }
    let mut out = [0f32; 30];
    check!(run_mfcc(&audio[..], &cfg, &mut out) == Ok(3));
    check!(out.iter().all(|v| v.is_finite()));
    for f in 1..3 {
        for k in 0..10 {
            check!(close(out[f * 10 + k], out[k], 1e-3 * (1.0 + out[k].abs())));
        }
    }
    check!(
        run_mfcc(&audio[..], &cfg, &mut out[..29])
            == Err(ProcessError::OutputTooSmall {
                needed: 30,
                actual: 29
            })
    );
    Ok(())
}

/// A 1 kHz tone puts the most energy in the mel band centred within 80 Hz
/// of 1 kHz, and a tone 20 dB quieter lowers c0 by sqrt(40) ln(100)
/// (tolerance 0.5).
pub fn mfcc_energy_peaks_in_the_band_of_the_tone_and_c0_tracks_loudness() -> Outcome {
    let cfg = MfccConfig::default();
    let mut audio = claim!(AUDIO);
    let frame = &mut audio[..640];
    tone(frame, 8000.0, 1000.0);
    let mut mel = [0f32; 40];
    ok!(run_mel_energies(frame, &cfg, &mut mel));
    let (peak, _) = ok!(argmax_f32(&mel));
    let low = hz_to_mel(20.0);
    let step = (hz_to_mel(4000.0) - low) / 41.0;
    let centre = mel_to_hz(low + step * (peak + 1) as f32);
    check!(close(centre, 1000.0, 80.0), "peak band is not near 1 kHz");
    let mut loud = [0f32; 10];
    let mut quiet = [0f32; 10];
    ok!(run_mfcc(frame, &cfg, &mut loud));
    tone(frame, 800.0, 1000.0);
    ok!(run_mfcc(frame, &cfg, &mut quiet));
    let expected = libm::sqrtf(40.0) * libm::logf(100.0);
    check!(close(loud[0] - quiet[0], expected, 0.5));
    Ok(())
}

/// Non-power-of-two or oversized FFTs, too many coefficients, a band edge
/// above Nyquist and a zero hop are refused; audio shorter than a frame is
/// empty.
pub fn mfcc_rejects_bad_configs_and_short_input() -> Outcome {
    let audio = claim!(AUDIO);
    let audio = &audio[..700];
    let mut out = [0f32; 10];
    let d = MfccConfig::default();
    for cfg in [
        MfccConfig { fft_len: 600, ..d },
        MfccConfig { fft_len: 2048, ..d },
        MfccConfig {
            coefficients: 41,
            ..d
        },
        MfccConfig {
            high_hz: 9000.0,
            ..d
        },
        MfccConfig { frame_step: 0, ..d },
    ] {
        check!(run_mfcc(audio, &cfg, &mut out) == Err(ProcessError::InvalidConfig));
    }
    check!(run_mfcc(&audio[..639], &d, &mut out) == Err(ProcessError::Empty));
    Ok(())
}

/// Int8 softmax uses the TFLite output convention: known values, 0.5 maps
/// to 0, 1.0 saturates to 127.
pub fn softmax_int8_known_values() -> Outcome {
    let q = QuantParams {
        scale: 1.0,
        zero_point: 0,
    };
    let mut out = [0i8; 2];
    ok!(softmax_int8(&[5, 5], q, &mut out));
    check!(out == [0, 0]);
    ok!(softmax_int8(&[100, 0], q, &mut out));
    check!(out == [127, -128]);
    let mut three = [0i8; 3];
    ok!(softmax_int8(&[1, 2, 3], q, &mut three));
    // 0.0900, 0.2447, 0.6652 -> 23, 63, 170 -> -105, -65, 42.
    check!(three == [-105, -65, 42]);
    check!(close(
        SOFTMAX_OUTPUT.dequantize(three[2]),
        0.665,
        1.0 / 256.0
    ));
    check!(softmax_int8(&[], q, &mut []) == Err(ProcessError::Empty));
    Ok(())
}

/// Argmax takes the first maximum; top-k is best first, lower index first
/// on ties, skips NaN, and returns fewer when there are fewer scores.
pub fn argmax_and_top_k_order() -> Outcome {
    check!(argmax(&[1, 9, 3, 9]) == Ok(1));
    check!(argmax(&[]) == Err(ProcessError::Empty));
    let zero = Classification {
        class_id: 0,
        score: 0.0,
    };
    let mut out = [zero; 3];
    let n = ok!(top_k(&[0.1, 0.5, 0.3, 0.5, 0.9, f32::NAN], &mut out));
    check_eq!(n, 3);
    let ids = [out[0].class_id, out[1].class_id, out[2].class_id];
    check!(ids == [4, 1, 3]);
    check!(out[0].score == 0.9);
    let mut many = [zero; 5];
    check!(top_k(&[2.0, 1.0], &mut many) == Ok(2));
    check!(top_k(&[], &mut many) == Err(ProcessError::Empty));
    check!(top_k(&[1.0], &mut []) == Err(ProcessError::InvalidConfig));
    Ok(())
}

fn bbox(x: f32, y: f32, w: f32, h: f32, score: f32, class_id: u16) -> BBox {
    BBox {
        x_min: x,
        y_min: y,
        x_max: x + w,
        y_max: y + h,
        score,
        class_id,
    }
}

/// Intersection over union: identical 1, half-overlapping 1/3, disjoint 0,
/// contained 1/4, two empty boxes 0.
pub fn iou_known_values() -> Outcome {
    let a = bbox(0.0, 0.0, 2.0, 2.0, 1.0, 0);
    check!(iou(&a, &a) == 1.0);
    check!(iou(&a, &bbox(1.0, 0.0, 2.0, 2.0, 1.0, 0)) == 2.0 / 6.0);
    check!(iou(&a, &bbox(5.0, 5.0, 1.0, 1.0, 1.0, 0)) == 0.0);
    check!(iou(&a, &bbox(0.5, 0.5, 1.0, 1.0, 1.0, 0)) == 0.25);
    let empty = BBox::default();
    check!(iou(&empty, &empty) == 0.0);
    Ok(())
}

/// NMS keeps the best of overlapping boxes, drops low scores, respects the
/// per-class flag, the IoU threshold and the output size, and refuses a
/// threshold outside [0, 1].
pub fn nms_suppresses_overlaps_and_low_scores() -> Outcome {
    let boxes = [
        bbox(0.0, 0.0, 10.0, 10.0, 0.8, 0),
        bbox(1.0, 1.0, 10.0, 10.0, 0.9, 0), // overlaps the first by 0.68
        bbox(20.0, 20.0, 5.0, 5.0, 0.7, 0),
        bbox(40.0, 40.0, 5.0, 5.0, 0.2, 0), // below the score threshold
        bbox(0.0, 0.0, 10.0, 10.0, 0.6, 1), // other class, same place
    ];
    let mut out = [BBox::default(); 8];
    let cfg = NmsConfig {
        iou_threshold: 0.5,
        score_threshold: 0.3,
        per_class: false,
    };
    check!(nms(&boxes, &cfg, &mut out) == Ok(2));
    check!(out[0].score == 0.9 && out[1].score == 0.7);
    let per_class = NmsConfig {
        per_class: true,
        ..cfg
    };
    check!(nms(&boxes, &per_class, &mut out) == Ok(3));
    check_eq!(out[2].class_id, 1);
    let loose = NmsConfig {
        iou_threshold: 0.7,
        ..cfg
    };
    check!(nms(&boxes, &loose, &mut out) == Ok(3));
    check!(nms(&boxes, &cfg, &mut out[..1]) == Ok(1));
    let bad = NmsConfig {
        iou_threshold: 1.5,
        ..cfg
    };
    check!(nms(&boxes, &bad, &mut out) == Err(ProcessError::InvalidConfig));
    Ok(())
}

/// Resize, normalise and quantise stages chain through byte buffers, and a
/// stage refuses another stage's configuration, a wrong dtype and a short
/// output buffer.
pub fn stages_chain_resize_normalize_quantize() -> Outcome {
    let img = [0u8, 64, 128, 255];
    let input = ok!(TensorRef::wrap(
        TensorMeta::new(DType::UInt8, ok!(Shape::new(&[2, 2, 1]))),
        &img
    ));
    let mut a = [0u8; 64];
    let resize_cfg = StageConfig::Resize {
        width: 1,
        height: 1,
        method: ResizeMethod::Nearest,
    };
    let m = ok!(resize_stage(&input, &mut a, &resize_cfg));
    check!(m.shape.dims() == [1, 1, 1]);
    check_eq!(a[0], 255);
    let norm = StageConfig::Normalize {
        mean: [127.5; 4],
        std: [127.5; 4],
        channels: 1,
    };
    let mut b = [0u8; 64];
    let m = ok!(normalize_stage(&input, &mut b, &norm));
    check!(m.dtype == DType::Float32);
    check!(f32_at(&b, 0) == -1.0 && f32_at(&b, 3) == 1.0);
    let floats = ok!(TensorRef::wrap(m, &b[..16]));
    let mut c = [0u8; 4];
    let q = StageConfig::Quantize(QuantParams {
        scale: 1.0 / 127.0,
        zero_point: 0,
    });
    ok!(quantize_stage(&floats, &mut c, &q));
    check!(c.map(|x| x as i8) == [-127, -63, 0, 127]);
    check!(resize_stage(&input, &mut a, &q) == Err(ProcessError::ConfigMismatch));
    check!(matches!(
        quantize_stage(&input, &mut c, &q),
        Err(ProcessError::WrongDtype { .. })
    ));
    check!(
        normalize_stage(&input, &mut c, &norm)
            == Err(ProcessError::OutputTooSmall {
                needed: 16,
                actual: 4
            })
    );
    Ok(())
}

/// The MFCC stage reads little-endian PCM and writes exactly what the slice
/// API computes ([frames, coefficients] as `Float32`), here with a small
/// 256-point geometry.
pub fn mfcc_stage_matches_the_slice_api() -> Outcome {
    let cfg = MfccConfig {
        sample_rate: 16_000,
        frame_len: 256,
        frame_step: 128,
        fft_len: 256,
        mel_bands: 16,
        coefficients: 8,
        low_hz: 20.0,
        high_hz: 8_000.0,
    };
    let mut audio = claim!(AUDIO);
    let mut pcm = claim!(PCM);
    let samples = &mut audio[..512];
    for (i, s) in samples.iter_mut().enumerate() {
        *s = (libm::sinf(i as f32 * 0.3) * 4000.0) as i16;
    }
    for (c, s) in pcm.chunks_exact_mut(2).zip(samples.iter()) {
        c.copy_from_slice(&s.to_le_bytes());
    }
    check_eq!(cfg.frames(512), 3);
    let input = ok!(TensorRef::wrap(
        ok!(TensorMeta::vector(DType::Int16, 512)),
        &pcm[..]
    ));
    let mut out = [0u8; 24 * 4];
    let m = ok!(run_mfcc_stage(&input, &mut out, &StageConfig::Mfcc(cfg)));
    check!(m.dtype == DType::Float32);
    check!(m.shape.dims() == [3, 8]);
    let mut direct = [0f32; 24];
    check!(run_mfcc(samples, &cfg, &mut direct) == Ok(3));
    for (i, d) in direct.iter().enumerate() {
        check!(f32_at(&out, i) == *d);
    }
    check!(
        run_mfcc_stage(&input, &mut out[..95], &StageConfig::Mfcc(cfg))
            == Err(ProcessError::OutputTooSmall {
                needed: 96,
                actual: 95
            })
    );
    Ok(())
}

/// The softmax stage turns int8 logits into int8 probabilities like
/// `softmax_int8`; the dequantise stage turns int8 into `Float32`.
pub fn softmax_and_dequantize_stages() -> Outcome {
    let logits = [1i8, 2, 3].map(|x| x as u8);
    let input = ok!(TensorRef::wrap(
        ok!(TensorMeta::vector(DType::Int8, 3)),
        &logits
    ));
    let unit = QuantParams {
        scale: 1.0,
        zero_point: 0,
    };
    let mut probs = [0u8; 3];
    let m = ok!(softmax_stage(
        &input,
        &mut probs,
        &StageConfig::Softmax(unit)
    ));
    check!(m.dtype == DType::Int8);
    check!(probs.map(|x| x as i8) == [-105, -65, 42]);
    let half = QuantParams {
        scale: 0.5,
        zero_point: 1,
    };
    let mut floats = [0u8; 12];
    let m = ok!(dequantize_stage(
        &input,
        &mut floats,
        &StageConfig::Dequantize(half)
    ));
    check!(m.dtype == DType::Float32);
    check!(f32_at(&floats, 0) == 0.0 && f32_at(&floats, 1) == 0.5 && f32_at(&floats, 2) == 1.0);
    check!(
        softmax_stage(&input, &mut probs, &StageConfig::Dequantize(half))
            == Err(ProcessError::ConfigMismatch)
    );
    Ok(())
}

/// Top-k over 100 int8 scores (streamed in chunks of 64) writes `(class,
/// score)` rows best first, ties by lower index across chunk borders; `k`
/// must be 1 to 16.
pub fn top_k_stage_streams_and_merges() -> Outcome {
    let mut scores = [0u8; 100];
    scores[70] = 90;
    scores[3] = 50;
    scores[99] = 50;
    let input = ok!(TensorRef::wrap(
        ok!(TensorMeta::vector(DType::Int8, 100)),
        &scores
    ));
    let mut out = [0u8; 24];
    let m = ok!(top_k_stage(
        &input,
        &mut out,
        &StageConfig::TopK { k: 3, quant: None }
    ));
    check!(m.shape.dims() == [3, 2]);
    let expected = [70.0, 90.0, 3.0, 50.0, 99.0, 50.0];
    for (i, e) in expected.iter().enumerate() {
        check!(f32_at(&out, i) == *e);
    }
    check!(
        top_k_stage(&input, &mut out, &StageConfig::TopK { k: 0, quant: None })
            == Err(ProcessError::InvalidConfig)
    );
    check!(
        top_k_stage(&input, &mut out, &StageConfig::TopK { k: 17, quant: None })
            == Err(ProcessError::InvalidConfig)
    );
    Ok(())
}

/// The NMS stage reads `[N, 6]` box rows and writes the kept rows best first.
pub fn nms_stage_reads_and_writes_box_rows() -> Outcome {
    let rows: [[f32; 6]; 3] = [
        [0.0, 0.0, 10.0, 10.0, 0.5, 2.0],
        [0.0, 0.0, 10.0, 9.0, 0.9, 2.0],
        [50.0, 50.0, 60.0, 60.0, 0.4, 1.0],
    ];
    let mut bytes = [0u8; 72];
    for (i, row) in rows.iter().enumerate() {
        put_f32s(&mut bytes[i * 24..], row);
    }
    let input = ok!(TensorRef::wrap(
        TensorMeta::new(DType::Float32, ok!(Shape::new(&[3, 6]))),
        &bytes
    ));
    let mut out = [0u8; 72];
    let cfg = StageConfig::Nms(NmsConfig {
        iou_threshold: 0.5,
        score_threshold: 0.1,
        per_class: true,
    });
    let m = ok!(nms_stage(&input, &mut out, &cfg));
    check!(m.shape.dims() == [2, 6]);
    for (k, (first, second)) in rows[1].iter().zip(&rows[2]).enumerate() {
        check!(f32_at(&out, k) == *first);
        check!(f32_at(&out, 6 + k) == *second);
    }
    Ok(())
}
