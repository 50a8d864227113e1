//! What both images of the service test agree on.
//!
//! * The two test models: small, so that a 10,000-serve soak takes seconds
//!   of emulated time (the 96x96x3 path runs in `samples/dual_model`).
//! * [`expected`]: the stub NPU's documented pure output function, the
//!   reference CPU1 checks every output against.
//! * CPU1's report: [`Report`] words at the end of the shared region (in
//!   the payload pool, past the exchange slot, which nothing else uses).
//!   CPU1 has no console, so it reports there and CPU0 prints.
//!
//! Integer arithmetic only: CPU1 has no FPU.
#![no_std]

use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_runtime::registry::ModelDesc;

/// The soak's "camera" model: a 24x24x3 thumbnail.
pub const THUMB: &str = "face_thumb";
/// Its input shape.
pub const THUMB_INPUT: [u32; 3] = [24, 24, 3];
/// Its output bytes.
pub const THUMB_OUTPUT: usize = 16;
/// The soak's keyword-spotting model (49x10 MFCC in, 12 classes out).
pub const KWS: &str = "kws";
/// Its input shape.
pub const KWS_INPUT: [u32; 2] = [49, 10];
/// Its output bytes.
pub const KWS_OUTPUT: usize = 12;
/// Seed of the stub NPU.
pub const SEED: u32 = 0x5359_4E33;
/// Device time of one stub NPU invoke, microseconds.
pub const NPU_LATENCY_US: u64 = 200;
/// Serves in the soak (alternating the two models).
pub const SOAK: u32 = 10_000;
/// Serves after CPU1's restart.
pub const AFTER_RESTART: u32 = 100;

/// Input bytes of the thumbnail model.
pub const THUMB_LEN: usize = 24 * 24 * 3;
/// Input bytes of the keyword-spotting model.
pub const KWS_LEN: usize = 49 * 10;

/// The three models as CPU0 registers them (the speech model's version 1
/// has no image: the stub NPU serves it).
///
/// # Errors
///
/// Never for the shapes above.
pub fn descs() -> Result<[ModelDesc<'static>; 3], synaptic_runtime::arena::ArenaError> {
    Ok([
        ModelDesc::int8(THUMB, &THUMB_INPUT, THUMB_OUTPUT)?,
        ModelDesc::int8(KWS, &KWS_INPUT, KWS_OUTPUT)?,
        ModelDesc::int8(SPEECH, &SPEECH_INPUT, SPEECH_OUTPUT)?,
    ])
}

/// Fill `input` with request `seq`'s tensor (never the stub's failure
/// marker first).
pub use synaptic_runtime::npu::test_input as fill;

/// What the stub NPU answers for `input` on model `handle` (raw).
pub fn expected(handle: u32, input: &[u8], out: &mut [u8]) {
    synaptic_runtime::npu::stub_output(SEED, handle, input, out);
}

/// The model CPU1 updates: TFLite Micro's micro-speech keyword spotter
/// (`models/micro_speech.tflite`), served as version 1 (by the stub NPU)
/// before CPU1 streams the real network as version [`UPDATE_VERSION`].
pub const SPEECH: &str = "speech";
/// Its input shape (int8 `[1, 1960]`: 49 frames x 40 features).
pub const SPEECH_INPUT: [u32; 2] = [1, 1960];
/// Its output shape (int8 `[1, 4]`: silence, unknown, yes, no).
pub const SPEECH_OUTPUT_SHAPE: [u32; 2] = [1, 4];
/// Input bytes of the speech model.
pub const SPEECH_LEN: usize = 1960;
/// Output bytes of the speech model.
pub const SPEECH_OUTPUT: usize = 4;
/// The network CPU1 streams (in CPU1's flash).
pub static MICRO_SPEECH: &[u8] = include_bytes!("../../../../models/micro_speech.tflite");
/// Bytes of the container CPU1 streams: the store's header, the network.
pub const UPDATE_LEN: usize = synaptic_store::HEADER_LEN + MICRO_SPEECH.len();
/// Bytes of a signed one: the header, the signature block, the network.
pub const SIGNED_LEN: usize = PREAMBLE_LEN + MICRO_SPEECH.len();
/// A signed container's header and signature block.
pub const PREAMBLE_LEN: usize =
    synaptic_store::HEADER_LEN + synaptic_store::signature::SIGNATURE_LEN;

/// The signed speech containers' preambles (header and signature block),
/// signed with `tests/service/keys` and committed (Ed25519 signs
/// deterministically; a host test signs them again and compares): CPU1
/// streams the network after one from its flash.
macro_rules! preambles {
    ($($name:ident: version $version:literal, $key:literal, $why:literal;)*) => {
        $(
            #[doc = concat!("Version ", $version, ", signed with `", $key, "`: ", $why)]
            pub static $name: [u8; PREAMBLE_LEN] =
                *include_bytes!(concat!("../preambles/", stringify!($name), ".bin"));
        )*
        /// Every preamble: name, version, key file.
        #[cfg(test)]
        const PREAMBLES: &[(&str, u32, &str)] = &[$((stringify!($name), $version, $key)),*];
    };
}

preambles! {
    SIGNED_V2: version 2, "test-ed25519.pem", "the update.";
    SIGNED_V5: version 5, "test-ed25519.pem", "streamed with a payload byte flipped.";
    UNTRUSTED_V5: version 5, "untrusted-ed25519.pem", "a key CPU0 does not trust.";
    SIGNED_V1: version 1, "test-ed25519.pem", "below the security counter once version 2 is confirmed.";
    SIGNED_V3: version 3, "test-ed25519.pem", "CPU0's update through the C API where signatures are required.";
}

/// The payload byte [`tampered_chunk`] flips.
pub const TAMPERED_AT: usize = 1000;

/// As [`container_chunk`], with payload byte [`TAMPERED_AT`] flipped: a
/// container changed after it was signed.
pub fn tampered_chunk(preamble: &[u8], payload: &[u8], offset: usize, chunk: &mut [u8]) {
    container_chunk(preamble, payload, offset, chunk);
    let at = preamble.len() + TAMPERED_AT;
    if let Some(b) = at.checked_sub(offset).and_then(|k| chunk.get_mut(k)) {
        *b ^= 0x01;
    }
}

/// The header of the speech model's container, version `version`: what
/// `synaptic-pack pack` writes for `models/micro_speech.tflite`.
///
/// # Errors
///
/// Never for the constants above.
pub fn speech_header(
    version: u32,
) -> Result<[u8; synaptic_store::HEADER_LEN], synaptic_store::StoreError> {
    use synaptic_store::{Header, TensorShape};
    let h = Header::new(
        SPEECH,
        version,
        MICRO_SPEECH,
        TensorShape::int8(&SPEECH_INPUT),
        TensorShape::int8(&SPEECH_OUTPUT_SHAPE),
    )?;
    Ok(h.encode())
}

/// The bytes at `offset` into `chunk` of the container `header` then
/// `payload` (from flash: no copy of the container in RAM).
pub fn container_chunk(header: &[u8], payload: &[u8], offset: usize, chunk: &mut [u8]) {
    for (k, b) in chunk.iter_mut().enumerate() {
        let at = offset + k;
        *b = match at.checked_sub(header.len()) {
            None => header[at],
            Some(i) => payload.get(i).copied().unwrap_or(0),
        };
    }
}

/// The model only CPU0's interpreter serves (`CONFIG_SYNAPTIC_CPU_INTERPRETER`
/// builds): version 1 is the micro-speech network in CPU0's image; CPU1
/// streams [`SPEECH_V2`] into the store as version 2, which CPU0 then runs
/// in place from the store's flash. Same tensors as [`SPEECH`].
pub const SPEECH_CPU: &str = "speech_cpu";
/// Version 2 of [`SPEECH_CPU`]: another network with micro_speech's
/// tensors (`models/networks/speech_v2.tflite`, made by
/// `scripts/mlperf_tiny.py`), in CPU1's flash.
pub static SPEECH_V2: &[u8] = include_bytes!("../../../../models/networks/speech_v2.tflite");
/// LiteRT's reference outputs of [`SPEECH_V2`] for [`litert_input`]s.
pub static SPEECH_V2_EXPECT: &str =
    include_str!("../../../../models/networks/speech_v2.tflite.expect");
/// The [`SPEECH_CPU`] version CPU1 streams.
pub const CPU_UPDATE_VERSION: u32 = 2;
/// Inputs CPU1 checks on each version of [`SPEECH_CPU`].
pub const CPU_INPUTS: u32 = 6;

/// The header of a [`SPEECH_CPU`] container around `payload`.
///
/// # Errors
///
/// Never for the constants above.
pub fn speech_cpu_header(
    version: u32,
    payload: &[u8],
) -> Result<[u8; synaptic_store::HEADER_LEN], synaptic_store::StoreError> {
    use synaptic_store::{Header, TensorShape};
    let h = Header::new(
        SPEECH_CPU,
        version,
        payload,
        TensorShape::int8(&SPEECH_INPUT),
        TensorShape::int8(&SPEECH_OUTPUT_SHAPE),
    )?;
    Ok(h.encode())
}

/// Input `k` of a network's `.expect` file into `input` (one graph input,
/// int8): `scripts/opgolden.py`'s xorshift32 stream.
pub fn litert_input(k: u32, input: &mut [u8]) {
    let mut x = 0x9E37_79B9u32.wrapping_mul(k + 1).wrapping_add(0x7F4A_7C15);
    if x == 0 {
        x = 1;
    }
    for b in input {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        *b = x as u8;
    }
}

/// FNV-1a 64 of `bytes`, as the `.expect` files hash outputs.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xCBF2_9CE4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// Input `k`'s output hash in an `.expect` file's text.
pub fn expected_hash(expect: &str, k: u32) -> Option<u64> {
    expect.lines().find_map(|line| {
        let (index, hash) = line.split_once(' ')?;
        if index.parse::<u32>().ok()? != k {
            return None;
        }
        u64::from_str_radix(hash.trim(), 16).ok()
    })
}

/// Words of CPU1's report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Word {
    /// [`DONE`] once everything below is final.
    Done,
    /// CPU1 lives so far (1 before the restart, 2 after).
    Lives,
    /// Soak serves whose output matched.
    SoakOk,
    /// Soak serves whose output differed.
    SoakWrong,
    /// Soak serves that returned an error.
    SoakErrors,
    /// Status of the request staged with the NPU failure marker (negative errno).
    NpuError,
    /// Status of the request with a 1 ms timeout (negative errno).
    Timeout,
    /// The request after the timeout: 1 when its output matched.
    Recovered,
    /// Late replies the first life's client discarded.
    Discarded1,
    /// Serves after the restart whose output matched.
    RejoinOk,
    /// Errors after the restart.
    RejoinErrors,
    /// Replies the second life's client dropped while it synchronised or
    /// discarded after (the pre-restart one among them).
    Discarded2,
    /// The second life's first handshake round trip, microseconds.
    RejoinRttUs,
    /// 1 while CPU1 floods CPU0 with status requests.
    Flooding,
    /// Status requests the flood pushed, and those the full ring refused.
    FloodPushed,
    FloodRefused,
    /// The inference a second CPU1 thread made during the flood: 1 when
    /// its output matched.
    FloodServe,
    /// What `update_model` returned for the speech model's version
    /// [`UPDATE_VERSION`] streamed by CPU1: the version made active, or a
    /// negative errno.
    UpdateStatus,
    /// Inferences on the speech model another CPU1 thread made while the
    /// update went on (and a few after).
    UpdateServes,
    /// Of those, the ones that failed.
    UpdateErrors,
    /// Times an output was version 1's again after one was not (must be 0:
    /// a request runs on the version serving when it is accepted).
    UpdateBack,
    /// 1 when the last of those outputs was not version 1's (the new
    /// version serves).
    UpdateNew,
    /// The update's `k_cycle_get_32` ticks on CPU1, begin to activation
    /// (emulated).
    UpdateTicks,
    /// Set by CPU0 before it releases CPU1: 1 when CPU0 serves
    /// [`SPEECH_CPU`] (built with its interpreter); CPU1 then runs that
    /// scenario alone.
    CpuScenario,
    /// What `update_model` returned for a [`SPEECH_CPU`] container whose
    /// network the interpreter cannot run (must be `-ENOEXEC`).
    CpuRefused,
    /// What it returned for [`SPEECH_V2`] as version
    /// [`CPU_UPDATE_VERSION`].
    CpuUpdate,
    /// Inferences on version 1 of [`SPEECH_CPU`] whose output was
    /// [`SPEECH_V2`]'s (some must not be: the versions differ).
    CpuBeforeLikeV2,
    /// Inferences after the update whose output was LiteRT's for
    /// [`SPEECH_V2`].
    CpuMatched,
    /// Inferences on [`SPEECH_CPU`] that failed, before and after.
    CpuErrors,
    /// What CPU0 answered [`SIGNED_V5`] streamed with a payload byte
    /// flipped (must be `-EBADMSG`).
    SignedTampered,
    /// What it answered [`UNTRUSTED_V5`] (must be `-EACCES`).
    SignedUntrusted,
    /// What `confirm_model` returned after version [`UPDATE_VERSION`]
    /// (must be that version).
    SignedConfirm,
    /// What CPU0 answered [`SIGNED_V1`] after the confirmation (must be
    /// `-ERANGE`).
    SignedDowngrade,
    /// Status round trips (`ping`) another CPU1 thread made while the
    /// updates went on, and the longest of them in `k_cycle_get_32`
    /// ticks (emulated).
    UpdatePings,
    UpdatePingMaxTicks,
    /// Set by CPU0: 1 when its store requires signatures
    /// (`CONFIG_SYNAPTIC_STORE_SIGNATURE_REQUIRED`), so CPU1 streams an
    /// unsigned container too.
    SignaturesRequired,
    /// What CPU0 answered that unsigned container (must be `-ENOMSG`; 0
    /// when not sent).
    SignedUnsigned,
    /// Where CPU1 stopped early (0: it did not), see [`Stop`].
    Stopped,
}

/// Number of report words.
pub const WORDS: usize = 38;
/// The speech model's version CPU1 streams to CPU0's model store.
pub const UPDATE_VERSION: u32 = 2;
/// How long CPU1 floods, emulated milliseconds.
pub const FLOOD_MS: u32 = 300;
/// The report's [`Word::Done`] value when CPU1 finished.
pub const DONE: u32 = 0x444F_4E45;

/// Where CPU1 stopped early.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Stop {
    /// Attach or handshake failed.
    Attach = 1,
    /// A model lookup failed.
    Lookup = 2,
    /// Attach or handshake failed after the restart.
    Rejoin = 3,
}

/// CPU1's report in the shared region (an address: copies name the same
/// words).
#[derive(Clone, Copy)]
pub struct Report {
    words: *mut u32,
}

// SAFETY: a `Report` is an address; every access is an atomic word access.
unsafe impl Send for Report {}
// SAFETY: as above.
unsafe impl Sync for Report {}

impl Report {
    /// The report at the end of the region at `base`, `size` bytes.
    ///
    /// # Safety
    ///
    /// `base..base + size` is the shared region, mapped for the program's
    /// life, 4-aligned, and at least large enough for the ABI layout plus
    /// [`WORDS`] words past the exchange slot; the last `4 * WORDS` bytes
    /// are used by nothing but this report on both cores.
    pub unsafe fn at_end(base: usize, size: usize) -> Report {
        Report {
            words: (base + size - 4 * WORDS) as *mut u32,
        }
    }

    fn word(&self, w: Word) -> &AtomicU32 {
        // SAFETY: `at_end`'s contract: the words exist, are aligned and only
        // accessed atomically (by this type on both cores).
        unsafe { AtomicU32::from_ptr(self.words.add(w as usize)) }
    }

    /// Zero every word (CPU0, before releasing CPU1).
    pub fn clear(&self) {
        for i in 0..WORDS {
            // SAFETY: as in `word`.
            unsafe { AtomicU32::from_ptr(self.words.add(i)) }.store(0, Ordering::Relaxed);
        }
    }

    /// Write a word.
    pub fn set(&self, w: Word, value: u32) {
        // Ordering: Release so a reader that sees `Done` sees the rest.
        self.word(w).store(value, Ordering::Release);
    }

    /// Read a word.
    pub fn get(&self, w: Word) -> u32 {
        // Ordering: Acquire pairs with `set`.
        self.word(w).load(Ordering::Acquire)
    }

    /// Whether CPU1 finished.
    pub fn done(&self) -> bool {
        self.get(Word::Done) == DONE
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;

    #[test]
    fn report_words_round_trip_and_fit_past_the_slot() {
        let mut region = std::vec![0u32; 1024];
        let base = region.as_mut_ptr() as usize;
        // SAFETY: the vector outlives the report.
        let report = unsafe { Report::at_end(base, 4096) };
        report.clear();
        assert!(!report.done());
        report.set(Word::SoakOk, 42);
        report.set(Word::Done, DONE);
        assert!(report.done());
        assert_eq!(report.get(Word::SoakOk), 42);
        assert_eq!(region[1024 - WORDS + Word::SoakOk as usize], 42);
        assert_eq!(Word::Stopped as usize, WORDS - 1);
        // The ABI's 96 KB region has room past the exchange slots.
        let slots_end = synaptic_abi::region_size::<16>(synaptic_abi::SlotGeometry::DEFAULT);
        assert!(slots_end + 4 * WORDS <= 96 * 1024);
    }

    fn signed(preamble: &[u8], tamper: bool) -> std::vec::Vec<u8> {
        let mut ours = std::vec![0u8; SIGNED_LEN];
        for (k, chunk) in ours.chunks_mut(1000).enumerate() {
            if tamper {
                tampered_chunk(preamble, MICRO_SPEECH, k * 1000, chunk);
            } else {
                container_chunk(preamble, MICRO_SPEECH, k * 1000, chunk);
            }
        }
        ours
    }

    #[test]
    fn the_signed_containers_verify_or_are_refused_as_cpu1_expects() {
        use synaptic_store::StoreError;
        let pem = include_str!("../../keys/test-ed25519.pem");
        let trusted = [synaptic_sign::Key::from_pem(pem).unwrap()];
        let verify = |bytes: &[u8]| synaptic_sign::verify(bytes, &trusted, true).map(|h| h.version);
        assert_eq!(verify(&signed(&SIGNED_V2, false)), Ok(UPDATE_VERSION));
        assert_eq!(verify(&signed(&SIGNED_V1, false)), Ok(1));
        assert_eq!(verify(&signed(&SIGNED_V5, false)), Ok(5));
        assert_eq!(verify(&signed(&SIGNED_V3, false)), Ok(3));
        // The flipped byte: the payload's CRC catches it first on the host;
        // CPU0's store answers -EBADMSG for both.
        assert_eq!(
            verify(&signed(&SIGNED_V5, true)),
            Err(StoreError::CrcMismatch)
        );
        assert_eq!(
            verify(&signed(&UNTRUSTED_V5, false)),
            Err(StoreError::UntrustedKey)
        );
        // The signed network is the unsigned container's.
        let plain = synaptic_pack::pack(MICRO_SPEECH, SPEECH, UPDATE_VERSION).unwrap();
        assert_eq!(signed(&SIGNED_V2, false)[PREAMBLE_LEN..], plain[96..]);
    }

    /// The committed preambles are a fresh signing's. After a change of
    /// the model, the keys or the format, `SYNAPTIC_BLESS=1 cargo test`
    /// writes them anew.
    #[test]
    fn the_committed_preambles_are_signed_afresh_alike() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut stale = std::vec::Vec::new();
        for &(name, version, key) in PREAMBLES {
            let pem = std::fs::read_to_string(dir.join("../keys").join(key)).unwrap();
            let key = synaptic_sign::Key::from_pem(&pem).unwrap();
            let container = [&speech_header(version).unwrap()[..], MICRO_SPEECH].concat();
            let signed = synaptic_sign::sign(&container, &key).unwrap();
            let fresh = &signed[..PREAMBLE_LEN];
            let path = dir.join("preambles").join(std::format!("{name}.bin"));
            if std::env::var_os("SYNAPTIC_BLESS").is_some() {
                std::fs::write(&path, fresh).unwrap();
            }
            if std::fs::read(&path).ok().as_deref() != Some(fresh) {
                stale.push(name);
            }
        }
        assert!(
            stale.is_empty(),
            "stale preambles {stale:?}: run `SYNAPTIC_BLESS=1 cargo test` in tests/service/protocol"
        );
    }

    #[test]
    fn the_update_container_is_what_synaptic_pack_writes() {
        let header = speech_header(UPDATE_VERSION).expect("a header");
        let mut ours = std::vec![0u8; UPDATE_LEN];
        // In chunks, as the client asks for them.
        for (k, chunk) in ours.chunks_mut(1000).enumerate() {
            container_chunk(&header, MICRO_SPEECH, k * 1000, chunk);
        }
        let packed = synaptic_pack::pack(MICRO_SPEECH, SPEECH, UPDATE_VERSION).expect("packs");
        assert_eq!(ours, packed);
        let header = speech_cpu_header(CPU_UPDATE_VERSION, SPEECH_V2).expect("a header");
        let mut ours = std::vec![0u8; header.len() + SPEECH_V2.len()];
        for (k, chunk) in ours.chunks_mut(1000).enumerate() {
            container_chunk(&header, SPEECH_V2, k * 1000, chunk);
        }
        let packed = synaptic_pack::pack(SPEECH_V2, SPEECH_CPU, CPU_UPDATE_VERSION).expect("packs");
        assert_eq!(ours, packed);
        // Version 2 fits the test's store slots (CONFIG_SYNAPTIC_STORE_SLOT_SIZE).
        assert!(ours.len() <= 20_480);
    }

    #[test]
    fn litert_inputs_and_hashes_are_the_expect_files() {
        // scripts/opgolden.py's input 0 of a one-input network begins so
        // (its --dump of speech_v2), and line 0 hashes LiteRT's output.
        let mut input = [0u8; SPEECH_LEN];
        litert_input(0, &mut input);
        assert_eq!(input[..4], [0x12, 0x4d, 0x2e, 0x91]);
        assert_eq!(
            expected_hash(SPEECH_V2_EXPECT, 0),
            Some(0x601f_df9f_f4d1_02f1)
        );
        assert_eq!(fnv1a64(&[0x81, 0x81, 0x80, 0x7e]), 0x601f_df9f_f4d1_02f1);
        for k in 0..CPU_INPUTS * 2 {
            assert!(expected_hash(SPEECH_V2_EXPECT, k).is_some());
        }
        assert_eq!(expected_hash(SPEECH_V2_EXPECT, 100_000), None);
        let [_, _, speech] = descs().expect("descs");
        assert_eq!(
            (speech.input.byte_len(), speech.output.byte_len()),
            (SPEECH_LEN, SPEECH_OUTPUT)
        );
    }

    #[test]
    fn expected_output_depends_on_input_and_model() {
        let mut a = [0u8; 490];
        let mut b = [0u8; 490];
        fill(1, &mut a);
        fill(2, &mut b);
        let (mut x, mut y, mut z) = ([0u8; 12], [0u8; 12], [0u8; 12]);
        expected(1, &a, &mut x);
        expected(1, &b, &mut y);
        expected(2, &a, &mut z);
        assert_ne!(x, y);
        assert_ne!(x, z);
        for seq in 0..1000 {
            fill(seq, &mut a);
            assert_ne!(a[0], synaptic_runtime::npu::FAIL_MARKER);
        }
        let [thumb, kws, _] = descs().expect("descs");
        assert_eq!(
            (thumb.input.byte_len(), kws.input.byte_len()),
            (THUMB_LEN, KWS_LEN)
        );
    }
}
