//! Signs the test vector on the host, so the target only verifies.
//!
//! The model is a 64 KiB pattern (`model_byte`, repeated in src/main.rs);
//! its SHA-256 digest is signed with Ed25519 and with ECDSA P-256 (RFC 6979,
//! so deterministic) under keys derived from fixed labels. Every Ed25519
//! candidate verifies the same vector, and so does every P-256 candidate.
//!
//! The store variants check a whole container instead: micro_speech.tflite
//! (the shipped keyword model) as the payload of a signed container (format
//! 2), one signed under each key, built with synaptic-store's own types and
//! checked here with its `container::check` before the target sees them.

use std::{env, fs, path::PathBuf};

use ed25519_dalek::Signer;
use p256::ecdsa::signature::hazmat::PrehashSigner;
use sha2::{Digest, Sha256};
use synaptic_store::container::check;
use synaptic_store::signature::{
    signed_digest, Algorithm, PublicKey, SignatureBlock, Trust, SIGNATURE_LEN,
};
use synaptic_store::{Header, TensorShape, HEADER_LEN};

const MODEL_LEN: usize = 64 * 1024;

/// Byte `index` of the stand-in model (the same function as on the target).
fn model_byte(index: usize) -> u8 {
    ((index as u32).wrapping_mul(2_654_435_761) >> 24) as u8
}

/// The payload of the store variants' container.
const MICRO_SPEECH: &[u8] = include_bytes!("../../models/micro_speech.tflite");

/// The micro_speech container (format 2, version 3) signed by `signature`,
/// a function of the signed digest, under `key`; checked with the store's
/// own `check` trusting that key alone (signatures required).
fn signed_container(key: PublicKey<'_>, signature: impl Fn(&[u8; 32]) -> [u8; 64]) -> Vec<u8> {
    // TFLite Micro's keyword spotter: 49 x 40 int8 features in, 4 scores out.
    let mut header = Header::new(
        "micro_speech",
        3,
        MICRO_SPEECH,
        TensorShape::int8(&[1, 1960]),
        TensorShape::int8(&[1, 4]),
    )
    .unwrap();
    header.signed = true;
    let header = header.encode();
    let payload_digest: [u8; 32] = Sha256::digest(MICRO_SPEECH).into();
    let block = SignatureBlock {
        algorithm: key.algorithm,
        key_id: key.id(),
        payload_digest,
        signature: signature(&signed_digest(&header, &payload_digest)),
    };
    let container = [&header[..], &block.encode(), MICRO_SPEECH].concat();
    assert_eq!(
        container.len(),
        HEADER_LEN + SIGNATURE_LEN + MICRO_SPEECH.len()
    );
    let trust = Trust::new(core::slice::from_ref(&key), true).unwrap();
    check(&container, &trust, 0).expect("the store refuses the container it will be given");
    container
}

fn constant(name: &str, bytes: &[u8]) -> String {
    format!("pub const {name}: [u8; {}] = {bytes:?};\n", bytes.len())
}

fn main() {
    let out = PathBuf::from(env::var_os("OUT_DIR").unwrap());

    // cortex-m-rt's link.x includes memory.x from the linker search path.
    fs::copy("memory.x", out.join("memory.x")).unwrap();
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    println!("cargo:rerun-if-changed=build.rs");

    let model: Vec<u8> = (0..MODEL_LEN).map(model_byte).collect();
    let digest: [u8; 32] = Sha256::digest(&model).into();

    let ed25519_seed: [u8; 32] = Sha256::digest(b"signature_cost ed25519 key").into();
    let ed25519_key = ed25519_dalek::SigningKey::from_bytes(&ed25519_seed);
    let ed25519_signature = ed25519_key.sign(&digest).to_bytes();

    let p256_seed = Sha256::digest(b"signature_cost p256 key");
    let p256_key = p256::ecdsa::SigningKey::from_slice(&p256_seed).unwrap();
    let p256_signature: p256::ecdsa::Signature = p256_key.sign_prehash(&digest).unwrap();
    let p256_public = p256_key.verifying_key().to_sec1_point(false);

    let mut vectors = format!("pub const MODEL_LEN: usize = {MODEL_LEN};\n");
    vectors += &constant("DIGEST", &digest);
    vectors += &constant("ED25519_PUBLIC", ed25519_key.verifying_key().as_bytes());
    vectors += &constant("ED25519_SIGNATURE", &ed25519_signature);
    vectors += &constant("P256_PUBLIC", p256_public.as_bytes());
    vectors += &constant("P256_SIGNATURE", &p256_signature.to_bytes());

    let ed25519_public = ed25519_key.verifying_key().to_bytes();
    let ed25519_container = signed_container(
        PublicKey {
            algorithm: Algorithm::Ed25519,
            bytes: &ed25519_public,
        },
        |digest| ed25519_key.sign(digest).to_bytes(),
    );
    let p256_container = signed_container(
        PublicKey {
            algorithm: Algorithm::EcdsaP256,
            bytes: p256_public.as_bytes(),
        },
        |digest| {
            let signature: p256::ecdsa::Signature = p256_key.sign_prehash(digest).unwrap();
            signature.to_bytes().into()
        },
    );
    fs::write(out.join("ed25519.syn"), &ed25519_container).unwrap();
    fs::write(out.join("p256.syn"), &p256_container).unwrap();
    vectors += &format!("pub const PAYLOAD_LEN: usize = {};\n", MICRO_SPEECH.len());
    vectors += &format!(
        "pub const CONTAINER_LEN: usize = {};\n",
        ed25519_container.len()
    );
    fs::write(out.join("vectors.rs"), vectors).unwrap();
}
