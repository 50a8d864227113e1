//! The AI runtime that runs on CPU0: tensor arena, model registry, NPU HAL
//! and deterministic stub NPU, execution devices (the NPU and the CPU
//! interpreter over `synaptic-tflite`, and which one runs a model step),
//! DSP kernels, pre/post-processing, pipelines, a stage-preemptive priority
//! scheduler (strict `RealTime`, weighted round robin between `Normal` and
//! `BestEffort`, placement policies up to earliest finish time over
//! learned per-model, per-device service-time predictions), a profiler
//! with per-device time, and a queueing model of the latency per class.
//!
//! Portable, `no_std`, allocation free: every capacity is a const generic
//! with a documented default, every buffer is the caller's. Time comes in
//! through the [`time::Clock`] trait, so host tests run on a fake clock and
//! never sleep. Each layer has its own `#[non_exhaustive]` error enum with a
//! `to_errno()` mapping to [`synaptic_abi::Errno`] for the C and wire
//! boundary.
#![no_std]
#![forbid(unsafe_code)]

#[cfg(test)]
extern crate std;

pub mod arbiter;
pub mod arena;
pub mod device;
pub mod dsp;
pub mod latency;
pub mod npu;
pub mod pipeline;
pub mod predict;
pub mod process;
pub mod prof;
pub mod registry;
pub mod sched;
pub mod time;
