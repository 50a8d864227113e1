//! Flash and SysTick cost of one no_std signature check on emulated CPU0.
//!
//! Exactly one cargo feature picks what is measured: a candidate verifier
//! (public key and signature parsed from bytes, then checked against the
//! 32-byte digest, all inside the timed region), `sha2` (hashing the 64 KiB
//! stand-in model), a store variant (`store-ed25519`, `store-ecdsa-p256`:
//! the project's own `synaptic_store::container::check` of the whole signed
//! micro_speech container in flash, as CPU0's store checks an update at its
//! end), or `baseline` (the same I/O with a byte comparison in place of the
//! check, so a candidate's flash is its build minus this one).
//!
//! Every build holds the signed container in flash (the model is on the
//! device whatever checks it), so the baseline subtracts it too.
//!
//! Time is SysTick on the processor clock, reload 0xFF_FFFF, with its wraps
//! counted: what Zephyr's `k_cycle_get_32` reads on mps2/an521. The figure
//! printed is the median of five runs. Each build also checks that the
//! negative case fails (a signature with one bit flipped, a model with one
//! byte changed; for the store, a payload bit and a signature bit flipped,
//! each refused for its own reason); any failed check prints `FAIL` and
//! exits QEMU with 1.

#![no_std]
#![no_main]

use core::hint::black_box;
use core::sync::atomic::{AtomicU32, Ordering};

use cortex_m::peripheral::{syst::SystClkSource, SCB, SYST};
use cortex_m_rt::{entry, exception};
use cortex_m_semihosting::{debug, hprintln};

#[allow(dead_code)] // each build uses only its own vectors
mod vectors {
    include!(concat!(env!("OUT_DIR"), "/vectors.rs"));
}
use vectors::*;

const RUNS: usize = 5;

/// The signed micro_speech container (header, signature block, payload),
/// signed under the P-256 key for `store-ecdsa-p256` and under the Ed25519
/// key otherwise: both are `CONTAINER_LEN` bytes, so every build's flash
/// holds the same amount.
static CONTAINER: &[u8; CONTAINER_LEN] = if cfg!(feature = "store-ecdsa-p256") {
    include_bytes!(concat!(env!("OUT_DIR"), "/p256.syn"))
} else {
    include_bytes!(concat!(env!("OUT_DIR"), "/ed25519.syn"))
};

const SELECTED: usize = cfg!(feature = "baseline") as usize
    + cfg!(feature = "ed25519-dalek") as usize
    + cfg!(feature = "ed25519-dalek-2") as usize
    + cfg!(feature = "ed25519-compact") as usize
    + cfg!(feature = "salty") as usize
    + cfg!(feature = "p256") as usize
    + cfg!(feature = "p256-13") as usize
    + cfg!(feature = "p256-cortex-m4") as usize
    + cfg!(feature = "sha2") as usize
    + cfg!(feature = "store-ed25519") as usize
    + cfg!(feature = "store-ecdsa-p256") as usize;
// The `-fast` and `-opt-size` variants turn on their crate's feature as
// well, so count as one; `breakdown` goes with a store variant.
const _: () = assert!(SELECTED == 1, "build with exactly one feature");
const _: () = assert!(
    !cfg!(feature = "breakdown")
        || cfg!(any(feature = "store-ed25519", feature = "store-ecdsa-p256")),
    "`breakdown` times the parts of a store variant's check"
);

/// SysTick wraps since start; only this core's SysTick handler writes it.
static WRAPS: AtomicU32 = AtomicU32::new(0);

#[exception]
fn SysTick() {
    // Ordering: Relaxed, the reader is the same core with interrupts masked.
    WRAPS.fetch_add(1, Ordering::Relaxed);
}

/// Processor-clock ticks since `start_ticks`, wraps included.
fn now() -> u64 {
    cortex_m::interrupt::free(|_| {
        // Ordering: Relaxed, see `WRAPS`.
        let mut wraps = WRAPS.load(Ordering::Relaxed);
        let mut value = SYST::get_current();
        // A wrap whose exception is still pending has not been counted yet.
        if SCB::is_pendst_pending() {
            wraps += 1;
            value = SYST::get_current();
        }
        (u64::from(wraps) << 24) | u64::from(0xFF_FFFF - value)
    })
}

fn start_ticks(mut syst: SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(0xFF_FFFF);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// Median ticks of `RUNS` calls of `work`, each of which must return true.
fn median_ticks(mut work: impl FnMut() -> bool) -> u64 {
    let mut ticks = [0u64; RUNS];
    for slot in ticks.iter_mut() {
        let start = now();
        let ok = work();
        *slot = now() - start;
        if !ok {
            fail("the valid case was rejected");
        }
    }
    ticks.sort_unstable();
    ticks[RUNS / 2]
}

fn fail(what: &str) -> ! {
    hprintln!("FAIL: {}", what);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

/// A fault (an instruction this core lacks, say) ends the run instead of
/// spinning until the script's timeout.
#[exception]
unsafe fn HardFault(frame: &cortex_m_rt::ExceptionFrame) -> ! {
    hprintln!("FAIL: HardFault at pc {:#010x}", frame.pc());
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    hprintln!("FAIL: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    loop {
        cortex_m::asm::wfi();
    }
}

#[cfg(feature = "baseline")]
mod candidate {
    use super::*;
    pub const NAME: &str = "baseline";
    pub const SIGNATURE: [u8; 64] = ED25519_SIGNATURE;
    pub fn verify(signature: &[u8; 64]) -> bool {
        black_box(&DIGEST);
        black_box(&ED25519_PUBLIC);
        *signature == SIGNATURE
    }
}

#[cfg(all(feature = "ed25519-dalek", not(feature = "ed25519-dalek-fast")))]
mod candidate {
    pub const NAME: &str = "ed25519-dalek";
    pub use super::dalek3::*;
}

#[cfg(feature = "ed25519-dalek-fast")]
mod candidate {
    pub const NAME: &str = "ed25519-dalek-fast";
    pub use super::dalek3::*;
}

/// A verifier over a dalek-API crate (ed25519-dalek 3 and 2 alike).
macro_rules! dalek_verifier {
    ($krate:ident) => {
        use super::*;
        use $krate::{Signature, Verifier, VerifyingKey};
        pub const SIGNATURE: [u8; 64] = ED25519_SIGNATURE;
        pub fn verify(signature: &[u8; 64]) -> bool {
            let Ok(key) = VerifyingKey::from_bytes(black_box(&ED25519_PUBLIC)) else {
                return false;
            };
            key.verify(&DIGEST, &Signature::from_bytes(signature))
                .is_ok()
        }
    };
}

#[cfg(feature = "ed25519-dalek")]
mod dalek3 {
    dalek_verifier!(ed25519_dalek);
}

#[cfg(feature = "ed25519-dalek-2")]
mod candidate {
    pub const NAME: &str = "ed25519-dalek-2";
    dalek_verifier!(ed25519_dalek_2);
}

#[cfg(feature = "ed25519-compact")]
mod candidate {
    use super::*;
    use ed25519_compact::{PublicKey, Signature};
    pub const NAME: &str = if cfg!(feature = "ed25519-compact-opt-size") {
        "ed25519-compact-opt-size"
    } else {
        "ed25519-compact"
    };
    pub const SIGNATURE: [u8; 64] = ED25519_SIGNATURE;
    pub fn verify(signature: &[u8; 64]) -> bool {
        let key = PublicKey::new(*black_box(&ED25519_PUBLIC));
        key.verify(DIGEST, &Signature::new(*signature)).is_ok()
    }
}

#[cfg(feature = "salty")]
mod candidate {
    use super::*;
    use salty::{PublicKey, Signature};
    pub const NAME: &str = "salty";
    pub const SIGNATURE: [u8; 64] = ED25519_SIGNATURE;
    pub fn verify(signature: &[u8; 64]) -> bool {
        let Ok(key) = PublicKey::try_from(black_box(&ED25519_PUBLIC)) else {
            return false;
        };
        key.verify(&DIGEST, &Signature::from(signature)).is_ok()
    }
}

/// A verifier over a RustCrypto p256 crate (0.14 and 0.13 alike).
macro_rules! p256_verifier {
    ($krate:ident, $name:literal) => {
        use super::*;
        use $krate::ecdsa::{signature::hazmat::PrehashVerifier, Signature, VerifyingKey};
        pub const NAME: &str = $name;
        pub const SIGNATURE: [u8; 64] = P256_SIGNATURE;
        pub fn verify(signature: &[u8; 64]) -> bool {
            let Ok(key) = VerifyingKey::from_sec1_bytes(black_box(&P256_PUBLIC)) else {
                return false;
            };
            let Ok(signature) = Signature::from_slice(signature) else {
                return false;
            };
            key.verify_prehash(&DIGEST, &signature).is_ok()
        }
    };
}

#[cfg(feature = "p256")]
mod candidate {
    p256_verifier!(p256, "p256");
}

#[cfg(feature = "p256-13")]
mod candidate {
    p256_verifier!(p256_13, "p256-13");
}

#[cfg(feature = "p256-cortex-m4")]
mod candidate {
    use super::*;
    use p256_cortex_m4::{PublicKey, Signature};
    pub const NAME: &str = "p256-cortex-m4";
    pub const SIGNATURE: [u8; 64] = P256_SIGNATURE;
    pub fn verify(signature: &[u8; 64]) -> bool {
        let Ok(key) = PublicKey::from_sec1_bytes(black_box(&P256_PUBLIC)) else {
            return false;
        };
        let Ok(signature) = Signature::from_untagged_bytes(signature) else {
            return false;
        };
        key.verify_prehashed(&DIGEST, &signature)
    }
}

/// Byte `index` of the stand-in model (the same function as in build.rs).
#[cfg(feature = "sha2")]
fn model_byte(index: usize) -> u8 {
    ((index as u32).wrapping_mul(2_654_435_761) >> 24) as u8
}

#[cfg(feature = "sha2")]
fn run() {
    use sha2::{Digest, Sha256};
    let mut model = [0u8; MODEL_LEN];
    for (index, byte) in model.iter_mut().enumerate() {
        *byte = model_byte(index);
    }
    let digest_is = |model: &[u8], expected: &[u8; 32]| {
        let digest: [u8; 32] = Sha256::digest(black_box(model)).into();
        digest == *expected
    };
    let ticks = median_ticks(|| digest_is(&model, &DIGEST));
    model[MODEL_LEN / 2] ^= 1;
    if digest_is(&model, &DIGEST) {
        fail("a changed model hashed to the signed digest");
    }
    hprintln!("hash sha2 {} KiB: {} ticks", MODEL_LEN / 1024, ticks);
}

#[cfg(any(feature = "store-ed25519", feature = "store-ecdsa-p256"))]
fn run() {
    use synaptic_store::container::check;
    use synaptic_store::signature::{Algorithm, PublicKey, Trust, Verifier};
    use synaptic_store::{StoreError, HEADER_LEN};

    #[cfg(feature = "store-ed25519")]
    let (name, key, verifier) = (
        "store-ed25519",
        PublicKey {
            algorithm: Algorithm::Ed25519,
            bytes: &ED25519_PUBLIC,
        },
        synaptic_store::signature::verify_ed25519 as Verifier,
    );
    #[cfg(feature = "store-ecdsa-p256")]
    let (name, key, verifier) = (
        "store-ecdsa-p256",
        PublicKey {
            algorithm: Algorithm::EcdsaP256,
            bytes: &P256_PUBLIC,
        },
        synaptic_store::signature::verify_ecdsa_p256 as Verifier,
    );
    let keys = [key];
    // What a firmware that trusts one key does: that key, signatures
    // required, its algorithm's verifier alone.
    let verdict = |bytes: &[u8]| -> Result<(), StoreError> {
        let trust = Trust::with_verifier(black_box(&keys), true, verifier)?;
        check(black_box(bytes), &trust, 0).map(|_| ())
    };
    let ticks = median_ticks(|| verdict(CONTAINER).is_ok());

    let mut copy = *CONTAINER;
    let payload = CONTAINER_LEN - PAYLOAD_LEN;
    copy[payload + PAYLOAD_LEN / 2] ^= 1;
    if verdict(&copy) != Err(StoreError::CrcMismatch) {
        fail("a payload with one bit flipped was not refused by its CRC");
    }
    copy = *CONTAINER;
    // The signature's first byte, after the header and the block's 72
    // bytes of magic, algorithm, key id and payload digest.
    copy[HEADER_LEN + 72] ^= 1;
    if verdict(&copy) != Err(StoreError::BadSignature) {
        fail("a signature with one bit flipped was not refused");
    }

    #[cfg(feature = "breakdown")]
    breakdown(&key, verifier);
    hprintln!("verify {}: {} ticks", name, ticks);
}

/// Where a store variant's time goes, each part timed alone in the same
/// code (a separate build, so that the variant's flash figure holds none
/// of this): the payload's CRC32 and SHA-256, which grow with the payload,
/// and the signature over the signed digest.
#[cfg(all(
    feature = "breakdown",
    any(feature = "store-ed25519", feature = "store-ecdsa-p256")
))]
fn breakdown(
    key: &synaptic_store::signature::PublicKey<'_>,
    verifier: synaptic_store::signature::Verifier,
) {
    use synaptic_store::signature::{sha256, signed_digest, SignatureBlock};
    use synaptic_store::{crc32, Header, HEADER_LEN};

    let (Ok(header), Ok(block)) = (
        Header::decode(CONTAINER),
        SignatureBlock::decode(&CONTAINER[HEADER_LEN..]),
    ) else {
        fail("the container does not decode");
    };
    let payload = &CONTAINER[CONTAINER_LEN - PAYLOAD_LEN..];
    let crc = median_ticks(|| crc32(black_box(payload)) == header.payload_crc);
    let sha = median_ticks(|| sha256(black_box(payload)) == block.payload_digest);
    let Ok(head) = <&[u8; HEADER_LEN]>::try_from(&CONTAINER[..HEADER_LEN]) else {
        fail("the container is shorter than a header");
    };
    let digest = signed_digest(head, &block.payload_digest);
    let signature = median_ticks(|| verifier(black_box(key), &digest, &block.signature));
    hprintln!("part crc32 {} B: {} ticks", PAYLOAD_LEN, crc);
    hprintln!("part sha256 {} B: {} ticks", PAYLOAD_LEN, sha);
    hprintln!("part signature: {} ticks", signature);
}

#[cfg(not(any(
    feature = "sha2",
    feature = "store-ed25519",
    feature = "store-ecdsa-p256"
)))]
fn run() {
    let signature = black_box(candidate::SIGNATURE);
    let ticks = median_ticks(|| candidate::verify(black_box(&signature)));
    let mut flipped = signature;
    flipped[0] ^= 1;
    if candidate::verify(black_box(&flipped)) {
        fail("a signature with one bit flipped verified");
    }
    hprintln!("verify {}: {} ticks", candidate::NAME, ticks);
}

#[entry]
fn main() -> ! {
    let Some(peripherals) = cortex_m::Peripherals::take() else {
        fail("core peripherals taken twice");
    };
    start_ticks(peripherals.SYST);
    // Every build links the container, the baseline too (see `CONTAINER`).
    black_box(CONTAINER);
    run();
    debug::exit(debug::EXIT_SUCCESS);
    loop {
        cortex_m::asm::wfi();
    }
}
