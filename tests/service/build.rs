// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`: the test
// serves a model only the CPU interpreter runs with
// `CONFIG_SYNAPTIC_CPU_INTERPRETER` (scenario synaptic.service.cpu_store).
fn main() {
    println!("cargo:rustc-check-cfg=cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)");
    zephyr_build::export_kconfig_bool_options();
}
