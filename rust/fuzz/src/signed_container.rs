//! The `signed_container` target's input, its fixed test keys and its own
//! signer: a container is built from a short description (name, version,
//! payload, who signs it), then mutated by a program of operations (bit
//! flips, cuts, appended bytes, rewritten fields, CRCs fixed up, signed
//! again), and the harness remembers what it did.
//!
//! Input: a mode byte. Even: structured, [`Setup`]'s 12 bytes then the
//! operations (a tag byte each, taken modulo [`TAGS`], then its
//! arguments). Odd: raw, [`RawSetup`]'s 5 bytes then the container's bytes
//! as they are.
//!
//! Keys: A (Ed25519) and B (ECDSA P-256), which a policy may trust, and
//! C (one of each algorithm), which no policy trusts. Their secrets are
//! fixed, so signatures are deterministic (Ed25519 by definition, P-256 by
//! RFC 6979): a signature verifies under a key iff it is the one the
//! harness would make, or (P-256) that one with `s` replaced by `n - s`.

use std::sync::OnceLock;

use ed25519_dalek::Signer as _;
use p256::ecdsa::signature::hazmat::PrehashSigner as _;
use synaptic_store::signature::{sha256, signed_digest, Algorithm, PublicKey, Trust};
use synaptic_store::{crc32, Header, StoreError, TensorShape, HEADER_LEN};

use crate::Input;

/// Bytes of a signature block.
pub const BLOCK_LEN: usize = synaptic_store::signature::SIGNATURE_LEN;
/// Offset of the payload in a signed container.
pub const SIGNED_PAYLOAD: usize = HEADER_LEN + BLOCK_LEN;
/// Where a signature block's fields lie in a signed container.
pub const KEY_ID: usize = HEADER_LEN + 8;
/// The recorded payload digest.
pub const PAYLOAD_DIGEST: usize = HEADER_LEN + 40;
/// The signature's `r`.
pub const SIGNATURE_R: usize = HEADER_LEN + 72;
/// The signature's `s`.
pub const SIGNATURE_S: usize = HEADER_LEN + 104;

/// Longest generated payload.
pub const PAYLOAD_MAX: usize = 512;
/// The names a structured input picks from (the last is 31 bytes long).
pub const NAMES: [&str; 4] = ["kws", "face", "m", "abcdefghijklmnopqrstuvwxyz01234"];
/// Program units a structured or raw input picks from.
pub const BLOCKS: [usize; 5] = [1, 4, 8, 16, 32];
/// Most operations run.
pub const MAX_OPS: usize = 16;

/// Flip one bit: offset `u16` (modulo the length), bit `u8` (modulo 8).
pub const FLIP: u8 = 0;
/// Cut the tail: bytes `u16` (modulo the length + 1).
pub const TRUNCATE: u8 = 1;
/// Append bytes: count `u8`, value `u8`.
pub const APPEND: u8 = 2;
/// Overwrite a field with a little-endian word: field `u8` (modulo
/// [`FIELDS`]'s length), value `u32` (as many bytes as the field takes).
pub const WRITE: u8 = 3;
/// Recompute the header's CRC (bytes 92..96 over 0..92).
pub const FIX_HEADER_CRC: u8 = 4;
/// Recompute the payload CRC field (48..52) over what follows the
/// preamble the format field (4..6) announces; the header CRC is left.
pub const FIX_PAYLOAD_CRC: u8 = 5;
/// Sign again: key `u8` (modulo 4: A, B, C Ed25519, C P-256), flags `u8`
/// (bit 0: keep the recorded payload digest rather than hash the payload
/// again; bit 1: keep the block's magic, algorithm and key id rather than
/// name the signer). Over the current header bytes; needs a whole block.
pub const RESIGN: u8 = 6;
/// Replace the signature's `s` by `n - s` (P-256's group order `n`): the
/// twin every ECDSA signature has, valid whenever the original is.
pub const MALLEATE: u8 = 7;
/// Tags there are.
pub const TAGS: u8 = 8;

/// The fields [`WRITE`] can name: offset and width in bytes.
pub const FIELDS: [(usize, usize); 19] = [
    (0, 4),                // magic
    (4, 2),                // format
    (6, 2),                // header length
    (8, 4),                // name, first bytes
    (36, 4),               // name, last bytes
    (40, 4),               // version
    (44, 4),               // payload length
    (48, 4),               // payload CRC
    (52, 4),               // dtypes and ranks
    (56, 4),               // first input dimension
    (88, 4),               // reserved
    (92, 4),               // header CRC
    (HEADER_LEN, 4),       // block magic
    (HEADER_LEN + 4, 4),   // algorithm, reserved
    (KEY_ID, 4),           // key id, first bytes
    (PAYLOAD_DIGEST, 4),   // payload digest, first bytes
    (SIGNATURE_R, 4),      // signature r, first bytes
    (SIGNATURE_S + 28, 4), // signature s, last bytes
    (SIGNED_PAYLOAD, 4),   // first payload word of a signed container
];

/// A test key and its secret.
pub struct TestKey {
    secret: Secret,
    /// The raw public key (Ed25519's 32 bytes; P-256's uncompressed SEC1
    /// point, 65).
    pub public: Vec<u8>,
    /// SHA-256 of [`public`](Self::public): the key id a block names.
    pub id: [u8; 32],
}

enum Secret {
    Ed25519(ed25519_dalek::SigningKey),
    P256(p256::ecdsa::SigningKey),
}

impl TestKey {
    fn ed25519(seed: u8) -> TestKey {
        let secret = ed25519_dalek::SigningKey::from_bytes(&[seed; 32]);
        let public = secret.verifying_key().to_bytes().to_vec();
        TestKey {
            id: sha256(&public),
            public,
            secret: Secret::Ed25519(secret),
        }
    }

    fn p256(seed: u8) -> TestKey {
        let secret = p256::ecdsa::SigningKey::from_slice(&[seed; 32]).expect("a scalar below n");
        let public = secret
            .verifying_key()
            .to_sec1_point(false)
            .as_bytes()
            .to_vec();
        TestKey {
            id: sha256(&public),
            public,
            secret: Secret::P256(secret),
        }
    }

    /// Its algorithm.
    pub fn algorithm(&self) -> Algorithm {
        match self.secret {
            Secret::Ed25519(_) => Algorithm::Ed25519,
            Secret::P256(_) => Algorithm::EcdsaP256,
        }
    }

    /// The signature of `digest` (Ed25519: the 32 bytes as the message;
    /// P-256: as the prehash, `r || s`).
    pub fn sign(&self, digest: &[u8; 32]) -> [u8; 64] {
        match &self.secret {
            Secret::Ed25519(k) => k.sign(digest).to_bytes(),
            Secret::P256(k) => {
                let signature: p256::ecdsa::Signature =
                    k.sign_prehash(digest).expect("a 32-byte prehash signs");
                let mut out = [0u8; 64];
                out.copy_from_slice(&signature.to_bytes());
                out
            }
        }
    }

    /// The key as the store is given it.
    pub fn public_key(&'static self) -> PublicKey<'static> {
        PublicKey {
            algorithm: self.algorithm(),
            bytes: &self.public,
        }
    }
}

/// Index of key A (Ed25519, trusted when the policy says so).
pub const KEY_A: usize = 0;
/// Key B (P-256, trusted when the policy says so).
pub const KEY_B: usize = 1;
/// Key C, Ed25519 (never trusted).
pub const KEY_C_ED25519: usize = 2;
/// Key C, P-256 (never trusted).
pub const KEY_C_P256: usize = 3;

/// The four test keys, from fixed secrets.
pub fn keys() -> &'static [TestKey; 4] {
    static KEYS: OnceLock<[TestKey; 4]> = OnceLock::new();
    KEYS.get_or_init(|| {
        [
            TestKey::ed25519(0xA1),
            TestKey::p256(0xB2),
            TestKey::ed25519(0xC3),
            TestKey::p256(0xC4),
        ]
    })
}

/// What the device trusts: keys A and B each or not, signatures required
/// or not (bits 0, 1, 2 of a policy byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Key A is trusted.
    pub a: bool,
    /// Key B is trusted.
    pub b: bool,
    /// Unsigned containers are refused.
    pub required: bool,
}

impl Policy {
    /// From a policy byte.
    pub fn from_byte(b: u8) -> Policy {
        Policy {
            a: b & 1 != 0,
            b: b & 2 != 0,
            required: b & 4 != 0,
        }
    }

    /// The policy byte.
    pub fn byte(self) -> u8 {
        u8::from(self.a) | u8::from(self.b) << 1 | u8::from(self.required) << 2
    }

    /// Indices (into [`keys`]) of the trusted keys.
    pub fn trusted(self) -> impl Iterator<Item = usize> {
        [(KEY_A, self.a), (KEY_B, self.b)]
            .into_iter()
            .filter_map(|(k, t)| t.then_some(k))
    }

    /// The store's trust policy: [`Trust::new`] over the trusted keys.
    ///
    /// # Errors
    ///
    /// As [`Trust::new`] ([`StoreError::BadKey`] when signatures are
    /// required and no key is trusted).
    pub fn trust(self) -> Result<Trust<'static>, StoreError> {
        static SETS: OnceLock<[Vec<PublicKey<'static>>; 4]> = OnceLock::new();
        let sets = SETS.get_or_init(|| {
            core::array::from_fn(|mask| {
                Policy::from_byte(mask as u8)
                    .trusted()
                    .map(|k| keys()[k].public_key())
                    .collect()
            })
        });
        Trust::new(&sets[usize::from(self.byte() & 3)], self.required)
    }
}

/// A structured input's fixed part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setup {
    /// The trust policy (a [`Policy`] byte).
    pub policy: u8,
    /// The model's security counter.
    pub security: u16,
    /// The new container's version.
    pub version: u16,
    /// Who signs it: 0 nobody (format 1), else key `signer - 1` (modulo 5).
    pub signer: u8,
    /// [`NAMES`] index (modulo).
    pub name: u8,
    /// Payload bytes (modulo [`PAYLOAD_MAX`] + 1).
    pub payload_len: u16,
    /// Seeds the payload's bytes.
    pub pattern: u8,
    /// Seeds the update stream's chunk sizes.
    pub chunks: u8,
    /// [`BLOCKS`] index (modulo).
    pub block: u8,
}

impl Setup {
    /// The 13 bytes (mode byte included) that decode to `self`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[0, self.policy]);
        out.extend_from_slice(&self.security.to_le_bytes());
        out.extend_from_slice(&self.version.to_le_bytes());
        out.extend_from_slice(&[self.signer, self.name]);
        out.extend_from_slice(&self.payload_len.to_le_bytes());
        out.extend_from_slice(&[self.pattern, self.chunks, self.block]);
    }

    fn decode(input: &mut Input<'_>) -> Option<Setup> {
        Some(Setup {
            policy: input.u8()?,
            security: input.u16()?,
            version: input.u16()?,
            signer: input.u8()?,
            name: input.u8()?,
            payload_len: input.u16()?,
            pattern: input.u8()?,
            chunks: input.u8()?,
            block: input.u8()?,
        })
    }

    /// The signing key, if any.
    pub fn signer(&self) -> Option<usize> {
        match self.signer % 5 {
            0 => None,
            k => Some(usize::from(k) - 1),
        }
    }

    /// The model's name.
    pub fn name(&self) -> &'static str {
        NAMES[usize::from(self.name) % NAMES.len()]
    }
}

/// Bytes of a raw input before the container (mode byte included).
pub const RAW_SETUP_LEN: usize = 6;

/// A raw input's fixed part; the container's bytes follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawSetup {
    /// The trust policy (a [`Policy`] byte).
    pub policy: u8,
    /// The model's security counter.
    pub security: u16,
    /// Seeds the update stream's chunk sizes.
    pub chunks: u8,
    /// [`BLOCKS`] index (modulo).
    pub block: u8,
}

impl RawSetup {
    /// The 6 bytes (mode byte included) that decode to `self`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[1, self.policy]);
        out.extend_from_slice(&self.security.to_le_bytes());
        out.extend_from_slice(&[self.chunks, self.block]);
    }
}

/// What the harness knows of a structured input's container.
#[derive(Clone, Debug)]
pub struct Built {
    /// The container as first built.
    pub original: Vec<u8>,
    /// Who signed it first ([`keys`] index), if anyone.
    pub signer: Option<usize>,
    /// Its version.
    pub version: u32,
    /// The bytes right after each signature the harness made (the first,
    /// then each [`RESIGN`]).
    pub signed: Vec<Vec<u8>>,
    /// Some [`RESIGN`] kept the recorded payload digest (so a signature
    /// may vouch for a payload no snapshot holds).
    pub stale: bool,
}

/// A decoded input: the container, and the update's circumstances.
#[derive(Clone, Debug)]
pub struct Case {
    /// The trust policy.
    pub policy: Policy,
    /// The model's security counter.
    pub security: u32,
    /// The model the update is begun for.
    pub name: String,
    /// The container's bytes, mutations applied.
    pub bytes: Vec<u8>,
    /// Seeds the chunk sizes.
    pub chunks: u8,
    /// Flash program unit.
    pub block: usize,
    /// Structured inputs: what was built and signed.
    pub built: Option<Built>,
}

/// The payload a structured input describes.
pub fn payload(len: usize, pattern: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 * 131 + u32::from(pattern) * 7) as u8)
        .collect()
}

/// The container `setup` describes, signed by its signer.
pub fn build(setup: &Setup) -> Vec<u8> {
    let len = usize::from(setup.payload_len) % (PAYLOAD_MAX + 1);
    let payload = payload(len, setup.pattern);
    let mut header = Header::new(
        setup.name(),
        u32::from(setup.version),
        &payload,
        TensorShape::int8(&[1, len as u32]),
        TensorShape::int8(&[4]),
    )
    .expect("a valid name");
    header.signed = setup.signer().is_some();
    let mut bytes = header.encode().to_vec();
    if let Some(k) = setup.signer() {
        bytes.extend_from_slice(&[0; BLOCK_LEN]);
        bytes.extend_from_slice(&payload);
        resign(&mut bytes, k, 0);
    } else {
        bytes.extend_from_slice(&payload);
    }
    bytes
}

/// [`RESIGN`] of `bytes` with key `key` (flags as there). Needs a whole
/// block: does nothing (and returns false) to shorter bytes.
pub fn resign(bytes: &mut [u8], key: usize, flags: u8) -> bool {
    if bytes.len() < SIGNED_PAYLOAD {
        return false;
    }
    let key = &keys()[key];
    if flags & 2 == 0 {
        bytes[HEADER_LEN..KEY_ID].copy_from_slice(&[
            b'S',
            b'Y',
            b'N',
            b'S',
            key.algorithm() as u8,
            0,
            0,
            0,
        ]);
        bytes[KEY_ID..PAYLOAD_DIGEST].copy_from_slice(&key.id);
    }
    if flags & 1 == 0 {
        let digest = sha256(&bytes[SIGNED_PAYLOAD..]);
        bytes[PAYLOAD_DIGEST..SIGNATURE_R].copy_from_slice(&digest);
    }
    let head: [u8; HEADER_LEN] = bytes[..HEADER_LEN].try_into().expect("96 bytes");
    let recorded: [u8; 32] = bytes[PAYLOAD_DIGEST..SIGNATURE_R]
        .try_into()
        .expect("32 bytes");
    let signature = key.sign(&signed_digest(&head, &recorded));
    bytes[SIGNATURE_R..SIGNED_PAYLOAD].copy_from_slice(&signature);
    true
}

/// P-256's group order, big-endian.
const ORDER: [u8; 32] = [
    0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51,
];

/// `n - s` for a big-endian `s` in `1..n`, else `None`.
pub fn negate_s(s: &[u8; 32]) -> Option<[u8; 32]> {
    if s.iter().all(|&b| b == 0) || s.as_slice() >= ORDER.as_slice() {
        return None;
    }
    let mut out = [0u8; 32];
    let mut borrow = 0i16;
    for k in (0..32).rev() {
        let mut d = i16::from(ORDER[k]) - i16::from(s[k]) - borrow;
        borrow = i16::from(d < 0);
        if d < 0 {
            d += 256;
        }
        out[k] = d as u8;
    }
    Some(out)
}

/// The signature with its `s` negated (see [`MALLEATE`]), if `s` is a
/// scalar.
pub fn malleate(signature: &[u8; 64]) -> Option<[u8; 64]> {
    let s: [u8; 32] = signature[32..].try_into().expect("32 bytes");
    let negated = negate_s(&s)?;
    let mut out = *signature;
    out[32..].copy_from_slice(&negated);
    Some(out)
}

fn write_field(bytes: &mut [u8], field: u8, value: u32) {
    let (at, width) = FIELDS[usize::from(field) % FIELDS.len()];
    for (k, b) in value.to_le_bytes()[..width].iter().enumerate() {
        if let Some(slot) = bytes.get_mut(at + k) {
            *slot = *b;
        }
    }
}

/// Apply one operation (`tag` already taken modulo [`TAGS`]) to `bytes`,
/// its arguments read from `input`; a signature is recorded in `built`.
fn apply(tag: u8, input: &mut Input<'_>, bytes: &mut Vec<u8>, built: &mut Built) -> Option<()> {
    match tag {
        FLIP => {
            let (at, bit) = (input.u16()?, input.u8()?);
            if !bytes.is_empty() {
                let at = usize::from(at) % bytes.len();
                bytes[at] ^= 1 << (bit % 8);
            }
        }
        TRUNCATE => {
            let cut = usize::from(input.u16()?) % (bytes.len() + 1);
            bytes.truncate(bytes.len() - cut);
        }
        APPEND => {
            let (n, value) = (input.u8()?, input.u8()?);
            bytes.resize(bytes.len() + usize::from(n), value);
        }
        WRITE => {
            let (field, value) = (input.u8()?, input.u32()?);
            write_field(bytes, field, value);
        }
        FIX_HEADER_CRC => {
            if bytes.len() >= HEADER_LEN {
                let crc = crc32(&bytes[..92]);
                bytes[92..96].copy_from_slice(&crc.to_le_bytes());
            }
        }
        FIX_PAYLOAD_CRC => {
            if bytes.len() >= HEADER_LEN {
                let preamble = if bytes[4..6] == [2, 0] {
                    SIGNED_PAYLOAD
                } else {
                    HEADER_LEN
                };
                let crc = crc32(bytes.get(preamble..).unwrap_or_default());
                bytes[48..52].copy_from_slice(&crc.to_le_bytes());
            }
        }
        RESIGN => {
            let (key, flags) = (input.u8()?, input.u8()?);
            if resign(bytes, usize::from(key % 4), flags) {
                built.signed.push(bytes.clone());
                built.stale |= flags & 1 != 0;
            }
        }
        _ => {
            if let Some(sig) = bytes.get(SIGNATURE_R..SIGNED_PAYLOAD) {
                let sig: [u8; 64] = sig.try_into().expect("64 bytes");
                if let Some(twin) = malleate(&sig) {
                    bytes[SIGNATURE_R..SIGNED_PAYLOAD].copy_from_slice(&twin);
                }
            }
        }
    }
    Some(())
}

/// Decode a fuzz input (`None`: too short for its setup).
pub fn decode(data: &[u8]) -> Option<Case> {
    let mut input = Input::new(data);
    let mode = input.u8()?;
    if mode % 2 == 1 {
        let policy = Policy::from_byte(input.u8()?);
        let security = u32::from(input.u16()?);
        let (chunks, block) = (input.u8()?, input.u8()?);
        let bytes = data[RAW_SETUP_LEN..].to_vec();
        let name = Header::decode(&bytes)
            .map(|h| h.name().to_owned())
            .unwrap_or_else(|_| "m".to_owned());
        return Some(Case {
            policy,
            security,
            name,
            bytes,
            chunks,
            block: BLOCKS[usize::from(block) % BLOCKS.len()],
            built: None,
        });
    }
    let setup = Setup::decode(&mut input)?;
    let original = build(&setup);
    let mut bytes = original.clone();
    let mut built = Built {
        signed: setup
            .signer()
            .map(|_| original.clone())
            .into_iter()
            .collect(),
        original,
        signer: setup.signer(),
        version: u32::from(setup.version),
        stale: false,
    };
    input.run(MAX_OPS, TAGS, |tag, input| {
        apply(tag, input, &mut bytes, &mut built)
    });
    Some(Case {
        policy: Policy::from_byte(setup.policy),
        security: u32::from(setup.security),
        name: setup.name().to_owned(),
        bytes,
        chunks: setup.chunks,
        block: BLOCKS[usize::from(setup.block) % BLOCKS.len()],
        built: Some(built),
    })
}

/// Chunk sizes for a stream of `total` bytes, from `seed`: all of one
/// byte, or up to 16, 97 or 1024 bytes each (a small xorshift).
pub fn chunk_sizes(seed: u8, total: usize) -> Vec<usize> {
    let max = [1usize, 16, 97, 1024][usize::from(seed % 4)];
    let mut state = u32::from(seed) | 0x9E37_7900;
    let mut sizes = Vec::new();
    let mut left = total;
    while left > 0 {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let n = (1 + state as usize % max).min(left);
        sizes.push(n);
        left -= n;
    }
    sizes
}

/// [`FLIP`].
pub fn flip(out: &mut Vec<u8>, at: u16, bit: u8) {
    out.push(FLIP);
    out.extend_from_slice(&at.to_le_bytes());
    out.push(bit);
}

/// [`WRITE`].
pub fn write(out: &mut Vec<u8>, field: u8, value: u32) {
    out.extend_from_slice(&[WRITE, field]);
    out.extend_from_slice(&value.to_le_bytes());
}

/// [`RESIGN`].
pub fn resign_op(out: &mut Vec<u8>, key: u8, flags: u8) {
    out.extend_from_slice(&[RESIGN, key, flags]);
}
