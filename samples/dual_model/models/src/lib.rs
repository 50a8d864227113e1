//! What both images of the `dual_model` sample agree on: the two models CPU0
//! registers and CPU1 looks up by name, the synthetic sensor data CPU1
//! renders straight into the exchange slot, and the cadence.
//!
//! Everything here is integer arithmetic: CPU1 has no FPU.
#![no_std]

use synaptic_runtime::registry::ModelDesc;

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
    let row = w * c;
    let shift = seq as u8;
    for (y, line) in out.chunks_mut(row).take(h).enumerate() {
        let mut v = (y as u8).wrapping_add(shift);
        for px in line.chunks_mut(c) {
            for (ch, b) in px.iter_mut().enumerate() {
                *b = v.wrapping_mul(ch as u8 + 1);
            }
            v = v.wrapping_add(1);
        }
    }
    let face_x = (seq as usize * 3) % (w - SIDE);
    let face_y = (seq as usize * 5) % (h - SIDE);
    for line in out.chunks_mut(row).skip(face_y).take(SIDE) {
        line[face_x * c..(face_x + SIDE) * c].fill(120);
    }
    // Never the stub NPU's failure marker by accident.
    if out.first() == Some(&synaptic_runtime::npu::FAIL_MARKER) {
        out[0] = 0;
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
    if out.first() == Some(&synaptic_runtime::npu::FAIL_MARKER) {
        out[0] = 0;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn descs_fit_the_exchange_slot() {
        let [face, kws] = descs().expect("descs");
        assert_eq!(face.input.byte_len(), 27_648);
        assert_eq!(kws.input.byte_len(), 490);
        assert_eq!((FACE_LEN, KWS_LEN), (27_648, 490));
        assert_eq!(face.output.byte_len(), FACE_OUTPUT);
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
