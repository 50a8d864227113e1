// Expose the build's boolean Kconfig options as `cfg(CONFIG_...)`, so board
// specific code compiles only for its board.
fn main() {
    zephyr_build::export_kconfig_bool_options();
}
