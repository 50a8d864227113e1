//! One gate for every update path: a store that requires signatures
//! refuses each class of bad container with its own error, through the
//! update stream the shell and the C API drive (`Ota`) and through CPU1's
//! `MODEL_UPDATE` (the loopback), and a refusal decided before the payload
//! leaves the flash exactly as it was, byte for byte. Keys are generated
//! afresh for every run; containers carry random payloads.

use std::cell::RefCell;
use std::rc::Rc;

use synaptic_abi::Errno;
use synaptic_serve::client::ClientError;
use synaptic_serve::loopback::{Loopback, LoopbackError, LoopbackOptions, RegionBuffer};
use synaptic_serve::update::StoreUpdates;
use synaptic_sign::{keygen, sign, Algorithm, Key};
use synaptic_store::ota::{Ota, OtaError};
use synaptic_store::signature::{PublicKey, Trust};
use synaptic_store::{Flash, Header, Layout, MemFlash, Store, StoreError, TensorShape};

const SECTOR: usize = 4096;
const BLOCK: usize = 4;

/// A flash whose bytes the test can read while a store owns it.
#[derive(Clone)]
struct Shared(Rc<RefCell<Vec<u8>>>);

impl Shared {
    fn new(len: usize) -> Shared {
        Shared(Rc::new(RefCell::new(vec![0xFF; len])))
    }

    fn bytes(&self) -> Vec<u8> {
        self.0.borrow().clone()
    }

    fn with<T>(&self, f: impl FnOnce(&mut MemFlash<'_>) -> T) -> T {
        let mut bytes = self.0.borrow_mut();
        f(&mut MemFlash::new(&mut bytes, SECTOR, BLOCK))
    }
}

impl Flash for Shared {
    fn size(&self) -> usize {
        self.0.borrow().len()
    }
    fn sector_size(&self) -> usize {
        SECTOR
    }
    fn write_block(&self) -> usize {
        BLOCK
    }
    fn read(&mut self, offset: usize, buf: &mut [u8]) -> Result<(), StoreError> {
        self.with(|f| f.read(offset, buf))
    }
    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), StoreError> {
        self.with(|f| f.write(offset, data))
    }
    fn erase_sector(&mut self, offset: usize) -> Result<(), StoreError> {
        self.with(|f| f.erase_sector(offset))
    }
}

/// A small deterministic generator (xorshift), seeded per run from the
/// clock: the payloads differ from run to run.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        println!("seed {seed:#x}");
        Rng(seed)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// An unsigned container of model "kws" (the loopback's served model:
/// 49x10 int8 in, 12 out), `version`, with a random payload.
fn container(rng: &mut Rng, version: u32) -> Vec<u8> {
    let payload: Vec<u8> = (0..200 + rng.below(2000))
        .map(|_| rng.next() as u8)
        .collect();
    let header = Header::new(
        "kws",
        version,
        &payload,
        TensorShape::int8(&[49, 10]),
        TensorShape::int8(&[12]),
    )
    .unwrap();
    [header.encode().as_slice(), &payload].concat()
}

/// The store's view of `key`, for a `Trust` that lives as long as the test.
fn trusted(key: &Key) -> &'static [PublicKey<'static>] {
    let bytes: &'static [u8] = Box::leak(key.public_bytes().into_boxed_slice());
    Box::leak(Box::new([PublicKey {
        algorithm: key.algorithm(),
        bytes,
    }]))
}

/// Each refusal class: the container, and the error the update stream
/// gives, and whether it is decided before the payload (the flash then
/// unchanged byte for byte).
struct Case {
    what: &'static str,
    bytes: Vec<u8>,
    ota: OtaError,
    errno: Errno,
    before_payload: bool,
}

fn cases(rng: &mut Rng, signer: &Key, stranger: &Key, security: u32) -> Vec<Case> {
    let good = |rng: &mut Rng, v| sign(&container(rng, v), signer).unwrap();
    let mut header_changed = good(rng, security + 1);
    // A field changed and the header's CRC made right again: only the
    // signature can tell.
    let mut h = Header::decode(&header_changed).unwrap();
    h.input.dims[3] = 2 + rng.below(100) as u32;
    header_changed[..96].copy_from_slice(&h.encode());
    let mut payload_changed = good(rng, security + 1);
    let at = 96 + 136 + rng.below(payload_changed.len() - 96 - 136);
    payload_changed[at] ^= 1 << rng.below(8);
    // The payload's CRC made right too: only the digest can tell.
    let mut payload_and_crc = payload_changed.clone();
    let mut h = Header::decode(&payload_and_crc).unwrap();
    h.payload_crc = synaptic_store::crc32(&payload_and_crc[96 + 136..]);
    payload_and_crc[..96].copy_from_slice(&h.encode());
    let mut signature_changed = good(rng, security + 1);
    let at = 96 + 72 + rng.below(64);
    signature_changed[at] ^= 1 << rng.below(8);
    let mut truncated = good(rng, security + 1);
    truncated.truncate(truncated.len() - 1 - rng.below(50));
    vec![
        Case {
            what: "unsigned",
            bytes: container(rng, security + 1),
            ota: OtaError::Unsigned,
            errno: Errno::NoMsg,
            before_payload: true,
        },
        Case {
            what: "signed by an untrusted key",
            bytes: sign(&container(rng, security + 1), stranger).unwrap(),
            ota: OtaError::UntrustedKey,
            errno: Errno::Acces,
            before_payload: true,
        },
        Case {
            what: "header changed after signing",
            bytes: header_changed,
            ota: OtaError::Signature,
            errno: Errno::BadMsg,
            before_payload: true,
        },
        Case {
            what: "signature changed",
            bytes: signature_changed,
            ota: OtaError::Signature,
            errno: Errno::BadMsg,
            before_payload: true,
        },
        Case {
            what: "truncated",
            bytes: truncated,
            ota: OtaError::Size,
            errno: Errno::MsgSize,
            before_payload: true,
        },
        Case {
            what: "payload changed after signing",
            bytes: payload_changed,
            ota: OtaError::Crc,
            errno: Errno::BadMsg,
            before_payload: false,
        },
        Case {
            what: "payload and its CRC changed after signing",
            bytes: payload_and_crc,
            ota: OtaError::Signature,
            errno: Errno::BadMsg,
            before_payload: false,
        },
    ]
    .into_iter()
    .chain((security > 1).then(|| Case {
        what: "below the security counter",
        bytes: good(rng, security - 1),
        ota: OtaError::Downgrade,
        errno: Errno::Range,
        before_payload: true,
    }))
    .collect()
}

fn open(flash: &Shared, trust: Trust<'static>) -> Store<Shared, 2> {
    let layout = Layout::new(flash, 2, 8192).unwrap();
    let (mut store, _) = Store::open(flash.clone(), layout).unwrap();
    store.set_trust(trust);
    store
}

fn stream(
    store: &mut Store<Shared, 2>,
    ota: &mut Ota,
    bytes: &[u8],
    chunk: usize,
) -> Result<u32, OtaError> {
    ota.begin(store, "kws", bytes.len())?;
    bytes
        .chunks(chunk)
        .try_for_each(|c| ota.write_chunk(store, c))?;
    ota.finish(store)?;
    ota.activate(store)
}

#[test]
fn every_refusal_has_its_error_and_leaves_the_store_through_the_update_stream() {
    let mut rng = Rng::new();
    for algorithm in [Algorithm::Ed25519, Algorithm::EcdsaP256] {
        let signer = keygen(algorithm).unwrap();
        let stranger = keygen(algorithm).unwrap();
        let flash = Shared::new(64 * 1024);
        let mut store = open(&flash, Trust::new(trusted(&signer), true).unwrap());
        let mut ota = Ota::new();
        for v in 1..=3 {
            let good = sign(&container(&mut rng, v), &signer).unwrap();
            assert_eq!(
                stream(&mut store, &mut ota, &good, 1 + rng.below(700)),
                Ok(v)
            );
        }
        assert_eq!(ota.confirm(&mut store), Ok(3));
        // The version before the confirmed one may not come back.
        assert_eq!(store.rollback("kws"), Err(StoreError::Downgrade));
        for case in cases(&mut rng, &signer, &stranger, 3) {
            let before = flash.bytes();
            let chunk = 1 + rng.below(700);
            assert_eq!(
                stream(&mut store, &mut ota, &case.bytes, chunk),
                Err(case.ota),
                "{algorithm:?}: {}",
                case.what
            );
            if case.before_payload {
                assert!(
                    flash.bytes() == before,
                    "{algorithm:?}: {} wrote the flash",
                    case.what
                );
            }
            // The served version is still 3, intact.
            assert_eq!(
                store.active("kws").map(|l| l.header.version),
                Ok(3),
                "{}",
                case.what
            );
        }
    }
}

#[test]
fn every_refusal_reaches_cpu1_with_its_errno_and_serving_goes_on() {
    let mut rng = Rng::new();
    let signer = keygen(Algorithm::Ed25519).unwrap();
    let stranger = keygen(Algorithm::EcdsaP256).unwrap();
    let flash = Shared::new(64 * 1024);
    let mut store = open(&flash, Trust::new(trusted(&signer), true).unwrap());
    let mut ota = Ota::new();
    let mut updates = StoreUpdates::new(&mut store, &mut ota);
    let mut buffer = RegionBuffer::new();
    let options = LoopbackOptions {
        updates: Some(&mut updates),
        ..LoopbackOptions::default()
    };
    let mut cores = Loopback::with_options(buffer.bytes(), options).expect("loopback");
    let kws = cores.kws();
    let mut serves = |cores: &mut Loopback<'_>| {
        let input: Vec<u8> = (0..490).map(|_| rng.next() as u8).collect();
        let mut out = [0u8; 12];
        assert_eq!(cores.infer(kws, &input, &mut out), Ok(12));
        assert_eq!(out.to_vec(), cores.expected_output(kws, &input));
    };
    let mut rng2 = Rng(rng_seed());
    for v in 1..=2 {
        let good = sign(&container(&mut rng2, v), &signer).unwrap();
        assert_eq!(cores.update_model("kws", &good), Ok(v));
        serves(&mut cores);
    }
    assert_eq!(cores.confirm_model(), Ok(2));
    assert_eq!(
        cores.rollback_model(),
        Err(LoopbackError::Client(ClientError::Remote(Errno::Range)))
    );
    serves(&mut cores);
    for case in cases(&mut rng2, &signer, &stranger, 2) {
        let before = flash.bytes();
        assert_eq!(
            cores.update_model("kws", &case.bytes),
            Err(LoopbackError::Client(ClientError::Remote(case.errno))),
            "{}",
            case.what
        );
        if case.before_payload {
            assert!(flash.bytes() == before, "{} wrote the flash", case.what);
        }
        serves(&mut cores);
    }
    let good = sign(&container(&mut rng2, 4), &signer).unwrap();
    assert_eq!(cores.update_model("kws", &good), Ok(4));
    serves(&mut cores);
}

fn rng_seed() -> u64 {
    Rng::new().next() | 1
}
