//! model_update: the flash model store and its shell commands on the
//! console. At boot it lists what the store holds; then the shell takes
//! `syn ota ...` lines (scripts/syn_ota_send.py streams a container that
//! `synaptic-pack pack` wrote) and `syn store list`.
#![no_std]

use synaptic_zephyr::store::ota;
use zephyr::printkln;

#[no_mangle]
extern "C" fn rust_main() {
    let mut models = 0;
    let listed = ota::inventory(|m| {
        models += 1;
        printkln!(
            "model_update: {}: active v{}, previous v{}",
            m.name,
            m.active.unwrap_or(0),
            m.previous.unwrap_or(0)
        );
    });
    match listed {
        Ok(generation) => printkln!(
            "model_update: store ready: {} models, registry generation {}",
            models,
            generation
        ),
        Err(e) => printkln!("model_update: the store cannot be opened: {}", e),
    }
}
