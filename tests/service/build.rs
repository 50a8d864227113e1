// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`: the test
// serves a model only the CPU interpreter runs with
// `CONFIG_SYNAPTIC_CPU_INTERPRETER` (scenario synaptic.service.cpu_store),
// and expects unsigned containers refused with
// `CONFIG_SYNAPTIC_STORE_SIGNATURE_REQUIRED` (synaptic.service.dual_core_parked).
fn main() {
    for option in [
        "CONFIG_SYNAPTIC_CPU_INTERPRETER",
        "CONFIG_SYNAPTIC_STORE_SIGNATURE_REQUIRED",
    ] {
        println!("cargo:rustc-check-cfg=cfg({option})");
    }
    zephyr_build::export_kconfig_bool_options();
}
