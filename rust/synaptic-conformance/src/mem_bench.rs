//! Suite `mem_bench`: what allocation, reset and scratch cost, printed in
//! the platform counter's unit; the checks are about correctness only (no
//! timed assertion).
//!
//! The counter and the console come from [`crate::support::install_hooks`];
//! without hooks the figures read 0 and nothing is printed, and the cases
//! still check that the work was done right.

use synaptic_check::{check, check_eq, Outcome};
use synaptic_runtime::arena::{Arena, ArenaError, DType, Lifetime};

use crate::mem::{meta, Backing};
use crate::support::{hooks, Exclusive};

cases![alloc_cost, reset_cost, scratch_cost];

const ARENA_BYTES: usize = 4096;
static BUFFER: Exclusive<Backing<ARENA_BYTES>> = Exclusive::new(Backing::new());

/// Tensors allocated by [`alloc_cost`].
const ALLOCATIONS: usize = 64;
/// Rounds of [`reset_cost`] and [`scratch_cost`].
const ROUNDS: u32 = 100;

/// 64 allocations (alternating lifetimes, 48 bytes each): prints the mean
/// cost; checks every tensor is distinct, aligned and counted.
pub fn alloc_cost() -> Outcome {
    let h = hooks();
    let mut buffer = claim!(BUFFER);
    let mut arena: Arena = ok!(Arena::new(&mut buffer.0, 0));
    let m = ok!(meta(DType::Int8, &[48]));
    let mut offsets = [0usize; ALLOCATIONS];
    let start = (h.counter)();
    for (i, offset) in offsets.iter_mut().enumerate() {
        let life = if i % 2 == 0 {
            Lifetime::Ephemeral
        } else {
            Lifetime::Persistent
        };
        *offset = ok!(arena.alloc(m, life)).offset();
    }
    let elapsed = (h.counter)().wrapping_sub(start);
    (h.print)(format_args!(
        "mem_bench: alloc {} {} per tensor ({} tensors, {} total)",
        elapsed / ALLOCATIONS as u32,
        h.unit,
        ALLOCATIONS,
        elapsed
    ));
    for (i, a) in offsets.iter().enumerate() {
        check_eq!(a % 16, 0);
        check!(offsets[i + 1..].iter().all(|b| a.abs_diff(*b) >= 48));
    }
    check_eq!(arena.stats().allocation_count, ALLOCATIONS as u32);
    check_eq!(arena.stats().used, ALLOCATIONS * 48);
    Ok(())
}

/// 100 rounds of 16 ephemeral allocations and one `reset_ephemeral`: prints
/// the mean and worst reset cost; checks each reset frees everything and
/// stales the old descriptors.
pub fn reset_cost() -> Outcome {
    let h = hooks();
    let mut buffer = claim!(BUFFER);
    let mut arena: Arena = ok!(Arena::new(&mut buffer.0, 0));
    let m = ok!(meta(DType::Float32, &[16]));
    let (mut sum, mut worst) = (0u32, 0u32);
    for _ in 0..ROUNDS {
        let mut last = None;
        for _ in 0..16 {
            last = Some(ok!(arena.alloc(m, Lifetime::Ephemeral)));
        }
        let start = (h.counter)();
        arena.reset_ephemeral();
        let elapsed = (h.counter)().wrapping_sub(start);
        sum = sum.wrapping_add(elapsed);
        worst = worst.max(elapsed);
        check_eq!(arena.stats().ephemeral_used, 0);
        check!(arena.data(&some!(last)) == Err(ArenaError::StaleTensor));
    }
    (h.print)(format_args!(
        "mem_bench: reset_ephemeral {} {} mean, {} worst ({} rounds of 16 tensors)",
        sum / ROUNDS,
        h.unit,
        worst,
        ROUNDS
    ));
    check_eq!(arena.stats().reset_count, ROUNDS);
    check_eq!(arena.stats().allocation_count, ROUNDS * 16);
    Ok(())
}

/// 100 rounds of eight nested scratch acquisitions released in reverse:
/// prints the cost per acquire/release pair; checks the pool is whole after
/// each round and the buffers never overlap.
pub fn scratch_cost() -> Outcome {
    let h = hooks();
    let mut buffer = claim!(BUFFER);
    let mut arena: Arena = ok!(Arena::new(&mut buffer.0, 1024));
    let mut sum = 0u32;
    for _ in 0..ROUNDS {
        let mut held: heapless::Vec<synaptic_runtime::arena::Scratch, 8> = heapless::Vec::new();
        let start = (h.counter)();
        for _ in 0..8 {
            let s = ok!(arena.acquire_scratch(100));
            check!(held.push(s).is_ok());
        }
        while let Some(s) = held.pop() {
            ok!(arena.release_scratch(s));
        }
        sum = sum.wrapping_add((h.counter)().wrapping_sub(start));
        check_eq!(arena.stats().scratch_used, 0);
    }
    (h.print)(format_args!(
        "mem_bench: scratch acquire+release {} {} per pair ({} rounds of 8)",
        sum / (ROUNDS * 8),
        h.unit,
        ROUNDS
    ));
    // The eight buffers of a round are disjoint 112-byte blocks.
    let a = ok!(arena.acquire_scratch(100));
    let b = ok!(arena.acquire_scratch(100));
    let pa = ok!(arena.scratch_mut(&a)).as_ptr() as usize;
    let pb = ok!(arena.scratch_mut(&b)).as_ptr() as usize;
    check_eq!(pb - pa, 112);
    Ok(())
}
