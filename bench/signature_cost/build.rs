//! Signs the test vector on the host, so the target only verifies.
//!
//! The model is a 64 KiB pattern (`model_byte`, repeated in src/main.rs);
//! its SHA-256 digest is signed with Ed25519 and with ECDSA P-256 (RFC 6979,
//! so deterministic) under keys derived from fixed labels. Every Ed25519
//! candidate verifies the same vector, and so does every P-256 candidate.

use std::{env, fs, path::PathBuf};

use ed25519_dalek::Signer;
use p256::ecdsa::signature::hazmat::PrehashSigner;
use sha2::{Digest, Sha256};

const MODEL_LEN: usize = 64 * 1024;

/// Byte `index` of the stand-in model (the same function as on the target).
fn model_byte(index: usize) -> u8 {
    ((index as u32).wrapping_mul(2_654_435_761) >> 24) as u8
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
    fs::write(out.join("vectors.rs"), vectors).unwrap();
}
