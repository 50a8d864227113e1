//! Inference as a cross-core service: the CPU0 intake and serving layer and
//! the CPU1 client, over the exchange slots of ABI v2.
//!
//! * [`region`]: the shared region as one typed view (rings, control-block
//!   words, exchange slot); all of the crate's `unsafe` is there.
//! * [`protocol`]: who owns a slot when, what each message's payload and
//!   status mean, how ids are ordered.
//! * [`intake`] (CPU0): the consumer of CPU1's requests, cheap enough for
//!   the doorbell ISR: answers `STATUS_REQ` itself, hands slot requests to
//!   the serving thread with one wake-up.
//! * [`server`] (CPU0): validates every request as hostile input, runs
//!   remote inferences through the runtime's scheduler in the same priority
//!   space as local jobs, answers with an output length or a negative errno.
//! * [`client`] (CPU1): resolve a model by name, stage a tensor in place,
//!   submit with a priority, block with a timeout; late replies are
//!   discarded, and the slot is never restaged while CPU0 may read it.
//! * [`park`]: CPU0 holds CPU1 in RAM while it writes the flash bank CPU1
//!   executes from (ABI v4's park handshake).
//!
//! `no_std`, no heap; the client uses no floating point (CPU1 has no FPU).
//! Feature `std` adds `host` implementations of the platform traits, and
//! [`loopback`]: both cores on one thread over one buffer, stepped by hand.
#![no_std]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(missing_docs)]

#[cfg(feature = "std")]
pub mod host;

pub mod boot;
pub mod client;
pub mod intake;
pub mod lock;
#[cfg(feature = "std")]
pub mod loopback;
pub mod park;
#[cfg(synaptic_probe)]
pub mod probe;
pub mod protocol;
pub mod region;
pub mod server;
pub mod update;

pub use client::{Client, ClientError, ClientStats, Pong, Session, Wait};
pub use intake::{Intake, ReplyPort, SharedSender, SlotLedger};
pub use lock::{LocalLock, SemLock};
pub use region::{Exchange, RegionError, RttWords, SharedRegion};
pub use server::{Completion, Disposition, Runtime, ServeError, ServeStats, Server};
