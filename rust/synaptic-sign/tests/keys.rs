//! Keys as MCUboot's `imgtool` 2.5.0 writes them (`tests/keys/`, test-only
//! keys): read, named, written back in the same form; what is refused.

use p256::pkcs8::der::pem;
use p256::pkcs8::SubjectPublicKeyInfoRef;
use synaptic_sign::{keygen, Algorithm, Key, SignError};
use synaptic_store::signature::sha256;

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/keys/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The raw key inside a `PUBLIC KEY` PEM, read with the DER parser alone
/// (the SubjectPublicKeyInfo's BIT STRING), not through `Key`.
fn spki_bytes(pem_text: &str) -> (String, Vec<u8>) {
    let (label, der) = pem::decode_vec(pem_text.trim().as_bytes()).unwrap();
    assert_eq!(label, "PUBLIC KEY");
    let info = SubjectPublicKeyInfoRef::try_from(der.as_slice()).unwrap();
    (
        info.algorithm.oid.to_string(),
        info.subject_public_key.raw_bytes().to_vec(),
    )
}

const KEYS: [(&str, Algorithm, usize, &str); 2] = [
    ("test-ed25519", Algorithm::Ed25519, 32, "1.3.101.112"),
    (
        "test-ecdsa-p256",
        Algorithm::EcdsaP256,
        65,
        "1.2.840.10045.2.1",
    ),
];

#[test]
fn imgtool_keys_are_read_and_their_public_bytes_are_getpubs() {
    for (name, algorithm, len, oid) in KEYS {
        let private = Key::from_pem(&fixture(&format!("{name}.pem"))).unwrap();
        let public = Key::from_pem(&fixture(&format!("{name}.pub.pem"))).unwrap();
        assert_eq!(private.algorithm(), algorithm, "{name}");
        assert!(private.is_private() && !public.is_private(), "{name}");
        assert_eq!(private.public_key(), public, "{name}");
        let bytes = private.public_bytes();
        assert_eq!(bytes.len(), len, "{name}");
        if algorithm == Algorithm::EcdsaP256 {
            assert_eq!(bytes[0], 0x04, "uncompressed SEC1");
        }
        // What `imgtool getpub -e pem` wrote, parsed without `Key`.
        let (spki_oid, spki_key) = spki_bytes(&fixture(&format!("{name}.pub.pem")));
        assert_eq!(spki_oid, oid, "{name}");
        assert_eq!(bytes, spki_key, "{name}: the getpub key");
        assert_eq!(private.key_id(), sha256(&spki_key), "{name}");
        assert_eq!(public.key_id(), private.key_id(), "{name}");
    }
    let ed = Key::from_pem(&fixture("test-ed25519.pem")).unwrap();
    let ec = Key::from_pem(&fixture("test-ecdsa-p256.pem")).unwrap();
    assert_ne!(ed.key_id(), ec.key_id());
}

#[test]
fn keys_are_written_back_exactly_as_imgtool_wrote_them() {
    for (name, ..) in KEYS {
        for file in [format!("{name}.pem"), format!("{name}.pub.pem")] {
            let text = fixture(&file);
            assert_eq!(Key::from_pem(&text).unwrap().to_pem(), text, "{file}");
        }
        let private = Key::from_pem(&fixture(&format!("{name}.pem"))).unwrap();
        assert_eq!(
            private.public_key().to_pem(),
            fixture(&format!("{name}.pub.pem")),
            "{name}: getpub -e pem"
        );
    }
}

/// The DER of a private key with its key bytes (`key_ranges`, start and
/// end: the secret, the public key) zeroed: what is left is the form.
fn form(pem_text: &str, key_ranges: &[(usize, usize)]) -> Vec<u8> {
    let (label, mut der) = pem::decode_vec(pem_text.trim().as_bytes()).unwrap();
    assert_eq!(label, "PRIVATE KEY");
    for &(start, end) in key_ranges {
        der[start..end].fill(0);
    }
    der
}

#[test]
fn new_keys_have_imgtools_form_and_read_back() {
    // Ed25519: 16 bytes of PKCS#8 v1 then the 32-byte seed. P-256: the
    // PKCS#8 v1 prefix, the scalar at 36..68, the public point at 73..138
    // (an ECPrivateKey with the point and without curve parameters).
    let cases = [
        (Algorithm::Ed25519, "test-ed25519.pem", &[(16, 48)][..]),
        (
            Algorithm::EcdsaP256,
            "test-ecdsa-p256.pem",
            &[(36, 68), (73, 138)],
        ),
    ];
    for (algorithm, imgtool, ranges) in cases {
        let a = keygen(algorithm).unwrap();
        let b = keygen(algorithm).unwrap();
        assert_ne!(a.key_id(), b.key_id(), "two keys differ");
        assert_eq!(a.algorithm(), algorithm);
        let pem_text = a.to_pem();
        assert_eq!(
            form(&pem_text, ranges),
            form(&fixture(imgtool), ranges),
            "{algorithm:?}: the form imgtool writes"
        );
        let back = Key::from_pem(&pem_text).unwrap();
        assert_eq!(back, a);
        assert!(back.is_private());
    }
}

#[test]
fn what_the_store_cannot_use_is_refused_with_the_reason() {
    assert_eq!(
        Key::from_pem(&fixture("test-ed25519-encrypted.pem")),
        Err(SignError::Encrypted)
    );
    let unsupported = |text: &str| match Key::from_pem(text) {
        Err(SignError::Unsupported(what)) => what,
        other => panic!("{other:?}"),
    };
    assert!(unsupported(&fixture("test-rsa-2048.pem")).contains("RSA"));
    assert!(unsupported(&fixture("test-ecdsa-p384.pem")).contains("P-384"));
    let ed = fixture("test-ed25519.pem");
    let sec1 = ed.replace("PRIVATE KEY", "EC PRIVATE KEY");
    assert!(unsupported(&sec1).contains("SEC1"));
    let cert = ed.replace("PRIVATE KEY", "CERTIFICATE");
    assert!(unsupported(&cert).contains("CERTIFICATE"));
    let traditional = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,00\n\nAAAA\n-----END RSA PRIVATE KEY-----\n";
    assert_eq!(Key::from_pem(traditional), Err(SignError::Encrypted));
    for garbage in ["", "not a key", "-----BEGIN PRIVATE KEY-----\n"] {
        assert_eq!(
            Key::from_pem(garbage),
            Err(SignError::NotPem),
            "{garbage:?}"
        );
    }
    // A PEM whose DER is cut short, or is not a key at all.
    let short = pem::encode_string(
        "PRIVATE KEY",
        pem::LineEnding::LF,
        &pem::decode_vec(ed.trim().as_bytes()).unwrap().1[..40],
    )
    .unwrap();
    assert!(matches!(
        Key::from_pem(&short),
        Err(SignError::Malformed(_))
    ));
    let junk =
        pem::encode_string("PUBLIC KEY", pem::LineEnding::LF, &[0x30, 0x03, 1, 2, 3]).unwrap();
    assert!(matches!(Key::from_pem(&junk), Err(SignError::Malformed(_))));
}
