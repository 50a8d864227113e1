//! The update stream (`ota`), case for case as the reference's OTA suite
//! checks its `syn_ota_*` calls: a full cycle in 4 KB and in odd chunks, a
//! bad magic, a payload CRC mismatch, header size and name mismatches, the
//! state machine's guards, update then rollback.

use synaptic_store::ota::{Ota, OtaError, OtaState};
use synaptic_store::{Header, Layout, MemFlash, Store, TensorShape, HEADER_LEN};

const SECTOR: usize = 4096;
const SLOT: usize = 4 * SECTOR;

fn image(name: &str, version: u32, len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len)
        .map(|i| (i * 13 + version as usize) as u8)
        .collect();
    let s = TensorShape {
        dtype: 9,
        rank: 1,
        dims: [len as u32, 1, 1, 1],
    };
    let h = Header::new(name, version, &payload, s, s).unwrap();
    [h.encode().as_slice(), &payload].concat()
}

fn with_store(f: impl FnOnce(&mut Store<MemFlash<'_>, 2>, &mut Ota)) {
    let mut buf = vec![0xFFu8; 2 * SECTOR + 4 * SLOT];
    let flash = MemFlash::new(&mut buf, SECTOR, 16);
    let layout = Layout::new(&flash, 2, SLOT).unwrap();
    let (mut store, _) = Store::open(flash, layout).unwrap();
    f(&mut store, &mut Ota::new());
}

fn stream(
    store: &mut Store<MemFlash<'_>, 2>,
    ota: &mut Ota,
    bytes: &[u8],
    chunk: usize,
) -> Result<(), OtaError> {
    bytes
        .chunks(chunk)
        .try_for_each(|c| ota.write_chunk(store, c))
}

#[test]
fn full_cycle_in_4k_and_in_odd_chunks() {
    for chunk in [4096, 997, 1] {
        with_store(|store, ota| {
            let img = image("m1", 1, 10_000);
            assert_eq!(ota.state(), OtaState::Idle);
            ota.begin(store, "m1", img.len()).unwrap();
            assert_eq!(ota.state(), OtaState::Downloading);
            stream(store, ota, &img, chunk).unwrap();
            assert_eq!(ota.finish(store).map(|h| h.version), Ok(1));
            assert_eq!(ota.state(), OtaState::Ready);
            assert_eq!(ota.activate(store), Ok(1));
            assert_eq!(ota.state(), OtaState::Idle);
            let located = store.active("m1").unwrap();
            let mut out = vec![0; 10_000];
            store.read_payload(&located, 0, &mut out).unwrap();
            assert_eq!(out, img[HEADER_LEN..], "chunk {chunk}");
        });
    }
}

#[test]
fn a_bad_magic_is_refused_at_once_and_begin_recovers() {
    with_store(|store, ota| {
        let mut img = image("m1", 1, 3000);
        img[0] = b'X';
        ota.begin(store, "m1", img.len()).unwrap();
        assert_eq!(stream(store, ota, &img, 4096), Err(OtaError::BadHeader));
        assert_eq!(ota.state(), OtaState::Error);
        let img = image("m1", 1, 3000);
        ota.begin(store, "m1", img.len()).unwrap();
        stream(store, ota, &img, 4096).unwrap();
        ota.finish(store).unwrap();
        assert_eq!(ota.activate(store), Ok(1));
    });
}

#[test]
fn a_payload_crc_mismatch_is_not_staged() {
    with_store(|store, ota| {
        let mut img = image("m1", 1, 3000);
        img[HEADER_LEN + 7] ^= 1;
        ota.begin(store, "m1", img.len()).unwrap();
        stream(store, ota, &img, 1024).unwrap();
        assert_eq!(ota.finish(store).map(|_| ()), Err(OtaError::Crc));
        assert_eq!(ota.state(), OtaState::Error);
        assert_eq!(ota.activate(store), Err(OtaError::State));
        assert!(store.active("m1").is_err(), "nothing was activated");
    });
}

#[test]
fn header_size_and_name_mismatches() {
    with_store(|store, ota| {
        let img = image("m1", 1, 3000);
        ota.begin(store, "m1", img.len() + 16).unwrap();
        assert_eq!(stream(store, ota, &img, 512), Err(OtaError::Size));
        assert_eq!(ota.state(), OtaState::Error);
        let other = image("m2", 1, 3000);
        ota.begin(store, "m1", other.len()).unwrap();
        assert_eq!(stream(store, ota, &other, 512), Err(OtaError::Name));
        // The stream may not run past the length announced.
        ota.begin(store, "m1", img.len()).unwrap();
        stream(store, ota, &img, 512).unwrap();
        assert_eq!(ota.write_chunk(store, &[0]), Err(OtaError::Size));
    });
}

#[test]
fn the_state_machine_guards_each_call() {
    with_store(|store, ota| {
        assert_eq!(ota.write_chunk(store, &[1, 2, 3]), Err(OtaError::State));
        assert_eq!(ota.finish(store).map(|_| ()), Err(OtaError::State));
        assert_eq!(ota.activate(store), Err(OtaError::State));
        assert_eq!(ota.rollback(store), Err(OtaError::NothingToRollBack));
        assert_eq!(ota.begin(store, "m1", SLOT + 1), Err(OtaError::TooLarge));
        assert_eq!(ota.begin(store, "", 200), Err(OtaError::Name));
        let img = image("m1", 1, 3000);
        ota.begin(store, "m1", img.len()).unwrap();
        stream(store, ota, &img[..img.len() - 100], 512).unwrap();
        assert_eq!(ota.finish(store).map(|_| ()), Err(OtaError::Incomplete));
        assert_eq!(ota.state(), OtaState::Error);
    });
}

#[test]
fn update_then_rollback() {
    with_store(|store, ota| {
        for v in [1, 2] {
            let img = image("m1", v, 2000 + v as usize);
            ota.begin(store, "m1", img.len()).unwrap();
            stream(store, ota, &img, 700).unwrap();
            ota.finish(store).unwrap();
            assert_eq!(ota.activate(store), Ok(v));
        }
        assert_eq!(store.active("m1").unwrap().header.version, 2);
        assert_eq!(ota.rollback(store), Ok(1));
        assert_eq!(store.active("m1").unwrap().header.version, 1);
    });
}

#[test]
fn activation_switches_only_to_the_slot_verified_and_nothing_after_a_new_begin() {
    with_store(|store, ota| {
        let v1 = image("m1", 1, 3000);
        ota.begin(store, "m1", v1.len()).unwrap();
        stream(store, ota, &v1, 512).unwrap();
        ota.finish(store).unwrap();
        assert_eq!(ota.activate(store), Ok(1));
        // Version 2 verified, then a third update begins (its preamble in,
        // so the store writes the slot version 2 was verified in): there is
        // nothing verified to switch to any more.
        let v2 = image("m1", 2, 3000);
        ota.begin(store, "m1", v2.len()).unwrap();
        stream(store, ota, &v2, 512).unwrap();
        ota.finish(store).unwrap();
        let v3 = image("m1", 3, 3000);
        ota.begin(store, "m1", v3.len()).unwrap();
        stream(store, ota, &v3[..HEADER_LEN + 10], 512).unwrap();
        assert_eq!(
            store.activate("m1"),
            Err(synaptic_store::StoreError::NothingStaged)
        );
        assert_eq!(store.active("m1").map(|l| l.header.version), Ok(1));
    });
}

/// `preamble_pending` says how much of the preamble the stream still
/// holds back, whatever the chunking: what CPU0's serving thread reads to
/// hand the write that may verify a signature to its verifier thread.
#[test]
fn the_preamble_pending_counts_down_to_the_store_being_written() {
    use synaptic_store::ota::PREAMBLE_MAX;
    let mut seed = 0x2545_f491_u32;
    for round in 0..200 {
        with_store(|store, ota| {
            let img = image("m1", 1 + round, 500 + round as usize);
            assert_eq!(ota.preamble_pending(), 0, "idle");
            ota.begin(store, "m1", img.len()).unwrap();
            assert_eq!(ota.preamble_pending(), PREAMBLE_MAX);
            let mut at = 0;
            while at < img.len() {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                let n = (1 + seed as usize % 150).min(img.len() - at);
                let pending = ota.preamble_pending();
                ota.write_chunk(store, &img[at..at + n]).unwrap();
                at += n;
                let now = ota.preamble_pending();
                if at < HEADER_LEN {
                    // Still held back: the store untouched, the count down.
                    assert_eq!(now, PREAMBLE_MAX - at, "round {round} at {at}");
                    assert!(store.staged("m1").is_err());
                } else {
                    // A format-1 header is the whole preamble: written.
                    assert_eq!(now, 0, "round {round} at {at}");
                }
                assert!(now <= pending);
            }
            ota.finish(store).unwrap();
            assert_eq!(ota.preamble_pending(), 0, "verified");
        });
    }
}
