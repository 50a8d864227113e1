//! Model checking with loom: interleavings of one producer thread and one
//! consumer thread on a ring of 2 entries, also across the `u32::MAX` wrap.
//! With 3 messages the search is exhaustive (every interleaving: the third
//! message reuses slot 0, so slot reuse after a Full is covered); with 4 it
//! is bounded to 4 preemptions per execution (loom's recommended bound: the
//! exhaustive 4-message space takes minutes because of the retry loops). Checks FIFO order, no loss, no duplication, and no torn
//! slot (every field derived from the sequence number); loom itself reports
//! any unsynchronised access to a slot as a data race.
//!
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p synaptic-ring --test loom --release`
#![cfg(loom)]

mod common;

use common::{check, message};
use loom::thread;
use synaptic_ring::{Consumer, Producer, Ring, RingError};

fn exchange(start: u32, messages: u32, preemption_bound: Option<usize>) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = preemption_bound;
    builder.check(move || {
        // Leaked so both threads can hold `'static` handles; one small ring
        // per explored execution.
        let ring: &'static Ring<2> = Box::leak(Box::new(Ring::with_start_index(start)));
        // SAFETY: exactly one producer and one consumer of this ring.
        let (mut tx, mut rx): (Producer<'static, 2>, Consumer<'static, 2>) =
            unsafe { (Producer::attach(ring), Consumer::attach(ring)) };

        let producer = thread::spawn(move || {
            for seq in 0..messages {
                loop {
                    match tx.push(message(seq)) {
                        Ok(()) => break,
                        Err(RingError::Full) => thread::yield_now(),
                        Err(e) => panic!("producer: {e:?}"),
                    }
                }
            }
            assert_eq!(tx.corrupt_count(), 0);
        });

        let mut seq = 0;
        while seq < messages {
            match rx.pop() {
                Ok(Some(m)) => {
                    check(seq, &m);
                    seq += 1;
                }
                Ok(None) => thread::yield_now(),
                Err(e) => panic!("consumer: {e:?}"),
            }
        }
        producer.join().unwrap();
        assert_eq!(rx.pop(), Ok(None), "no duplicate after the last message");
        assert_eq!(rx.corrupt_count(), 0);
    });
}

#[test]
fn three_messages_through_two_slots_exhaustive() {
    exchange(0, 3, None);
}

#[test]
fn three_messages_across_the_wrap_exhaustive() {
    exchange(u32::MAX - 1, 3, None);
}

#[test]
fn four_messages_through_two_slots_bounded() {
    exchange(0, 4, Some(4));
}

#[test]
fn four_messages_across_the_wrap_bounded() {
    exchange(u32::MAX - 2, 4, Some(4));
}
