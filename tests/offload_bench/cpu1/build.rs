// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`: the
// placement build (`CONFIG_SYNAPTIC_CPU_INTERPRETER`) runs other phases.
fn main() {
    println!("cargo:rustc-check-cfg=cfg(CONFIG_SYNAPTIC_CPU_INTERPRETER)");
    zephyr_build::export_kconfig_bool_options();
}
