//! Suite `mem`: the tensor arena's allocation, alignment, lifetimes, resets,
//! staleness, statistics and errors.
//!
//! Every case builds its own arena over a small 16-byte aligned local buffer
//! (at most 1 KB), so sizes in the checks are exact.

use synaptic_abi::Errno;
use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::arena::{
    Arena, ArenaError, DType, Lifetime, Shape, Tensor, TensorMeta, TensorMut, TensorRef, ALIGN,
};

cases![
    dtype_sizes,
    shape_rejects_empty_zero_overflow_and_rank_five,
    init_aligns_a_misaligned_buffer,
    init_rejects_a_buffer_smaller_than_the_scratch_pool,
    every_tensor_is_16_byte_aligned,
    data_has_exact_length_and_round_trips,
    tensors_do_not_overlap,
    exhaustion_is_an_error_and_allocates_nothing,
    exact_fit_fills_the_arena,
    reset_ephemeral_keeps_persistent_data,
    stale_ephemeral_descriptor_is_rejected_after_reset,
    reset_all_invalidates_persistent_tensors_and_scratch,
    free_of_the_newest_allocation_reclaims_immediately,
    stats_track_peak_and_allocation_count,
    external_tensor_wraps_without_copy,
    input_output_gives_disjoint_views_in_either_order,
    scratch_out_of_order_release_reclaims_when_younger_are_back,
    scratch_depth_is_bounded,
    errors_map_to_errno,
];

/// A 16-byte aligned backing buffer, so sizes in the checks are exact.
#[repr(align(16))]
pub(crate) struct Backing<const N: usize>(pub(crate) [u8; N]);

impl<const N: usize> Backing<N> {
    pub(crate) const fn new() -> Self {
        Backing([0; N])
    }
}

pub(crate) fn meta(dtype: DType, dims: &[u32]) -> Result<TensorMeta, ArenaError> {
    Ok(TensorMeta::new(dtype, Shape::new(dims)?))
}

fn addr(arena: &Arena<'_>, t: &Tensor) -> Option<usize> {
    arena.data(t).ok().map(|d| d.as_ptr() as usize)
}

/// Element sizes of every dtype, and a rank-4 tensor's byte length.
pub fn dtype_sizes() -> Outcome {
    check_eq!(DType::Int8.size(), 1);
    check_eq!(DType::UInt8.size(), 1);
    check_eq!(DType::Int16.size(), 2);
    check_eq!(DType::Float16.size(), 2);
    check_eq!(DType::Float32.size(), 4);
    check_eq!(ok!(meta(DType::Float32, &[2, 3, 4, 5])).byte_len(), 480);
    Ok(())
}

/// A shape needs 1 to 4 non-zero dimensions whose product fits in `u32`.
pub fn shape_rejects_empty_zero_overflow_and_rank_five() -> Outcome {
    check!(Shape::new(&[]) == Err(ArenaError::InvalidShape));
    check!(Shape::new(&[4, 0]) == Err(ArenaError::InvalidShape));
    check!(Shape::new(&[1, 2, 3, 4, 5]) == Err(ArenaError::InvalidShape));
    check!(Shape::new(&[u32::MAX, 2]) == Err(ArenaError::InvalidShape));
    check!(Shape::vector(0) == Err(ArenaError::InvalidShape));
    let s = ok!(Shape::new(&[1, 2, 3, 4]));
    check!(s.dims() == [1, 2, 3, 4]);
    check_eq!(s.rank(), 4);
    check_eq!(s.elements(), 24);
    Ok(())
}

/// The arena skips leading bytes up to a 16-byte boundary and trailing
/// bytes past the last one.
pub fn init_aligns_a_misaligned_buffer() -> Outcome {
    let mut b = Backing::<256>::new();
    let arena: Arena = ok!(Arena::new(&mut b.0[3..], 0));
    // 253 bytes starting 3 past a boundary: 13 bytes of pad, 240 usable.
    check_eq!(arena.stats().total, 240);
    check_eq!(arena.stats().used, 0);
    check_eq!(arena.available(), 240);
    Ok(())
}

/// A scratch pool larger than the buffer is refused; one exactly as large
/// leaves no tensor space.
pub fn init_rejects_a_buffer_smaller_than_the_scratch_pool() -> Outcome {
    let mut b = Backing::<64>::new();
    check!(Arena::<'_, 8>::new(&mut b.0, 80).err() == Some(ArenaError::BufferTooSmall));
    let arena: Arena = ok!(Arena::new(&mut b.0, 64));
    check_eq!(arena.stats().total, 0);
    check_eq!(arena.stats().scratch_total, 64);
    Ok(())
}

/// Mixed ephemeral and persistent tensors of odd sizes all start on a
/// 16-byte boundary of the real address, even over a misaligned buffer.
pub fn every_tensor_is_16_byte_aligned() -> Outcome {
    let mut b = Backing::<1024>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0[5..], 0));
    let mut tensors: heapless::Vec<Tensor, 6> = heapless::Vec::new();
    for (i, n) in [1u32, 3, 17, 5, 33, 2].iter().enumerate() {
        let life = if i % 2 == 0 {
            Lifetime::Ephemeral
        } else {
            Lifetime::Persistent
        };
        let t = ok!(arena.alloc(ok!(meta(DType::Int8, &[*n])), life));
        check!(tensors.push(t).is_ok());
    }
    for t in &tensors {
        check_eq!(some!(addr(&arena, t)) % ALIGN, 0);
        check_eq!(t.offset() % ALIGN, 0);
    }
    Ok(())
}

/// A tensor's data is exactly its byte length and keeps what is written.
pub fn data_has_exact_length_and_round_trips() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let t = ok!(arena.alloc(ok!(meta(DType::Int16, &[3, 5])), Lifetime::Ephemeral));
    check_eq!(ok!(arena.data(&t)).len(), 30);
    ok!(arena.data_mut(&t)).fill(0xA5);
    check!(ok!(arena.data(&t)).iter().all(|&x| x == 0xA5));
    let v = ok!(arena.view(&t));
    check!(v.meta().shape.dims() == [3, 5]);
    check!(v.lifetime() == Lifetime::Ephemeral);
    Ok(())
}

/// Ephemeral tensors stack up from the start, persistent ones down from the
/// end, and writing one never changes another.
pub fn tensors_do_not_overlap() -> Outcome {
    let mut b = Backing::<512>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let a = ok!(arena.alloc(ok!(meta(DType::UInt8, &[20])), Lifetime::Ephemeral));
    let p = ok!(arena.alloc(ok!(meta(DType::UInt8, &[20])), Lifetime::Persistent));
    let c = ok!(arena.alloc(ok!(meta(DType::UInt8, &[20])), Lifetime::Ephemeral));
    ok!(arena.data_mut(&a)).fill(1);
    ok!(arena.data_mut(&p)).fill(2);
    ok!(arena.data_mut(&c)).fill(3);
    check!(ok!(arena.data(&a)).iter().all(|&x| x == 1));
    check!(ok!(arena.data(&p)).iter().all(|&x| x == 2));
    check!(ok!(arena.data(&c)).iter().all(|&x| x == 3));
    check_eq!(c.offset() - a.offset(), 32);
    check_eq!(p.offset(), 512 - 32);
    Ok(())
}

/// A request larger than the free space fails with the rounded size and the
/// free bytes, and changes nothing.
pub fn exhaustion_is_an_error_and_allocates_nothing() -> Outcome {
    let mut b = Backing::<128>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let _a = ok!(arena.alloc(ok!(meta(DType::Int8, &[100])), Lifetime::Ephemeral));
    let before = arena.stats();
    check!(
        arena.alloc(ok!(meta(DType::Int8, &[17])), Lifetime::Persistent)
            == Err(ArenaError::Exhausted {
                requested: 32,
                available: 16
            })
    );
    check!(arena.stats() == before);
    check!(arena
        .alloc(ok!(meta(DType::Int8, &[16])), Lifetime::Persistent)
        .is_ok());
    check_eq!(arena.available(), 0);
    Ok(())
}

/// A tensor of exactly the arena's size fits; then not one more byte does.
pub fn exact_fit_fills_the_arena() -> Outcome {
    let mut b = Backing::<64>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let _t = ok!(arena.alloc(ok!(meta(DType::Float32, &[16])), Lifetime::Ephemeral));
    check_eq!(arena.stats().used, 64);
    check!(matches!(
        arena.alloc(ok!(meta(DType::Int8, &[1])), Lifetime::Ephemeral),
        Err(ArenaError::Exhausted { .. })
    ));
    Ok(())
}

/// `reset_ephemeral` frees activations and keeps weights, bytes included.
pub fn reset_ephemeral_keeps_persistent_data() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let w = ok!(arena.alloc(ok!(meta(DType::Int8, &[8])), Lifetime::Persistent));
    ok!(arena.data_mut(&w)).copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let _e = ok!(arena.alloc(ok!(meta(DType::Int8, &[64])), Lifetime::Ephemeral));
    arena.reset_ephemeral();
    let s = arena.stats();
    check_eq!(s.ephemeral_used, 0);
    check_eq!(s.persistent_used, 16);
    check_eq!(s.reset_count, 1);
    check!(ok!(arena.data(&w)) == [1, 2, 3, 4, 5, 6, 7, 8]);
    Ok(())
}

/// An ephemeral descriptor from before a reset is refused even though a new
/// tensor now sits at the same offset.
pub fn stale_ephemeral_descriptor_is_rejected_after_reset() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let old = ok!(arena.alloc(ok!(meta(DType::Int8, &[8])), Lifetime::Ephemeral));
    arena.reset_ephemeral();
    let new = ok!(arena.alloc(ok!(meta(DType::Int8, &[8])), Lifetime::Ephemeral));
    check_eq!(old.offset(), new.offset());
    check!(arena.data(&old) == Err(ArenaError::StaleTensor));
    check!(arena.free(old) == Err(ArenaError::StaleTensor));
    check!(arena.data(&new).is_ok());
    Ok(())
}

/// `reset_all` frees everything: persistent tensors and scratch buffers from
/// before it are refused.
pub fn reset_all_invalidates_persistent_tensors_and_scratch() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 32));
    let w = ok!(arena.alloc(ok!(meta(DType::Int8, &[8])), Lifetime::Persistent));
    let s = ok!(arena.acquire_scratch(8));
    arena.reset_all();
    check!(arena.data(&w) == Err(ArenaError::StaleTensor));
    check!(arena.scratch_mut(&s).err() == Some(ArenaError::StaleTensor));
    let st = arena.stats();
    check_eq!(st.used, 0);
    check_eq!(st.scratch_used, 0);
    Ok(())
}

/// Freeing the newest tensor of a region returns its bytes at once; an
/// older one waits for the next reset.
pub fn free_of_the_newest_allocation_reclaims_immediately() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let a = ok!(arena.alloc(ok!(meta(DType::Int8, &[16])), Lifetime::Ephemeral));
    let c = ok!(arena.alloc(ok!(meta(DType::Int8, &[16])), Lifetime::Ephemeral));
    check!(arena.free(a) == Ok(false));
    check_eq!(arena.stats().ephemeral_used, 32);
    check!(arena.free(c) == Ok(true));
    check_eq!(arena.stats().ephemeral_used, 16);
    let p = ok!(arena.alloc(ok!(meta(DType::Int8, &[16])), Lifetime::Persistent));
    check!(arena.free(p) == Ok(true));
    check_eq!(arena.stats().persistent_used, 0);
    Ok(())
}

/// Statistics: total, used, peak across a reset, allocation count, scratch
/// size, and a peak reset.
pub fn stats_track_peak_and_allocation_count() -> Outcome {
    let mut b = Backing::<512>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 64));
    let _p = ok!(arena.alloc(ok!(meta(DType::Int8, &[32])), Lifetime::Persistent));
    let _e = ok!(arena.alloc(ok!(meta(DType::Int8, &[100])), Lifetime::Ephemeral));
    arena.reset_ephemeral();
    let _e2 = ok!(arena.alloc(ok!(meta(DType::Int8, &[10])), Lifetime::Ephemeral));
    let s = arena.stats();
    check_eq!(s.total, 448);
    check_eq!(s.used, 32 + 16);
    check_eq!(s.peak, 32 + 112);
    check_eq!(s.allocation_count, 3);
    check_eq!(s.scratch_total, 64);
    arena.reset_peak();
    check_eq!(arena.stats().peak, 48);
    Ok(())
}

/// An external buffer is wrapped in place (writes land in it), too short a
/// buffer is refused, and the arena does not allocate `External`.
pub fn external_tensor_wraps_without_copy() -> Outcome {
    let mut slot = [0u8; 40];
    let m = ok!(meta(DType::Int8, &[4, 8]));
    {
        let mut t = ok!(TensorMut::wrap(m, &mut slot));
        check!(t.lifetime() == Lifetime::External);
        t.data_mut()[31] = 9;
        check_eq!(t.as_ref().data().len(), 32);
    }
    check_eq!(slot[31], 9);
    let view = ok!(TensorRef::wrap(m, &slot));
    check!(core::ptr::eq(view.data().as_ptr(), slot.as_ptr()));
    check!(
        TensorRef::wrap(ok!(meta(DType::Float32, &[11])), &slot).err()
            == Some(ArenaError::ExternalTooShort {
                needed: 44,
                actual: 40
            })
    );
    let mut b = Backing::<64>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    check!(arena.alloc(m, Lifetime::External) == Err(ArenaError::WrongLifetime));
    Ok(())
}

/// A kernel's input and output views are disjoint whichever lies lower, and
/// the same tensor twice is refused as aliased.
pub fn input_output_gives_disjoint_views_in_either_order() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 0));
    let x = ok!(arena.alloc(ok!(meta(DType::Int8, &[4])), Lifetime::Ephemeral));
    let y = ok!(arena.alloc(ok!(meta(DType::Int8, &[4])), Lifetime::Persistent));
    ok!(arena.data_mut(&x)).copy_from_slice(&[1, 2, 3, 4]);
    {
        let (i, mut o) = ok!(arena.input_output(&x, &y));
        o.data_mut().copy_from_slice(i.data());
    }
    check!(ok!(arena.data(&y)) == [1, 2, 3, 4]);
    ok!(arena.data_mut(&y))[0] = 7;
    {
        let (i, mut o) = ok!(arena.input_output(&y, &x));
        o.data_mut()[0] = i.data()[0];
    }
    check_eq!(ok!(arena.data(&x))[0], 7);
    check!(arena.input_output(&x, &x).err() == Some(ArenaError::Aliased));
    Ok(())
}

/// Scratch is a stack: an older buffer released first returns its bytes
/// only when the younger one is released too.
pub fn scratch_out_of_order_release_reclaims_when_younger_are_back() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 128));
    let a = ok!(arena.acquire_scratch(16));
    let c = ok!(arena.acquire_scratch(32));
    ok!(arena.release_scratch(a));
    check_eq!(arena.stats().scratch_used, 48);
    ok!(arena.release_scratch(c));
    check_eq!(arena.stats().scratch_used, 0);
    Ok(())
}

/// No more than `SCRATCH_DEPTH` scratch buffers are out at once.
pub fn scratch_depth_is_bounded() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena<'_, 2> = ok!(Arena::new(&mut b.0, 128));
    let _a = ok!(arena.acquire_scratch(1));
    let _c = ok!(arena.acquire_scratch(1));
    check!(arena.acquire_scratch(1).err() == Some(ArenaError::ScratchDepth));
    Ok(())
}

/// Arena errors become the errno values of the C API.
pub fn errors_map_to_errno() -> Outcome {
    check!(
        ArenaError::Exhausted {
            requested: 1,
            available: 0
        }
        .to_errno()
            == Errno::NoMem
    );
    check!(ArenaError::InvalidShape.to_errno() == Errno::Inval);
    check!(ArenaError::ScratchDepth.to_errno() == Errno::NoSpc);
    check_eq!(ArenaError::StaleTensor.to_errno().negative(), -14);
    Ok(())
}
