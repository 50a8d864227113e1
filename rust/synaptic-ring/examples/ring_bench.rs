//! Nanoseconds per message for the synaptic ring, `heapless::spsc` and
//! `rtrb`, one producer thread and one consumer thread each, 1,000,000
//! 20-byte `Message`s, in the same run. Prints a table; asserts only that
//! every message arrived in order (timings are reported, never asserted).
//!
//! Run: `cargo run --release -p synaptic-ring --example ring_bench`

use std::hint::spin_loop;
use std::time::{Duration, Instant};

use synaptic_abi::Message;
use synaptic_ring::{Ring, RingError};

const MESSAGES: u32 = 1_000_000;
const ROUNDS: usize = 5;
/// Slots per queue. heapless 0.8's `Queue<T, N>` holds N - 1.
const SLOTS: usize = 16;

fn message(seq: u32) -> Message {
    Message {
        msg_id: seq,
        payload_offset: seq ^ 0x5A5A_5A5A,
        ..Message::default()
    }
}

fn expect(seq: u32, m: &Message) {
    assert!(
        m.msg_id == seq && m.payload_offset == seq ^ 0x5A5A_5A5A,
        "message {seq} out of order"
    );
}

/// Runs `producer` and `consumer` on two threads; returns the wall time
/// from start until the consumer has taken the last message.
fn timed(producer: impl FnOnce() + Send, consumer: impl FnOnce() + Send) -> Duration {
    std::thread::scope(|s| {
        let start = Instant::now();
        let c = s.spawn(move || {
            consumer();
            start.elapsed()
        });
        producer();
        c.join().unwrap()
    })
}

fn synaptic() -> Duration {
    // On the heap, like rtrb's buffer, away from the threads' stacks.
    let mut ring = Box::new(Ring::<SLOTS>::new());
    let (mut tx, mut rx) = ring.split();
    timed(
        move || {
            for seq in 0..MESSAGES {
                loop {
                    match tx.push(message(seq)) {
                        Ok(()) => break,
                        Err(RingError::Full) => spin_loop(),
                        Err(e) => panic!("{e:?}"),
                    }
                }
            }
        },
        move || {
            let mut seq = 0;
            while seq < MESSAGES {
                if let Some(m) = rx.pop().unwrap() {
                    expect(seq, &m);
                    seq += 1;
                } else {
                    spin_loop();
                }
            }
        },
    )
}

fn heapless_spsc() -> Duration {
    let mut queue = heapless::spsc::Queue::<Message, SLOTS>::new();
    let (mut tx, mut rx) = queue.split();
    timed(
        move || {
            for seq in 0..MESSAGES {
                while tx.enqueue(message(seq)).is_err() {
                    spin_loop();
                }
            }
        },
        move || {
            let mut seq = 0;
            while seq < MESSAGES {
                if let Some(m) = rx.dequeue() {
                    expect(seq, &m);
                    seq += 1;
                } else {
                    spin_loop();
                }
            }
        },
    )
}

fn rtrb() -> Duration {
    let (mut tx, mut rx) = rtrb::RingBuffer::<Message>::new(SLOTS);
    timed(
        move || {
            for seq in 0..MESSAGES {
                while tx.push(message(seq)).is_err() {
                    spin_loop();
                }
            }
        },
        move || {
            let mut seq = 0;
            while seq < MESSAGES {
                if let Ok(m) = rx.pop() {
                    expect(seq, &m);
                    seq += 1;
                } else {
                    spin_loop();
                }
            }
        },
    )
}

fn main() {
    type Bench = (&'static str, usize, fn() -> Duration);
    let benches: [Bench; 3] = [
        ("synaptic-ring", SLOTS, synaptic),
        ("heapless::spsc", SLOTS - 1, heapless_spsc),
        ("rtrb", SLOTS, rtrb),
    ];
    let mut results: Vec<(&str, usize, Vec<f64>)> = benches
        .iter()
        .map(|&(name, capacity, _)| (name, capacity, Vec::new()))
        .collect();
    // Interleave the rounds so drift in machine load hits every queue alike.
    for _ in 0..ROUNDS {
        for (i, &(_, _, bench)) in benches.iter().enumerate() {
            let elapsed = bench();
            results[i]
                .2
                .push(elapsed.as_nanos() as f64 / f64::from(MESSAGES));
        }
    }
    println!(
        "{MESSAGES} x {}-byte Message, 1 producer + 1 consumer thread, {ROUNDS} rounds",
        std::mem::size_of::<Message>()
    );
    println!(
        "{:<16} {:>8} {:>12} {:>12} {:>12}",
        "queue", "capacity", "min ns/msg", "median", "max"
    );
    for (name, capacity, mut ns) in results {
        ns.sort_by(f64::total_cmp);
        println!(
            "{:<16} {:>8} {:>12.1} {:>12.1} {:>12.1}",
            name,
            capacity,
            ns[0],
            ns[ns.len() / 2],
            ns[ns.len() - 1]
        );
    }
}
