//! Signing a real model's container with imgtool's keys and verifying it
//! with the store's own check; every refusal class, at every byte of the
//! preamble and through the payload.

use proptest::prelude::*;
use synaptic_sign::{sign, signature_block, verify, Algorithm, Key, SignError, SIGNATURE_LEN};
use synaptic_store::{crc32, Header, StoreError, TensorShape, HEADER_LEN};

fn fixture(name: &str) -> Key {
    let path = format!("{}/tests/keys/{name}", env!("CARGO_MANIFEST_DIR"));
    Key::from_pem(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn ed25519() -> Key {
    fixture("test-ed25519.pem")
}

fn p256() -> Key {
    fixture("test-ecdsa-p256.pem")
}

/// A format-1 container of `payload`.
fn container(name: &str, version: u32, payload: &[u8]) -> Vec<u8> {
    let input = TensorShape::int8(&[1, 49, 40, 1]);
    let output = TensorShape::int8(&[1, 4]);
    let mut c = Header::new(name, version, payload, input, output)
        .unwrap()
        .encode()
        .to_vec();
    c.extend_from_slice(payload);
    c
}

/// The shipped keyword model, unsigned.
fn micro_speech() -> Vec<u8> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../models/micro_speech.tflite"
    );
    container(
        "micro_speech",
        3,
        &std::fs::read(path).expect("the shipped model"),
    )
}

/// Re-encode the header's own CRC so that only the signature can notice a
/// change to its first 92 bytes.
fn fix_header_crc(c: &mut [u8]) {
    let crc = crc32(&c[..92]);
    c[92..96].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn both_algorithms_sign_and_verify_a_real_model() {
    let plain = micro_speech();
    for key in [ed25519(), p256()] {
        let signed = sign(&plain, &key).unwrap();
        assert_eq!(signed.len(), plain.len() + SIGNATURE_LEN);
        let header = verify(&signed, &[key.public_key()], true).unwrap();
        assert!(header.signed);
        assert_eq!((header.name(), header.version), ("micro_speech", 3));
        assert_eq!(header.preamble_len(), HEADER_LEN + SIGNATURE_LEN);
        assert_eq!(&signed[header.preamble_len()..], &plain[HEADER_LEN..]);
        // Only the format (1 to 2) and the header's CRC change in the header.
        let changed: Vec<usize> = (0..HEADER_LEN).filter(|&i| signed[i] != plain[i]).collect();
        assert_eq!(changed[0], 4);
        assert!(
            changed[1..].iter().all(|i| (92..96).contains(i)),
            "{changed:?}"
        );
        let block = signature_block(&signed).unwrap().unwrap();
        assert_eq!(block.algorithm, key.algorithm());
        assert_eq!(block.key_id, key.key_id());
        assert_eq!(signature_block(&plain), Ok(None));
        // Deterministic signatures (Ed25519; RFC 6979 for ECDSA).
        assert_eq!(sign(&plain, &key).unwrap(), signed);
        // Trusted among others; the private key verifies as its public half.
        assert!(verify(&signed, &[ed25519(), p256()], true).is_ok());
        assert!(verify(&signed, std::slice::from_ref(&key), true).is_ok());
        // Without keys only the payload digest can be checked.
        assert!(verify(&signed, &[], false).is_ok());
    }
}

#[test]
fn re_signing_replaces_the_block() {
    let plain = micro_speech();
    let by_ed = sign(&plain, &ed25519()).unwrap();
    let by_ec = sign(&by_ed, &p256()).unwrap();
    assert_eq!(by_ec.len(), by_ed.len(), "one block, not two");
    assert_eq!(by_ec, sign(&plain, &p256()).unwrap());
    assert!(verify(&by_ec, &[p256()], true).is_ok());
    assert_eq!(
        verify(&by_ec, &[ed25519()], true),
        Err(StoreError::UntrustedKey)
    );
}

#[test]
fn unsigned_untrusted_and_keyless_are_refused() {
    let plain = micro_speech();
    for key in [ed25519(), p256()] {
        assert_eq!(
            verify(&plain, std::slice::from_ref(&key), true),
            Err(StoreError::Unsigned)
        );
        assert!(
            verify(&plain, std::slice::from_ref(&key), false).is_ok(),
            "not required"
        );
    }
    let other_ed = synaptic_sign::keygen(Algorithm::Ed25519).unwrap();
    let other_ec = synaptic_sign::keygen(Algorithm::EcdsaP256).unwrap();
    for (key, others) in [
        (ed25519(), [other_ed, p256()]),
        (p256(), [other_ec, ed25519()]),
    ] {
        let signed = sign(&plain, &key).unwrap();
        for other in others {
            for require in [true, false] {
                assert_eq!(
                    verify(&signed, std::slice::from_ref(&other), require),
                    Err(StoreError::UntrustedKey)
                );
            }
        }
    }
    assert_eq!(verify(&plain, &[], true), Err(StoreError::BadKey));
}

#[test]
fn a_damaged_container_or_a_public_key_is_not_signed() {
    let plain = micro_speech();
    assert_eq!(
        sign(&plain, &ed25519().public_key()),
        Err(SignError::PublicOnly)
    );
    let mut payload_flip = plain.clone();
    payload_flip[HEADER_LEN + 100] ^= 1;
    assert_eq!(
        sign(&payload_flip, &ed25519()),
        Err(SignError::Container(StoreError::CrcMismatch))
    );
    assert_eq!(
        sign(&plain[..plain.len() - 1], &ed25519()),
        Err(SignError::Container(StoreError::Length))
    );
    let mut header_flip = plain.clone();
    header_flip[10] ^= 1;
    assert_eq!(
        sign(&header_flip, &ed25519()),
        Err(SignError::Container(StoreError::BadContainer))
    );
    // A signed container whose payload no longer matches its digest (CRC
    // kept) is not re-signed either.
    let signed = sign(&plain, &ed25519()).unwrap();
    let forged = forge_payload(&signed, 1000, 4);
    assert_eq!(
        sign(&forged, &p256()),
        Err(SignError::Container(StoreError::BadSignature))
    );
}

/// What the store must say when a bit of byte `at` of a signed
/// container is flipped (and, in the header's first 92 bytes, its CRC
/// re-encoded), from the layout alone.
fn expected(flipped: &[u8], at: usize) -> StoreError {
    let header_ok = Header::decode(flipped).is_ok();
    match at {
        // Magic, format (2 is never 1 by one bit), header length; a name
        // or rank the decoder refuses.
        0..=7 => StoreError::BadContainer,
        _ if at < 92 && !header_ok => StoreError::BadContainer,
        44..=47 => StoreError::Length,
        48..=51 => StoreError::CrcMismatch,
        // Name, version, shapes, reserved: authenticated by the signature.
        8..=91 => StoreError::BadSignature,
        // The header's own CRC, left broken.
        92..=95 => StoreError::BadContainer,
        // Block magic, algorithm (1 and 2 are never each other by one
        // bit), reserved.
        96..=103 => StoreError::BadContainer,
        104..=135 => StoreError::UntrustedKey,
        // Payload digest and signature.
        136..=231 => StoreError::BadSignature,
        // The payload: its CRC notices first.
        _ => StoreError::CrcMismatch,
    }
}

fn flip(signed: &[u8], at: usize, bit: u8) -> Vec<u8> {
    let mut c = signed.to_vec();
    c[at] ^= 1 << bit;
    if at < 92 {
        fix_header_crc(&mut c);
    }
    c
}

#[test]
fn every_bit_of_the_preamble_and_a_stride_of_the_payload_is_covered() {
    let plain = micro_speech();
    for key in [ed25519(), p256()] {
        let signed = sign(&plain, &key).unwrap();
        let trusted = [key.public_key()];
        let preamble = HEADER_LEN + SIGNATURE_LEN;
        let positions = (0..preamble).chain((preamble..signed.len()).step_by(97));
        let mut seen = std::collections::BTreeMap::new();
        for at in positions.chain([signed.len() - 1]) {
            // Two bits a byte, each bit position in turn (a verification
            // in a debug build is slow; the classes are per byte).
            for bit in [at % 8, (at + 5) % 8].map(|b| b as u8) {
                let c = flip(&signed, at, bit);
                let want = expected(&c, at);
                assert_eq!(
                    verify(&c, &trusted, true),
                    Err(want),
                    "{:?}: byte {at} bit {bit}",
                    key.algorithm()
                );
                *seen.entry(format!("{want:?}")).or_insert(0) += 1;
            }
        }
        // Each class was reached, the signature's most of all.
        for class in [
            "BadContainer",
            "Length",
            "CrcMismatch",
            "UntrustedKey",
            "BadSignature",
        ] {
            assert!(
                seen.get(class).copied().unwrap_or(0) >= 8,
                "{class}: {seen:?}"
            );
        }
        assert!(seen["BadSignature"] > 2 * (32 + 64 + 16), "{seen:?}");
    }
}

/// `signed` with bit `bit` of payload byte `at` flipped and the four
/// bytes after it (or before, at the end) rewritten so that the payload's
/// CRC32 is unchanged: a change only the payload's SHA-256 can notice.
fn forge_payload(signed: &[u8], at: usize, bit: u8) -> Vec<u8> {
    let start = Header::decode(signed).unwrap().preamble_len();
    let payload = &signed[start..];
    let window = if at + 5 <= payload.len() {
        at + 1
    } else {
        at - 4
    };
    // CRC32 is affine: crc(p ^ d) = crc(p) ^ lin(d), lin linear in d.
    let lin = |d: &[u8]| crc32(d) ^ crc32(&vec![0; d.len()]);
    let delta = |byte: usize, mask: u8| {
        let mut d = vec![0u8; payload.len()];
        d[byte] = mask;
        lin(&d)
    };
    let target = delta(at, 1 << bit);
    // The 32 bits of a 4-byte window map onto all of CRC32's values
    // (it catches every burst up to 32 bits): solve for the window bits
    // whose images sum to `target`, by elimination over GF(2).
    let mut rows: Vec<(u32, u32)> = (0..32)
        .map(|j| (delta(window + j / 8, 1 << (j % 8)), 1u32 << j))
        .collect();
    let (mut value, mut chosen) = (target, 0u32);
    for b in (0..32).rev() {
        let Some(p) = rows.iter().position(|r| r.0 >> b & 1 == 1) else {
            panic!("window not full rank");
        };
        let pivot = rows.swap_remove(p);
        for r in &mut rows {
            if r.0 >> b & 1 == 1 {
                r.0 ^= pivot.0;
                r.1 ^= pivot.1;
            }
        }
        if value >> b & 1 == 1 {
            value ^= pivot.0;
            chosen ^= pivot.1;
        }
    }
    assert_eq!(value, 0);
    let mut out = signed.to_vec();
    out[start + at] ^= 1 << bit;
    for j in 0..32 {
        if chosen >> j & 1 == 1 {
            out[start + window + j / 8] ^= 1 << (j % 8);
        }
    }
    out
}

#[test]
fn a_payload_changed_with_its_crc_kept_is_caught_by_the_digest() {
    let plain = micro_speech();
    for key in [ed25519(), p256()] {
        let signed = sign(&plain, &key).unwrap();
        let len = signed.len() - HEADER_LEN - SIGNATURE_LEN;
        for at in (0..len).step_by(1543).chain([len - 1]) {
            let forged = forge_payload(&signed, at, (at % 8) as u8);
            assert_ne!(forged, signed);
            let header = Header::decode(&forged).unwrap();
            assert_eq!(
                crc32(&forged[header.preamble_len()..]),
                header.payload_crc,
                "the CRC still matches"
            );
            assert_eq!(
                verify(&forged, &[key.public_key()], true),
                Err(StoreError::BadSignature),
                "payload byte {at}"
            );
        }
    }
}

#[test]
fn a_container_cut_short_or_lengthened_is_refused() {
    let plain = micro_speech();
    for key in [ed25519(), p256()] {
        let signed = sign(&plain, &key).unwrap();
        let trusted = [key.public_key()];
        for cut in 1..=signed.len() {
            let short = &signed[..signed.len() - cut];
            let want = if short.len() < HEADER_LEN {
                StoreError::BadContainer
            } else {
                StoreError::Length
            };
            assert_eq!(verify(short, &trusted, true), Err(want), "cut {cut}");
        }
        let mut long = signed.clone();
        long.push(0);
        assert_eq!(verify(&long, &trusted, true), Err(StoreError::Length));
    }
}

fn name() -> impl Strategy<Value = String> {
    "[a-z0-9_.-]{1,31}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Any payload and name signs and verifies, under either algorithm;
    /// one flipped bit anywhere is refused.
    #[test]
    fn random_containers_round_trip_and_any_flip_fails(
        payload in proptest::collection::vec(any::<u8>(), 0..1500),
        name in name(),
        version in any::<u32>(),
        use_p256 in any::<bool>(),
        position in any::<proptest::sample::Index>(),
        bit in 0u8..8,
    ) {
        let key = if use_p256 { p256() } else { ed25519() };
        let signed = sign(&container(&name, version, &payload), &key).unwrap();
        let header = verify(&signed, &[key.public_key()], true).unwrap();
        prop_assert_eq!((header.name(), header.version), (name.as_str(), version));
        prop_assert_eq!(&signed[header.preamble_len()..], &payload[..]);
        let mut bad = signed.clone();
        let at = position.index(bad.len());
        bad[at] ^= 1 << bit;
        prop_assert!(verify(&bad, &[key.public_key()], true).is_err(), "byte {} bit {}", at, bit);
    }
}
