//! The ring's consumer and producer under a peer that writes any index and
//! any slot bytes.
//!
//! The first byte picks the side under test and the rest is a program
//! against it. Either side is checked against a model of the ring's words,
//! not just for panics: counts stay within `N`; a pop returns exactly the
//! bytes the slot held; a corrupt index is reported as such and
//! resynchronised; while the peer is well-behaved (since the last
//! resynchronisation), pops come out in push order and never outnumber
//! pushes, and the producer never has more than `N` unread messages.
#![no_main]
// `drop(handle)` marks where a core's life ends (a reboot).
#![allow(clippy::drop_non_drop)]

use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

use libfuzzer_sys::fuzz_target;
use synaptic_abi::{region::ring_size, Message};
use synaptic_fuzz::Input;
use synaptic_ring::{Consumer, Producer, Ring, RingError};

const N: usize = 4;
const N32: u32 = N as u32;
const WORDS: usize = ring_size::<N>() / 4;
const HEAD: usize = 0;
const TAIL: usize = 16;
const SLOTS: usize = 32;
const MAX_OPS: usize = 512;

/// The ring's words, seen as the peer sees them.
struct Words(Box<[AtomicU32]>);

impl Words {
    fn new(start: u32) -> Self {
        let words: Box<[AtomicU32]> = (0..WORDS).map(|_| AtomicU32::new(0)).collect();
        words[HEAD].store(start, Ordering::Relaxed);
        words[TAIL].store(start, Ordering::Relaxed);
        Words(words)
    }

    fn ring(&self) -> &Ring<N> {
        let ptr = NonNull::new(self.0.as_ptr().cast_mut().cast::<Ring<N>>()).expect("non-null");
        // SAFETY: the words are `ring_size::<N>()` bytes, 4-aligned, live as
        // long as the borrow of `self`, and are accessed only atomically (by
        // this harness) or through the ring crate, on one thread; any bit
        // pattern is a valid ring.
        unsafe { Ring::from_raw(ptr) }
    }

    fn get(&self, k: usize) -> u32 {
        self.0[k].load(Ordering::Relaxed)
    }

    fn set(&self, k: usize, value: u32) {
        self.0[k].store(value, Ordering::Relaxed);
    }

    fn slot(&self, index: u32) -> Message {
        let w = |k: usize| self.get(SLOTS + 5 * (index as usize % N) + k);
        let b = w(1).to_ne_bytes();
        Message {
            msg_id: w(0),
            msg_type: b[0],
            priority: b[1],
            payload_len: u16::from_ne_bytes([b[2], b[3]]),
            payload_offset: w(2),
            timestamp_us: w(3),
            status: w(4) as i32,
        }
    }

    fn set_slot(&self, index: u32, msg: &Message) {
        let [a, b] = msg.payload_len.to_ne_bytes();
        let words = [
            msg.msg_id,
            u32::from_ne_bytes([msg.msg_type, msg.priority, a, b]),
            msg.payload_offset,
            msg.timestamp_us,
            msg.status as u32,
        ];
        for (k, word) in words.into_iter().enumerate() {
            self.set(SLOTS + 5 * (index as usize % N) + k, word);
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let (Some(side), Some(start)) = (input.u8(), input.u32()) else {
        return;
    };
    let words = Words::new(start);
    if side % 2 == 0 {
        consumer_against_hostile_producer(&words, input);
    } else {
        producer_against_hostile_consumer(&words, input);
    }
});

fn message(id: u32, extra: u8) -> Message {
    Message {
        msg_id: id,
        msg_type: extra,
        priority: extra.rotate_left(3),
        payload_len: u16::from(extra) * 3,
        payload_offset: id ^ 0xA5A5_0000,
        timestamp_us: id.wrapping_mul(7),
        status: -(i32::from(extra)),
    }
}

/// What the consumer may legitimately have trusted since it last
/// resynchronised: every head value the peer published meanwhile.
struct ConsumerModel {
    /// Messages a well-behaved producer pushed, not yet popped.
    queue: VecDeque<u32>,
    /// The producer scribbled its head since the last resynchronisation.
    hostile: bool,
    /// Head values published since the last resynchronisation.
    heads: Vec<u32>,
}

impl ConsumerModel {
    fn resync(&mut self, head: u32) {
        self.queue.clear();
        self.hostile = false;
        self.heads = vec![head];
    }
}

fn consumer_against_hostile_producer(words: &Words, mut input: Input<'_>) {
    let ring = words.ring();
    // SAFETY: the only consumer of this ring; the "producer" is this
    // harness writing words.
    let mut consumer = unsafe { Consumer::attach(ring) };
    let mut model = ConsumerModel {
        queue: VecDeque::new(),
        hostile: false,
        heads: vec![words.get(HEAD)],
    };
    let mut next_id = 1u32;
    for _ in 0..MAX_OPS {
        let Some(tag) = input.u8() else { return };
        match tag % 8 {
            // A well-behaved push (when the ring has room by the words).
            0 => {
                let Some(extra) = input.u8() else { return };
                let (head, tail) = (words.get(HEAD), words.get(TAIL));
                if head.wrapping_sub(tail) < N32 {
                    words.set_slot(head, &message(next_id, extra));
                    words.set(HEAD, head.wrapping_add(1));
                    model.heads.push(head.wrapping_add(1));
                    model.queue.push_back(next_id);
                    next_id = next_id.wrapping_add(1);
                }
            }
            // The head set to anything.
            1 => {
                let Some(head) = input.u32() else { return };
                words.set(HEAD, head);
                model.heads.push(head);
                model.hostile = true;
            }
            // The head moved by a small amount (either way).
            2 => {
                let Some(delta) = input.u8() else { return };
                let head = words.get(HEAD).wrapping_add(i32::from(delta as i8) as u32);
                words.set(HEAD, head);
                model.heads.push(head);
                model.hostile = true;
            }
            3 => check_pop(words, &mut consumer, &mut model),
            4 => {
                let t0 = consumer.tail();
                let head = words.get(HEAD);
                match consumer.available() {
                    Ok(n) => {
                        assert!(n <= N, "available {n} > N");
                        assert_eq!(n as u32, head.wrapping_sub(t0));
                    }
                    Err(RingError::Corrupt { head: h, tail }) => {
                        assert_eq!((h, tail), (head, t0));
                        assert!(head.wrapping_sub(t0) > N32);
                        assert_eq!(consumer.tail(), head);
                        assert_eq!(words.get(TAIL), head);
                        model.resync(head);
                    }
                    Err(e) => panic!("available: {e:?}"),
                }
            }
            // A reboot of the consumer's core.
            5 => {
                drop(consumer);
                let (head, tail) = (words.get(HEAD), words.get(TAIL));
                // SAFETY: the previous consumer was just dropped.
                consumer = unsafe { Consumer::attach(ring) };
                if head.wrapping_sub(tail) > N32 {
                    assert_eq!(consumer.tail(), head, "attach resyncs");
                    assert_eq!(consumer.corrupt_count(), 1);
                    model.resync(head);
                } else {
                    assert_eq!(consumer.tail(), tail, "attach keeps the live tail");
                    // The words are all the new life knows.
                    model.heads = vec![head];
                    if model.hostile {
                        model.queue.clear();
                    }
                }
            }
            // Any bytes in a slot.
            6 => {
                let (Some(index), Some(msg)) = (input.u8(), input.message()) else {
                    return;
                };
                words.set_slot(u32::from(index), &msg);
                model.hostile = true;
            }
            // The peer scribbles the consumer's own index: never re-read.
            _ => {
                let Some(tail) = input.u32() else { return };
                let own = consumer.tail();
                words.set(TAIL, tail);
                assert_eq!(consumer.tail(), own);
                // What the consumer publishes next overwrites it; until then
                // a well-behaved producer would see this tail, so stop
                // modelling the queue.
                model.hostile = true;
            }
        }
        assert!(consumer.corrupt_count() as usize <= MAX_OPS);
    }
}

fn check_pop(words: &Words, consumer: &mut Consumer<'_, N>, model: &mut ConsumerModel) {
    let t0 = consumer.tail();
    let head = words.get(HEAD);
    let slot = words.slot(t0);
    match consumer.pop() {
        Ok(Some(msg)) => {
            assert_eq!(msg, slot, "a pop returns the slot's bytes");
            assert_eq!(consumer.tail(), t0.wrapping_add(1));
            assert_eq!(words.get(TAIL), t0.wrapping_add(1), "the tail is published");
            assert!(
                model
                    .heads
                    .iter()
                    .any(|h| (1..=N32).contains(&h.wrapping_sub(t0))),
                "popped at {t0} without a published head within N above it"
            );
            if !model.hostile {
                let expected = model.queue.pop_front();
                assert_eq!(Some(msg.msg_id), expected, "FIFO, never more than pushed");
            }
        }
        Ok(None) => {
            assert_eq!(consumer.tail(), t0);
            assert_eq!(head, t0, "empty only when the head says so");
            if !model.hostile {
                assert!(model.queue.is_empty(), "a pushed message was not delivered");
            }
        }
        Err(RingError::Corrupt { head: h, tail }) => {
            assert_eq!((h, tail), (head, t0));
            assert!(head.wrapping_sub(t0) > N32, "a sane head reported corrupt");
            assert_eq!(consumer.tail(), head);
            assert_eq!(words.get(TAIL), head);
            model.resync(head);
        }
        Err(e) => panic!("pop: {e:?}"),
    }
}

fn producer_against_hostile_consumer(words: &Words, mut input: Input<'_>) {
    let ring = words.ring();
    // SAFETY: the only producer of this ring; the "consumer" is this
    // harness writing words.
    let mut producer = unsafe { Producer::attach(ring) };
    let mut queue: VecDeque<Message> = VecDeque::new();
    // The consumer wrote its tail (or the producer's head) since attach.
    let mut hostile = false;
    let mut next_id = 1u32;
    for _ in 0..MAX_OPS {
        let Some(tag) = input.u8() else { return };
        match tag % 7 {
            0 => {
                let Some(extra) = input.u8() else { return };
                let h0 = producer.head();
                let msg = message(next_id, extra);
                next_id = next_id.wrapping_add(1);
                let result = producer.push(msg);
                let tail = words.get(TAIL);
                match result {
                    Ok(()) => {
                        assert_eq!(producer.head(), h0.wrapping_add(1));
                        assert_eq!(words.get(HEAD), h0.wrapping_add(1), "head published");
                        assert_eq!(words.slot(h0), msg, "the slot holds the message");
                        if !hostile {
                            assert!(
                                h0.wrapping_add(1).wrapping_sub(tail) <= N32,
                                "more than N unread: an unread slot was overwritten"
                            );
                            queue.push_back(msg);
                        }
                    }
                    Err(RingError::Full) => {
                        assert_eq!(h0.wrapping_sub(tail), N32, "full only at N");
                        assert_eq!(producer.head(), h0);
                    }
                    Err(RingError::Corrupt { head, tail: t }) => {
                        assert_eq!((head, t), (h0, tail));
                        assert!(h0.wrapping_sub(tail) > N32, "a sane tail reported corrupt");
                        assert_eq!(producer.head(), h0, "a corrupt tail must not move the head");
                    }
                    Err(e) => panic!("push: {e:?}"),
                }
            }
            // A well-behaved pop by the model consumer.
            1 => {
                let (head, tail) = (words.get(HEAD), words.get(TAIL));
                let used = head.wrapping_sub(tail);
                if used != 0 && used <= N32 {
                    let msg = words.slot(tail);
                    words.set(TAIL, tail.wrapping_add(1));
                    if !hostile {
                        assert_eq!(Some(msg), queue.pop_front(), "FIFO");
                    }
                }
            }
            2 => {
                let Some(tail) = input.u32() else { return };
                words.set(TAIL, tail);
                hostile = true;
            }
            3 => {
                let Some(delta) = input.u8() else { return };
                let tail = words.get(TAIL).wrapping_add(i32::from(delta as i8) as u32);
                words.set(TAIL, tail);
                hostile = true;
            }
            4 => {
                let h = producer.head();
                let tail = words.get(TAIL);
                match producer.free() {
                    Ok(n) => {
                        assert!(n <= N, "free {n} > N");
                        assert_eq!(n as u32, N32 - h.wrapping_sub(tail));
                    }
                    Err(RingError::Corrupt { head, tail: t }) => {
                        assert_eq!((head, t), (h, tail));
                        assert!(h.wrapping_sub(tail) > N32);
                    }
                    Err(e) => panic!("free: {e:?}"),
                }
            }
            // A reboot of the producer's core.
            5 => {
                drop(producer);
                let (head, tail) = (words.get(HEAD), words.get(TAIL));
                // SAFETY: the previous producer was just dropped.
                producer = unsafe { Producer::attach(ring) };
                if head.wrapping_sub(tail) > N32 {
                    assert_eq!(producer.head(), tail, "attach repairs head = tail");
                    assert_eq!(words.get(HEAD), tail);
                } else {
                    assert_eq!(producer.head(), head, "attach keeps the live head");
                }
                assert!(producer.head().wrapping_sub(words.get(TAIL)) <= N32);
            }
            // The consumer scribbles the producer's own index.
            _ => {
                let Some(head) = input.u32() else { return };
                let own = producer.head();
                words.set(HEAD, head);
                assert_eq!(producer.head(), own, "its own index is never re-read");
                hostile = true;
            }
        }
    }
}
