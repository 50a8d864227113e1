//! CPU0's side of `MODEL_UPDATE` (ABI v3): CPU1 streams a model container
//! through the exchange slots, step by step, into CPU0's model store, and
//! the activation hot-swaps the model CPU0 serves ([`Server::replace`]).
//!
//! The serving layer drives the store through [`ModelUpdates`] (the
//! `Runtime::updates` of the serving thread); `StoreUpdates` (feature
//! `store`) is that over `synaptic-store`'s store and its over-the-air state machine
//! (`Ota`, the reference's `syn_model_ota.h`), on any flash. The flash work
//! of a step runs on the serving thread between scheduler steps:
//! inferences wait for at most one chunk's erase and write.
//!
//! [`Server::replace`]: crate::Server::replace

use heapless::String;
use synaptic_abi::Errno;
use synaptic_runtime::arena::TensorMeta;
#[cfg(feature = "store")]
use synaptic_runtime::arena::{DType, Shape};
use synaptic_runtime::device::DeviceMask;
use synaptic_runtime::registry::{ModelDesc, MAX_NAME_LEN};
#[cfg(feature = "store")]
use synaptic_store::ota::{Ota, OtaError};
#[cfg(feature = "store")]
use synaptic_store::{Flash, Located, Store, StoreError, TensorShape};

/// A model version the store has made active: what the serving layer
/// registers for the hot swap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activated {
    /// The model's name.
    pub name: String<MAX_NAME_LEN>,
    /// The container's version.
    pub version: u32,
    /// Input tensor.
    pub input: TensorMeta,
    /// Output tensor.
    pub output: TensorMeta,
    /// Flash offset of the payload in the store's partition.
    pub flash_offset: u32,
    /// Payload bytes.
    pub flash_size: u32,
    /// CRC-32 of the payload.
    pub crc32: u32,
    /// The payload where CPU0 reads it in place (the store's flash is
    /// memory-mapped: `synaptic_store::Flash::mapped`); empty when not.
    pub image: &'static [u8],
}

impl Activated {
    /// The version as the registry takes it, on every device that could
    /// take it: the NPU (it loads the image from flash), and the CPU
    /// interpreter when CPU0 reads the image in place. The serving layer
    /// keeps those of them the served version had and that can run it
    /// ([`Server::replace`](crate::Server::replace)).
    pub fn desc(&self) -> ModelDesc<'_> {
        let cpu = if self.image.is_empty() {
            DeviceMask::NONE
        } else {
            DeviceMask::CPU_INTERPRETER
        };
        ModelDesc {
            name: &self.name,
            version: self.version,
            input: self.input,
            output: self.output,
            flash_offset: self.flash_offset,
            flash_size: self.flash_size,
            sram_needed: 0,
            crc32: self.crc32,
            devices: DeviceMask::NPU.with(cpu),
            image: self.image,
        }
    }
}

/// CPU0's model store as `MODEL_UPDATE` drives it. Errors are the errno
/// CPU1's reply carries.
pub trait ModelUpdates {
    /// Start an update of `name`, `total` container bytes.
    fn begin(&mut self, name: &str, total: usize) -> Result<(), Errno>;
    /// The container's bytes at `offset` (chunks in order).
    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Errno>;
    /// Every byte is in: verify the container from flash.
    fn finish(&mut self) -> Result<(), Errno>;
    /// The version [`activate`](Self::activate) would make active (with
    /// `back`, [`rollback`](Self::rollback)), checked from flash: what the
    /// serving layer checks before the store changes.
    fn next(&mut self, back: bool) -> Result<Activated, Errno>;
    /// Make the verified update the active version.
    fn activate(&mut self) -> Result<Activated, Errno>;
    /// Make the last activated model's previous version active again.
    fn rollback(&mut self) -> Result<Activated, Errno>;
    /// Confirm the last activated model's active version: its security
    /// counter rises to it (anti-rollback). Returns the version.
    fn confirm(&mut self) -> Result<u32, Errno>;
    /// The active version of the model called `name` (`-ENOENT` when the
    /// store has none), whoever activated it.
    fn active(&mut self, name: &str) -> Result<Activated, Errno>;

    /// [`next`](Self::next), then, when `accept` takes that version,
    /// [`activate`](Self::activate) (with `back`,
    /// [`rollback`](Self::rollback)), as one step: nothing else switches
    /// or stages a version in between (a store shared with other threads
    /// holds its lock throughout), so the version made active is the one
    /// `accept` checked. `accept`'s refusal is returned and the store is
    /// left as it was.
    fn switch(
        &mut self,
        back: bool,
        accept: &mut dyn FnMut(&Activated) -> Result<(), Errno>,
    ) -> Result<Activated, Errno> {
        let next = self.next(back)?;
        accept(&next)?;
        if back {
            self.rollback()
        } else {
            self.activate()
        }
    }
}

#[cfg(feature = "store")]
/// The errno of an update step's failure on the wire. Each refusal of a
/// container has its own: unsigned where signatures are required
/// `-ENOMSG`, an untrusted signer `-EACCES`, changed after signing (or
/// failing its CRC or header checks) `-EBADMSG`, cut short or padded
/// `-EMSGSIZE`, below the model's security counter `-ERANGE`.
pub fn ota_errno(e: OtaError) -> Errno {
    match e {
        OtaError::State => Errno::Perm,
        OtaError::TooLarge => Errno::TooBig,
        OtaError::BadHeader | OtaError::Crc | OtaError::Signature => Errno::BadMsg,
        OtaError::Size => Errno::MsgSize,
        OtaError::Name => Errno::Inval,
        OtaError::Incomplete => Errno::Proto,
        OtaError::NothingToRollBack => Errno::NoEnt,
        OtaError::Unsigned => Errno::NoMsg,
        OtaError::UntrustedKey => Errno::Acces,
        OtaError::Downgrade => Errno::Range,
        OtaError::Store(StoreError::PeerBusy) => Errno::Busy,
        OtaError::Store(_) => Errno::Io,
    }
}

#[cfg(feature = "store")]
/// A container's tensor as the runtime describes it (`.tflite` type
/// codes: 9 int8, 3 uint8, 7 int16, 1 float16, 0 float32). A tensor the
/// runtime has no description for (another type, a zero or overflowing
/// dimension) no device runs: `-ENOEXEC`, the errno of a version no
/// serving device can run, so that its activation is refused as one.
fn meta(shape: &TensorShape) -> Result<TensorMeta, Errno> {
    let dtype = match shape.dtype {
        9 => DType::Int8,
        3 => DType::UInt8,
        7 => DType::Int16,
        1 => DType::Float16,
        0 => DType::Float32,
        _ => return Err(Errno::NoExec),
    };
    let dims = shape
        .dims
        .get(..usize::from(shape.rank))
        .ok_or(Errno::BadMsg)?;
    let shape = Shape::new(dims).map_err(|_| Errno::NoExec)?;
    Ok(TensorMeta::new(dtype, shape))
}

#[cfg(feature = "store")]
/// A version of a container the store located, its image in place
/// (`image`: empty when the flash is not mapped).
fn activated(located: &Located, image: Option<&'static [u8]>) -> Result<Activated, Errno> {
    let h = &located.header;
    Ok(Activated {
        name: String::try_from(h.name()).map_err(|()| Errno::Inval)?,
        version: h.version,
        input: meta(&h.input)?,
        output: meta(&h.output)?,
        flash_offset: u32::try_from(located.payload_offset).map_err(|_| Errno::Io)?,
        flash_size: h.payload_len,
        crc32: h.payload_crc,
        image: image.unwrap_or(&[]),
    })
}

#[cfg(feature = "store")]
/// [`ModelUpdates`] over a store and its update state machine.
pub struct StoreUpdates<'s, F: Flash, const M: usize> {
    store: &'s mut Store<F, M>,
    ota: &'s mut Ota,
}

#[cfg(feature = "store")]
impl<'s, F: Flash, const M: usize> StoreUpdates<'s, F, M> {
    /// Updates of `store`, through `ota`.
    pub fn new(store: &'s mut Store<F, M>, ota: &'s mut Ota) -> Self {
        StoreUpdates { store, ota }
    }

    /// Bytes of the stream's preamble still held back before the store is
    /// touched ([`Ota::preamble_pending`]): a write of them may run the
    /// container's signature check.
    pub fn preamble_pending(&self) -> usize {
        self.ota.preamble_pending()
    }

    /// The model [`activate`](ModelUpdates::activate) would switch (a
    /// verified update's), or [`rollback`](ModelUpdates::rollback) with
    /// `back`.
    fn target(&self, back: bool) -> Option<String<MAX_NAME_LEN>> {
        let name = if back {
            self.ota.last_activated()
        } else {
            self.ota.ready()
        };
        name.and_then(|n| String::try_from(n).ok())
    }
}

#[cfg(feature = "store")]
impl<F: Flash, const M: usize> ModelUpdates for StoreUpdates<'_, F, M> {
    fn begin(&mut self, name: &str, total: usize) -> Result<(), Errno> {
        self.ota.begin(self.store, name, total).map_err(ota_errno)
    }

    fn write(&mut self, offset: usize, data: &[u8]) -> Result<(), Errno> {
        // A chunk sent again (a retry after a lost reply) or one skipping
        // ahead is out of order: the stream has no gaps.
        if offset != self.ota.received() {
            return Err(Errno::Proto);
        }
        self.ota.write_chunk(self.store, data).map_err(ota_errno)
    }

    fn finish(&mut self) -> Result<(), Errno> {
        self.ota.finish(self.store).map(drop).map_err(ota_errno)
    }

    fn next(&mut self, back: bool) -> Result<Activated, Errno> {
        let name = self
            .target(back)
            .ok_or(if back { Errno::NoEnt } else { Errno::Perm })?;
        let located = if back {
            self.store.previous(&name)
        } else {
            self.store.staged(&name)
        };
        let located = located.map_err(|e| ota_errno(e.into()))?;
        activated(&located, self.store.mapped(&located))
    }

    fn activate(&mut self) -> Result<Activated, Errno> {
        let name = self.target(false).ok_or(Errno::Perm)?;
        self.ota.activate(self.store).map_err(ota_errno)?;
        self.active(&name)
    }

    fn rollback(&mut self) -> Result<Activated, Errno> {
        let name = self.target(true).ok_or(Errno::NoEnt)?;
        self.ota.rollback(self.store).map_err(ota_errno)?;
        self.active(&name)
    }

    fn confirm(&mut self) -> Result<u32, Errno> {
        self.ota.confirm(self.store).map_err(ota_errno)
    }

    /// The model's active version, its CRC checked from flash.
    fn active(&mut self, name: &str) -> Result<Activated, Errno> {
        let located = self.store.active(name).map_err(|e| ota_errno(e.into()))?;
        activated(&located, self.store.mapped(&located))
    }
}
