//! Suite `mem_regions`: the three regions of an arena (ephemeral growing
//! up, persistent growing down, the scratch pool at the end) tile the buffer
//! and never reach into each other.

use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::arena::{Arena, DType, Lifetime, Tensor};

use crate::mem::{meta, Backing};

cases![
    regions_tile_the_buffer,
    scratch_pool_is_separate_from_tensors,
    ephemeral_cycles_leave_persistent_and_scratch_bytes_alone,
];

/// Filling the arena from both ends meets in the middle: ephemeral from
/// offset 0 up, persistent from the scratch pool down, every byte used once,
/// and the scratch pool starts where the tensor space ends.
pub fn regions_tile_the_buffer() -> Outcome {
    let mut b = Backing::<512>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 128));
    let total = arena.stats().total;
    check_eq!(total, 384);
    let mut eph_next = 0;
    let mut per_next = total;
    let mut tensors: heapless::Vec<Tensor, 24> = heapless::Vec::new();
    let mut i = 0u32;
    while arena.available() > 0 {
        let life = if i % 2 == 0 {
            Lifetime::Ephemeral
        } else {
            Lifetime::Persistent
        };
        let t = ok!(arena.alloc(ok!(meta(DType::Int8, &[16])), life));
        match life {
            Lifetime::Ephemeral => {
                check_eq!(t.offset(), eph_next);
                eph_next += 16;
            }
            _ => {
                per_next -= 16;
                check_eq!(t.offset(), per_next);
            }
        }
        check!(tensors.push(t).is_ok());
        i += 1;
    }
    check_eq!(eph_next, per_next);
    let s = arena.stats();
    check_eq!(s.ephemeral_used + s.persistent_used, total);
    check_eq!(s.used, total);
    // The pool begins right after the tensor space.
    let scratch = ok!(arena.acquire_scratch(128));
    let scratch_addr = ok!(arena.scratch_mut(&scratch)).as_ptr() as usize;
    let base = ok!(arena.data(&tensors[0])).as_ptr() as usize;
    check_eq!(scratch_addr - base, total);
    Ok(())
}

/// The scratch pool has its own bytes: exhausting it leaves tensor space
/// untouched, and filling the tensor space leaves the pool untouched.
pub fn scratch_pool_is_separate_from_tensors() -> Outcome {
    let mut b = Backing::<256>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 64));
    let s = ok!(arena.acquire_scratch(60));
    check_eq!(s.len(), 60);
    check_eq!(ok!(arena.scratch_mut(&s)).as_ptr() as usize % 16, 0);
    check!(
        arena.acquire_scratch(1).err()
            == Some(synaptic_runtime::arena::ArenaError::ScratchExhausted {
                requested: 16,
                available: 0
            })
    );
    let _t = ok!(arena.alloc(ok!(meta(DType::Int8, &[192])), Lifetime::Ephemeral));
    check_eq!(arena.available(), 0);
    check_eq!(arena.stats().scratch_used, 64);
    ok!(arena.release_scratch(s));
    check_eq!(arena.stats().scratch_used, 0);
    Ok(())
}

/// A hundred inference-like cycles (fill all free space with ephemeral
/// tensors, write them, reset) never change the bytes of a persistent
/// tensor or of a held scratch buffer, and each cycle reuses the same
/// offsets.
pub fn ephemeral_cycles_leave_persistent_and_scratch_bytes_alone() -> Outcome {
    let mut b = Backing::<512>::new();
    let mut arena: Arena = ok!(Arena::new(&mut b.0, 64));
    let weights = ok!(arena.alloc(ok!(meta(DType::UInt8, &[40])), Lifetime::Persistent));
    for (i, w) in ok!(arena.data_mut(&weights)).iter_mut().enumerate() {
        *w = i as u8;
    }
    let scratch = ok!(arena.acquire_scratch(48));
    ok!(arena.scratch_mut(&scratch)).fill(0x5C);
    let free = arena.available();
    for _ in 0..100 {
        let mut first_offset = None;
        while arena.available() > 0 {
            let t = ok!(arena.alloc(ok!(meta(DType::UInt8, &[16])), Lifetime::Ephemeral));
            ok!(arena.data_mut(&t)).fill(0xEE);
            first_offset.get_or_insert(t.offset());
        }
        check_eq!(some!(first_offset), 0);
        arena.reset_ephemeral();
        check_eq!(arena.available(), free);
    }
    for (i, &w) in ok!(arena.data(&weights)).iter().enumerate() {
        check_eq!(w, i as u8);
    }
    check!(ok!(arena.scratch_mut(&scratch)).iter().all(|&x| x == 0x5C));
    check_eq!(arena.stats().reset_count, 100);
    Ok(())
}
