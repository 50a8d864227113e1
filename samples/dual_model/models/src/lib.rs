//! What both images of the `dual_model` sample agree on: the two models CPU0
//! registers and CPU1 looks up by name, the synthetic sensor data CPU1
//! renders straight into the exchange slot, and the cadence; and, for the
//! build with the CPU interpreter ([`real`]), the two real networks, their
//! class labels and the shipped test inputs.
//!
//! Everything here is integer arithmetic: CPU1 has no FPU.
#![no_std]

use synaptic_runtime::registry::ModelDesc;

/// The real networks of `models/` (see its README) and their test inputs,
/// for the build with `CONFIG_SYNAPTIC_CPU_INTERPRETER`. CPU0 links the
/// flatbuffers (319 KB of flash), CPU1 the inputs (22 KB); the linker drops
/// what an image does not use.
pub mod real {
    use synaptic_runtime::arena::ArenaError;
    use synaptic_runtime::registry::ModelDesc;

    /// Person detection (MobileNet v1 0.25, TFLite Micro's example).
    pub const PERSON: &str = "person_detect";
    /// Its input shape: one 96x96 grayscale int8 image.
    pub const PERSON_INPUT: [u32; 4] = [1, 96, 96, 1];
    /// Its input bytes.
    pub const PERSON_LEN: usize = 96 * 96;
    /// Its output classes, in output order.
    pub const PERSON_LABELS: &[&str] = &["no person", "person"];
    /// Keyword spotting (TFLite Micro's micro-speech TinyConv).
    pub const SPEECH: &str = "micro_speech";
    /// Its input shape: 49 frames of 40 features, int8.
    pub const SPEECH_INPUT: [u32; 2] = [1, 49 * 40];
    /// Its input bytes.
    pub const SPEECH_LEN: usize = 49 * 40;
    /// Its output classes, in output order (the model's training labels:
    /// `models/README.md`).
    pub const SPEECH_LABELS: &[&str] = &["silence", "unknown", "yes", "no"];
    /// Model name and class labels, for `service::label_outputs`.
    pub const LABELS: &[(&str, &[&str])] = &[(PERSON, PERSON_LABELS), (SPEECH, SPEECH_LABELS)];

    /// The person detector's flatbuffer (CPU0 flash).
    pub static PERSON_TFLITE: &[u8] = include_bytes!("../../../../models/person_detect.tflite");
    /// The keyword spotter's flatbuffer (CPU0 flash).
    pub static SPEECH_TFLITE: &[u8] = include_bytes!("../../../../models/micro_speech.tflite");

    /// The shipped test inputs in the order CPU1 sends them, each with the
    /// model it is for and the label LiteRT's reference kernels predict
    /// (`models/golden/`): unsigned 8-bit data, converted to the models'
    /// int8 by [`to_int8`]. The no-person image is one the network gets
    /// wrong: LiteRT scores it no person -25, person 25 (`e719`), and so,
    /// bit-exactly, does the interpreter.
    pub static INPUTS: [(&str, &[u8], &str); 4] = [
        (
            PERSON,
            include_bytes!("../../../../models/inputs/person.u8"),
            "person",
        ),
        (
            PERSON,
            include_bytes!("../../../../models/inputs/no_person.u8"),
            "person",
        ),
        (
            SPEECH,
            include_bytes!("../../../../models/inputs/yes.u8"),
            "yes",
        ),
        (
            SPEECH,
            include_bytes!("../../../../models/inputs/no.u8"),
            "no",
        ),
    ];

    /// Copies unsigned 8-bit `input` into `out` as the int8 the models take
    /// (`byte - 128`, i.e. `byte ^ 0x80`); returns the bytes written.
    pub fn to_int8(input: &[u8], out: &mut [u8]) -> usize {
        let n = input.len().min(out.len());
        for (o, &b) in out.iter_mut().zip(&input[..n]) {
            *o = b ^ 0x80;
        }
        n
    }

    /// The two real models as CPU0 registers them: for the CPU interpreter
    /// only, with their flatbuffers.
    ///
    /// # Errors
    ///
    /// Never for the shapes above (a shape error would be a bug here).
    pub fn descs() -> Result<[ModelDesc<'static>; 2], ArenaError> {
        Ok([
            ModelDesc::tflite(PERSON, &PERSON_INPUT, PERSON_LABELS.len(), PERSON_TFLITE)?,
            ModelDesc::tflite(SPEECH, &SPEECH_INPUT, SPEECH_LABELS.len(), SPEECH_TFLITE)?,
        ])
    }
}

/// Face detection: a 96x96 RGB int8 frame in, served at `REALTIME`.
pub const FACE: &str = "face_detect";
/// Face detection input shape (height, width, channels).
pub const FACE_INPUT: [u32; 3] = [96, 96, 3];
/// Face detection output: 4 box coordinates, a score, 11 landmark bytes.
pub const FACE_OUTPUT: usize = 16;
/// Keyword spotting: 49 frames of 10 MFCC coefficients in, served at `NORMAL`.
pub const KWS: &str = "kws";
/// Keyword spotting input shape (frames, coefficients).
pub const KWS_INPUT: [u32; 2] = [49, 10];
/// Keyword spotting output: 12 class scores.
pub const KWS_OUTPUT: usize = 12;
/// Seed of the stub NPU's output function.
pub const SEED: u32 = 0x5359_4E33;
/// Device time of one stub NPU invoke, microseconds.
pub const NPU_LATENCY_US: u64 = 1_500;
/// CPU1's sensor cadence: one request every 50 ms (20 Hz), alternating.
pub const PERIOD_MS: u32 = 50;
/// CPU1's `STATUS_REQ` heartbeat period.
pub const HEARTBEAT_MS: u32 = 1_000;
/// Working memory each model reserves in CPU0's arena, bytes.
pub const FACE_SRAM: u32 = 4 * 1024;
/// As [`FACE_SRAM`] for keyword spotting.
pub const KWS_SRAM: u32 = 2 * 1024;

/// Input bytes of the face-detection model.
pub const FACE_LEN: usize = 96 * 96 * 3;
/// Input bytes of the keyword-spotting model.
pub const KWS_LEN: usize = 49 * 10;

/// The two models as CPU0 registers them, each reserving its working
/// memory in CPU0's arena.
///
/// # Errors
///
/// Never for the shapes above (a shape error would be a bug here).
pub fn descs() -> Result<[ModelDesc<'static>; 2], synaptic_runtime::arena::ArenaError> {
    Ok([
        ModelDesc {
            sram_needed: FACE_SRAM,
            ..ModelDesc::int8(FACE, &FACE_INPUT, FACE_OUTPUT)?
        },
        ModelDesc {
            sram_needed: KWS_SRAM,
            ..ModelDesc::int8(KWS, &KWS_INPUT, KWS_OUTPUT)?
        },
    ])
}

/// Render camera frame `seq` (96x96x3, int8) into `out`: a diagonal
/// gradient that moves one pixel per frame, with a bright 24x24 square (the
/// "face") wandering across it. Cheap per byte: CPU1 renders 20 frames a
/// second into the slot.
pub fn render_frame(seq: u32, out: &mut [u8]) {
    const SIDE: usize = 24;
    let [h, w, c] = FACE_INPUT.map(|d| d as usize);
    let face_x = (seq as usize * 3) % (w - SIDE);
    let face_y = (seq as usize * 5) % (h - SIDE);
    // One pass over the bytes with the position carried along: no slicing
    // (CPU1's image has no panic path here) and no division per byte.
    let (mut x, mut y, mut ch) = (0usize, 0usize, 0u8);
    for b in out.iter_mut().take(h * w * c) {
        let in_face = x.wrapping_sub(face_x) < SIDE && y.wrapping_sub(face_y) < SIDE;
        *b = if in_face {
            120
        } else {
            (x as u8)
                .wrapping_add(y as u8)
                .wrapping_add(seq as u8)
                .wrapping_mul(ch + 1)
        };
        ch += 1;
        if usize::from(ch) == c {
            ch = 0;
            x += 1;
            if x == w {
                x = 0;
                y += 1;
            }
        }
    }
    avoid_marker(out);
}

/// Never the stub NPU's failure marker by accident.
fn avoid_marker(out: &mut [u8]) {
    if let Some(first) = out.first_mut() {
        if *first == synaptic_runtime::npu::FAIL_MARKER {
            *first = 0;
        }
    }
}

/// Render MFCC window `seq` (49x10, int8) into `out`: coefficients that
/// follow a slowly changing "word" pattern.
pub fn render_mfcc(seq: u32, out: &mut [u8]) {
    let [frames, coeffs] = KWS_INPUT.map(|d| d as usize);
    let word = (seq / 4) as usize % 12;
    for (i, v) in out.iter_mut().take(frames * coeffs).enumerate() {
        let (f, k) = (i / coeffs, i % coeffs);
        let value = ((f * (k + 1) + word * 7 + seq as usize) % 120) as i32 - 60;
        *v = value as i8 as u8;
    }
    avoid_marker(out);
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn real_models_give_the_expected_labels_on_the_interpreter() {
        use synaptic_runtime::device::TfliteDevice;
        use synaptic_runtime::npu::NpuDevice;
        use synaptic_runtime::registry::Registry;
        let descs = real::descs().expect("descs");
        let mut registry: Registry<2> = Registry::new();
        // The service's default CPU interpreter arena.
        let mut arena = std::vec![0u8; 90_112];
        let mut cpu = TfliteDevice::new(&mut arena);
        cpu.init().unwrap();
        assert!(cpu.arena_needed(real::PERSON_TFLITE).unwrap() <= 90_112);
        for d in &descs {
            registry.register(d).unwrap();
        }
        for (model, input, label) in &real::INPUTS {
            let h = registry.find(model).unwrap();
            cpu.load_model(&registry.device_model(h).unwrap()).unwrap();
            let mut staged = std::vec![0u8; input.len()];
            assert_eq!(real::to_int8(input, &mut staged), input.len());
            cpu.set_input(&staged).unwrap();
            cpu.invoke().unwrap();
            let mut out = [0u8; 4];
            let n = cpu.get_output(&mut out).unwrap();
            let scores: std::vec::Vec<i8> = out[..n].iter().map(|&b| b as i8).collect();
            let best = (0..n).fold(0, |b, i| if scores[i] > scores[b] { i } else { b });
            let labels = if *model == real::PERSON {
                real::PERSON_LABELS
            } else {
                real::SPEECH_LABELS
            };
            assert_eq!(labels[best], *label, "{model} {scores:?}");
        }
    }

    #[test]
    fn descs_fit_the_exchange_slot() {
        let [face, kws] = descs().expect("descs");
        assert_eq!(face.input.byte_len(), 27_648);
        assert_eq!(kws.input.byte_len(), 490);
        assert_eq!((FACE_LEN, KWS_LEN), (27_648, 490));
        assert_eq!(face.output.byte_len(), FACE_OUTPUT);
    }

    #[test]
    fn a_frame_is_the_moving_gradient_with_the_face_square_on_it() {
        let mut frame = std::vec![0u8; FACE_LEN];
        for seq in [0u32, 1, 7, 100, 255, 300] {
            render_frame(seq, &mut frame);
            let (face_x, face_y) = ((seq as usize * 3) % 72, (seq as usize * 5) % 72);
            for (i, &got) in frame.iter().enumerate() {
                let (x, y, ch) = ((i / 3) % 96, i / 288, i % 3);
                let want =
                    if (face_x..face_x + 24).contains(&x) && (face_y..face_y + 24).contains(&y) {
                        120
                    } else {
                        ((x + y) as u8)
                            .wrapping_add(seq as u8)
                            .wrapping_mul(ch as u8 + 1)
                    };
                let want = if i == 0 && want == synaptic_runtime::npu::FAIL_MARKER {
                    0
                } else {
                    want
                };
                assert_eq!(got, want, "frame {seq}, x {x}, y {y}, channel {ch}");
            }
        }
        // A short slot gets the frame's first bytes, without a panic.
        let mut short = [0u8; 100];
        render_frame(3, &mut short);
        render_frame(3, &mut frame);
        assert_eq!(short[..], frame[..100]);
    }

    #[test]
    fn frames_and_windows_change_and_avoid_the_marker() {
        let mut a = std::vec![0u8; FACE_LEN];
        let mut b = a.clone();
        render_frame(1, &mut a);
        render_frame(2, &mut b);
        assert_ne!(a, b);
        let mut m = std::vec![0u8; KWS_LEN];
        let mut n = m.clone();
        render_mfcc(1, &mut m);
        render_mfcc(2, &mut n);
        assert_ne!(m, n);
        for seq in 0..512 {
            render_frame(seq, &mut a);
            render_mfcc(seq, &mut m);
            assert_ne!(a[0], synaptic_runtime::npu::FAIL_MARKER);
            assert_ne!(m[0], synaptic_runtime::npu::FAIL_MARKER);
        }
    }
}
