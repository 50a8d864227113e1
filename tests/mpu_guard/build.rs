// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`: the shell
// stand-ins exist only when the shell is built.
fn main() {
    println!("cargo:rustc-check-cfg=cfg(CONFIG_SYNAPTIC_SHELL)");
    zephyr_build::export_kconfig_bool_options();
}
