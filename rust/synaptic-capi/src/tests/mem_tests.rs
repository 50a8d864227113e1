use std::boxed::Box;
use std::vec;

use synaptic_runtime::arena::DType;

use super::host::{console, fresh};
use super::*;
use crate::api::syn_init;
use crate::mem::*;

const INT8: RawDtype = RawDtype::of(DType::Int8);
const FLOAT32: RawDtype = RawDtype::of(DType::Float32);
const PERSISTENT: RawLifetime = RawLifetime::of(syn_mem_lifetime_t::SYN_MEM_PERSISTENT);
const EPHEMERAL: RawLifetime = RawLifetime::of(syn_mem_lifetime_t::SYN_MEM_EPHEMERAL);
const SHARED: RawLifetime = RawLifetime::of(syn_mem_lifetime_t::SYN_MEM_SHARED);

fn alloc(shape: &[u32], dtype: RawDtype, lifetime: RawLifetime) -> *mut syn_tensor_t {
    // SAFETY: `shape` holds `shape.len()` values.
    unsafe { syn_mem_tensor_alloc(shape.as_ptr(), shape.len() as u8, dtype, lifetime) }
}

fn stats() -> syn_mem_stats_t {
    let mut s = syn_mem_stats_t::default();
    // SAFETY: `s` is a live local.
    assert_eq!(unsafe { syn_mem_get_stats(&mut s) }, 0);
    s
}

#[test]
fn init_rejects_null_zero_and_small_regions() {
    let _t = fresh();
    let mut region = [0u8; 64];
    // SAFETY: NULL is allowed and refused; the others are live buffers.
    unsafe {
        assert_eq!(syn_mem_init(core::ptr::null_mut(), 4096), err(Errno::Inval));
        assert_eq!(
            syn_mem_init(region.as_mut_ptr().cast(), 0),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_mem_init(region.as_mut_ptr().cast(), region.len()),
            err(Errno::Inval)
        );
    }
}

#[test]
fn alloc_refuses_bad_arguments_and_works_without_an_arena_never() {
    let _t = fresh();
    assert!(alloc(&[4], INT8, EPHEMERAL).is_null(), "no arena yet");
    assert_eq!(syn_init(), 0);
    // SAFETY: NULL shape is allowed and refused.
    let null_shape = unsafe { syn_mem_tensor_alloc(core::ptr::null(), 1, INT8, EPHEMERAL) };
    assert!(null_shape.is_null());
    assert!(alloc(&[], INT8, EPHEMERAL).is_null());
    assert!(alloc(&[1, 1, 1, 1, 1], INT8, EPHEMERAL).is_null());
    assert!(alloc(&[4, 0], INT8, EPHEMERAL).is_null());
    assert!(alloc(&[4], RawDtype(9), EPHEMERAL).is_null());
    assert!(alloc(&[4], INT8, RawLifetime(3)).is_null());
    assert!(alloc(&[u32::MAX, u32::MAX], FLOAT32, EPHEMERAL).is_null());
    assert!(
        alloc(&[1 << 20], INT8, EPHEMERAL).is_null(),
        "larger than the arena"
    );
    assert_eq!(stats().alloc_count, 0);
}

#[test]
fn alloc_fills_the_descriptor_and_aligns_the_data() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let t = alloc(&[1, 4, 4, 3], FLOAT32, EPHEMERAL);
    assert!(!t.is_null());
    // SAFETY: a descriptor the arena just returned.
    let d = unsafe { *t };
    assert_eq!(d.size, 4 * 4 * 3 * 4);
    assert_eq!(d.dtype, FLOAT32);
    assert_eq!(d.ndim, 4);
    assert_eq!(d.shape, [1, 4, 4, 3]);
    assert_eq!(d.lifetime, EPHEMERAL);
    assert_eq!(d.data as usize % 16, 0);
    assert!(d.data as usize >= t as usize + core::mem::size_of::<syn_tensor_t>());
    // The data is writable.
    // SAFETY: `size` bytes of arena memory belong to this tensor.
    unsafe { core::ptr::write_bytes(d.data.cast::<u8>(), 0xA5, d.size) };
    let s = stats();
    assert_eq!(s.alloc_count, 1);
    assert!(s.arena_used >= d.size);
    let shared = alloc(&[8], INT8, SHARED);
    // SAFETY: a descriptor the arena just returned.
    assert_eq!(unsafe { (*shared).lifetime }, SHARED);
}

#[test]
fn ephemeral_reset_keeps_persistent_tensors() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let p = alloc(&[32], INT8, PERSISTENT);
    let e = alloc(&[32], INT8, EPHEMERAL);
    assert!(!p.is_null() && !e.is_null());
    let used = stats().arena_used;
    syn_mem_reset_ephemeral();
    let s = stats();
    assert_eq!(s.reset_count, 1);
    assert!(s.arena_used < used);
    assert!(s.arena_used > 0, "the persistent block stays");
    // The ephemeral region is reused from its start.
    let e2 = alloc(&[32], INT8, EPHEMERAL);
    assert_eq!(e2, e);
    assert_eq!(s.arena_peak, used);
}

#[test]
fn freeing_the_newest_persistent_tensor_reclaims_it() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    let before = stats().arena_used;
    let p = alloc(&[100], INT8, PERSISTENT);
    assert!(stats().arena_used > before);
    syn_mem_tensor_free(core::ptr::null_mut());
    let mut foreign = syn_tensor_t::EMPTY;
    syn_mem_tensor_free(&mut foreign);
    syn_mem_tensor_free(p);
    assert_eq!(stats().arena_used, before);
    // Freeing twice is ignored.
    syn_mem_tensor_free(p);
    assert_eq!(stats().arena_used, before);
}

#[test]
fn persistent_tensors_are_bounded() {
    let _t = fresh();
    assert_eq!(syn_init(), 0);
    for _ in 0..crate::MAX_PERSISTENT_TENSORS {
        assert!(!alloc(&[1], INT8, PERSISTENT).is_null());
    }
    assert!(alloc(&[1], INT8, PERSISTENT).is_null());
    assert!(
        !alloc(&[1], INT8, EPHEMERAL).is_null(),
        "ephemeral is not tracked"
    );
}

#[test]
fn tensor_init_checks_its_arguments() {
    let _t = fresh();
    let mut t = syn_tensor_t::EMPTY;
    let shape = [2u32, 3];
    // SAFETY: live locals; NULLs are allowed and refused.
    unsafe {
        assert_eq!(
            syn_mem_tensor_init(core::ptr::null_mut(), shape.as_ptr(), 2, INT8),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_mem_tensor_init(&mut t, core::ptr::null(), 2, INT8),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_mem_tensor_init(&mut t, shape.as_ptr(), 0, INT8),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_mem_tensor_init(&mut t, shape.as_ptr(), 5, INT8),
            err(Errno::Inval)
        );
        assert_eq!(
            syn_mem_tensor_init(&mut t, shape.as_ptr(), 2, RawDtype(7)),
            err(Errno::Inval)
        );
        assert_eq!(syn_mem_tensor_init(&mut t, shape.as_ptr(), 2, FLOAT32), 0);
    }
    assert_eq!(
        (t.size, t.ndim, t.shape, t.dtype),
        (24, 2, [2, 3, 0, 0], FLOAT32)
    );
    assert!(t.data.is_null(), "data is the caller's");
}

#[test]
fn scratch_is_aligned_bounded_and_released_by_the_ephemeral_reset() {
    let _t = fresh();
    assert!(syn_mem_scratch_acquire(16).is_null(), "no arena yet");
    assert_eq!(syn_init(), 0);
    assert!(syn_mem_scratch_acquire(0).is_null());
    assert!(syn_mem_scratch_acquire(crate::SCRATCH_SIZE + 1).is_null());
    let a = syn_mem_scratch_acquire(100);
    let b = syn_mem_scratch_acquire(100);
    assert!(!a.is_null() && !b.is_null());
    assert_eq!(a as usize % 16, 0);
    assert_eq!(stats().scratch_used, 224);
    syn_mem_scratch_release(b);
    assert_eq!(stats().scratch_used, 112);
    syn_mem_scratch_release(core::ptr::null_mut());
    syn_mem_scratch_release(b);
    assert_eq!(stats().scratch_used, 112, "unknown pointers are ignored");
    let _c = syn_mem_scratch_acquire(16);
    syn_mem_reset_ephemeral();
    assert_eq!(stats().scratch_used, 0);
}

#[test]
fn stats_need_a_pointer_and_an_arena() {
    let _t = fresh();
    let mut s = syn_mem_stats_t::default();
    // SAFETY: NULL is allowed and refused; `s` is a live local.
    unsafe {
        assert_eq!(syn_mem_get_stats(core::ptr::null_mut()), err(Errno::Inval));
        assert_eq!(syn_mem_get_stats(&mut s), err(Errno::Inval));
    }
    assert_eq!(syn_init(), 0);
    let s = stats();
    assert_eq!(s.scratch_total, crate::SCRATCH_SIZE);
    assert_eq!(s.arena_total, crate::ARENA_SIZE - crate::SCRATCH_SIZE);
}

#[test]
fn a_caller_region_becomes_the_arena() {
    let _t = fresh();
    let region: &'static mut [u8] = Box::leak(vec![0u8; 8192].into_boxed_slice());
    let (start, end) = (
        region.as_ptr() as usize,
        region.as_ptr() as usize + region.len(),
    );
    // SAFETY: a leaked, 'static buffer lent to the arena.
    let rc = unsafe { syn_mem_init(region.as_mut_ptr().cast(), region.len()) };
    assert_eq!(rc, 0);
    let t = alloc(&[64], INT8, EPHEMERAL);
    assert!((start..end).contains(&(t as usize)));
    assert!(stats().arena_total <= 8192 - crate::SCRATCH_SIZE);
}

#[test]
fn print_stats_reports_the_arena() {
    let _t = fresh();
    syn_mem_print_stats();
    assert_eq!(syn_init(), 0);
    let _ = alloc(&[32], INT8, PERSISTENT);
    syn_mem_print_stats();
    let lines = console();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0], "arena: not initialised");
    let block = (core::mem::size_of::<syn_tensor_t>() + 32).div_ceil(16) * 16;
    let expected = std::format!("arena: {block} of 8192 B used (persistent {block}, ephemeral 0), peak {block} B, scratch 0 of 2048 B, 1 allocations, 0 resets");
    assert_eq!(lines[1], expected);
}
