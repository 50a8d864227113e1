//! Ring cost in `k_cycle_get_32` units, next to `heapless::spsc::Queue`
//! (suite `ipc`) and Zephyr's own `k_msgq` (suite `ipc_bench_compare`),
//! each measured the same way in the same run.
//!
//! Push and pop are timed per batch (`BATCH` pushes, then `BATCH` pops, one
//! timer pair each, the timer's own cost subtracted); push+pop is one timer
//! pair around 10,000 push-then-pop round trips. Figures are printed in
//! hundredths of a cycle per operation, integer arithmetic only. Nothing is
//! asserted about their size (no timed asserts): only that they are
//! nonzero and that every message came back intact.

use core::hint::black_box;
use core::mem::size_of;

use synaptic_abi::{Direction, Message};
use synaptic_ring::{Consumer, Producer};
use synaptic_zephyr::ztest::{Failure, Outcome};
use synaptic_zephyr::{zassert, zassert_eq, ztest_suite};
use zephyr::raw;

use crate::region::RegionLease;
use crate::traffic::message_for;
use crate::{cycles, N};

/// Round trips per figure.
const ROUNDS: u32 = 10_000;
/// Operations per timer pair in the push and pop figures.
const BATCH: usize = if N < 16 { N } else { 16 };
/// Slots of the comparison queues (heapless holds one less than this).
const QUEUE_SLOTS: usize = 32;

const _: () = assert!((ROUNDS as usize).is_multiple_of(BATCH) && BATCH < QUEUE_SLOTS);

/// A single-producer/single-consumer queue under measurement.
trait BenchQueue {
    /// Append; `false` when full.
    fn push(&mut self, msg: Message) -> bool;
    /// Take the oldest message.
    fn pop(&mut self) -> Option<Message>;
}

/// A push outcome: whether the message went in.
trait Accepted {
    fn accepted(&self) -> bool;
}

impl<E> Accepted for Result<(), E> {
    fn accepted(&self) -> bool {
        self.is_ok()
    }
}

/// A pop outcome: the message, if one came out.
trait Taken {
    fn taken(self) -> Option<Message>;
}

impl Taken for Option<Message> {
    fn taken(self) -> Option<Message> {
        self
    }
}

impl<E> Taken for Result<Option<Message>, E> {
    fn taken(self) -> Option<Message> {
        self.ok().flatten()
    }
}

/// A queue's two handles and its own push and pop functions, called
/// through pointers the optimiser cannot see through (`black_box`).
///
/// Every operation is thus one call of the queue's real function, as from
/// firmware in another module, never inlined into the timing loop:
/// otherwise a figure moves with whatever the optimiser inlines (seen: the
/// ring's push at 21, 25 or 33 cycles depending on unrelated code).
struct Calls<P, C, Q, R> {
    producer: P,
    consumer: C,
    push: fn(&mut P, Message) -> Q,
    pop: fn(&mut C) -> R,
}

impl<P, C, Q, R> Calls<P, C, Q, R> {
    fn new(producer: P, consumer: C, push: fn(&mut P, Message) -> Q, pop: fn(&mut C) -> R) -> Self {
        Calls {
            producer,
            consumer,
            push: black_box(push),
            pop: black_box(pop),
        }
    }
}

impl<P, C, Q: Accepted, R: Taken> BenchQueue for Calls<P, C, Q, R> {
    fn push(&mut self, msg: Message) -> bool {
        (self.push)(&mut self.producer, msg).accepted()
    }

    fn pop(&mut self) -> Option<Message> {
        (self.pop)(&mut self.consumer).taken()
    }
}

/// A Zephyr message queue of 20-byte messages, used without waiting. Its
/// functions are C, out of the optimiser's reach: one call per operation.
struct KernelMsgq<'a>(&'a mut raw::k_msgq);

impl BenchQueue for KernelMsgq<'_> {
    fn push(&mut self, msg: Message) -> bool {
        // SAFETY: the queue was initialised for `Message`-sized items and
        // outlives `self`; `msg` is read (copied) before the call returns.
        let put = unsafe {
            raw::k_msgq_put(
                &raw mut *self.0,
                (&raw const msg).cast(),
                zephyr::sys::K_NO_WAIT,
            )
        };
        put == 0
    }

    fn pop(&mut self) -> Option<Message> {
        let mut msg = Message::default();
        // SAFETY: as for `push`; `msg` has room for one item.
        let got = unsafe {
            raw::k_msgq_get(
                &raw mut *self.0,
                (&raw mut msg).cast(),
                zephyr::sys::K_NO_WAIT,
            )
        };
        (got == 0).then_some(msg)
    }
}

/// Cycles summed over [`ROUNDS`] operations.
#[derive(Default)]
struct Costs {
    push: u64,
    pop: u64,
    round_trip: u64,
}

/// The cheapest back-to-back timer read: what one timer pair adds.
fn timer_overhead() -> u32 {
    (0..16)
        .map(|_| {
            let start = cycles();
            cycles().wrapping_sub(start)
        })
        .min()
        .unwrap_or(0)
}

fn elapsed(start: u32, end: u32, overhead: u32) -> u64 {
    u64::from(end.wrapping_sub(start).saturating_sub(overhead))
}

fn measure(queue: &mut impl BenchQueue) -> Result<Costs, Failure> {
    let overhead = timer_overhead();
    let batch: [Message; BATCH] = core::array::from_fn(|i| message_for(i as u32));
    let mut popped = [Message::default(); BATCH];
    let mut costs = Costs::default();
    for _ in 0..ROUNDS as usize / BATCH {
        let mut refused = 0u32;
        let start = cycles();
        for msg in &batch {
            refused += u32::from(!queue.push(black_box(*msg)));
        }
        let pushed = cycles();
        for slot in popped.iter_mut() {
            *slot = queue.pop().unwrap_or_default();
        }
        let end = cycles();
        costs.push += elapsed(start, pushed, overhead);
        costs.pop += elapsed(pushed, end, overhead);
        zassert_eq!(refused, 0);
        zassert!(black_box(popped) == batch, "a batch came back changed");
    }
    let mut lost = 0u32;
    let start = cycles();
    for _ in 0..ROUNDS as usize / BATCH {
        for msg in &batch {
            let pushed = queue.push(black_box(*msg));
            let back = queue.pop().map(|m| m.msg_id);
            lost += u32::from(!pushed || back != Some(msg.msg_id));
        }
    }
    costs.round_trip = elapsed(start, cycles(), 0);
    zassert_eq!(lost, 0);
    Ok(costs)
}

/// `numerator / denominator` in hundredths (printed as `N.NN`).
fn hundredths(numerator: u64, denominator: u64) -> u64 {
    numerator * 100 / denominator.max(1)
}

/// Hundredths of a cycle per operation.
fn per_operation(total: u64) -> u64 {
    hundredths(total, u64::from(ROUNDS))
}

fn report(name: &str, costs: &Costs) -> Outcome {
    let [push, pop, round_trip] = [costs.push, costs.pop, costs.round_trip].map(per_operation);
    zephyr::printkln!(
        "{} cost: push {}.{:02} cycles, pop {}.{:02} cycles, push+pop {}.{:02} cycles ({} round trips, k_cycle_get_32 units)",
        name,
        push / 100,
        push % 100,
        pop / 100,
        pop % 100,
        round_trip / 100,
        round_trip % 100,
        ROUNDS
    );
    zassert!(
        push > 0 && pop > 0 && round_trip > 0,
        "a cost came out zero"
    );
    Ok(())
}

/// The ring's costs, measured over a fresh ring in the static region.
fn measure_ring() -> Result<Costs, Failure> {
    let mut lease = RegionLease::claim()?;
    let (producer, consumer) = lease.ring(Direction::Cpu0ToCpu1, 0).attach();
    measure(&mut Calls::new(
        producer,
        consumer,
        Producer::push,
        Consumer::pop,
    ))
}

pub fn ring_cost_benchmark() -> Outcome {
    let ring_costs = measure_ring()?;

    let mut queue = heapless::spsc::Queue::<Message, QUEUE_SLOTS>::new();
    let (producer, consumer) = queue.split();
    let heapless_costs = measure(&mut Calls::new(
        producer,
        consumer,
        heapless::spsc::Producer::enqueue,
        heapless::spsc::Consumer::dequeue,
    ))?;

    report("ring", &ring_costs)?;
    report("heapless::spsc::Queue", &heapless_costs)
}

fn kernel_msgq_cost() -> Outcome {
    let ring_costs = measure_ring()?;

    let mut buffer = [Message::default(); QUEUE_SLOTS];
    // SAFETY: `k_msgq` is a plain C struct; all zeroes is its state before
    // `k_msgq_init`.
    let mut queue: raw::k_msgq = unsafe { core::mem::zeroed() };
    // SAFETY: `queue` and `buffer` stay in place until the end of this
    // function, which is the queue's only user; the buffer holds
    // `QUEUE_SLOTS` items of `size_of::<Message>()` bytes.
    unsafe {
        raw::k_msgq_init(
            &raw mut queue,
            buffer.as_mut_ptr().cast(),
            size_of::<Message>(),
            QUEUE_SLOTS as u32,
        )
    };
    let msgq_costs = measure(&mut KernelMsgq(&mut queue))?;

    report("k_msgq", &msgq_costs)?;
    let ratio = hundredths(msgq_costs.round_trip, ring_costs.round_trip);
    zephyr::printkln!(
        "k_msgq push+pop costs {}.{:02}x the ring's in this run",
        ratio / 100,
        ratio % 100
    );
    Ok(())
}

ztest_suite!(ipc_bench_compare { kernel_msgq_cost });
