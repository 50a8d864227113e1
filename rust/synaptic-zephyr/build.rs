// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`, so board
// specific code compiles only for its board; and embed the model store's
// trusted key (CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE), which the module's
// CMake writes into the build as Rust (scripts/signature_key.py), as
// `trusted_key.rs`.

/// What `trusted_key.rs` holds without a key.
const NO_KEY: &str = "\
/// No key configured (CONFIG_SYNAPTIC_STORE_SIGNATURE_KEY_FILE empty).
pub const TRUSTED_KEYS: &[PublicKey<'static>] = &[];
/// Never called (no key).
pub const VERIFIER: Verifier = |_, _, _| false;
";

fn main() {
    zephyr_build::export_kconfig_bool_options();
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let key = std::env::var("BUILD_DIR")
        .ok()
        .map(|dir| std::path::Path::new(&dir).join("synaptic/trusted_key.rs"));
    if let Some(key) = &key {
        println!("cargo:rerun-if-changed={}", key.display());
    }
    let code = match key.filter(|k| k.exists()) {
        Some(key) => {
            std::fs::read_to_string(&key).unwrap_or_else(|e| panic!("{}: {e}", key.display()))
        }
        None => NO_KEY.to_owned(),
    };
    std::fs::write(out.join("trusted_key.rs"), code).unwrap();
}
