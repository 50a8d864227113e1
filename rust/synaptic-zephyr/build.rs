// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`, so board
// specific code compiles only for its board; and embed the public half of
// the model store's signature key (CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE,
// which the module's CMake copies into the build) as `trusted_key.rs`.
use std::fmt::Write as _;

fn main() {
    zephyr_build::export_kconfig_bool_options();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut code = String::new();
    let pem = std::env::var("BUILD_DIR")
        .ok()
        .map(|dir| std::path::Path::new(&dir).join("synaptic/signature-key.pem"));
    if let Some(pem) = &pem {
        println!("cargo:rerun-if-changed={}", pem.display());
    }
    match pem.filter(|p| p.exists()) {
        Some(pem) => {
            let text = std::fs::read_to_string(&pem).unwrap_or_else(|e| {
                panic!("{}: {e}", pem.display());
            });
            let key = synaptic_sign::Key::from_pem(&text).unwrap_or_else(|e| {
                panic!(
                    "CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE ({}): {e}",
                    pem.display()
                )
            });
            // The one algorithm linked is the key's (`VERIFIER`).
            let (algorithm, verifier) = match key.algorithm() {
                synaptic_store::signature::Algorithm::Ed25519 => ("Ed25519", "verify_ed25519"),
                synaptic_store::signature::Algorithm::EcdsaP256 => {
                    ("EcdsaP256", "verify_ecdsa_p256")
                }
            };
            let bytes = key.public_bytes();
            let mut list = String::new();
            for b in &bytes {
                write!(list, "{b:#04x}, ").unwrap();
            }
            writeln!(
                code,
                "/// The public key of CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE.\n\
                 pub const TRUSTED_KEYS: &[PublicKey<'static>] = &[PublicKey {{ \
                 algorithm: Algorithm::{algorithm}, bytes: &[{list}] }}];\n\
                 /// Its algorithm's check.\n\
                 pub const VERIFIER: Verifier = synaptic_store::signature::{verifier};"
            )
            .unwrap();
        }
        None => code.push_str(
            "/// No key configured (CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE empty).\n\
             pub const TRUSTED_KEYS: &[PublicKey<'static>] = &[];\n\
             /// Never called (no key).\n\
             pub const VERIFIER: Verifier = |_, _, _| false;\n",
        ),
    }
    std::fs::write(out.join("trusted_key.rs"), code).unwrap();
}
