//! The signing commands end to end, with `synaptic-sign`'s imgtool-made
//! test keys: exit status and the one-line reason of each refusal class.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;

use synaptic_pack::{container_len, refusal};
use synaptic_store::{StoreError, HEADER_LEN};

const SIGNATURE_LEN: usize = 136;

fn key(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../synaptic-sign/tests/keys/{name}"))
}

fn model() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/micro_speech.tflite")
}

fn run<S: AsRef<OsStr>>(args: &[S]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_synaptic-pack"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A scratch directory, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("synaptic-pack-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `verify FILE --key K... [--require]`: exit code and output.
fn verify(file: &Path, keys: &[&str], require: bool) -> (Option<i32>, String) {
    let mut args: Vec<PathBuf> = vec!["verify".into(), file.into()];
    for k in keys {
        args.extend(["--key".into(), key(k)]);
    }
    if require {
        args.push("--require".into());
    }
    let out = run(&args);
    (out.status.code(), text(&out))
}

#[test]
fn pack_with_a_key_then_verify_sign_and_refuse() {
    let dir = Scratch::new("sign");
    for (private, public, other, algorithm) in [
        (
            "test-ed25519.pem",
            "test-ed25519.pub.pem",
            "test-ecdsa-p256.pub.pem",
            "ed25519",
        ),
        (
            "test-ecdsa-p256.pem",
            "test-ecdsa-p256.pub.pem",
            "test-ed25519.pem",
            "ecdsa-p256",
        ),
    ] {
        let signed = dir.path(&format!("{algorithm}.bin"));
        let out = run(&[
            "pack".as_ref(),
            model().as_os_str(),
            "--name".as_ref(),
            "kws".as_ref(),
            "--version".as_ref(),
            "4".as_ref(),
            "--key".as_ref(),
            key(private).as_os_str(),
            "--out".as_ref(),
            signed.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let bytes = std::fs::read(&signed).unwrap();
        let model_len = std::fs::metadata(model()).unwrap().len() as usize;
        assert_eq!(bytes.len(), model_len + HEADER_LEN + SIGNATURE_LEN);

        let (code, said) = verify(&signed, &[public], true);
        assert_eq!(code, Some(0), "{said}");
        assert!(
            said.contains("name: kws") && said.contains("version: 4"),
            "{said}"
        );
        assert!(said.contains(&format!("algorithm: {algorithm}")), "{said}");
        let getpub = text(&run(&[
            "getpub".as_ref(),
            "--key".as_ref(),
            key(public).as_os_str(),
        ]));
        let id = getpub.lines().find(|l| l.starts_with("key id: ")).unwrap();
        assert!(said.contains(id), "{said}\n{getpub}");

        let (code, said) = verify(&signed, &[other], false);
        assert_eq!(code, Some(1));
        assert!(said.contains("refused: untrusted key"), "{said}");

        let mut tampered = bytes.clone();
        *tampered.last_mut().unwrap() ^= 0x20;
        let file = dir.path("tampered.bin");
        std::fs::write(&file, &tampered).unwrap();
        let (code, said) = verify(&file, &[public], true);
        assert_eq!(code, Some(1));
        assert!(said.contains("refused: tampered"), "{said}");

        // The signature itself changed.
        let mut forged = bytes.clone();
        forged[HEADER_LEN + 100] ^= 1;
        std::fs::write(&file, &forged).unwrap();
        let (code, said) = verify(&file, &[public], true);
        assert_eq!(code, Some(1));
        assert!(said.contains("refused: tampered: the signature"), "{said}");

        std::fs::write(&file, &bytes[..bytes.len() - 7]).unwrap();
        let (code, said) = verify(&file, &[public], true);
        assert_eq!(code, Some(1));
        assert!(said.contains("refused: truncated"), "{said}");

        let mut header = bytes.clone();
        header[20] ^= 1;
        std::fs::write(&file, &header).unwrap();
        let (code, said) = verify(&file, &[public], true);
        assert_eq!(code, Some(1));
        assert!(said.contains("refused: bad header"), "{said}");
    }

    // Unsigned: accepted unless signatures are required; `sign` signs it.
    let plain = dir.path("plain.bin");
    let out = run(&[
        "pack".as_ref(),
        model().as_os_str(),
        "--name".as_ref(),
        "kws".as_ref(),
        "--out".as_ref(),
        plain.as_os_str(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let (code, said) = verify(&plain, &["test-ed25519.pub.pem"], true);
    assert_eq!(code, Some(1));
    assert!(said.contains("refused: unsigned"), "{said}");
    let (code, said) = verify(&plain, &["test-ed25519.pub.pem"], false);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("unsigned"), "{said}");

    let signed = dir.path("signed.bin");
    let sign = |key_file: &str| {
        run(&[
            "sign".as_ref(),
            plain.as_os_str(),
            "--key".as_ref(),
            key(key_file).as_os_str(),
            "--out".as_ref(),
            signed.as_os_str(),
        ])
    };
    assert!(sign("test-ecdsa-p256.pem").status.success());
    let (code, said) = verify(
        &signed,
        &["test-ed25519.pub.pem", "test-ecdsa-p256.pub.pem"],
        true,
    );
    assert_eq!(code, Some(0), "{said}");
    // A public key cannot sign; an RSA key is refused by name.
    let out = sign("test-ecdsa-p256.pub.pem");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out).contains("public key cannot sign"),
        "{}",
        text(&out)
    );
    let out = sign("test-rsa-2048.pem");
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).contains("RSA"), "{}", text(&out));
}

#[test]
fn keygen_writes_a_readable_key_and_never_over_one() {
    let dir = Scratch::new("keygen");
    for kind in ["ed25519", "ecdsa-p256"] {
        let pem = dir.path(&format!("{kind}.pem"));
        let args = [
            "keygen".as_ref(),
            "--type".as_ref(),
            kind.as_ref(),
            "--out".as_ref(),
            pem.as_os_str(),
        ];
        let out = run(&args);
        assert!(out.status.success(), "{}", text(&out));
        let first = std::fs::read_to_string(&pem).unwrap();
        assert!(
            first.starts_with("-----BEGIN PRIVATE KEY-----\n"),
            "{first}"
        );
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            std::fs::read_to_string(&pem).unwrap(),
            first,
            "not overwritten"
        );

        let raw = dir.path(&format!("{kind}.raw"));
        let out = run(&[
            "getpub".as_ref(),
            "--key".as_ref(),
            pem.as_os_str(),
            "--raw".as_ref(),
            raw.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let raw = std::fs::read(&raw).unwrap();
        assert_eq!(raw.len(), if kind == "ed25519" { 32 } else { 65 });
        let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
        assert!(
            text(&out).contains(&format!("public key: {hex}")),
            "{}",
            text(&out)
        );
    }
    let out = run(&["keygen", "--type", "rsa-2048", "--out", "x.pem"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn getpub_gives_the_key_imgtool_getpub_gives() {
    let dir = Scratch::new("getpub");
    // The SubjectPublicKeyInfo DER imgtool wrote ends with the raw key.
    for (private, public, len) in [
        ("test-ed25519.pem", "test-ed25519.pub.pem", 32),
        ("test-ecdsa-p256.pem", "test-ecdsa-p256.pub.pem", 65),
    ] {
        let spki = std::fs::read_to_string(key(public)).unwrap();
        let body: String = spki.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64_decode(&body);
        let raw = dir.path("raw.bin");
        let out = run(&[
            "getpub".as_ref(),
            "--key".as_ref(),
            key(private).as_os_str(),
            "--raw".as_ref(),
            raw.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", text(&out));
        let bytes = std::fs::read(&raw).unwrap();
        assert_eq!(bytes.len(), len);
        assert_eq!(&der[der.len() - len..], &bytes[..], "{public}");
    }
}

/// Standard base64 (for the fixture's PEM body, without a crate).
fn base64_decode(s: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        b'/' => 63,
        _ => panic!("not base64: {c}"),
    };
    let digits: Vec<u8> = s.bytes().filter(|&c| c != b'=').map(value).collect();
    let mut out = Vec::new();
    for chunk in digits.chunks(4) {
        let n = chunk.iter().fold(0u32, |n, &d| n << 6 | u32::from(d)) << (6 * (4 - chunk.len()));
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

#[test]
fn layout_measures_signed_containers_and_the_signed_option() {
    let tflite = std::fs::read(model()).unwrap();
    let n = tflite.len();
    assert_eq!(container_len(&tflite, false), n + HEADER_LEN);
    assert_eq!(container_len(&tflite, true), n + HEADER_LEN + SIGNATURE_LEN);
    let plain = synaptic_pack::pack(&tflite, "kws", 1).unwrap();
    assert_eq!(container_len(&plain, false), n + HEADER_LEN);
    assert_eq!(container_len(&plain, true), n + HEADER_LEN + SIGNATURE_LEN);
    let pem = std::fs::read_to_string(key("test-ed25519.pem")).unwrap();
    let signed = synaptic_sign::sign(&plain, &synaptic_sign::Key::from_pem(&pem).unwrap()).unwrap();
    for flag in [false, true] {
        assert_eq!(container_len(&signed, flag), n + HEADER_LEN + SIGNATURE_LEN);
    }
}

#[test]
fn each_refusal_class_has_its_own_line() {
    let classes = [
        (StoreError::Unsigned, "unsigned"),
        (StoreError::UntrustedKey, "untrusted key"),
        (StoreError::BadSignature, "tampered"),
        (StoreError::CrcMismatch, "tampered"),
        (StoreError::Length, "truncated"),
        (StoreError::BadContainer, "bad header"),
        (StoreError::BadKey, "bad key"),
        (StoreError::Downgrade, "downgrade"),
    ];
    for (e, class) in classes {
        assert!(refusal(e).starts_with(class), "{e:?}: {}", refusal(e));
        assert!(!refusal(e).contains('\n'));
    }
}
