//! Signed model containers (format 2): the parser and verifier
//! (`container::check`) and the store's gate (an update streamed through
//! `ota::Ota` into a `Store`), against a reference verdict and against
//! each other. The input describes a container, who signs it, the trust
//! policy, the model's security counter and mutations made after signing
//! (structured mode), or is a container's bytes as they are (raw mode);
//! see `synaptic_fuzz::signed_container`.
//!
//! Checked:
//! 1. nothing panics;
//! 2. `check` returns the reference's verdict, error class included: the
//!    format's rules stated again here, and a signature valid iff it is
//!    the one the harness's signer makes for that header and digest under
//!    the trusted key the block names (or, P-256, its `(r, n - s)` twin);
//!    and, from what the harness did alone: a container as built gets the
//!    verdict its signer, the policy and the counter call for, and where
//!    signatures are required nothing is accepted that is not byte for
//!    byte as the harness signed it;
//! 3. the store agrees: the update finishes iff `check` accepts (and the
//!    container is for the model begun and fits a slot), refusing at the
//!    stage and with the error the reference expects;
//! 4. an update refused before `finish` leaves the flash byte for byte as
//!    it was before `begin`;
//! 5. after any refusal the previous version is still active and loads
//!    with its exact bytes, also after a reboot; an accepted one activates,
//!    loads, and rolls back to the previous version.
#![no_main]

use libfuzzer_sys::fuzz_target;
use synaptic_fuzz::signed_container::{
    chunk_sizes, decode, keys, malleate, Built, Case, Policy, SIGNATURE_S, SIGNED_PAYLOAD,
};
use synaptic_store::container::check;
use synaptic_store::ota::{Ota, OtaError, OtaState};
use synaptic_store::signature::{sha256, signed_digest, Algorithm, Trust};
use synaptic_store::{crc32, Header, Layout, MemFlash, Store, StoreError, TensorShape, HEADER_LEN};

/// Flash geometry: small sectors, slots a little larger than the largest
/// generated container (appended bytes can overflow them).
const SECTOR: usize = 256;
const SLOT: usize = 4 * SECTOR;
const MODELS: usize = 2;
const IMAGE: usize = 2 * SECTOR + 2 * MODELS * SLOT;

fuzz_target!(|data: &[u8]| {
    let Some(mut case) = decode(data) else {
        return;
    };
    let trust = match case.policy.trust() {
        Ok(trust) => trust,
        Err(e) => {
            // Signatures required with no key: refused as a policy; the
            // case goes on as "nothing trusted, nothing required".
            assert_eq!(e, StoreError::BadKey);
            assert!(case.policy.required && !case.policy.a && !case.policy.b);
            case.policy.required = false;
            Trust::NONE
        }
    };
    let got = check(&case.bytes, &trust, case.security);
    if let Ok(header) = &got {
        assert_eq!(Header::decode(&case.bytes).as_ref(), Ok(header));
    }
    assert_eq!(
        got.map(|_| ()),
        expected_check(&case),
        "check against the reference"
    );
    if let Some(built) = &case.built {
        knowledge(&case, built, &got);
    }
    store_leg(&case, trust, &got);
});

/// A header as the reference reads it (the format's rules, stated again).
struct RefHeader {
    signed: bool,
    name: String,
    version: u32,
    payload_len: u32,
    payload_crc: u32,
}

fn ref_header(bytes: &[u8]) -> Option<RefHeader> {
    let b = bytes.get(..HEADER_LEN)?;
    let word = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    let format = u16::from_le_bytes([b[4], b[5]]);
    if b[0..4] != *b"SYNM"
        || !(format == 1 || format == 2)
        || b[6..8] != [96, 0]
        || word(92) != crc32(&b[..92])
        || b[53] > 4
        || b[55] > 4
    {
        return None;
    }
    let field = &b[8..40];
    let len = field.iter().position(|&c| c == 0)?;
    if len == 0 || field[len..].iter().any(|&c| c != 0) {
        return None;
    }
    Some(RefHeader {
        signed: format == 2,
        name: std::str::from_utf8(&field[..len]).ok()?.to_owned(),
        version: word(40),
        payload_len: word(44),
        payload_crc: word(48),
    })
}

impl RefHeader {
    fn preamble(&self) -> usize {
        if self.signed {
            SIGNED_PAYLOAD
        } else {
            HEADER_LEN
        }
    }
}

/// A signature block as the reference reads it.
struct RefBlock {
    algorithm: u8,
    key_id: [u8; 32],
    digest: [u8; 32],
    signature: [u8; 64],
}

fn ref_block(bytes: &[u8]) -> Option<RefBlock> {
    let b = bytes.get(HEADER_LEN..SIGNED_PAYLOAD)?;
    if b[0..4] != *b"SYNS" || !(b[4] == 1 || b[4] == 2) || b[5..8] != [0, 0, 0] {
        return None;
    }
    Some(RefBlock {
        algorithm: b[4],
        key_id: b[8..40].try_into().expect("32"),
        digest: b[40..72].try_into().expect("32"),
        signature: b[72..136].try_into().expect("64"),
    })
}

/// The reference's steps, each with the error it refuses with.
struct Reference<'c> {
    case: &'c Case,
}

impl Reference<'_> {
    fn header(&self) -> Result<RefHeader, StoreError> {
        ref_header(&self.case.bytes).ok_or(StoreError::BadContainer)
    }

    fn length(&self, h: &RefHeader) -> Result<(), StoreError> {
        let total = h.preamble() as u64 + u64::from(h.payload_len);
        if self.case.bytes.len() as u64 == total {
            Ok(())
        } else {
            Err(StoreError::Length)
        }
    }

    /// After [`length`](Self::length).
    fn payload(&self, h: &RefHeader) -> &[u8] {
        &self.case.bytes[h.preamble()..]
    }

    fn crc(&self, h: &RefHeader) -> Result<(), StoreError> {
        if crc32(self.payload(h)) == h.payload_crc {
            Ok(())
        } else {
            Err(StoreError::CrcMismatch)
        }
    }

    fn block(&self, h: &RefHeader) -> Result<Option<RefBlock>, StoreError> {
        if !h.signed {
            return Ok(None);
        }
        ref_block(&self.case.bytes)
            .map(Some)
            .ok_or(StoreError::BadContainer)
    }

    /// The trusted key that must have signed, if the policy checks
    /// signatures.
    fn admit(&self, block: Option<&RefBlock>) -> Result<Option<usize>, StoreError> {
        let policy = self.case.policy;
        match block {
            None if policy.required => Err(StoreError::Unsigned),
            None => Ok(None),
            Some(_) if !policy.a && !policy.b => Ok(None),
            Some(b) => policy
                .trusted()
                .find(|&k| keys()[k].algorithm() as u8 == b.algorithm && keys()[k].id == b.key_id)
                .map(Some)
                .ok_or(StoreError::UntrustedKey),
        }
    }

    fn security(&self, h: &RefHeader) -> Result<(), StoreError> {
        if h.version < self.case.security {
            Err(StoreError::Downgrade)
        } else {
            Ok(())
        }
    }

    /// Valid iff the harness's signer makes exactly this signature (or,
    /// P-256, its twin): nobody else holds the secrets.
    fn signature(&self, key: Option<usize>, block: Option<&RefBlock>) -> Result<(), StoreError> {
        let (Some(k), Some(b)) = (key, block) else {
            return Ok(());
        };
        let head: [u8; HEADER_LEN] = self.case.bytes[..HEADER_LEN].try_into().expect("96");
        let ours = keys()[k].sign(&signed_digest(&head, &b.digest));
        let twin = (keys()[k].algorithm() == Algorithm::EcdsaP256)
            .then(|| malleate(&ours))
            .flatten();
        if b.signature == ours || Some(b.signature) == twin {
            Ok(())
        } else {
            Err(StoreError::BadSignature)
        }
    }

    fn digest(&self, h: &RefHeader, block: Option<&RefBlock>) -> Result<(), StoreError> {
        match block {
            Some(b) if b.digest != sha256(self.payload(h)) => Err(StoreError::BadSignature),
            _ => Ok(()),
        }
    }
}

/// `check`'s verdict, in its documented order: header, length, payload
/// CRC, block, trust, counter, signature, payload digest.
fn expected_check(case: &Case) -> Result<(), StoreError> {
    let r = Reference { case };
    let h = r.header()?;
    r.length(&h)?;
    r.crc(&h)?;
    let block = r.block(&h)?;
    let key = r.admit(block.as_ref())?;
    r.security(&h)?;
    r.signature(key, block.as_ref())?;
    r.digest(&h, block.as_ref())
}

/// Where an update stream is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// `Ota::begin`.
    Begin,
    /// A chunk: the preamble's checks, before the store is touched.
    Preamble,
    /// `Ota::finish`, from flash.
    Finish,
}

/// The update stream's verdict: what `Ota::begin` refuses, then the
/// preamble's checks (header, name, length, block, trust, counter,
/// signature), then `finish`'s (payload CRC, payload digest).
fn expected_store(case: &Case) -> Result<(), (Stage, OtaError)> {
    let r = Reference { case };
    let at = |stage| move |e: StoreError| (stage, OtaError::from(e));
    let total = case.bytes.len();
    if total > SLOT {
        return Err((Stage::Begin, OtaError::TooLarge));
    }
    if total < HEADER_LEN {
        return Err((Stage::Begin, OtaError::Size));
    }
    let h = r.header().map_err(at(Stage::Preamble))?;
    if h.name != case.name {
        return Err((Stage::Preamble, OtaError::Name));
    }
    r.length(&h).map_err(at(Stage::Preamble))?;
    let block = r.block(&h).map_err(at(Stage::Preamble))?;
    let key = r.admit(block.as_ref()).map_err(at(Stage::Preamble))?;
    r.security(&h).map_err(at(Stage::Preamble))?;
    r.signature(key, block.as_ref())
        .map_err(at(Stage::Preamble))?;
    r.crc(&h).map_err(at(Stage::Finish))?;
    r.digest(&h, block.as_ref()).map_err(at(Stage::Finish))
}

/// What the harness knows without the reference: a container as built is
/// judged by its signer, the policy and the counter alone; where
/// signatures are required, only bytes exactly as the harness signed them
/// are accepted (or with a P-256 signature's twin), unless a re-signing
/// kept a stale payload digest.
fn knowledge(case: &Case, built: &Built, got: &Result<Header, StoreError>) {
    let policy: Policy = case.policy;
    let keyed = policy.a || policy.b;
    if case.bytes == built.original {
        let expected = match built.signer {
            None if policy.required => Err(StoreError::Unsigned),
            Some(k) if keyed && !policy.trusted().any(|t| t == k) => Err(StoreError::UntrustedKey),
            _ if built.version < case.security => Err(StoreError::Downgrade),
            _ => Ok(()),
        };
        assert_eq!(got.map(|_| ()), expected, "a container as built");
    }
    if policy.required && !built.stale && got.is_ok() {
        let as_signed = built.signed.iter().any(|s| {
            s == &case.bytes
                || (s.len() == case.bytes.len()
                    && s[..SIGNATURE_S] == case.bytes[..SIGNATURE_S]
                    && s[SIGNED_PAYLOAD..] == case.bytes[SIGNED_PAYLOAD..]
                    && malleate(&s[SIGNATURE_S - 32..SIGNED_PAYLOAD].try_into().expect("64"))
                        .is_some_and(|twin| {
                            twin[..] == case.bytes[SIGNATURE_S - 32..SIGNED_PAYLOAD]
                        }))
        });
        assert!(as_signed, "accepted, though changed after signing");
    }
}

/// The version installed before the update (unsigned, at the counter,
/// confirmed).
fn base(name: &str, version: u32) -> (Vec<u8>, Vec<u8>) {
    let payload: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(7) ^ 0x5A).collect();
    let shape = TensorShape::int8(&[40]);
    let header = Header::new(name, version, &payload, shape, shape).expect("a valid name");
    ([header.encode().as_slice(), &payload].concat(), payload)
}

type TestStore<'a> = Store<MemFlash<'a>, MODELS>;

fn open(image: &mut [u8], block: usize) -> TestStore<'_> {
    let flash = MemFlash::new(image, SECTOR, block);
    let layout = Layout::new(&flash, MODELS, SLOT).expect("the layout fits");
    Store::open(flash, layout).expect("the store opens").0
}

fn active(store: &mut TestStore<'_>, name: &str) -> (u32, Vec<u8>) {
    let located = store.active(name).expect("an active version");
    let mut payload = vec![0u8; located.header.payload_len as usize];
    store
        .read_payload(&located, 0, &mut payload)
        .expect("its payload reads");
    (located.header.version, payload)
}

/// Stream the container through the update state machine in chunks.
fn stream(
    store: &mut TestStore<'_>,
    ota: &mut Ota,
    case: &Case,
) -> Result<Header, (Stage, OtaError)> {
    let bytes = &case.bytes;
    ota.begin(store, &case.name, bytes.len())
        .map_err(|e| (Stage::Begin, e))?;
    let mut at = 0;
    for n in chunk_sizes(case.chunks, bytes.len()) {
        ota.write_chunk(store, &bytes[at..at + n])
            .map_err(|e| (Stage::Preamble, e))?;
        at += n;
    }
    ota.finish(store).map_err(|e| (Stage::Finish, e))
}

fn store_leg(case: &Case, trust: Trust<'static>, checked: &Result<Header, StoreError>) {
    let security = case.security;
    let (base, base_payload) = base(&case.name, security);
    let mut image = vec![0xFFu8; IMAGE];
    let mut store = open(&mut image, case.block);
    store.begin(&case.name, base.len()).expect("begin");
    store.write_chunk(0, &base).expect("write");
    store.finish().expect("the previous version verifies");
    assert_eq!(store.activate(&case.name), Ok(security));
    assert_eq!(store.confirm(&case.name), Ok(security));
    store.set_trust(trust);
    let before = store.flash_mut().bytes().to_vec();

    let mut ota = Ota::new();
    let outcome = stream(&mut store, &mut ota, case);
    assert_eq!(
        outcome.as_ref().map(|_| ()).map_err(|e| *e),
        expected_store(case),
        "the update stream against the reference"
    );
    let fits = case.bytes.len() <= SLOT;
    let for_model = checked.as_ref().is_ok_and(|h| h.name() == case.name);
    assert_eq!(
        outcome.is_ok(),
        for_model && fits,
        "the store and check disagree: check {checked:?}, store {outcome:?}"
    );
    match outcome {
        Ok(header) => {
            assert_eq!(Ok(&header), checked.as_ref());
            assert_eq!(ota.state(), OtaState::Ready);
            assert_eq!(ota.activate(&mut store), Ok(header.version));
            let preamble = header.preamble_len();
            assert_eq!(
                active(&mut store, &case.name),
                (header.version, case.bytes[preamble..].to_vec())
            );
            assert_eq!(ota.rollback(&mut store), Ok(security));
            assert_eq!(
                active(&mut store, &case.name),
                (security, base_payload.clone())
            );
        }
        Err((stage, e)) => {
            let state = if e == OtaError::TooLarge {
                OtaState::Idle
            } else {
                OtaState::Error
            };
            assert_eq!(ota.state(), state);
            if stage != Stage::Finish {
                assert!(
                    store.flash_mut().bytes() == before.as_slice(),
                    "refused at {stage:?} ({e:?}), yet the flash changed"
                );
            }
            assert!(store.staged(&case.name).is_err(), "nothing staged");
            assert_eq!(
                active(&mut store, &case.name),
                (security, base_payload.clone())
            );
            let mut store = open(&mut image, case.block);
            assert_eq!(
                active(&mut store, &case.name),
                (security, base_payload),
                "after a reboot"
            );
        }
    }
}
