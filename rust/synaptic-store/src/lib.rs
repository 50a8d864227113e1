//! The flash model store: each model in one of two slots (A/B), a
//! registry kept twice (ping-pong, generation and CRC32), updates that a
//! power cut at any flash operation cannot break, rollback.
//!
//! * **Layout** ([`Layout`]): registry copies in the partition's first two
//!   sectors, then two slots per model, each a whole number of sectors.
//! * **Containers** ([`container`]): a 96-byte header (name, version,
//!   payload length and CRC32, input/output shapes) before the `.tflite`;
//!   signed ones (format 2) carry a signature block between the two
//!   ([`signature`]: Ed25519 or ECDSA P-256 over the SHA-256 of header and
//!   payload, checked from flash under the keys of a [`signature::Trust`]).
//! * **Anti-rollback** ([`Store::confirm`]): a security counter per model,
//!   committed with the registry, below which no version installs,
//!   activates or is rolled back to.
//! * **Updates** ([`Store::begin`], [`Store::write_chunk`],
//!   [`Store::finish`], [`Store::activate`], [`Store::rollback`]): an
//!   update only ever writes the slot no record names as active or as the
//!   rollback target, and a registry commit only ever writes the registry
//!   sector that does not hold the current record. So after a cut at any
//!   operation the store opens with each model's active version the old
//!   one or the new one, complete and CRC-valid, never a mix, never none.
//! * **Update streams** ([`ota::Ota`]): the reference's `syn_model_ota.h`
//!   state machine (idle, downloading, validating, staging, ready, error)
//!   over the store; the header is checked as soon as it has arrived.
//! * **CRC-gated loads** ([`Store::active`]): the payload's CRC is checked
//!   from flash before its location is handed out; [`Store::open`] checks
//!   every active slot and falls back to the previous one if it fails.
//! * **Sector-by-sector erases** only ([`Flash::erase_sector`]), counted
//!   per slot ([`ModelStatus::erases`]: wear; persisted with the next
//!   registry commit, so a cut can lose the count of one erase).
//!
//! `#![no_std]`, no allocation: the store keeps its registry in RAM
//! (`M` entries of 64 bytes) and reads flash through small stack buffers.
#![no_std]

pub mod container;
mod flash;
pub mod ota;
mod registry;
pub mod signature;
mod store;
pub mod sweep;

pub use container::{Header, TensorShape, HEADER_LEN};
pub use flash::{Flash, MemFlash, PowerCut};
pub use registry::SlotState;
pub use store::{Layout, Located, ModelStatus, OpenReport, Store};

/// CRC-32/ISO-HDLC (zlib's, IEEE 802.3), table-driven.
pub fn crc32(bytes: &[u8]) -> u32 {
    CRC.checksum(bytes)
}

const CRC: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);

/// Why a store operation failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoreError {
    /// The flash refused an operation (range, alignment, device error).
    Flash,
    /// The power went (the host model's cut, or a brown-out reported by
    /// the driver); reopen the store after the reboot.
    PowerLoss,
    /// The partition cannot hold the registry and two slots per model.
    Layout,
    /// A model name is empty, longer than 31 bytes or holds a NUL.
    BadName,
    /// A container larger than a slot.
    TooLarge,
    /// A container header is malformed or fails its CRC.
    BadContainer,
    /// A payload fails its CRC.
    CrcMismatch,
    /// Both registry copies are unreadable though not erased.
    Corrupt,
    /// No model of that name.
    NotFound,
    /// Every registry entry is in use.
    Full,
    /// An update is in progress (finish it or begin again).
    Busy,
    /// No update is in progress.
    NoUpdate,
    /// A chunk does not continue where the last one ended, or runs past
    /// the length given to [`Store::begin`].
    OutOfOrder,
    /// [`Store::finish`] before every byte was written.
    Incomplete,
    /// The container's name differs from the one the update was begun for.
    WrongName,
    /// [`Store::activate`] with no verified, inactive version to switch to.
    NothingStaged,
    /// [`Store::rollback`] with no previous version (or one that fails its
    /// CRC now).
    NoPrevious,
    /// The flash lies where another core executes and that core could not
    /// be held off (on a dual-core part: CPU1 not attached, or it did not
    /// park in time); nothing was written or erased. Try again.
    PeerBusy,
    /// The container's length differs from the one the update was begun
    /// with (a container cut short, or with bytes added).
    Length,
    /// An unsigned container where the store requires signatures.
    Unsigned,
    /// A container signed by a key the store does not trust.
    UntrustedKey,
    /// The container's digest or signature does not match its bytes: the
    /// header, the payload or the signature changed after signing.
    BadSignature,
    /// A version below the model's security counter (anti-rollback):
    /// installing, activating or rolling back to it is refused.
    Downgrade,
    /// A key of the wrong length, or of an algorithm this build cannot
    /// verify (or signatures required with no key).
    BadKey,
}
