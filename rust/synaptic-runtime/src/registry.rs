//! Model registry: named model metadata in a fixed table, generation-checked
//! handles, and which model is resident on the NPU.
//!
//! Invariants and limits:
//!
//! * At most `N` models ([`DEFAULT_MAX_MODELS`] by default); names are 1 to
//!   [`MAX_NAME_LEN`] bytes of UTF-8 and unique.
//! * A [`ModelHandle`] is a slot index plus the slot's generation. The
//!   generation changes on every unregister, so a handle kept across an
//!   unregister is rejected with [`RegistryError::StaleHandle`] even after
//!   the slot is reused by another model. Raw value 0 is never a valid handle
//!   ([`ModelHandle::INVALID_RAW`]).
//! * At most one model is resident on the NPU (the device's resident model
//!   is replaced by each load); a loaded model cannot be unregistered.
//! * The registry holds metadata only; the image stays in flash at
//!   `flash_offset`, and [`Registry::verify_image`] checks a copy of it
//!   against the registered CRC-32.
//! * Each model names the execution devices it may run on
//!   ([`ModelDesc::devices`], see [`crate::device`]); at least one. A model
//!   for the CPU interpreter carries its `.tflite` flatbuffer
//!   ([`ModelDesc::image`], borrowed for `'static`: flash or a static), which
//!   the interpreter validates when it loads the model. "Resident" and
//!   [`Registry::load`] are about the NPU; the CPU device keeps its own
//!   resident model, loaded from [`Registry::device_model`].

use heapless::String;
use synaptic_abi::Errno;

use crate::arena::{ArenaError, DType, Shape, TensorMeta};
use crate::device::{Device, DeviceMask};
use crate::npu::{NpuDevice, NpuError, NpuModel};
use crate::predict::ServiceTime;

/// Longest model name in bytes (a C `char[32]` with its terminator).
pub const MAX_NAME_LEN: usize = 31;

/// Default registry capacity.
pub const DEFAULT_MAX_MODELS: usize = 8;

/// A registered model, by slot and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ModelHandle {
    index: u16,
    generation: u16,
}

impl ModelHandle {
    /// A raw value no registered model ever has (C `SYN_MODEL_INVALID`).
    pub const INVALID_RAW: u32 = 0;

    /// The handle as one `u32`: generation in the high half, slot in the low.
    pub const fn raw(self) -> u32 {
        ((self.generation as u32) << 16) | self.index as u32
    }

    /// Decodes a raw handle; the registry validates it on use.
    pub const fn from_raw(raw: u32) -> ModelHandle {
        ModelHandle {
            index: raw as u16,
            generation: (raw >> 16) as u16,
        }
    }

    /// Slot index.
    pub const fn index(self) -> usize {
        self.index as usize
    }
}

/// What [`Registry::register`] takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelDesc<'a> {
    /// Unique name, 1 to [`MAX_NAME_LEN`] bytes.
    pub name: &'a str,
    /// Model version.
    pub version: u32,
    /// Input tensor (dtype and shape; its size follows).
    pub input: TensorMeta,
    /// Output tensor.
    pub output: TensorMeta,
    /// Offset of the compiled image in flash.
    pub flash_offset: u32,
    /// Size of the compiled image.
    pub flash_size: u32,
    /// SRAM the model needs at run time (arena bytes).
    pub sram_needed: u32,
    /// CRC-32 (IEEE) of the image.
    pub crc32: u32,
    /// The execution devices the model may run on (at least one).
    pub devices: DeviceMask,
    /// The `.tflite` flatbuffer the CPU interpreter runs (required when
    /// `devices` includes it; empty otherwise).
    pub image: &'static [u8],
}

impl<'a> ModelDesc<'a> {
    /// An int8 model named `name` with input shape `input` and an
    /// `output`-element output vector, version 1, for the NPU, no flash
    /// image and no working memory (set the other fields with struct update
    /// syntax).
    ///
    /// # Errors
    ///
    /// [`ArenaError`] for an invalid shape (no dimension, a zero, too many).
    pub fn int8(name: &'a str, input: &[u32], output: usize) -> Result<Self, ArenaError> {
        Ok(ModelDesc {
            name,
            version: 1,
            input: TensorMeta::new(DType::Int8, Shape::new(input)?),
            output: TensorMeta::vector(DType::Int8, output)?,
            flash_offset: 0,
            flash_size: 0,
            sram_needed: 0,
            crc32: 0,
            devices: DeviceMask::NPU,
            image: &[],
        })
    }

    /// An int8 model for the CPU interpreter (and no other device) whose
    /// flatbuffer is `image` (`flash_size` is its length; `crc32` stays 0:
    /// set it for [`Registry::verify_image`]); tensors as for
    /// [`ModelDesc::int8`] (the interpreter validates the image against
    /// them on load).
    ///
    /// # Errors
    ///
    /// [`ArenaError`] for an invalid shape.
    pub fn tflite(
        name: &'a str,
        input: &[u32],
        output: usize,
        image: &'static [u8],
    ) -> Result<Self, ArenaError> {
        Ok(ModelDesc {
            devices: DeviceMask::CPU_INTERPRETER,
            image,
            flash_size: image.len() as u32,
            ..Self::int8(name, input, output)?
        })
    }
}

/// Metadata of a registered model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelInfo {
    /// Unique name.
    pub name: String<MAX_NAME_LEN>,
    /// Model version.
    pub version: u32,
    /// Input tensor.
    pub input: TensorMeta,
    /// Output tensor.
    pub output: TensorMeta,
    /// Offset of the compiled image in flash.
    pub flash_offset: u32,
    /// Size of the compiled image.
    pub flash_size: u32,
    /// SRAM needed at run time.
    pub sram_needed: u32,
    /// CRC-32 (IEEE) of the image.
    pub crc32: u32,
    /// The execution devices the model may run on.
    pub devices: DeviceMask,
    /// The CPU interpreter's flatbuffer (empty for an NPU-only model).
    pub image: &'static [u8],
    /// Whether the model is resident on the NPU.
    pub loaded: bool,
}

impl ModelInfo {
    /// Input size in bytes.
    pub fn input_size(&self) -> usize {
        self.input.byte_len()
    }

    /// Output size in bytes.
    pub fn output_size(&self) -> usize {
        self.output.byte_len()
    }
}

/// Errors of the model registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// The name is empty.
    EmptyName,
    /// The name is longer than [`MAX_NAME_LEN`] bytes.
    NameTooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A model of this name is registered.
    DuplicateName,
    /// Every slot is taken.
    Full,
    /// The handle names no slot or a slot never registered.
    InvalidHandle,
    /// The handle's model was unregistered (its slot may hold another now).
    StaleHandle,
    /// No model of this name.
    NotFound,
    /// The model is not resident on the NPU.
    NotLoaded,
    /// The model is resident on the NPU; unload it first.
    Loaded,
    /// The image's CRC-32 differs from the registered one.
    CrcMismatch {
        /// Registered CRC.
        expected: u32,
        /// CRC of the bytes given.
        actual: u32,
    },
    /// The NPU refused the model.
    Npu(NpuError),
    /// The description names no execution device.
    NoDevice,
    /// The model is for the CPU interpreter but has no image.
    NoImage,
}

impl RegistryError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            RegistryError::EmptyName | RegistryError::InvalidHandle => Errno::Inval,
            RegistryError::NameTooLong { .. } => Errno::Inval,
            RegistryError::DuplicateName => Errno::Exist,
            RegistryError::Full => Errno::NoSpc,
            RegistryError::StaleHandle | RegistryError::NotFound => Errno::NoEnt,
            RegistryError::NotLoaded => Errno::NoDev,
            RegistryError::Loaded => Errno::Busy,
            RegistryError::CrcMismatch { .. } => Errno::BadMsg,
            RegistryError::Npu(e) => e.to_errno(),
            RegistryError::NoDevice | RegistryError::NoImage => Errno::Inval,
        }
    }
}

/// CRC-32 (IEEE 802.3, reflected, polynomial `0xEDB8_8320`), as zlib computes it.
///
/// # Examples
///
/// ```
/// assert_eq!(synaptic_runtime::registry::crc32(b"123456789"), 0xCBF4_3926);
/// ```
pub fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[derive(Clone, Debug)]
struct Slot {
    generation: u16,
    info: Option<ModelInfo>,
    /// Service-time predictions, by [`Device::index`].
    service: [ServiceTime; 2],
    /// A newer version has the name ([`Registry::supersede`]).
    superseded: bool,
}

/// The model registry, `N` slots.
///
/// # Examples
///
/// ```
/// use synaptic_runtime::arena::{DType, TensorMeta};
/// use synaptic_runtime::device::DeviceMask;
/// use synaptic_runtime::registry::{ModelDesc, Registry, RegistryError};
///
/// let mut reg: Registry = Registry::new();
/// let desc = ModelDesc {
///     name: "kws",
///     version: 1,
///     input: TensorMeta::vector(DType::Int8, 490).unwrap(),
///     output: TensorMeta::vector(DType::Int8, 12).unwrap(),
///     flash_offset: 0x1000,
///     flash_size: 20_000,
///     sram_needed: 8_192,
///     crc32: 0,
///     devices: DeviceMask::NPU,
///     image: &[],
/// };
/// let h = reg.register(&desc).unwrap();
/// assert_eq!(reg.find("kws"), Ok(h));
/// reg.unregister(h).unwrap();
/// assert_eq!(reg.info(h).err(), Some(RegistryError::StaleHandle));
/// ```
#[derive(Clone, Debug)]
pub struct Registry<const N: usize = DEFAULT_MAX_MODELS> {
    slots: [Slot; N],
    loaded: Option<usize>,
}

impl<const N: usize> Default for Registry<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Registry<N> {
    const CAPACITY_FITS: () = assert!(N > 0 && N <= u16::MAX as usize, "1..=65535 models");

    /// An empty registry.
    pub fn new() -> Self {
        let () = Self::CAPACITY_FITS;
        Registry {
            slots: core::array::from_fn(|_| Slot {
                generation: 1,
                info: None,
                service: [ServiceTime::new(); 2],
                superseded: false,
            }),
            loaded: None,
        }
    }

    /// Capacity.
    pub const fn capacity(&self) -> usize {
        N
    }

    /// Registered models.
    pub fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.info.is_some()).count()
    }

    /// Whether no model is registered.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds a model; reuses the lowest free slot.
    ///
    /// # Errors
    ///
    /// [`RegistryError::EmptyName`], [`RegistryError::NameTooLong`],
    /// [`RegistryError::DuplicateName`], [`RegistryError::Full`];
    /// [`RegistryError::NoDevice`] for an empty device mask,
    /// [`RegistryError::NoImage`] for a CPU-interpreter model without an
    /// image.
    pub fn register(&mut self, desc: &ModelDesc<'_>) -> Result<ModelHandle, RegistryError> {
        if desc.name.is_empty() {
            return Err(RegistryError::EmptyName);
        }
        if desc.devices.is_empty() {
            return Err(RegistryError::NoDevice);
        }
        if desc.devices.contains(Device::CpuInterpreter) && desc.image.is_empty() {
            return Err(RegistryError::NoImage);
        }
        let name: String<MAX_NAME_LEN> =
            String::try_from(desc.name).map_err(|()| RegistryError::NameTooLong {
                len: desc.name.len(),
            })?;
        if self.find(desc.name).is_ok() {
            return Err(RegistryError::DuplicateName);
        }
        let index = self
            .slots
            .iter()
            .position(|s| s.info.is_none())
            .ok_or(RegistryError::Full)?;
        let slot = &mut self.slots[index];
        slot.info = Some(ModelInfo {
            name,
            version: desc.version,
            input: desc.input,
            output: desc.output,
            flash_offset: desc.flash_offset,
            flash_size: desc.flash_size,
            sram_needed: desc.sram_needed,
            crc32: desc.crc32,
            devices: desc.devices,
            image: desc.image,
            loaded: false,
        });
        slot.service = [ServiceTime::new(); 2];
        slot.superseded = false;
        Ok(ModelHandle {
            index: index as u16,
            generation: slot.generation,
        })
    }

    fn slot_index(&self, handle: ModelHandle) -> Result<usize, RegistryError> {
        let slot = self
            .slots
            .get(handle.index())
            .ok_or(RegistryError::InvalidHandle)?;
        if handle.generation == 0 || handle.generation > slot.generation {
            // Never issued (generations start at 1 and only grow).
            Err(RegistryError::InvalidHandle)
        } else if handle.generation < slot.generation {
            Err(RegistryError::StaleHandle)
        } else if slot.info.is_some() {
            Ok(handle.index())
        } else {
            Err(RegistryError::InvalidHandle)
        }
    }

    /// Removes a model; its handle becomes stale.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`];
    /// [`RegistryError::Loaded`] while the model is resident on the NPU.
    pub fn unregister(&mut self, handle: ModelHandle) -> Result<(), RegistryError> {
        let index = self.slot_index(handle)?;
        if self.loaded == Some(index) {
            return Err(RegistryError::Loaded);
        }
        let slot = &mut self.slots[index];
        slot.info = None;
        slot.generation = match slot.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
        Ok(())
    }

    /// Metadata of a model.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`].
    pub fn info(&self, handle: ModelHandle) -> Result<&ModelInfo, RegistryError> {
        let index = self.slot_index(handle)?;
        self.slots[index]
            .info
            .as_ref()
            .ok_or(RegistryError::InvalidHandle)
    }

    /// The service-time prediction of `handle` on `device` (see
    /// [`crate::predict`]); it starts empty when the model is registered
    /// and the scheduler feeds it every successful model step.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`].
    pub fn service_time(
        &self,
        handle: ModelHandle,
        device: Device,
    ) -> Result<ServiceTime, RegistryError> {
        let index = self.slot_index(handle)?;
        Ok(self.slots[index].service[device.index()])
    }

    /// Adds a measured service time of `handle` on `device` to its
    /// prediction (the scheduler calls this; a firmware may seed a
    /// prediction from a calibration run the same way).
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`].
    pub fn record_service_time(
        &mut self,
        handle: ModelHandle,
        device: Device,
        us: u64,
    ) -> Result<(), RegistryError> {
        self.record_service_sample(handle, device, |_| us)
    }

    /// As [`Registry::record_service_time`], with the measurement made
    /// from the prediction it joins: `sample` gets the current estimate
    /// (`None` before the first measurement) and returns the microseconds
    /// to record. One handle check where reading the estimate and then
    /// recording would make two (the scheduler's collection of a device
    /// step does this once per inference).
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`]
    /// (`sample` is not called).
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_runtime::arena::DType;
    /// use synaptic_runtime::device::Device;
    /// use synaptic_runtime::registry::{ModelDesc, Registry};
    /// let mut reg: Registry<2> = Registry::new();
    /// let model = reg.register(&ModelDesc::int8("m", &[16], 4).unwrap()).unwrap();
    /// reg.record_service_sample(model, Device::Npu, |estimate| {
    ///     assert_eq!(estimate, None);
    ///     800
    /// })
    /// .unwrap();
    /// reg.record_service_sample(model, Device::Npu, |estimate| {
    ///     assert_eq!(estimate, Some(800));
    ///     1_600
    /// })
    /// .unwrap();
    /// assert_eq!(reg.service_time(model, Device::Npu).unwrap().estimate_us(), Some(900));
    /// ```
    pub fn record_service_sample(
        &mut self,
        handle: ModelHandle,
        device: Device,
        sample: impl FnOnce(Option<u32>) -> u64,
    ) -> Result<(), RegistryError> {
        let index = self.slot_index(handle)?;
        let time = &mut self.slots[index].service[device.index()];
        time.record(sample(time.estimate_us()));
        Ok(())
    }

    /// The handle of the model called `name`.
    ///
    /// # Errors
    ///
    /// [`RegistryError::NotFound`].
    pub fn find(&self, name: &str) -> Result<ModelHandle, RegistryError> {
        self.iter()
            .find(|(h, info)| info.name.as_str() == name && !self.slots[h.index()].superseded)
            .map(|(h, _)| h)
            .ok_or(RegistryError::NotFound)
    }

    /// Gives up `handle`'s name to a newer version of the model, registered
    /// next: the model keeps its handle, its slot and whatever runs it
    /// (jobs already holding it finish on it) until it is unregistered, but
    /// [`find`](Self::find) no longer answers with it and a model of the
    /// same name may be registered (a hot swap). [`reinstate`](Self::reinstate)
    /// undoes it.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`].
    pub fn supersede(&mut self, handle: ModelHandle) -> Result<(), RegistryError> {
        let index = self.slot_index(handle)?;
        self.slots[index].superseded = true;
        Ok(())
    }

    /// Gives a superseded model its name back (a swap that did not happen).
    ///
    /// # Errors
    ///
    /// Handle errors; [`RegistryError::DuplicateName`] when another model
    /// has taken the name meanwhile.
    pub fn reinstate(&mut self, handle: ModelHandle) -> Result<(), RegistryError> {
        let index = self.slot_index(handle)?;
        if !self.slots[index].superseded {
            return Ok(());
        }
        let name = self.info(handle)?.name.clone();
        if self.find(&name).is_ok() {
            return Err(RegistryError::DuplicateName);
        }
        self.slots[index].superseded = false;
        Ok(())
    }

    /// Every registered model, in slot order.
    pub fn iter(&self) -> impl Iterator<Item = (ModelHandle, &ModelInfo)> + '_ {
        self.slots.iter().enumerate().filter_map(|(i, s)| {
            s.info.as_ref().map(|info| {
                (
                    ModelHandle {
                        index: i as u16,
                        generation: s.generation,
                    },
                    info,
                )
            })
        })
    }

    /// Writes up to `out.len()` handles in slot order; returns how many.
    pub fn list(&self, out: &mut [ModelHandle]) -> usize {
        let mut n = 0;
        for ((h, _), o) in self.iter().zip(out.iter_mut()) {
            *o = h;
            n += 1;
        }
        n
    }

    /// The model's description, and whether it is resident on `npu` (a
    /// [`Registry::load`] now would do nothing): one handle check for the
    /// scheduler's staging of a model step.
    // Inlined: it is on every inference's path (staging a model step).
    #[inline(always)]
    pub(crate) fn info_resident<D: NpuDevice + ?Sized>(
        &self,
        handle: ModelHandle,
        npu: &D,
    ) -> Result<(&ModelInfo, bool), RegistryError> {
        let index = self.slot_index(handle)?;
        let info = self.slots[index]
            .info
            .as_ref()
            .ok_or(RegistryError::InvalidHandle)?;
        Ok((info, self.is_resident(index, handle, npu)))
    }

    /// Whether slot `index`, which `handle` names, is the model on `npu`.
    fn is_resident<D: NpuDevice + ?Sized>(
        &self,
        index: usize,
        handle: ModelHandle,
        npu: &D,
    ) -> bool {
        self.loaded == Some(index) && npu.loaded_model() == Some(handle.raw())
    }

    /// Makes the model resident on `npu`, replacing any other; a no-op if it
    /// already is.
    ///
    /// # Errors
    ///
    /// Handle errors; [`RegistryError::Npu`] when the device refuses (the
    /// previously loaded model then stays recorded as loaded only if the
    /// device still reports it).
    pub fn load<D: NpuDevice + ?Sized>(
        &mut self,
        handle: ModelHandle,
        npu: &mut D,
    ) -> Result<(), RegistryError> {
        let index = self.slot_index(handle)?;
        if self.is_resident(index, handle, npu) {
            return Ok(());
        }
        let model = self.device_model(handle)?;
        let result = npu.load_model(&model);
        if let Some(prev) = self.loaded {
            let still = self.slots[prev].info.is_some()
                && npu.loaded_model()
                    == Some(
                        ModelHandle {
                            index: prev as u16,
                            generation: self.slots[prev].generation,
                        }
                        .raw(),
                    );
            if result.is_ok() || !still {
                self.set_loaded(prev, false);
                self.loaded = None;
            }
        }
        result.map_err(RegistryError::Npu)?;
        self.set_loaded(index, true);
        self.loaded = Some(index);
        Ok(())
    }

    /// The model as a device loads it (id = raw handle, tensors, flash
    /// location, image).
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`].
    pub fn device_model(&self, handle: ModelHandle) -> Result<NpuModel, RegistryError> {
        let info = self.info(handle)?;
        Ok(NpuModel {
            id: handle.raw(),
            input: info.input,
            output: info.output,
            flash_offset: info.flash_offset,
            flash_size: info.flash_size,
            image: info.image,
        })
    }

    fn set_loaded(&mut self, index: usize, loaded: bool) {
        if let Some(info) = self.slots[index].info.as_mut() {
            info.loaded = loaded;
        }
    }

    /// Removes the model from `npu`.
    ///
    /// # Errors
    ///
    /// Handle errors; [`RegistryError::NotLoaded`].
    pub fn unload<D: NpuDevice + ?Sized>(
        &mut self,
        handle: ModelHandle,
        npu: &mut D,
    ) -> Result<(), RegistryError> {
        let index = self.slot_index(handle)?;
        if self.loaded != Some(index) {
            return Err(RegistryError::NotLoaded);
        }
        npu.unload_model();
        self.set_loaded(index, false);
        self.loaded = None;
        Ok(())
    }

    /// Whether the model is resident on the NPU.
    ///
    /// # Errors
    ///
    /// [`RegistryError::InvalidHandle`], [`RegistryError::StaleHandle`].
    pub fn is_loaded(&self, handle: ModelHandle) -> Result<bool, RegistryError> {
        Ok(self.loaded == Some(self.slot_index(handle)?))
    }

    /// The resident model, if any.
    pub fn loaded(&self) -> Option<ModelHandle> {
        self.loaded.map(|i| ModelHandle {
            index: i as u16,
            generation: self.slots[i].generation,
        })
    }

    /// Replaces the resident model `old` with `new`. If the device refuses
    /// `new`, `old` is reloaded and stays resident.
    ///
    /// # Errors
    ///
    /// Handle errors for either; [`RegistryError::NotLoaded`] when `old` is
    /// not resident; [`RegistryError::Npu`] when `new` is refused.
    pub fn swap<D: NpuDevice + ?Sized>(
        &mut self,
        old: ModelHandle,
        new: ModelHandle,
        npu: &mut D,
    ) -> Result<(), RegistryError> {
        let old_index = self.slot_index(old)?;
        self.slot_index(new)?;
        if self.loaded != Some(old_index) {
            return Err(RegistryError::NotLoaded);
        }
        match self.load(new, npu) {
            Ok(()) => Ok(()),
            Err(e) => {
                if !self.is_loaded(old)? {
                    // Best effort: the old model was accepted before.
                    let _ = self.load(old, npu);
                }
                Err(e)
            }
        }
    }

    /// Checks a copy of the model image against its registered CRC-32.
    ///
    /// # Errors
    ///
    /// Handle errors; [`RegistryError::CrcMismatch`].
    pub fn verify_image(&self, handle: ModelHandle, image: &[u8]) -> Result<(), RegistryError> {
        let expected = self.info(handle)?.crc32;
        let actual = crc32(image);
        if actual == expected {
            Ok(())
        } else {
            Err(RegistryError::CrcMismatch { expected, actual })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int8_descriptions() {
        let d = ModelDesc::int8("kws", &[49, 10], 12).expect("desc");
        assert_eq!(
            (d.input.byte_len(), d.output.byte_len(), d.version),
            (490, 12, 1)
        );
        assert!(ModelDesc::int8("bad", &[49, 0], 12).is_err());
        assert!(ModelDesc::int8("bad", &[], 12).is_err());
    }
    use crate::arena::DType;
    use crate::npu::{NpuState, StubNpu};
    use crate::time::FakeClock;

    fn desc(name: &str, n_in: usize, n_out: usize) -> ModelDesc<'_> {
        ModelDesc {
            name,
            version: 3,
            input: TensorMeta::vector(DType::Int8, n_in).unwrap(),
            output: TensorMeta::vector(DType::Int8, n_out).unwrap(),
            flash_offset: 0x2000,
            flash_size: 4096,
            sram_needed: 1024,
            crc32: crc32(b"image"),
            devices: DeviceMask::NPU,
            image: &[],
        }
    }

    type Npu<'c> = StubNpu<&'c FakeClock, 64, 16>;

    #[test]
    fn a_superseded_model_keeps_its_handle_and_gives_up_its_name() {
        let mut reg: Registry<4> = Registry::new();
        let v1 = reg.register(&desc("kws", 8, 4)).unwrap();
        assert_eq!(
            reg.register(&desc("kws", 8, 4)),
            Err(RegistryError::DuplicateName)
        );
        reg.supersede(v1).unwrap();
        assert_eq!(reg.find("kws"), Err(RegistryError::NotFound));
        let v2 = reg.register(&desc("kws", 8, 4)).unwrap();
        assert_eq!(reg.find("kws"), Ok(v2));
        assert_eq!(reg.info(v1).unwrap().name.as_str(), "kws", "v1 still runs");
        // The name is v2's: v1 cannot take it back.
        assert_eq!(reg.reinstate(v1), Err(RegistryError::DuplicateName));
        reg.unregister(v2).unwrap();
        reg.reinstate(v1).unwrap();
        assert_eq!(reg.find("kws"), Ok(v1));
        // A slot reused after an unregister is not superseded.
        reg.supersede(v1).unwrap();
        reg.unregister(v1).unwrap();
        let again = reg.register(&desc("kws", 8, 4)).unwrap();
        assert_eq!(reg.find("kws"), Ok(again));
    }

    fn npu(clock: &FakeClock) -> Npu<'_> {
        let mut n = StubNpu::new(clock, 0);
        crate::npu::NpuDevice::init(&mut n).unwrap();
        n
    }

    #[test]
    fn service_times_are_per_model_and_device_and_start_empty_in_a_reused_slot() {
        let mut reg: Registry<2> = Registry::new();
        let a = reg.register(&desc("a", 4, 2)).unwrap();
        let b = reg.register(&desc("b", 4, 2)).unwrap();
        reg.record_service_time(a, Device::Npu, 500).unwrap();
        reg.record_service_time(a, Device::Npu, 900).unwrap();
        reg.record_service_time(b, Device::CpuInterpreter, 70)
            .unwrap();
        let t = reg.service_time(a, Device::Npu).unwrap();
        assert_eq!((t.estimate_us(), t.samples()), (Some(550), 2));
        assert_eq!(
            reg.service_time(a, Device::CpuInterpreter)
                .unwrap()
                .samples(),
            0
        );
        assert_eq!(
            reg.service_time(b, Device::CpuInterpreter)
                .unwrap()
                .estimate_us(),
            Some(70)
        );
        assert_eq!(
            reg.service_time(b, Device::Npu).unwrap().estimate_us(),
            None
        );
        // A new model in a's slot does not inherit a's figures; a's handle
        // is stale for reading and recording.
        reg.unregister(a).unwrap();
        let c = reg.register(&desc("c", 4, 2)).unwrap();
        assert_eq!(c.index(), a.index());
        assert_eq!(reg.service_time(c, Device::Npu).unwrap().samples(), 0);
        assert_eq!(
            reg.service_time(a, Device::Npu),
            Err(RegistryError::StaleHandle)
        );
        assert_eq!(
            reg.record_service_time(a, Device::Npu, 1),
            Err(RegistryError::StaleHandle)
        );
    }

    #[test]
    fn register_and_get_info() {
        let mut reg: Registry<4> = Registry::new();
        let h = reg.register(&desc("kws", 490, 12)).unwrap();
        let info = reg.info(h).unwrap();
        assert_eq!(info.name.as_str(), "kws");
        assert_eq!(info.version, 3);
        assert_eq!(info.input_size(), 490);
        assert_eq!(info.output_size(), 12);
        assert_eq!((info.flash_offset, info.flash_size), (0x2000, 4096));
        assert_eq!(info.sram_needed, 1024);
        assert!(!info.loaded);
        assert_ne!(h.raw(), ModelHandle::INVALID_RAW);
        assert_eq!(ModelHandle::from_raw(h.raw()), h);
    }

    #[test]
    fn name_errors_are_distinct() {
        let mut reg: Registry<4> = Registry::new();
        assert_eq!(reg.register(&desc("", 1, 1)), Err(RegistryError::EmptyName));
        let long = "abcdefghijabcdefghijabcdefghij12"; // 32 bytes
        assert_eq!(
            reg.register(&desc(long, 1, 1)),
            Err(RegistryError::NameTooLong { len: 32 })
        );
        assert!(reg.register(&desc(&long[..31], 1, 1)).is_ok());
        assert_eq!(
            reg.register(&desc(&long[..31], 2, 2)),
            Err(RegistryError::DuplicateName)
        );
        assert_eq!(reg.len(), 1);
    }

    #[test]
    fn full_registry_is_an_error() {
        let mut reg: Registry<2> = Registry::new();
        reg.register(&desc("a", 1, 1)).unwrap();
        reg.register(&desc("b", 1, 1)).unwrap();
        assert_eq!(reg.register(&desc("c", 1, 1)), Err(RegistryError::Full));
        assert_eq!(RegistryError::Full.to_errno(), Errno::NoSpc);
        assert_eq!(RegistryError::DuplicateName.to_errno(), Errno::Exist);
    }

    #[test]
    fn unregister_reuses_the_slot_and_rejects_the_stale_handle() {
        let mut reg: Registry<2> = Registry::new();
        let a = reg.register(&desc("a", 1, 1)).unwrap();
        let _b = reg.register(&desc("b", 1, 1)).unwrap();
        reg.unregister(a).unwrap();
        let c = reg.register(&desc("c", 1, 1)).unwrap();
        assert_eq!(c.index(), a.index());
        assert_ne!(c, a);
        assert_eq!(reg.info(a).err(), Some(RegistryError::StaleHandle));
        assert_eq!(reg.unregister(a), Err(RegistryError::StaleHandle));
        assert_eq!(reg.info(c).unwrap().name.as_str(), "c");
        assert_eq!(reg.find("a"), Err(RegistryError::NotFound));
    }

    #[test]
    fn bad_handles_are_rejected() {
        let mut reg: Registry<2> = Registry::new();
        let a = reg.register(&desc("a", 1, 1)).unwrap();
        assert_eq!(
            reg.info(ModelHandle::from_raw(ModelHandle::INVALID_RAW))
                .err(),
            Some(RegistryError::InvalidHandle)
        );
        // Out of range slot.
        assert_eq!(
            reg.info(ModelHandle::from_raw((1 << 16) | 7)).err(),
            Some(RegistryError::InvalidHandle)
        );
        // Empty slot never registered.
        assert_eq!(
            reg.info(ModelHandle::from_raw((1 << 16) | 1)).err(),
            Some(RegistryError::InvalidHandle)
        );
        // Generation from the future.
        assert_eq!(
            reg.info(ModelHandle::from_raw(a.raw() + (1 << 16))).err(),
            Some(RegistryError::InvalidHandle)
        );
    }

    #[test]
    fn find_and_list() {
        let mut reg: Registry<4> = Registry::new();
        let a = reg.register(&desc("person", 1, 1)).unwrap();
        let b = reg.register(&desc("kws", 1, 1)).unwrap();
        assert_eq!(reg.find("kws"), Ok(b));
        assert_eq!(reg.find("person"), Ok(a));
        assert_eq!(reg.find("kw"), Err(RegistryError::NotFound));
        let mut out = [ModelHandle::from_raw(0); 4];
        assert_eq!(reg.list(&mut out), 2);
        assert_eq!(&out[..2], &[a, b]);
        let mut one = [ModelHandle::from_raw(0); 1];
        assert_eq!(reg.list(&mut one), 1);
    }

    #[test]
    fn load_unload_and_is_loaded() {
        let clock = FakeClock::new(0);
        let mut n = npu(&clock);
        let mut reg: Registry<4> = Registry::new();
        let a = reg.register(&desc("a", 8, 4)).unwrap();
        let b = reg.register(&desc("b", 8, 4)).unwrap();
        reg.load(a, &mut n).unwrap();
        assert_eq!(reg.is_loaded(a), Ok(true));
        assert!(reg.info(a).unwrap().loaded);
        assert_eq!(crate::npu::NpuDevice::loaded_model(&n), Some(a.raw()));
        reg.load(b, &mut n).unwrap();
        assert_eq!(reg.is_loaded(a), Ok(false));
        assert!(!reg.info(a).unwrap().loaded);
        assert_eq!(reg.loaded(), Some(b));
        assert_eq!(reg.unregister(b), Err(RegistryError::Loaded));
        assert_eq!(reg.unload(a, &mut n), Err(RegistryError::NotLoaded));
        reg.unload(b, &mut n).unwrap();
        assert_eq!(crate::npu::NpuDevice::loaded_model(&n), None);
        reg.unregister(b).unwrap();
    }

    #[test]
    fn load_refused_by_the_npu_reports_its_error() {
        let clock = FakeClock::new(0);
        let mut n = npu(&clock);
        let mut reg: Registry<4> = Registry::new();
        let big = reg.register(&desc("big", 65, 4)).unwrap();
        assert_eq!(
            reg.load(big, &mut n),
            Err(RegistryError::Npu(NpuError::ModelTooLarge))
        );
        assert_eq!(reg.is_loaded(big), Ok(false));
        crate::npu::NpuDevice::suspend(&mut n).unwrap();
        let ok = reg.register(&desc("ok", 8, 4)).unwrap();
        let e = reg.load(ok, &mut n).unwrap_err();
        assert_eq!(
            e,
            RegistryError::Npu(NpuError::WrongState(NpuState::Suspended))
        );
        assert_eq!(e.to_errno(), Errno::Again);
    }

    #[test]
    fn swap_replaces_and_keeps_old_on_failure() {
        let clock = FakeClock::new(0);
        let mut n = npu(&clock);
        let mut reg: Registry<4> = Registry::new();
        let a = reg.register(&desc("a", 8, 4)).unwrap();
        let b = reg.register(&desc("b", 8, 4)).unwrap();
        let big = reg.register(&desc("big", 8, 17)).unwrap();
        assert_eq!(reg.swap(a, b, &mut n), Err(RegistryError::NotLoaded));
        reg.load(a, &mut n).unwrap();
        reg.swap(a, b, &mut n).unwrap();
        assert_eq!(reg.loaded(), Some(b));
        assert_eq!(
            reg.swap(b, big, &mut n),
            Err(RegistryError::Npu(NpuError::ModelTooLarge))
        );
        assert_eq!(reg.loaded(), Some(b));
        assert_eq!(crate::npu::NpuDevice::loaded_model(&n), Some(b.raw()));
    }

    #[test]
    fn crc32_known_answers_and_image_check() {
        assert_eq!(crc32(b""), 0);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        assert_eq!(
            crc32(b"The quick brown fox jumps over the lazy dog"),
            0x414F_A339
        );
        let mut reg: Registry<1> = Registry::new();
        let h = reg.register(&desc("m", 1, 1)).unwrap();
        assert_eq!(reg.verify_image(h, b"image"), Ok(()));
        assert_eq!(
            reg.verify_image(h, b"imagf"),
            Err(RegistryError::CrcMismatch {
                expected: crc32(b"image"),
                actual: crc32(b"imagf")
            })
        );
    }
}
