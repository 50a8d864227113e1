//! Property test: random push/pop sequences against a `VecDeque` model,
//! from random start indices including ones just below `u32::MAX`.
#![cfg(not(loom))]

mod common;

use std::collections::VecDeque;

use common::message;
use proptest::prelude::*;
use synaptic_ring::{Ring, RingError};

#[derive(Clone, Copy, Debug)]
enum Op {
    Push,
    Pop,
    Free,
    Available,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => Just(Op::Push),
        4 => Just(Op::Pop),
        1 => Just(Op::Free),
        1 => Just(Op::Available),
    ]
}

fn start_index() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(u32::MAX),
        (u32::MAX - 64)..=u32::MAX,
        any::<u32>(),
    ]
}

fn run<const N: usize>(start: u32, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut ring = Ring::<N>::with_start_index(start);
    let (mut tx, mut rx) = ring.split();
    let mut model = VecDeque::with_capacity(N);
    let mut next = 0u32;
    for &op in ops {
        match op {
            Op::Push => {
                let got = tx.push(message(next));
                if model.len() == N {
                    prop_assert_eq!(got, Err(RingError::Full));
                } else {
                    prop_assert_eq!(got, Ok(()));
                    model.push_back(message(next));
                    next += 1;
                }
            }
            Op::Pop => prop_assert_eq!(rx.pop(), Ok(model.pop_front())),
            Op::Free => prop_assert_eq!(tx.free(), Ok(N - model.len())),
            Op::Available => prop_assert_eq!(rx.available(), Ok(model.len())),
        }
        prop_assert_eq!(tx.head().wrapping_sub(rx.tail()) as usize, model.len());
    }
    prop_assert_eq!(tx.head(), start.wrapping_add(next));
    prop_assert_eq!((tx.corrupt_count(), rx.corrupt_count()), (0, 0));
    Ok(())
}

/// 512 cases natively. Under miri, which interprets every step, 16 cases,
/// and no regression file (miri's isolation has no file system).
fn config() -> ProptestConfig {
    if cfg!(miri) {
        ProptestConfig {
            failure_persistence: None,
            rng_algorithm: proptest::test_runner::RngAlgorithm::XorShift,
            ..ProptestConfig::with_cases(8)
        }
    } else {
        ProptestConfig::with_cases(512)
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn matches_vecdeque_n2(start in start_index(), ops in prop::collection::vec(op(), 0..200)) {
        run::<2>(start, &ops)?;
    }

    #[test]
    fn matches_vecdeque_n4(start in start_index(), ops in prop::collection::vec(op(), 0..200)) {
        run::<4>(start, &ops)?;
    }

    #[test]
    fn matches_vecdeque_n16(start in start_index(), ops in prop::collection::vec(op(), 0..400)) {
        run::<16>(start, &ops)?;
    }
}
