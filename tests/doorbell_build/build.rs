// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`, so the
// MCXN947 CPU0 probe compiles only there.
fn main() {
    zephyr_build::export_kconfig_bool_options();
}
