//! Signed containers (format 2): a 136-byte signature block between the
//! header and the payload, and the keys the device trusts.
//!
//! ```text
//! offset  size  field
//!      0     4  magic "SYNS"
//!      4     1  algorithm (1: Ed25519, 2: ECDSA P-256)
//!      5     3  reserved (0)
//!      8    32  key id: SHA-256 of the signer's public key (Ed25519: the
//!               32-byte key; P-256: the 65-byte uncompressed SEC1 point)
//!     40    32  SHA-256 of the payload
//!     72    64  signature of SHA-256(header's 96 bytes || payload digest)
//!               (Ed25519 over those 32 bytes; ECDSA P-256 with them as
//!               the prehash, r || s)
//! ```
//!
//! A digest is signed, not the whole container, as MCUboot signs an
//! image's hash, and the signed digest binds the header to the payload's
//! digest: so the header (name, version, length, shapes) and the signer
//! are authenticated from the preamble alone, before the store erases or
//! writes anything ([`Store::check_preamble`](crate::Store::check_preamble)),
//! and the payload is checked against its digest once it lies in flash.
//! At the end of an update the store checks everything again from flash.

use sha2::Digest as _;

use crate::{StoreError, HEADER_LEN};

/// Bytes of the signature block.
pub const SIGNATURE_LEN: usize = 136;
const MAGIC: [u8; 4] = *b"SYNS";

/// The signature algorithms MCUboot signs images with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Algorithm {
    /// Ed25519 (RFC 8032) over the 32-byte digest.
    Ed25519 = 1,
    /// ECDSA over NIST P-256, the digest as the prehash.
    EcdsaP256 = 2,
}

impl Algorithm {
    /// Bytes of a public key: Ed25519's 32, P-256's uncompressed SEC1
    /// point (65, starting 0x04).
    pub const fn key_len(self) -> usize {
        match self {
            Algorithm::Ed25519 => 32,
            Algorithm::EcdsaP256 => 65,
        }
    }

    /// Whether this build can verify it (cargo features `ed25519`,
    /// `ecdsa-p256`).
    pub const fn supported(self) -> bool {
        match self {
            Algorithm::Ed25519 => cfg!(feature = "ed25519"),
            Algorithm::EcdsaP256 => cfg!(feature = "ecdsa-p256"),
        }
    }

    fn from_code(code: u8) -> Option<Algorithm> {
        match code {
            1 => Some(Algorithm::Ed25519),
            2 => Some(Algorithm::EcdsaP256),
            _ => None,
        }
    }
}

/// SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

/// A streaming SHA-256 (the container digest as chunks go by).
#[derive(Clone, Default)]
pub struct Hasher(sha2::Sha256);

impl Hasher {
    /// Empty.
    pub fn new() -> Hasher {
        Hasher::default()
    }

    /// Hash `bytes` next.
    pub fn update(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }

    /// The digest.
    pub fn finish(self) -> [u8; 32] {
        self.0.finalize().into()
    }
}

/// A signature block, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignatureBlock {
    /// How it was signed.
    pub algorithm: Algorithm,
    /// [`PublicKey::id`] of the signer.
    pub key_id: [u8; 32],
    /// SHA-256 of the payload.
    pub payload_digest: [u8; 32],
    /// The signature of [`signed_digest`] of the header and
    /// `payload_digest`.
    pub signature: [u8; 64],
}

/// What a signature signs: SHA-256 of the header's bytes followed by the
/// payload's digest.
pub fn signed_digest(header: &[u8; HEADER_LEN], payload_digest: &[u8; 32]) -> [u8; 32] {
    let mut h = Hasher::new();
    h.update(header);
    h.update(payload_digest);
    h.finish()
}

impl SignatureBlock {
    /// The block's bytes.
    pub fn encode(&self) -> [u8; SIGNATURE_LEN] {
        let mut b = [0u8; SIGNATURE_LEN];
        b[0..4].copy_from_slice(&MAGIC);
        b[4] = self.algorithm as u8;
        b[8..40].copy_from_slice(&self.key_id);
        b[40..72].copy_from_slice(&self.payload_digest);
        b[72..136].copy_from_slice(&self.signature);
        b
    }

    /// Decode a block (magic, a known algorithm, zero reserved bytes).
    ///
    /// # Errors
    ///
    /// [`StoreError::BadContainer`].
    pub fn decode(b: &[u8]) -> Result<SignatureBlock, StoreError> {
        let b = b.get(..SIGNATURE_LEN).ok_or(StoreError::BadContainer)?;
        if b[0..4] != MAGIC || b[5..8] != [0, 0, 0] {
            return Err(StoreError::BadContainer);
        }
        let algorithm = Algorithm::from_code(b[4]).ok_or(StoreError::BadContainer)?;
        let field = |at: usize| -> [u8; 32] { core::array::from_fn(|k| b[at + k]) };
        Ok(SignatureBlock {
            algorithm,
            key_id: field(8),
            payload_digest: field(40),
            signature: core::array::from_fn(|k| b[72 + k]),
        })
    }
}

/// A public key the device trusts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PublicKey<'k> {
    /// Its algorithm.
    pub algorithm: Algorithm,
    /// Its bytes ([`Algorithm::key_len`]).
    pub bytes: &'k [u8],
}

impl PublicKey<'_> {
    /// The key id a signature block names it by: SHA-256 of its bytes.
    pub fn id(&self) -> [u8; 32] {
        sha256(self.bytes)
    }

    /// Whether `signature` signs `digest` under this key ([`verify_any`]).
    pub fn verifies(&self, digest: &[u8; 32], signature: &[u8; 64]) -> bool {
        verify_any(self, digest, signature)
    }
}

/// A signature check: whether a signature signs a digest under a key.
/// A [`Trust`] holds one, so that a firmware links only the algorithm of
/// the key it trusts ([`Trust::with_verifier`]).
pub type Verifier = fn(&PublicKey<'_>, &[u8; 32], &[u8; 64]) -> bool;

/// Every algorithm this build has (cargo features `ed25519`, `ecdsa-p256`).
pub fn verify_any(key: &PublicKey<'_>, digest: &[u8; 32], signature: &[u8; 64]) -> bool {
    match key.algorithm {
        #[cfg(feature = "ed25519")]
        Algorithm::Ed25519 => ed25519(key.bytes, digest, signature),
        #[cfg(feature = "ecdsa-p256")]
        Algorithm::EcdsaP256 => p256(key.bytes, digest, signature),
        #[allow(unreachable_patterns)]
        _ => {
            let _ = (digest, signature);
            false
        }
    }
}

/// Ed25519 only (other keys never verify).
#[cfg(feature = "ed25519")]
pub fn verify_ed25519(key: &PublicKey<'_>, digest: &[u8; 32], signature: &[u8; 64]) -> bool {
    key.algorithm == Algorithm::Ed25519 && ed25519(key.bytes, digest, signature)
}

/// ECDSA P-256 only (other keys never verify).
#[cfg(feature = "ecdsa-p256")]
pub fn verify_ecdsa_p256(key: &PublicKey<'_>, digest: &[u8; 32], signature: &[u8; 64]) -> bool {
    key.algorithm == Algorithm::EcdsaP256 && p256(key.bytes, digest, signature)
}

/// No algorithm: what a trust without keys holds (it never verifies).
fn verify_none(_: &PublicKey<'_>, _: &[u8; 32], _: &[u8; 64]) -> bool {
    false
}

#[cfg(feature = "ed25519")]
fn ed25519(key: &[u8], digest: &[u8; 32], signature: &[u8; 64]) -> bool {
    use ed25519_dalek::{Signature, Verifier, VerifyingKey};
    let Ok(key) = <&[u8; 32]>::try_from(key) else {
        return false;
    };
    VerifyingKey::from_bytes(key)
        .is_ok_and(|k| k.verify(digest, &Signature::from_bytes(signature)).is_ok())
}

#[cfg(feature = "ecdsa-p256")]
fn p256(key: &[u8], digest: &[u8; 32], signature: &[u8; 64]) -> bool {
    use p256::ecdsa::signature::hazmat::PrehashVerifier;
    use p256::ecdsa::{Signature, VerifyingKey};
    let (Ok(key), Ok(signature)) = (
        VerifyingKey::from_sec1_bytes(key),
        Signature::from_slice(signature),
    ) else {
        return false;
    };
    key.verify_prehash(digest, &signature).is_ok()
}

/// What the store accepts: the keys it trusts, and whether a container
/// must be signed by one of them.
///
/// * No keys, not required (the default): unsigned containers install;
///   a signed one must match its digest (its signature cannot be checked).
/// * Keys, required (what a build with a key configures): only containers
///   signed by one of the keys install; unsigned ones are refused.
/// * Keys, not required: unsigned containers install; signed ones must
///   verify under one of the keys.
#[derive(Clone, Copy)]
pub struct Trust<'k> {
    keys: &'k [PublicKey<'k>],
    required: bool,
    verifier: Verifier,
}

impl core::fmt::Debug for Trust<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Trust")
            .field("keys", &self.keys)
            .field("required", &self.required)
            .finish()
    }
}

impl<'k> Trust<'k> {
    /// Trust nothing, require nothing.
    pub const NONE: Trust<'static> = Trust {
        keys: &[],
        required: false,
        verifier: verify_none,
    };

    /// Trust `keys`, checked with every algorithm this build has
    /// ([`verify_any`]); with `required`, refuse unsigned containers.
    ///
    /// # Errors
    ///
    /// [`StoreError::BadKey`] when a key has the wrong length or an
    /// algorithm this build cannot verify, or signatures are required and
    /// no key is given (nothing could install).
    pub fn new(keys: &'k [PublicKey<'k>], required: bool) -> Result<Trust<'k>, StoreError> {
        Trust::with_verifier(keys, required, verify_any)
    }

    /// As [`new`](Self::new), checked with `verifier` alone (a firmware
    /// that trusts an Ed25519 key passes [`verify_ed25519`], and links no
    /// P-256 code).
    ///
    /// # Errors
    ///
    /// As [`new`](Self::new).
    pub fn with_verifier(
        keys: &'k [PublicKey<'k>],
        required: bool,
        verifier: Verifier,
    ) -> Result<Trust<'k>, StoreError> {
        let bad = |k: &PublicKey<'_>| {
            !k.algorithm.supported()
                || k.bytes.len() != k.algorithm.key_len()
                || (k.algorithm == Algorithm::EcdsaP256 && k.bytes[0] != 0x04)
        };
        if keys.iter().any(bad) || (required && keys.is_empty()) {
            return Err(StoreError::BadKey);
        }
        Ok(Trust {
            keys,
            required,
            verifier,
        })
    }

    /// Whether unsigned containers are refused.
    pub fn required(&self) -> bool {
        self.required
    }

    /// The trusted keys.
    pub fn keys(&self) -> &'k [PublicKey<'k>] {
        self.keys
    }

    /// What can be decided before the payload: an unsigned container where
    /// signatures are required, a signer not trusted.
    ///
    /// # Errors
    ///
    /// [`StoreError::Unsigned`], [`StoreError::UntrustedKey`].
    pub fn admit(&self, block: Option<&SignatureBlock>) -> Result<(), StoreError> {
        match block {
            None if self.required => Err(StoreError::Unsigned),
            None => Ok(()),
            Some(_) if self.keys.is_empty() => Ok(()),
            Some(b) => self.key(b).map(|_| ()),
        }
    }

    fn key(&self, block: &SignatureBlock) -> Result<&PublicKey<'k>, StoreError> {
        self.keys
            .iter()
            .find(|k| k.algorithm == block.algorithm && k.id() == block.key_id)
            .ok_or(StoreError::UntrustedKey)
    }

    /// The header's check: [`admit`](Self::admit), then, when the store
    /// trusts keys, the signature over the header and the payload digest
    /// the block records, under the signer's key.
    ///
    /// # Errors
    ///
    /// As [`admit`](Self::admit); [`StoreError::BadSignature`] when the
    /// signature does not verify (the header, the recorded digest or the
    /// signature changed after signing).
    pub fn verify_header(
        &self,
        header: &[u8; HEADER_LEN],
        block: Option<&SignatureBlock>,
    ) -> Result<(), StoreError> {
        self.admit(block)?;
        let Some(b) = block else { return Ok(()) };
        if self.keys.is_empty() {
            return Ok(());
        }
        let digest = signed_digest(header, &b.payload_digest);
        if !(self.verifier)(self.key(b)?, &digest, &b.signature) {
            return Err(StoreError::BadSignature);
        }
        Ok(())
    }
}

/// The payload's check: its SHA-256 against the digest the (verified)
/// block records.
///
/// # Errors
///
/// [`StoreError::BadSignature`]: the payload changed after signing.
pub fn check_payload(block: &SignatureBlock, digest: &[u8; 32]) -> Result<(), StoreError> {
    if block.payload_digest == *digest {
        Ok(())
    } else {
        Err(StoreError::BadSignature)
    }
}

impl Default for Trust<'_> {
    fn default() -> Self {
        Trust::NONE
    }
}
