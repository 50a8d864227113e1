//! `syn_model.h`: the model registry.
//!
//! Handles are the registry's generation-checked handles, so a handle kept
//! across an unregister is rejected (`-EINVAL`) even after its slot holds
//! another model. `syn_model_get_info()` returns exactly the metadata that
//! was registered; the runtime derives each model's tensors from it: the
//! non-zero entries of `input_shape` / `output_shape` when there are any
//! (and then `input_size` / `output_size` must be 0 or agree), otherwise a
//! vector of `size / element size` elements.
//!
//! One model is resident on the NPU at a time (the stub NPU holds one):
//! loading a model replaces the resident one, and a pipeline's model is
//! loaded on demand when its job reaches the model stage.

use core::ffi::{c_char, c_int};

use synaptic_abi::Errno;
use synaptic_runtime::arena::{Shape, TensorMeta};
use synaptic_runtime::npu::{NpuDevice, NpuState};
use synaptic_runtime::registry::{ModelDesc, ModelHandle, RegistryError};

use crate::state::{self, State};
use crate::types::{syn_model_handle_t, syn_model_info_t, RawDtype, SYN_MODEL_INVALID};
use crate::{array_str, c_str, neg, BUSY};

/// The tensor a model's C metadata describes.
fn tensor_meta(dtype: RawDtype, shape: &[u8; 4], size: u32) -> Result<TensorMeta, Errno> {
    let dtype = dtype.dtype()?;
    let mut dims = [0u32; 4];
    let mut rank = 0;
    for &d in shape.iter().filter(|&&d| d != 0) {
        dims[rank] = u32::from(d);
        rank += 1;
    }
    let size = usize::try_from(size).map_err(|_| Errno::Inval)?;
    if rank == 0 {
        if size == 0 {
            // Unknown until the model is loaded (the reference accepts it):
            // a one-element placeholder.
            return TensorMeta::vector(dtype, 1).map_err(|_| Errno::Inval);
        }
        if size % dtype.size() != 0 {
            return Err(Errno::Inval);
        }
        return TensorMeta::vector(dtype, size / dtype.size()).map_err(|_| Errno::Inval);
    }
    let meta = TensorMeta::new(dtype, Shape::new(&dims[..rank]).map_err(|_| Errno::Inval)?);
    if size != 0 && size != meta.byte_len() {
        return Err(Errno::Inval);
    }
    Ok(meta)
}

/// `"major.minor.patch"` as `major << 16 | minor << 8 | patch` (each part
/// saturated to 255; missing or non-numeric parts count as 0).
fn version_number(version: &str) -> u32 {
    let mut parts = version
        .split('.')
        .map(|p| p.parse::<u32>().map_or(0, |v| v.min(255)));
    let mut next = || parts.next().unwrap_or(0);
    (next() << 16) | (next() << 8) | next()
}

/// Validates C metadata and turns it into the registry's description.
fn describe(info: &syn_model_info_t) -> Result<ModelDesc<'_>, Errno> {
    let name = array_str(&info.name)?;
    let version = array_str(&info.version)?;
    Ok(ModelDesc {
        name,
        version: version_number(version),
        input: tensor_meta(info.input_dtype, &info.input_shape, info.input_size)?,
        output: tensor_meta(info.output_dtype, &info.output_shape, info.output_size)?,
        flash_offset: info.flash_offset,
        flash_size: info.flash_size,
        sram_needed: info.sram_required,
        crc32: info.crc32,
        devices: synaptic_runtime::device::DeviceMask::NPU,
        image: &[],
    })
}

/// The C handle of a registry handle.
///
/// Default: `(generation - 1) << 16 | (slot + 1)`, so a fresh boot numbers
/// its models 1, 2, 3... as the reference does, and a slot reused after an
/// unregister gets a new value (the old handle stays invalid). With
/// `CONFIG_SYNAPTIC_REFERENCE_MODEL_HANDLES`: `slot + 1` always, the
/// reference's numbering, in which a handle kept across an unregister
/// names the slot's next model.
pub(crate) fn to_c(h: ModelHandle) -> syn_model_handle_t {
    if crate::REFERENCE_MODEL_HANDLES {
        return h.index() as u32 + 1;
    }
    h.raw().wrapping_sub(1 << 16).wrapping_add(1)
}

/// The registry handle a C handle stands for (the inverse of [`to_c`]); the
/// registry validates it on use.
pub(crate) fn from_c(s: &State, handle: syn_model_handle_t) -> ModelHandle {
    let invalid = ModelHandle::from_raw(ModelHandle::INVALID_RAW);
    if handle & 0xFFFF == 0 {
        // Slot part 0 is never issued: a raw value the registry refuses.
        return invalid;
    }
    if crate::REFERENCE_MODEL_HANDLES {
        if handle > 0xFFFF {
            return invalid;
        }
        let slot = handle as usize - 1;
        return s
            .registry
            .iter()
            .map(|(h, _)| h)
            .find(|h| h.index() == slot)
            .unwrap_or(invalid);
    }
    ModelHandle::from_raw(handle.wrapping_sub(1).wrapping_add(1 << 16))
}

/// A handle that names a registered model, or `-EINVAL`.
pub(crate) fn checked(s: &State, handle: syn_model_handle_t) -> Result<ModelHandle, Errno> {
    let h = from_c(s, handle);
    if handle == SYN_MODEL_INVALID || s.registry.info(h).is_err() {
        Err(Errno::Inval)
    } else {
        Ok(h)
    }
}

/// Registers a model; its metadata is copied.
///
/// Returns 0 and writes the handle, or: `-EINVAL` for NULL pointers, a name
/// that is empty, not NUL-terminated or not UTF-8, a version string without
/// NUL, an unknown dtype, or sizes and shapes that disagree; `-EEXIST` for
/// a name already registered; `-ENOMEM` when the registry is full. On
/// failure `*handle` is `SYN_MODEL_INVALID` (when `handle` is not NULL).
///
/// # Safety
///
/// `info` is NULL or valid for reads; `handle` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_model_register(
    info: *const syn_model_info_t,
    handle: *mut syn_model_handle_t,
) -> c_int {
    if info.is_null() || handle.is_null() {
        return neg(Errno::Inval);
    }
    // SAFETY: non-null and valid for reads (contract); every field of
    // syn_model_info_t is valid for any bit pattern.
    let info = unsafe { info.read() };
    let result = describe(&info).and_then(|desc| {
        state::with(|s| {
            let h = s.registry.register(&desc).map_err(|e| match e {
                RegistryError::DuplicateName => Errno::Exist,
                RegistryError::Full => Errno::NoMem,
                _ => Errno::Inval,
            })?;
            s.models[h.index()] = Some(info);
            Ok(to_c(h))
        })
        .unwrap_or(Err(Errno::Busy))
    });
    let (value, rc) = match result {
        Ok(h) => (h, 0),
        Err(e) => (SYN_MODEL_INVALID, neg(e)),
    };
    // SAFETY: non-null and valid for writes (contract).
    unsafe { handle.write(value) };
    rc
}

/// Removes a model (unloading it first when it is resident).
///
/// Returns 0, or `-EINVAL` for a handle that names no registered model.
#[no_mangle]
pub extern "C" fn syn_model_unregister(handle: syn_model_handle_t) -> c_int {
    state::with(|s| {
        let h = match checked(s, handle) {
            Ok(h) => h,
            Err(e) => return neg(e),
        };
        if s.registry.is_loaded(h) == Ok(true) {
            let State { registry, npu, .. } = s;
            if let Err(e) = registry.unload(h, npu) {
                return neg(e.to_errno());
            }
        }
        match s.registry.unregister(h) {
            Ok(()) => {
                s.models[h.index()] = None;
                0
            }
            Err(e) => neg(e.to_errno()),
        }
    })
    .unwrap_or(BUSY)
}

/// Copies a registered model's metadata.
///
/// Returns 0, or `-EINVAL` for NULL or an unregistered handle.
///
/// # Safety
///
/// `info` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_model_get_info(
    handle: syn_model_handle_t,
    info: *mut syn_model_info_t,
) -> c_int {
    if info.is_null() {
        return neg(Errno::Inval);
    }
    let found = state::with(|s| {
        let h = checked(s, handle).ok()?;
        s.models[h.index()]
    });
    match found {
        Err(_) => BUSY,
        Ok(None) => neg(Errno::Inval),
        Ok(Some(v)) => {
            // SAFETY: non-null and valid for writes (contract).
            unsafe { info.write(v) };
            0
        }
    }
}

/// Looks a model up by name.
///
/// Returns 0 and writes the handle, `-EINVAL` for NULL pointers or a name
/// longer than 31 bytes or not UTF-8, `-ENOENT` when no model has the name
/// (then `*handle` is `SYN_MODEL_INVALID`).
///
/// # Safety
///
/// `name` is NULL or a NUL-terminated string; `handle` is NULL or valid for
/// writes.
#[no_mangle]
pub unsafe extern "C" fn syn_model_get_by_name(
    name: *const c_char,
    handle: *mut syn_model_handle_t,
) -> c_int {
    if handle.is_null() {
        return neg(Errno::Inval);
    }
    // SAFETY: forwarded contract on `name`; at most 32 bytes are read.
    let name = match unsafe { c_str(name, 31) } {
        Ok(n) => n,
        Err(e) => return neg(e),
    };
    let (value, rc) = match state::with(|s| s.registry.find(name)) {
        Err(_) => (SYN_MODEL_INVALID, BUSY),
        Ok(Ok(h)) => (to_c(h), 0),
        Ok(Err(_)) => (SYN_MODEL_INVALID, neg(Errno::NoEnt)),
    };
    // SAFETY: non-null and valid for writes (contract).
    unsafe { handle.write(value) };
    rc
}

/// Writes up to `max` registered handles, in slot order, and their number.
///
/// Returns 0, or `-EINVAL` for NULL pointers.
///
/// # Safety
///
/// `handles` is NULL or valid for `max` writes; `count` is NULL or valid
/// for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_model_list(
    handles: *mut syn_model_handle_t,
    count: *mut u8,
    max: u8,
) -> c_int {
    if handles.is_null() || count.is_null() {
        return neg(Errno::Inval);
    }
    let listed = state::with(|s| {
        let mut all = [SYN_MODEL_INVALID; crate::MAX_MODELS];
        let mut n = 0;
        for ((h, _), out) in s.registry.iter().zip(all.iter_mut()) {
            *out = to_c(h);
            n += 1;
        }
        (all, n)
    });
    let Ok((all, n)) = listed else { return BUSY };
    let n = n.min(usize::from(max));
    // SAFETY: `handles` is valid for `max` writes and n <= max (contract).
    let out = unsafe { core::slice::from_raw_parts_mut(handles, n) };
    out.copy_from_slice(&all[..n]);
    // SAFETY: non-null and valid for writes (contract); n <= MAX_MODELS < 256.
    unsafe { count.write(n as u8) };
    0
}

/// Makes a registered model resident on the NPU (replacing the resident one).
///
/// Returns 0, `-EINVAL` for an unregistered handle, `-EALREADY` when it is
/// resident, or the NPU's errno (`-E2BIG` / `-ENOTSUP` for tensors the NPU
/// cannot take). Before `syn_hal_npu_init()` it powers the NPU up first,
/// as the reference loads without an initialised device.
#[no_mangle]
pub extern "C" fn syn_model_load(handle: syn_model_handle_t) -> c_int {
    state::with(|s| {
        let h = match checked(s, handle) {
            Ok(h) => h,
            Err(e) => return neg(e),
        };
        if s.registry.is_loaded(h) == Ok(true) {
            return neg(Errno::Already);
        }
        let State {
            registry,
            npu,
            raw_model,
            ..
        } = s;
        // The reference loads before the NPU is initialised: power it up.
        if npu.state() == NpuState::Off {
            if let Err(e) = npu.init() {
                return neg(e.to_errno());
            }
        }
        match registry.load(h, npu) {
            Ok(()) => {
                *raw_model = None;
                0
            }
            Err(e) => neg(e.to_errno()),
        }
    })
    .unwrap_or(BUSY)
}

/// Removes a model from the NPU.
///
/// Returns 0, `-EINVAL` for an unregistered handle, `-EALREADY` when it is
/// not resident.
#[no_mangle]
pub extern "C" fn syn_model_unload(handle: syn_model_handle_t) -> c_int {
    state::with(|s| {
        let h = match checked(s, handle) {
            Ok(h) => h,
            Err(e) => return neg(e),
        };
        if s.registry.is_loaded(h) != Ok(true) {
            return neg(Errno::Already);
        }
        let State { registry, npu, .. } = s;
        match registry.unload(h, npu) {
            Ok(()) => 0,
            Err(e) => neg(e.to_errno()),
        }
    })
    .unwrap_or(BUSY)
}

/// Whether a model is resident on the NPU (false for bad handles).
#[no_mangle]
pub extern "C" fn syn_model_is_loaded(handle: syn_model_handle_t) -> bool {
    state::with(|s| {
        checked(s, handle)
            .map(|h| s.registry.is_loaded(h) == Ok(true))
            .unwrap_or(false)
    })
    .unwrap_or(false)
}

/// Replaces the resident model `old_handle` with `new_handle`; when the NPU
/// refuses the new one, the old one is reloaded and stays resident.
///
/// Returns 0, `-EINVAL` for an unregistered handle or when `old_handle` is
/// not the resident model, or the NPU's errno.
#[no_mangle]
pub extern "C" fn syn_model_swap(
    old_handle: syn_model_handle_t,
    new_handle: syn_model_handle_t,
) -> c_int {
    state::with(|s| {
        let (old, new) = match (checked(s, old_handle), checked(s, new_handle)) {
            (Ok(o), Ok(n)) => (o, n),
            _ => return neg(Errno::Inval),
        };
        let State { registry, npu, .. } = s;
        match registry.swap(old, new, npu) {
            Ok(()) => 0,
            Err(RegistryError::NotLoaded) => neg(Errno::Inval),
            Err(e) => neg(e.to_errno()),
        }
    })
    .unwrap_or(BUSY)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_handles_number_a_fresh_boot_from_one() {
        if crate::REFERENCE_MODEL_HANDLES {
            return;
        }
        let first = ModelHandle::from_raw(1 << 16);
        assert_eq!(to_c(first), 1);
        assert_eq!(to_c(ModelHandle::from_raw((1 << 16) | 3)), 4);
        // A slot's second model has another value.
        let reused = ModelHandle::from_raw((2 << 16) | 3);
        assert_eq!(to_c(reused), 0x1_0004);
    }

    #[test]
    fn version_strings_become_numbers() {
        assert_eq!(version_number("1.2.3"), 0x01_02_03);
        assert_eq!(version_number("2"), 0x02_00_00);
        assert_eq!(version_number("1.x.300"), 0x01_00_FF);
        assert_eq!(version_number(""), 0);
    }

    #[test]
    fn shapes_and_sizes_must_agree() {
        let int8 = RawDtype(0);
        let m = tensor_meta(int8, &[1, 16, 16, 3], 0).unwrap();
        assert_eq!(m.byte_len(), 768);
        assert_eq!(tensor_meta(int8, &[1, 16, 16, 3], 768).unwrap(), m);
        assert_eq!(tensor_meta(int8, &[1, 16, 16, 3], 767), Err(Errno::Inval));
        assert_eq!(tensor_meta(int8, &[0; 4], 10).unwrap().byte_len(), 10);
        // Unknown size and shape: accepted, as a one-element placeholder.
        assert_eq!(tensor_meta(int8, &[0; 4], 0).unwrap().byte_len(), 1);
        let float32 = RawDtype(4);
        assert_eq!(tensor_meta(float32, &[0; 4], 10), Err(Errno::Inval));
        assert_eq!(tensor_meta(RawDtype(9), &[0; 4], 10), Err(Errno::Inval));
    }
}
