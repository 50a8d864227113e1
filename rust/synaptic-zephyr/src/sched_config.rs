//! The scheduler's build configuration: the placement policy and the WRR
//! weights Kconfig selects, for CPU0's service and for the C API's runtime
//! alike.

use synaptic_runtime::arbiter::Weights;
use synaptic_runtime::device::Policy;

/// The placement policy Kconfig selects (`SYNAPTIC_PLACEMENT_*`).
pub const DEFAULT_POLICY: Policy = if cfg!(CONFIG_SYNAPTIC_PLACEMENT_CPU) {
    Policy::CpuOnly
} else if cfg!(CONFIG_SYNAPTIC_PLACEMENT_BUSY) {
    Policy::BusyAware
} else if cfg!(CONFIG_SYNAPTIC_PLACEMENT_RANDOM) {
    Policy::Random
} else if cfg!(CONFIG_SYNAPTIC_PLACEMENT_EFT) {
    Policy::EarliestFinish
} else {
    Policy::NpuOnly
};

/// The WRR weights Kconfig sets (`SYNAPTIC_WRR_NORMAL_WEIGHT`,
/// `SYNAPTIC_WRR_BEST_EFFORT_WEIGHT`, each 1 to 255 by their ranges).
pub const WEIGHTS: Weights = Weights {
    normal: zephyr::kconfig::CONFIG_SYNAPTIC_WRR_NORMAL_WEIGHT as u8,
    best_effort: zephyr::kconfig::CONFIG_SYNAPTIC_WRR_BEST_EFFORT_WEIGHT as u8,
};
