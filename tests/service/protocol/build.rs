// Sign the speech model's containers CPU1 streams with the service test's
// keys (tests/service/keys, test-only), so that CPU1, which holds no key,
// streams signed containers: their preambles (header and signature block)
// go into `signed.rs`; CPU1 streams the network after them from its flash.
#![allow(dead_code)]

use std::fmt::Write as _;

use synaptic_store::{Header, TensorShape, HEADER_LEN};

include!("src/speech.rs");

fn main() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = dir.join("../../../models/micro_speech.tflite");
    let keys = dir.join("../keys");
    for path in [&model, &keys] {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let payload = std::fs::read(&model).expect("models/micro_speech.tflite");
    let key = |name: &str| {
        let pem = std::fs::read_to_string(keys.join(name)).expect("a test key");
        synaptic_sign::Key::from_pem(&pem).expect("a key")
    };
    let (trusted, untrusted) = (key("test-ed25519.pem"), key("untrusted-ed25519.pem"));
    let mut code = String::new();
    for (name, version, key) in [
        ("SIGNED_V2", 2, &trusted),
        ("SIGNED_V5", 5, &trusted),
        ("UNTRUSTED_V5", 5, &untrusted),
        ("SIGNED_V1", 1, &trusted),
    ] {
        let header = Header::new(
            SPEECH,
            version,
            &payload,
            TensorShape::int8(&SPEECH_INPUT),
            TensorShape::int8(&SPEECH_OUTPUT_SHAPE),
        )
        .expect("a header");
        let container = [header.encode().as_slice(), &payload].concat();
        let signed = synaptic_sign::sign(&container, key).expect("signs");
        let preamble = &signed[..signed.len() - payload.len()];
        assert!(preamble.len() > HEADER_LEN);
        write!(code, "/// Preamble of the speech container version {version}.\npub static {name}: [u8; {}] = [", preamble.len()).unwrap();
        for b in preamble {
            write!(code, "{b},").unwrap();
        }
        code.push_str("];\n");
    }
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    std::fs::write(out.join("signed.rs"), code).unwrap();
}
