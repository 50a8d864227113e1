//! Picks the int8 kernels for the core this build runs on.
//!
//! `cfg(synaptic_dsp)`: the Armv8-M (or Armv7E-M) DSP extension is there,
//! so the kernels multiply-accumulate two int16 pairs per instruction
//! (`src/dsp.rs`). Set for an Arm target whose features include `dsp`
//! (`-C target-cpu=cortex-m33`, say) or, inside a Zephyr build, whose
//! Kconfig selects `CONFIG_ARMV8_M_DSP` (zephyr-lang-rust runs cargo with
//! `DOTCONFIG` naming the application's `.config`, and builds for the
//! plain `thumbv8m.main` targets, which leave the extension out). Anywhere
//! else the portable kernels run.

use std::env;
use std::fs;

fn main() {
    println!("cargo:rustc-check-cfg=cfg(synaptic_dsp)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=DOTCONFIG");
    let arm = env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "arm");
    let feature = env::var("CARGO_CFG_TARGET_FEATURE")
        .is_ok_and(|features| features.split(',').any(|f| f == "dsp"));
    let kconfig = env::var("DOTCONFIG").ok().is_some_and(|path| {
        println!("cargo:rerun-if-changed={path}");
        fs::read_to_string(&path)
            .is_ok_and(|text| text.lines().any(|l| l.trim() == "CONFIG_ARMV8_M_DSP=y"))
    });
    if arm && (feature || kconfig) {
        println!("cargo:rustc-cfg=synaptic_dsp");
    }
}
