//! `syn_mem.h`: the tensor arena, tensor descriptors, the scratch pool.
//!
//! A tensor from `syn_mem_tensor_alloc()` is one arena block: the
//! `syn_tensor_t` descriptor first, its data from the next 16-byte boundary
//! (as in the reference). Persistent tensors are remembered (up to
//! [`crate::MAX_PERSISTENT_TENSORS`]) so that `syn_mem_tensor_free()` can
//! return them to the arena; the arena reclaims a freed block at once when
//! it is the newest of its region, otherwise at the next reset. Ephemeral
//! (and `SYN_MEM_SHARED`) tensors are reclaimed together by
//! `syn_mem_reset_ephemeral()`, which also releases every scratch buffer
//! still out (the reference's scratch pool resets with the ephemeral
//! region, so code written for it need not release).
//!
//! Memory handed to C is written by C through raw pointers between calls;
//! the Rust side touches arena bytes only inside these functions, with the
//! runtime lock held.

use core::ffi::{c_int, c_void};
use core::mem::{align_of, size_of};

use core::sync::atomic::{AtomicPtr, Ordering};

use synaptic_abi::Errno;
use synaptic_runtime::arena::{
    Arena, DType, Lifetime, MemStats, Shape, TensorMeta, ALIGN, MAX_DIMS,
};

use crate::platform;
use crate::state::{self, State};
use crate::types::{
    syn_mem_lifetime_t, syn_mem_stats_t, syn_npu_dtype_t, syn_tensor_t, RawDtype, RawLifetime,
};
use crate::{neg, BUSY, SCRATCH_SIZE};

/// The arena while a scheduler step runs ([`crate::infer`]'s `step`
/// publishes it, with the runtime lock held, and clears it afterwards). The
/// step borrows every part of the State but the arena, so a built-in stage
/// it runs (which cannot take the lock again) reaches the scratch pool
/// through this.
pub(crate) static STEP_ARENA: AtomicPtr<Arena<'static>> = AtomicPtr::new(core::ptr::null_mut());

/// Runs `f` over `len` bytes of the scratch pool, released afterwards; for
/// the built-in processors' working memory (none of it on the stack).
///
/// Called directly from C, it takes the buffer as
/// `syn_mem_scratch_acquire()` does and runs `f` with the lock released;
/// called from a pipeline step (the lock is held by this thread), it uses
/// the step's arena ([`STEP_ARENA`]).
///
/// # Errors
///
/// `-ENOMEM` when the pool cannot give `len` bytes, `-EBUSY` when the lock
/// is held and no step runs.
pub(crate) fn with_scratch<R>(len: usize, f: impl FnOnce(&mut [u8]) -> R) -> Result<R, Errno> {
    let ptr = syn_mem_scratch_acquire(len);
    if !ptr.is_null() {
        // SAFETY: the pool lent these `len` bytes to this call alone (they
        // stay valid and untouched by the runtime until released below).
        let bytes = unsafe { core::slice::from_raw_parts_mut(ptr.cast::<u8>(), len) };
        let r = f(bytes);
        syn_mem_scratch_release(ptr);
        return Ok(r);
    }
    if state::with(|_| ()).is_ok() {
        return Err(Errno::NoMem);
    }
    // The lock is held by this thread (the platform lock refuses re-entry,
    // other threads wait), so this runs inside a step.
    let arena = STEP_ARENA.load(Ordering::Acquire);
    if arena.is_null() {
        return Err(Errno::Busy);
    }
    // SAFETY: non-null only while `step` runs on this thread with the lock
    // held, and nothing else uses the arena during the step (the step
    // borrows the other State fields only).
    let arena = unsafe { &mut *arena };
    let token = arena.acquire_scratch(len).map_err(|_| Errno::NoMem)?;
    let r = match arena.scratch_mut(&token) {
        Ok(bytes) => Ok(f(&mut bytes[..len])),
        Err(_) => Err(Errno::NoMem),
    };
    let _ = arena.release_scratch(token);
    r
}

/// Bytes the descriptor takes at the start of an allocated block.
const DESCRIPTOR_SPACE: usize = size_of::<syn_tensor_t>().div_ceil(ALIGN) * ALIGN;

const _: () = assert!(align_of::<syn_tensor_t>() <= ALIGN);

/// The shape and element type described by `ndim` dimensions at `shape`.
///
/// # Safety
///
/// `shape` is NULL or points to `ndim` readable `u32`s.
pub(crate) unsafe fn meta_from_parts(
    shape: *const u32,
    ndim: u8,
    dtype: RawDtype,
) -> Result<TensorMeta, Errno> {
    if shape.is_null() || ndim == 0 || usize::from(ndim) > MAX_DIMS {
        return Err(Errno::Inval);
    }
    let dtype = dtype.dtype()?;
    // SAFETY: non-null, and the caller guarantees `ndim` (1..=4) readable values.
    let dims = unsafe { core::slice::from_raw_parts(shape, usize::from(ndim)) };
    let shape = Shape::new(dims).map_err(|_| Errno::Inval)?;
    let meta = TensorMeta::new(dtype, shape);
    // The byte length must fit the descriptor's size_t and the arena's usize.
    meta.shape
        .elements()
        .checked_mul(dtype.size())
        .ok_or(Errno::Inval)?;
    Ok(meta)
}

/// Fills a descriptor's geometry (not `data` or `lifetime`) from `meta`.
pub(crate) fn set_geometry(t: &mut syn_tensor_t, meta: TensorMeta) {
    let dims = meta.shape.dims();
    t.size = meta.byte_len();
    t.dtype = RawDtype::of(meta.dtype);
    t.ndim = dims.len() as u8;
    t.shape = [0; 4];
    t.shape[..dims.len()].copy_from_slice(dims);
}

/// The element type and shape a C descriptor stands for: its shape when
/// `ndim` is 1..=4 and the shape fits in `size`, or, with `ndim == 0`, a
/// vector of `size` bytes' worth of elements.
///
/// # Errors
///
/// [`Errno::Inval`] for an unknown dtype, a bad shape, or a shape larger
/// than `size`.
pub(crate) fn meta_of(t: &syn_tensor_t) -> Result<TensorMeta, Errno> {
    let dtype = t.dtype.dtype()?;
    if t.ndim == 0 {
        if t.size == 0 || t.size % dtype.size() != 0 {
            return Err(Errno::Inval);
        }
        return TensorMeta::vector(dtype, t.size / dtype.size()).map_err(|_| Errno::Inval);
    }
    let ndim = usize::from(t.ndim);
    if ndim > MAX_DIMS {
        return Err(Errno::Inval);
    }
    let shape = Shape::new(&t.shape[..ndim]).map_err(|_| Errno::Inval)?;
    let meta = TensorMeta::new(dtype, shape);
    let len = meta
        .shape
        .elements()
        .checked_mul(dtype.size())
        .ok_or(Errno::Inval)?;
    if len > t.size {
        return Err(Errno::Inval);
    }
    Ok(meta)
}

/// A descriptor for `meta` over `data`.
pub(crate) fn descriptor(
    meta: TensorMeta,
    data: *mut u8,
    lifetime: syn_mem_lifetime_t,
) -> syn_tensor_t {
    let mut t = syn_tensor_t {
        data: data.cast::<c_void>(),
        lifetime: RawLifetime::of(lifetime),
        ..syn_tensor_t::EMPTY
    };
    set_geometry(&mut t, meta);
    t
}

/// Copies `bytes` into a new ephemeral arena block and describes it with
/// `meta` (job results handed to C live until `syn_mem_reset_ephemeral()`).
pub(crate) fn ephemeral_copy(
    arena: &mut Arena<'static>,
    meta: TensorMeta,
    bytes: &[u8],
) -> Result<syn_tensor_t, Errno> {
    let block = TensorMeta::vector(DType::UInt8, bytes.len().max(1)).map_err(|_| Errno::Inval)?;
    let t = arena
        .alloc(block, Lifetime::Ephemeral)
        .map_err(|e| e.to_errno())?;
    let data = arena.data_mut(&t).map_err(|e| e.to_errno())?;
    data[..bytes.len()].copy_from_slice(bytes);
    Ok(descriptor(
        meta,
        data.as_mut_ptr(),
        syn_mem_lifetime_t::SYN_MEM_EPHEMERAL,
    ))
}

/// Puts the tensor arena over a caller-provided region, dropping every
/// tensor and scratch buffer of the previous arena. `syn_init()` does this
/// with the built-in region. The last `SYN_CAPI_SCRATCH_SIZE` bytes become
/// the scratch pool.
///
/// Returns 0, or `-EINVAL` for NULL, a zero size, or a region too small for
/// the scratch pool plus one tensor block.
///
/// # Safety
///
/// `arena_base` is NULL or valid for reads and writes of `arena_size`
/// bytes, used by nothing else, until the next `syn_mem_init()`, `syn_init()`
/// or `syn_shutdown()`.
#[no_mangle]
pub unsafe extern "C" fn syn_mem_init(arena_base: *mut c_void, arena_size: usize) -> c_int {
    if arena_base.is_null() || arena_size <= SCRATCH_SIZE + ALIGN {
        return neg(Errno::Inval);
    }
    state::with(|s| {
        s.forget_tensors();
        s.arena = None;
        // SAFETY: the caller lends the region for the arena's life (this
        // function's contract); the previous arena over another region was
        // dropped just above.
        let region =
            unsafe { core::slice::from_raw_parts_mut(arena_base.cast::<u8>(), arena_size) };
        match Arena::new(region, SCRATCH_SIZE) {
            Ok(arena) => {
                s.arena = Some(arena);
                0
            }
            Err(e) => neg(e.to_errno()),
        }
    })
    .unwrap_or(BUSY)
}

/// Reclaims every ephemeral tensor (and every scratch buffer still out);
/// persistent tensors stay. No effect before the arena exists.
#[no_mangle]
pub extern "C" fn syn_mem_reset_ephemeral() {
    let _ = state::with(|s| {
        let State { arena, scratch, .. } = s;
        let Some(arena) = arena.as_mut() else { return };
        for entry in scratch.iter_mut().rev() {
            if let Some((_, token)) = entry.take() {
                let _ = arena.release_scratch(token);
            }
        }
        arena.reset_ephemeral();
    });
}

/// Allocates a tensor, descriptor and data, in the arena.
///
/// Returns the descriptor, or NULL for a NULL `shape`, `ndim` outside
/// 1..=4, a zero dimension, an unknown `dtype` or `lifetime`, an exhausted
/// arena, no arena, or (persistent only) more than
/// `SYN_CAPI_MAX_PERSISTENT_TENSORS` persistent tensors alive.
/// `SYN_MEM_SHARED` allocates like `SYN_MEM_EPHEMERAL`.
///
/// # Safety
///
/// `shape` is NULL or points to `ndim` readable `u32`s.
#[no_mangle]
pub unsafe extern "C" fn syn_mem_tensor_alloc(
    shape: *const u32,
    ndim: u8,
    dtype: RawDtype,
    lifetime: RawLifetime,
) -> *mut syn_tensor_t {
    // SAFETY: forwarded contract: `shape` is NULL or `ndim` readable values.
    let Ok(meta) = (unsafe { meta_from_parts(shape, ndim, dtype) }) else {
        return core::ptr::null_mut();
    };
    let Ok(class) = lifetime.lifetime() else {
        return core::ptr::null_mut();
    };
    state::with(|s| alloc(s, meta, class).unwrap_or(core::ptr::null_mut()))
        .unwrap_or(core::ptr::null_mut())
}

fn alloc(s: &mut State, meta: TensorMeta, class: syn_mem_lifetime_t) -> Option<*mut syn_tensor_t> {
    let State {
        arena, persistent, ..
    } = s;
    let arena = arena.as_mut()?;
    let persistent_class = class == syn_mem_lifetime_t::SYN_MEM_PERSISTENT;
    let free_entry = persistent.iter().position(Option::is_none);
    if persistent_class && free_entry.is_none() {
        return None;
    }
    let bytes = DESCRIPTOR_SPACE.checked_add(meta.byte_len())?;
    let block = TensorMeta::vector(DType::UInt8, bytes).ok()?;
    let region = if persistent_class {
        Lifetime::Persistent
    } else {
        Lifetime::Ephemeral
    };
    let token = arena.alloc(block, region).ok()?;
    let memory = arena.data_mut(&token).ok()?.as_mut_ptr();
    // SAFETY: the block is `DESCRIPTOR_SPACE + byte_len` bytes, so the data
    // starts inside it (or one past its end for the zero-length case, which
    // Shape::new excludes).
    let data = unsafe { memory.add(DESCRIPTOR_SPACE) };
    let descriptor_ptr = memory.cast::<syn_tensor_t>();
    // SAFETY: the block starts on a 16-byte boundary (arena invariant) and
    // syn_tensor_t needs at most 16 (asserted above); it is at least
    // DESCRIPTOR_SPACE bytes long, and nothing else refers to it yet.
    unsafe { descriptor_ptr.write(descriptor(meta, data, class)) };
    if let (true, Some(i)) = (persistent_class, free_entry) {
        persistent[i] = Some((descriptor_ptr as usize, token));
    }
    Some(descriptor_ptr)
}

/// Frees a persistent tensor from `syn_mem_tensor_alloc()`. NULL, ephemeral
/// tensors and pointers this arena never returned are ignored.
#[no_mangle]
pub extern "C" fn syn_mem_tensor_free(tensor: *mut syn_tensor_t) {
    if tensor.is_null() {
        return;
    }
    let _ = state::with(|s| {
        let State {
            arena, persistent, ..
        } = s;
        let Some(arena) = arena.as_mut() else { return };
        let found = persistent
            .iter_mut()
            .find(|e| matches!(e, Some((addr, _)) if *addr == tensor as usize));
        if let Some(entry) = found {
            if let Some((_, token)) = entry.take() {
                let _ = arena.free(token);
            }
        }
    });
}

/// Fills a caller-owned descriptor's `size`, `dtype`, `ndim` and `shape`
/// (not `data` or `lifetime`).
///
/// Returns 0, or `-EINVAL` for a NULL pointer, `ndim` outside 1..=4, a zero
/// dimension, an unknown `dtype`, or a size that overflows.
///
/// # Safety
///
/// `tensor` is NULL or valid for writes; `shape` is NULL or points to
/// `ndim` readable `u32`s.
#[no_mangle]
pub unsafe extern "C" fn syn_mem_tensor_init(
    tensor: *mut syn_tensor_t,
    shape: *const u32,
    ndim: u8,
    dtype: RawDtype,
) -> c_int {
    if tensor.is_null() {
        return neg(Errno::Inval);
    }
    // SAFETY: forwarded contract on `shape`.
    match unsafe { meta_from_parts(shape, ndim, dtype) } {
        Ok(meta) => {
            // SAFETY: non-null and valid for writes (contract); every field
            // of syn_tensor_t is valid for any bit pattern, so reading the
            // old value first is defined.
            let t = unsafe { &mut *tensor };
            set_geometry(t, meta);
            0
        }
        Err(e) => neg(e),
    }
}

/// Takes `size` bytes (rounded up to 16) from the scratch pool.
///
/// Returns the buffer (16-byte aligned), or NULL for a zero size, an
/// exhausted pool, more than 8 buffers out, or no arena.
#[no_mangle]
pub extern "C" fn syn_mem_scratch_acquire(size: usize) -> *mut c_void {
    if size == 0 {
        return core::ptr::null_mut();
    }
    state::with(|s| {
        let State { arena, scratch, .. } = s;
        let arena = arena.as_mut()?;
        let slot = scratch.iter().position(Option::is_none)?;
        let token = arena.acquire_scratch(size).ok()?;
        let ptr = match arena.scratch_mut(&token) {
            Ok(bytes) => bytes.as_mut_ptr(),
            Err(_) => {
                let _ = arena.release_scratch(token);
                return None;
            }
        };
        scratch[slot] = Some((ptr as usize, token));
        Some(ptr.cast::<c_void>())
    })
    .ok()
    .flatten()
    .unwrap_or(core::ptr::null_mut())
}

/// Returns a scratch buffer to the pool. NULL and unknown pointers are ignored.
#[no_mangle]
pub extern "C" fn syn_mem_scratch_release(ptr: *mut c_void) {
    if ptr.is_null() {
        return;
    }
    let _ = state::with(|s| {
        let State { arena, scratch, .. } = s;
        let Some(arena) = arena.as_mut() else { return };
        let found = scratch
            .iter_mut()
            .find(|e| matches!(e, Some((addr, _)) if *addr == ptr as usize));
        if let Some(entry) = found {
            if let Some((_, token)) = entry.take() {
                let _ = arena.release_scratch(token);
            }
        }
    });
}

fn stats_of(m: MemStats) -> syn_mem_stats_t {
    syn_mem_stats_t {
        arena_total: m.total,
        arena_used: m.used,
        arena_peak: m.peak,
        scratch_total: m.scratch_total,
        scratch_used: m.scratch_used,
        alloc_count: m.allocation_count,
        reset_count: m.reset_count,
    }
}

/// Copies the arena statistics.
///
/// Returns 0, or `-EINVAL` for NULL or when there is no arena yet.
///
/// # Safety
///
/// `stats` is NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn syn_mem_get_stats(stats: *mut syn_mem_stats_t) -> c_int {
    if stats.is_null() {
        return neg(Errno::Inval);
    }
    match state::with(|s| s.arena.as_ref().map(|a| stats_of(a.stats()))) {
        Err(_) => BUSY,
        Ok(None) => neg(Errno::Inval),
        Ok(Some(v)) => {
            // SAFETY: non-null and valid for writes (contract).
            unsafe { stats.write(v) };
            0
        }
    }
}

/// Prints the arena statistics on the console.
#[no_mangle]
pub extern "C" fn syn_mem_print_stats() {
    match state::with(|s| s.arena.as_ref().map(Arena::stats)) {
        Ok(Some(m)) => platform::print(format_args!(
            "arena: {} of {} B used (persistent {}, ephemeral {}), peak {} B, scratch {} of {} B, {} allocations, {} resets",
            m.used,
            m.total,
            m.persistent_used,
            m.ephemeral_used,
            m.peak,
            m.scratch_used,
            m.scratch_total,
            m.allocation_count,
            m.reset_count
        )),
        Ok(None) => platform::print(format_args!("arena: not initialised")),
        Err(_) => {}
    }
}

/// `SYN_NPU_DTYPE_*` as the runtime's element type, for tests and callers.
pub fn dtype_of(dtype: syn_npu_dtype_t) -> DType {
    match dtype {
        syn_npu_dtype_t::SYN_NPU_DTYPE_INT8 => DType::Int8,
        syn_npu_dtype_t::SYN_NPU_DTYPE_UINT8 => DType::UInt8,
        syn_npu_dtype_t::SYN_NPU_DTYPE_INT16 => DType::Int16,
        syn_npu_dtype_t::SYN_NPU_DTYPE_FLOAT16 => DType::Float16,
        syn_npu_dtype_t::SYN_NPU_DTYPE_FLOAT32 => DType::Float32,
    }
}
