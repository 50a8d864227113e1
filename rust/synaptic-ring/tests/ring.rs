//! Host tests of the ring: FIFO, full/empty, the u32 wrap, and a two-thread
//! integrity sweep.
#![cfg(not(loom))]

mod common;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use common::{check, message};
use synaptic_ring::{Consumer, Producer, Ring, RingError};

#[test]
fn fifo_full_and_empty() {
    let mut ring = Ring::<4>::new();
    let (mut tx, mut rx) = ring.split();
    assert_eq!(rx.pop(), Ok(None), "a new ring is empty");
    assert_eq!(tx.free(), Ok(4));
    for seq in 0..4 {
        tx.push(message(seq)).unwrap();
    }
    assert_eq!(tx.push(message(4)), Err(RingError::Full));
    assert_eq!(tx.free(), Ok(0));
    assert_eq!(rx.available(), Ok(4));
    check(0, &rx.pop().unwrap().unwrap());
    // One slot freed: exactly one push fits.
    tx.push(message(4)).unwrap();
    assert_eq!(tx.push(message(5)), Err(RingError::Full));
    for seq in 1..5 {
        check(seq, &rx.pop().unwrap().unwrap());
    }
    assert_eq!(rx.pop(), Ok(None));
    assert_eq!(tx.free(), Ok(4));
    assert_eq!((tx.corrupt_count(), rx.corrupt_count()), (0, 0));
}

#[test]
fn consumed_is_the_consumers_published_tail() {
    let start = u32::MAX - 1;
    let ring = Ring::<4>::with_start_index(start);
    // SAFETY: the only producer and the only consumer of this ring.
    let (mut tx, mut rx) = unsafe { (Producer::attach(&ring), Consumer::attach(&ring)) };
    let consumed = || ring.consumed();
    assert_eq!(consumed(), start);
    for seq in 0..3 {
        tx.push(message(seq)).unwrap();
    }
    assert_eq!(consumed(), start, "pushes do not move it");
    for seq in 0..3 {
        check(seq, &rx.pop().unwrap().unwrap());
        assert_eq!(consumed(), start.wrapping_add(seq + 1));
    }
    assert_eq!(consumed(), rx.tail(), "across the wrap");
}

#[test]
fn wraps_across_u32_max() {
    let start = u32::MAX - 5;
    let mut ring = Ring::<4>::with_start_index(start);
    let (mut tx, mut rx) = ring.split();
    let mut next_pop = 0u32;
    for seq in 0..40u32 {
        tx.push(message(seq)).unwrap();
        if seq % 3 == 2 {
            // Let the ring hold up to three, so full-ish states straddle the wrap.
            while let Some(m) = rx.pop().unwrap() {
                check(next_pop, &m);
                next_pop += 1;
            }
        }
    }
    while let Some(m) = rx.pop().unwrap() {
        check(next_pop, &m);
        next_pop += 1;
    }
    assert_eq!(next_pop, 40);
    assert_eq!(tx.head(), start.wrapping_add(40));
    assert!(tx.head() < start, "the head really wrapped");
    assert_eq!(rx.tail(), tx.head());
    // Full is still detected right at the wrap.
    let mut ring = Ring::<4>::with_start_index(u32::MAX - 1);
    let (mut tx, _rx) = ring.split();
    for seq in 0..4 {
        tx.push(message(seq)).unwrap();
    }
    assert_eq!(tx.push(message(4)), Err(RingError::Full));
}

const SWEEP_MESSAGES: u32 = 10_000;
const SWEEP_N: usize = 8;

/// 10,000 messages across two threads, starting just below `u32::MAX` so the
/// sweep crosses the wrap. Every field of every message is checked on pop.
///
/// The first half runs in lockstep bursts of every size 0..=N: the consumer
/// may pop only up to a permit the producer raises after each burst, so the
/// producer sees the ring hold exactly the burst (every fill level, full
/// included, is reached and asserted). The second half runs free: no permit,
/// the consumer drains while the producer pushes bursts and retries on Full.
#[test]
fn integrity_sweep_10k_two_threads() {
    let start = u32::MAX - (SWEEP_MESSAGES / 3);
    let mut ring = Ring::<SWEEP_N>::with_start_index(start);
    let (mut tx, mut rx) = ring.split();
    let consumed = AtomicU32::new(0);
    let permit = AtomicU32::new(0);
    let began = Instant::now();

    let (levels, full_retries) = std::thread::scope(|s| {
        s.spawn(|| {
            let mut seq = 0u32;
            while seq < SWEEP_MESSAGES {
                if seq == permit.load(Ordering::Acquire) {
                    std::thread::yield_now();
                    continue;
                }
                match rx.pop() {
                    Ok(Some(m)) => {
                        check(seq, &m);
                        seq += 1;
                        consumed.store(seq, Ordering::Release);
                    }
                    Ok(None) => std::hint::spin_loop(),
                    Err(e) => panic!("consumer: {e:?}"),
                }
            }
            assert_eq!(rx.pop(), Ok(None), "nothing after the last message");
            assert_eq!(rx.corrupt_count(), 0);
        });

        let mut levels = [0u32; SWEEP_N + 1];
        let mut full_retries = 0u64;
        let mut seq = 0u32;
        let mut burst = 0usize;
        while seq < SWEEP_MESSAGES {
            let lockstep = seq < SWEEP_MESSAGES / 2;
            if lockstep {
                while consumed.load(Ordering::Acquire) != seq {
                    std::thread::yield_now();
                }
            } else {
                permit.store(u32::MAX, Ordering::Release);
            }
            let size = (burst % (SWEEP_N + 1)).min((SWEEP_MESSAGES - seq) as usize);
            burst += 1;
            for _ in 0..size {
                loop {
                    match tx.push(message(seq)) {
                        Ok(()) => break,
                        Err(RingError::Full) if !lockstep => {
                            full_retries += 1;
                            std::thread::yield_now();
                        }
                        Err(e) => panic!("producer at {seq}: {e:?}"),
                    }
                }
                seq += 1;
            }
            if lockstep {
                let level = SWEEP_N - tx.free().unwrap();
                assert_eq!(level, size, "the ring holds exactly the burst");
                levels[level] += 1;
                permit.store(seq, Ordering::Release);
            }
        }
        (levels, full_retries)
    });
    let elapsed = began.elapsed();
    println!(
        "sweep: {SWEEP_MESSAGES} messages, N = {SWEEP_N}, start {start:#x}, {elapsed:?}, \
         lockstep bursts per fill level {levels:?}, free-running Full retries {full_retries}"
    );
    assert!(
        levels.iter().all(|&n| n > 0),
        "every fill level 0..=N reached"
    );
    assert_eq!(consumed.load(Ordering::Acquire), SWEEP_MESSAGES);
    assert!(tx.head() < start, "the sweep crossed u32::MAX");
    assert_eq!(tx.corrupt_count(), 0);
}
