//! The shared-memory contract between CPU0 and CPU1 (ABI v1).
//!
//! Owned by exactly one crate so that both images agree by construction;
//! cbindgen exports it to C. Every size and offset is pinned by a compile-time
//! assert: a mismatch is a build error, never a runtime surprise.
#![no_std]
#![forbid(unsafe_code)]

pub mod errno;

pub use errno::Errno;
pub mod priority;

pub use priority::{InvalidPriority, Priority};
