//! synaptic on Zephyr: the one crate that sees the kernel, the devicetree and the SoC.
//!
//! Everything portable lives in the other `synaptic-*` crates; this crate
//! binds them to Zephyr: devicetree facts ([`platform`]), releasing the second
//! core ([`an521`]), and Rust test cases that run as real ztest units
//! ([`ztest`]).
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![allow(unexpected_cfgs)]

pub mod an521;
pub mod doorbell;
pub mod platform;
pub mod sync;
pub mod ztest;

pub use synaptic_abi as abi;
/// Checks for test cases, shared with host tests (see [`ztest`]).
pub use synaptic_check::{check as zassert, check_eq as zassert_eq, skip as zskip};
