//! The CPU1 client: argument checks, slot reservation, timeouts, late
//! replies, slot ownership across a timeout and a restart, concurrent
//! callers over K slots, polled and interrupt completion, round-trip
//! statistics.
//!
//! CPU0 is played by the test ([`FakeCpu0`]): it pops requests from the ring
//! CPU1→CPU0 and pushes replies into the ring CPU0→CPU1, ringing CPU1's
//! doorbell semaphore unless the request asked to poll. CPU1's dispatch
//! thread is either the test calling [`Client::dispatch`] by hand, or a
//! thread doing so on each doorbell (and every millisecond).
//!
//! The region and each core's ring ends are the host entry point's
//! (`synaptic_serve::loopback`: [`publish`], [`ring_ends`]), but not its
//! stepped cores: these tests need threads,
//! the wall clock and a CPU0 that answers late, wrongly or out of order on
//! purpose.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use synaptic_abi::{
    Direction, Errno, MessageType, Priority, ValidMessage, EXCHANGE_INPUT_OFFSET,
    EXCHANGE_INPUT_SIZE, REQUEST_FLAG_POLLED,
};
use synaptic_ipc::host::HostSemaphore;
use synaptic_ipc::{Doorbell, Semaphore, Sender, Timeout};
use synaptic_ring::Consumer;
use synaptic_runtime::registry::ModelHandle;
use synaptic_runtime::time::Clock;
use synaptic_serve::client::ClientConfig;
use synaptic_serve::host::MonotonicClock;
use synaptic_serve::loopback::{
    publish, ring_ends, MutexClient, NoDoorbell, RegionBuffer, RING as N, SLOTS,
};
use synaptic_serve::protocol::is_after;
use synaptic_serve::{Client, ClientError, SharedRegion, Wait};

type TestClient<'r> = MutexClient<'r, NoDoorbell, HostSemaphore, MonotonicClock>;

const KWS: u32 = 0x0001_0000;
const KWS_IN: usize = 490;
const OUT: usize = 12;

/// The first client on a window the test just published (every slot free,
/// nothing sent; a later one on the same window is a restart, `restart`).
fn attach<'r>(region: &SharedRegion<'r, N>) -> TestClient<'r> {
    attach_with(region, 0)
}

/// A client restarting on `region` ([`Client::attach`]): it trusts nothing
/// a previous life left.
fn restart<'r>(region: &SharedRegion<'r, N>) -> TestClient<'r> {
    attach_life(region, 0, false, false)
}

fn attach_with<'r>(region: &SharedRegion<'r, N>, poll_threshold_us: u32) -> TestClient<'r> {
    attach_config(region, poll_threshold_us, false)
}

fn attach_config<'r>(
    region: &SharedRegion<'r, N>,
    poll_threshold_us: u32,
    swept: bool,
) -> TestClient<'r> {
    attach_life(region, poll_threshold_us, swept, true)
}

/// A client on the monotonic clock; `fresh`: the first life on the region
/// ([`Client::attach_fresh`]), else a restart ([`Client::attach`]).
fn attach_life<'r>(
    region: &SharedRegion<'r, N>,
    poll_threshold_us: u32,
    swept: bool,
    fresh: bool,
) -> TestClient<'r> {
    attach_clock(
        region,
        MonotonicClock::new(),
        poll_threshold_us,
        swept,
        fresh,
    )
}

/// CPU1's client on clock `C`, on host semaphores and a silent doorbell
/// (the test drives CPU1's dispatch itself).
fn attach_clock<'r, C: Clock>(
    region: &SharedRegion<'r, N>,
    clock: C,
    poll_threshold_us: u32,
    swept: bool,
    fresh: bool,
) -> MutexClient<'r, NoDoorbell, HostSemaphore, C> {
    // SAFETY: each test keeps at most one producer of ring CPU1→CPU0 and
    // one consumer of ring CPU0→CPU1 alive on CPU1's side (a restarted
    // client's predecessor is dropped first).
    let (consumer, producer) = unsafe { ring_ends(region, Direction::Cpu0ToCpu1) };
    let attach = if fresh {
        Client::attach_fresh
    } else {
        Client::attach
    };
    attach(
        region,
        producer,
        consumer,
        NoDoorbell,
        HostSemaphore::new,
        clock,
        ClientConfig {
            poll_threshold_us,
            relax: thread::yield_now,
            swept,
        },
    )
}

/// Stage `len` bytes derived from `seq` and return them.
fn stage(input: &mut [u8], len: usize, seq: u32) -> Vec<u8> {
    for (i, b) in input[..len].iter_mut().enumerate() {
        *b = (i as u32 ^ seq.wrapping_mul(0x9E37_79B9)) as u8;
    }
    input[..len].to_vec()
}

/// What the fake CPU0 computes: the input reversed, truncated.
fn answer(input: &[u8], out_len: usize) -> Vec<u8> {
    input.iter().rev().take(out_len).copied().collect()
}

/// CPU0's doorbell to CPU1: counts the interrupt, then gives CPU1's
/// dispatch semaphore (so a woken caller already sees the count).
struct Bell<'b> {
    peer: &'b HostSemaphore,
    rung: &'b AtomicU32,
}

impl Doorbell for Bell<'_> {
    fn ring(&self) {
        self.rung.fetch_add(1, Ordering::SeqCst);
        self.peer.give();
    }
}

/// CPU0 as the test plays it: the consumer of CPU1's requests and the
/// producer of its replies, with a doorbell to CPU1's dispatch semaphore.
struct FakeCpu0<'r, 'b> {
    region: SharedRegion<'r, N>,
    requests: Consumer<'r, N>,
    sender: Sender<'r, N, Bell<'b>>,
}

impl<'r, 'b> FakeCpu0<'r, 'b> {
    fn new(region: &SharedRegion<'r, N>, cpu1_bell: &'b HostSemaphore) -> Self {
        Self::counting(region, cpu1_bell, Box::leak(Box::default()))
    }

    fn counting(
        region: &SharedRegion<'r, N>,
        cpu1_bell: &'b HostSemaphore,
        rung: &'b AtomicU32,
    ) -> Self {
        // SAFETY: each test keeps one consumer of CPU1→CPU0 and one producer
        // of CPU0→CPU1 (CPU0's).
        let (requests, replies) = unsafe { ring_ends(region, Direction::Cpu1ToCpu0) };
        FakeCpu0 {
            region: *region,
            requests,
            sender: Sender::new(
                replies,
                Bell {
                    peer: cpu1_bell,
                    rung,
                },
            ),
        }
    }

    /// The next request, decoded.
    fn pop(&mut self) -> Option<ValidMessage> {
        let raw = self.requests.pop().unwrap()?;
        Some(ValidMessage::try_from(raw).unwrap())
    }

    /// Push `reply`, polled (no doorbell) when `request` asked for it.
    fn send(&mut self, request: &ValidMessage, reply: ValidMessage) {
        if request.status & REQUEST_FLAG_POLLED != 0 {
            self.sender.reply_polled(reply).unwrap();
        } else {
            self.sender.reply(reply).unwrap();
        }
    }

    /// Push a reply of `msg_type` to `msg_id` naming slot `slot`.
    fn reply_slot(&mut self, msg_type: MessageType, msg_id: u32, status: i32, slot: usize) {
        let msg = ValidMessage {
            msg_id,
            status,
            payload_offset: self.region.slot_offset(slot).unwrap() as u32,
            ..ValidMessage::new(msg_type, Priority::Normal)
        };
        self.sender.reply(msg).unwrap();
    }

    /// Push a `STATUS_RESP` to `msg_id` with `mask`.
    fn pong(&mut self, msg_id: u32, mask: i32) {
        let msg = ValidMessage {
            msg_id,
            status: mask,
            ..ValidMessage::new(MessageType::StatusResp, Priority::Normal)
        };
        self.sender.reply(msg).unwrap();
    }

    /// Serve `request` the way CPU0 does: compute into the slot it names,
    /// reply naming the slot. `held` is the mask a status reports.
    fn serve(&mut self, request: &ValidMessage, error: Option<i32>, held: i32) {
        let slot = self.region.slot_at(request.payload_offset as usize);
        let reply = |msg_type, status, len: u16| ValidMessage {
            msg_id: request.msg_id,
            status,
            payload_offset: request.payload_offset,
            payload_len: len,
            ..ValidMessage::new(msg_type, request.priority)
        };
        let reply = match request.msg_type {
            MessageType::InferReq => {
                let exchange = self.region.exchange(slot.unwrap()).unwrap();
                let header = exchange.read_header();
                let len = header.input_len_within(exchange.input_capacity()).unwrap();
                let status = match error {
                    Some(errno) => errno,
                    None => {
                        // SAFETY: CPU0 owns the slot until the reply below.
                        let (input, output) = unsafe { (exchange.input(), exchange.output_mut()) };
                        output[..OUT].copy_from_slice(&answer(&input[..len], OUT));
                        OUT as i32
                    }
                };
                reply(MessageType::InferResp, status, status.max(0) as u16)
            }
            MessageType::ModelLoad => {
                let header = self.region.exchange(slot.unwrap()).unwrap().read_header();
                let status = if header.model_name() == Ok(&b"kws"[..]) {
                    KWS as i32
                } else {
                    Errno::NoEnt.negative()
                };
                reply(MessageType::ModelLoad, status, 0)
            }
            MessageType::StatusReq => ValidMessage {
                msg_id: request.msg_id,
                status: held,
                timestamp_us: request.timestamp_us,
                ..ValidMessage::new(MessageType::StatusResp, Priority::Normal)
            },
            other => panic!("unexpected {other:?}"),
        };
        self.send(request, reply);
    }
}

/// How the fake CPU0 thread behaves.
struct Behaviour {
    /// Delay before answering request `msg_id`.
    delay: fn(u32) -> Duration,
    /// Answer every inference with this status instead of an output.
    error: Option<i32>,
    /// Collect up to this many slot requests, then answer them newest first.
    batch: usize,
}

const PROMPT: Behaviour = Behaviour {
    delay: |_| Duration::ZERO,
    error: None,
    batch: 1,
};

/// What the fake CPU0 thread saw.
#[derive(Debug, Default)]
struct Seen {
    answered: u32,
    /// Requests that asked to poll.
    polled: u32,
    /// The ids in the order they were answered.
    order: Vec<u32>,
}

/// Run `body` against a fake CPU0 on a thread and, with `dispatch`, CPU1's
/// dispatch thread.
fn with_cpu0<R>(
    region: SharedRegion<'_, N>,
    client: &TestClient<'_>,
    behaviour: Behaviour,
    dispatch: bool,
    body: impl FnOnce(&FakeRings) -> R,
) -> (R, Seen) {
    let cpu1_bell = HostSemaphore::new();
    let stop = AtomicBool::new(false);
    let rings = FakeRings::default();
    thread::scope(|s| {
        // Stops both threads when the body ends, also by a panic.
        let stopper = StopOnDrop(|| {
            stop.store(true, Ordering::Release);
            cpu1_bell.give();
        });
        let cpu0 = s.spawn(|| {
            let mut cpu0 = FakeCpu0::counting(&region, &cpu1_bell, &rings.0);
            let mut seen = Seen::default();
            let mut pending: Vec<ValidMessage> = Vec::new();
            let mut since = Instant::now();
            while !stop.load(Ordering::Acquire) {
                let Some(msg) = cpu0.pop() else {
                    let due = !pending.is_empty() && since.elapsed() > Duration::from_millis(2);
                    if due {
                        for msg in pending.drain(..).rev() {
                            cpu0.serve(&msg, behaviour.error, 0);
                            seen.order.push(msg.msg_id);
                            seen.answered += 1;
                        }
                    }
                    thread::sleep(Duration::from_micros(50));
                    continue;
                };
                if msg.status & REQUEST_FLAG_POLLED != 0 {
                    seen.polled += 1;
                }
                thread::sleep((behaviour.delay)(msg.msg_id));
                if msg.msg_type == MessageType::StatusReq {
                    let held = pending.iter().fold(0, |mask, p| {
                        mask | 1 << region.slot_at(p.payload_offset as usize).unwrap()
                    });
                    cpu0.serve(&msg, None, held);
                    seen.order.push(msg.msg_id);
                    seen.answered += 1;
                } else {
                    if pending.is_empty() {
                        since = Instant::now();
                    }
                    pending.push(msg);
                    if pending.len() >= behaviour.batch {
                        for msg in pending.drain(..).rev() {
                            cpu0.serve(&msg, behaviour.error, 0);
                            seen.order.push(msg.msg_id);
                            seen.answered += 1;
                        }
                    }
                }
            }
            seen
        });
        if dispatch {
            s.spawn(|| {
                while !stop.load(Ordering::Acquire) {
                    let _ = cpu1_bell.take(Timeout::Millis(1));
                    client.dispatch();
                }
            });
        }
        let value = body(&rings);
        drop(stopper);
        (value, cpu0.join().unwrap())
    })
}

/// Runs its closure when dropped (also on unwinding).
struct StopOnDrop<F: Fn()>(F);

impl<F: Fn()> Drop for StopOnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// The fake CPU0's doorbell count (interrupts rung to CPU1), as the body
/// sees it.
#[derive(Default)]
struct FakeRings(AtomicU32);

impl FakeRings {
    fn get(&self) -> u32 {
        self.0.load(Ordering::SeqCst)
    }
}

fn kws() -> ModelHandle {
    ModelHandle::from_raw(KWS)
}

#[test]
fn invalid_arguments_send_nothing() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    for name in ["", "a\0b", "0123456789012345678901234567890123"] {
        assert_eq!(
            client.model_lookup(name, Timeout::NoWait),
            Err(ClientError::InvalidArgument)
        );
    }
    let mut out = [0u8; 16];
    for len in [0, EXCHANGE_INPUT_SIZE + 1] {
        let session = client.session(Timeout::NoWait).unwrap();
        let r = session.infer(kws(), len, &mut out, Priority::Normal, Timeout::NoWait);
        assert_eq!(r, Err(ClientError::InvalidArgument));
        assert_eq!(ClientError::status(r), Errno::Inval.negative());
    }
    // Past a small slot's capacity, and past every slot's.
    let small = client.reserve(KWS_IN, Timeout::NoWait).unwrap();
    assert_eq!(small.slot(), 3);
    let r = small.infer(kws(), 4_097, &mut out, Priority::Normal, Timeout::NoWait);
    assert_eq!(r, Err(ClientError::InvalidArgument));
    assert!(matches!(
        client.reserve(EXCHANGE_INPUT_SIZE + 1, Timeout::NoWait),
        Err(ClientError::InvalidArgument)
    ));
    assert_eq!(client.stats().sent, 0);
    assert!(!client.slot_held());
    let bell = HostSemaphore::new();
    let mut cpu0 = FakeCpu0::new(&region, &bell);
    assert!(cpu0.pop().is_none());
}

#[test]
fn reserve_takes_the_smallest_free_slot_that_fits() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    assert_eq!(region.slot_count(), SLOTS.count as usize);
    // Small inputs fill the small slots first, the frame slot last.
    let sessions: Vec<_> = (0..4)
        .map(|_| client.reserve(KWS_IN, Timeout::NoWait).unwrap())
        .collect();
    let slots: Vec<usize> = sessions.iter().map(|s| s.slot()).collect();
    assert_eq!(slots, [3, 2, 1, 0]);
    assert!(matches!(
        client.reserve(1, Timeout::NoWait),
        Err(ClientError::Busy)
    ));
    assert!(matches!(
        client.session(Timeout::NoWait),
        Err(ClientError::Busy)
    ));
    drop(sessions);
    // A frame-sized input fits the frame slot only; `session` is the frame slot.
    let frame = client.reserve(4_097, Timeout::NoWait).unwrap();
    assert_eq!(frame.slot(), 0);
    assert!(matches!(
        client.reserve(4_097, Timeout::NoWait),
        Err(ClientError::Busy)
    ));
    assert!(matches!(
        client.session(Timeout::NoWait),
        Err(ClientError::Busy)
    ));
    let mut small = client.reserve(4_096, Timeout::NoWait).unwrap();
    assert_eq!(small.slot(), 3);
    assert_eq!(small.infer_input().len(), SLOTS.small_input as usize);
    drop(frame);
    assert_eq!(client.session(Timeout::NoWait).unwrap().slot(), 0);
    // Refusals counted, nothing sent (no slot was ever CPU0's).
    let s = client.stats();
    assert_eq!((s.busy, s.sent), (4, 0));
}

#[test]
fn a_swept_caller_sleeps_without_a_timeout_of_its_own_until_the_sweep() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach_config(&region, 0, true);
    let bell = HostSemaphore::new();
    let mut cpu0 = FakeCpu0::new(&region, &bell);
    let started = Instant::now();
    let late = Duration::from_millis(40);
    thread::scope(|s| {
        s.spawn(|| {
            // No sweep for the first 40 ms: a 5 ms timeout cannot end
            // the wait before it.
            thread::sleep(late);
            while cpu0.pop().is_none() {
                thread::yield_now();
            }
            for _ in 0..1000 {
                client.expire_sleepers();
                thread::sleep(Duration::from_millis(1));
                if client.stats().timeouts > 0 {
                    break;
                }
            }
        });
        let mut session = client.session(Timeout::NoWait).unwrap();
        stage(session.infer_input(), KWS_IN, 1);
        let mut out = [0u8; OUT];
        let r = session.infer_with(
            kws(),
            KWS_IN,
            &mut out,
            Priority::Normal,
            Wait::Interrupt,
            Timeout::Millis(5),
        );
        assert_eq!(r, Err(ClientError::TimedOut));
    });
    assert!(
        started.elapsed() >= late,
        "the caller armed its own timeout"
    );
    assert_eq!(client.stats().timeouts, 1);
    // A sleeper without a deadline is left asleep by the sweep.
    client.expire_sleepers();
}

#[test]
fn a_timed_out_request_keeps_its_slot_until_its_late_reply() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    let bell = HostSemaphore::new();
    let mut cpu0 = FakeCpu0::new(&region, &bell);
    assert!(
        !client.slot_held(),
        "a fresh ring starts with every slot free"
    );

    let mut session = client.session(Timeout::NoWait).unwrap();
    stage(session.infer_input(), KWS_IN, 1);
    let mut out = [0u8; OUT];
    let r = session.infer(
        kws(),
        KWS_IN,
        &mut out,
        Priority::RealTime,
        Timeout::Millis(5),
    );
    assert_eq!(r, Err(ClientError::TimedOut));
    assert_eq!(ClientError::status(r), Errno::TimedOut.negative());
    assert_eq!(client.held_mask(), 0b0001);

    // What CPU0 received: the request naming the frame slot, and its header.
    let req = cpu0.pop().unwrap();
    assert_eq!(req.msg_type, MessageType::InferReq);
    assert_eq!(req.priority, Priority::RealTime);
    assert_eq!(req.status, 0, "no flags: an interrupt-driven wait");
    assert_eq!(req.payload_offset as usize, region.slot_offset(0).unwrap());
    assert_eq!(req.payload_len as usize, EXCHANGE_INPUT_OFFSET + KWS_IN);
    let header = region.exchange(0).unwrap().read_header();
    assert_eq!((header.model, header.input_len), (KWS, KWS_IN as u32));

    // The next caller cannot stage the frame slot: CPU0 may still read it.
    assert!(matches!(
        client.session(Timeout::NoWait),
        Err(ClientError::Busy)
    ));
    assert!(matches!(
        client.session(Timeout::Millis(3)),
        Err(ClientError::Busy)
    ));
    // Each attempt asked CPU0 for a barrier, after the request.
    for _ in 0..2 {
        let ping = cpu0.pop().unwrap();
        assert_eq!(ping.msg_type, MessageType::StatusReq);
        assert!(is_after(ping.msg_id, req.msg_id));
    }
    // The small slots are free meanwhile.
    assert_eq!(client.reserve(KWS_IN, Timeout::NoWait).unwrap().slot(), 3);

    // The late reply frees the slot and is discarded, delivered to nobody.
    cpu0.reply_slot(MessageType::InferResp, req.msg_id, OUT as i32, 0);
    assert_eq!(client.dispatch(), 1);
    assert!(!client.slot_held());
    let s = client.stats();
    assert_eq!(
        (s.sent, s.delivered, s.discarded, s.timeouts, s.busy),
        (3, 0, 1, 1, 2)
    );
    assert!(client.session(Timeout::NoWait).is_ok());
}

#[test]
fn a_barrier_status_reply_frees_a_slot_whose_request_was_lost() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    let bell = HostSemaphore::new();
    let mut cpu0 = FakeCpu0::new(&region, &bell);
    let session = client.session(Timeout::NoWait).unwrap();
    let mut out = [0u8; OUT];
    let r = session.infer(kws(), KWS_IN, &mut out, Priority::Normal, Timeout::NoWait);
    assert_eq!(r, Err(ClientError::TimedOut));
    let lost = cpu0.pop().unwrap(); // CPU0 "drops" it.
    assert!(client.session(Timeout::NoWait).is_err());
    let ping = cpu0.pop().unwrap();
    // "Held" proves nothing; nor does "free" from a ping older than the request.
    cpu0.pong(ping.msg_id, 0b0001);
    cpu0.pong(lost.msg_id - 1, 0);
    assert_eq!(client.dispatch(), 2);
    assert!(client.slot_held());
    // Other slots held say nothing about this one: bit 0 clear frees it.
    cpu0.pong(ping.msg_id, 0b1110);
    client.dispatch();
    assert!(!client.slot_held());
    assert!(client.session(Timeout::NoWait).is_ok());
    let s = client.stats();
    assert_eq!(
        (s.pongs, s.discarded, s.delivered, s.reclaimed),
        (3, 0, 0, 1)
    );
}

#[test]
fn a_restarted_client_trusts_no_reply_until_cpu0_has_taken_its_sync_request() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let bell = HostSemaphore::new();
    let mut cpu0 = FakeCpu0::new(&region, &bell);
    {
        // The first life: three pings CPU0 never answers, then it dies.
        let first_life = attach(&region);
        for _ in 0..3 {
            assert_eq!(first_life.ping(Timeout::NoWait), Err(ClientError::TimedOut));
        }
    }
    for id in 1..=3 {
        assert_eq!(cpu0.pop().unwrap().msg_id, id);
    }
    // CPU0 answers into the ring meanwhile (a buggy life numbers as it
    // likes, so the ids may be anything, the next life's included).
    cpu0.pong(3, 0);
    cpu0.pong(5, 0);

    let second_life = restart(&region);
    assert!(!second_life.synchronised());
    assert_eq!(
        second_life.held_mask(),
        0b1111,
        "it cannot know what the first life left"
    );
    assert_eq!(second_life.stats().sent, 0, "nothing sent by attach");
    // The first call that needs the sync (here a reservation) pushes it.
    assert!(second_life.reserve(1, Timeout::NoWait).is_err());
    assert_eq!(second_life.stats().sent, 1, "the sync request");
    // Before CPU0 has taken the sync request, every reply is dropped
    // unread, whatever its id: here a status saying every slot is free.
    assert_eq!(second_life.dispatch(), 2);
    assert!(!second_life.synchronised());
    assert_eq!(second_life.held_mask(), 0b1111);
    // More answers to the first life, then CPU0 takes the sync request
    // (and answers it: an answer indistinguishable from the others).
    cpu0.reply_slot(MessageType::InferResp, 4, OUT as i32, 3);
    let refusal = ValidMessage {
        msg_id: 5,
        status: Errno::Fault.negative(),
        ..ValidMessage::new(MessageType::InferResp, Priority::Normal)
    };
    cpu0.sender.reply(refusal).unwrap();
    let sync = cpu0.pop().unwrap();
    assert_eq!(sync.msg_id, 4, "ids continue after the live head");
    assert_eq!(sync.msg_type, MessageType::StatusReq);
    cpu0.pong(sync.msg_id, 0);
    assert_eq!(second_life.dispatch(), 3);
    assert!(second_life.synchronised());
    assert_eq!(second_life.held_mask(), 0b1111, "nothing proved yet");
    // From here on every reply is this life's: the status it owes itself
    // frees every slot CPU0 reports free.
    let status = cpu0.pop().unwrap();
    assert_eq!(
        (status.msg_id, status.msg_type),
        (5, MessageType::StatusReq)
    );
    cpu0.pong(status.msg_id, 0b0001);
    second_life.dispatch();
    assert_eq!(second_life.held_mask(), 0b0001);
    // CPU0 finishes the first life's request on the frame slot: a reply
    // naming a presumed slot proves nothing (another request from before
    // might hold the slot by now) but asks CPU0 for a status.
    cpu0.reply_slot(MessageType::InferResp, 2, OUT as i32, 0);
    second_life.dispatch();
    assert_eq!(second_life.held_mask(), 0b0001);
    let status = cpu0.pop().unwrap();
    assert_eq!(
        (status.msg_id, status.msg_type),
        (6, MessageType::StatusReq)
    );
    cpu0.pong(status.msg_id, 0);
    second_life.dispatch();
    assert_eq!(second_life.held_mask(), 0);
    assert!(cpu0.pop().is_none(), "no status owed any more");
    let s = second_life.stats();
    assert_eq!(
        (
            s.sent,
            s.stale,
            s.delivered,
            s.discarded,
            s.pongs,
            s.reclaimed
        ),
        (3, 5, 0, 1, 2, 4)
    );
}

#[test]
fn a_restarted_client_serves_once_synchronised_and_answers_a_ping_sent_before() {
    for dispatch in [true, false] {
        let mut buffer = RegionBuffer::new();
        let region = publish(buffer.bytes()).unwrap();
        {
            let bell = HostSemaphore::new();
            let mut cpu0 = FakeCpu0::new(&region, &bell);
            {
                // The first life dies with a request CPU0 never answers.
                let first_life = attach(&region);
                let session = first_life.reserve(KWS_IN, Timeout::NoWait).unwrap();
                let mut out = [0u8; OUT];
                let r = session.infer(kws(), KWS_IN, &mut out, Priority::Normal, Timeout::NoWait);
                assert_eq!(r, Err(ClientError::TimedOut));
            }
            assert!(cpu0.pop().is_some());
        }
        let client = restart(&region);
        let ((), seen) = with_cpu0(region, &client, PROMPT, dispatch, |_| {
            // The ping's answer may come before CPU0 took the sync request
            // (and be dropped with the stale ones): it is sent again.
            let wait = if dispatch {
                Wait::Interrupt
            } else {
                Wait::Poll
            };
            assert!(client.ping_with(wait, Timeout::Millis(5_000)).is_ok());
            assert!(client.synchronised());
            assert_eq!(client.held_mask(), 0);
            let mut session = client.reserve(KWS_IN, Timeout::Millis(5_000)).unwrap();
            let staged = stage(session.infer_input(), KWS_IN, 7);
            let mut out = [0u8; OUT];
            let n = session.infer_with(
                kws(),
                KWS_IN,
                &mut out,
                Priority::Normal,
                Wait::Poll,
                Timeout::Millis(5_000),
            );
            assert_eq!(n, Ok(OUT));
            assert_eq!(out.to_vec(), answer(&staged, OUT));
        });
        assert!(seen.answered >= 3, "{seen:?}");
        let s = client.stats();
        assert_eq!((s.delivered, s.timeouts), (1, 0), "{s:?}");
    }
}

#[test]
fn a_reservation_after_a_restart_waits_for_the_sync_and_no_longer() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    {
        let _first_life = attach(&region);
        let bell = HostSemaphore::new();
        let mut cpu0 = FakeCpu0::new(&region, &bell);
        _first_life.ping(Timeout::NoWait).unwrap_err();
        assert!(cpu0.pop().is_some());
    }
    let client = restart(&region);
    let ((), _) = with_cpu0(region, &client, PROMPT, true, |_| {
        // Nothing but the sync's completion sends the status that frees
        // the presumed slots: a caller waiting forever is woken by it.
        let session = client.reserve(KWS_IN, Timeout::Forever).unwrap();
        assert!(session.slot() < SLOTS.count as usize);
    });
    assert!(client.synchronised());
}

#[test]
fn replies_reach_the_caller_that_waits_for_them() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    let ((), seen) = with_cpu0(region, &client, PROMPT, true, |_| {
        let model = client.model_lookup("kws", Timeout::Forever).unwrap();
        assert_eq!(model.raw(), KWS);
        assert_eq!(
            client.model_lookup("face", Timeout::Forever),
            Err(ClientError::Remote(Errno::NoEnt))
        );
        for seq in 0..50 {
            let mut session = if seq % 2 == 0 {
                client.session(Timeout::Forever).unwrap()
            } else {
                client.reserve(KWS_IN, Timeout::Forever).unwrap()
            };
            let staged = stage(session.infer_input(), KWS_IN, seq);
            let mut out = [0u8; 16];
            let n = session
                .infer(model, KWS_IN, &mut out, Priority::Normal, Timeout::Forever)
                .unwrap();
            assert_eq!(&out[..n], &answer(&staged, OUT)[..]);
        }
        // Read in place: the closure sees exactly the reply's bytes, in the
        // slot, before the slot is freed.
        let mut session = client.reserve(KWS_IN, Timeout::Forever).unwrap();
        let slot = session.slot();
        let staged = stage(session.infer_input(), KWS_IN, 99);
        let seen_bytes = session
            .infer_then(
                model,
                KWS_IN,
                Priority::Normal,
                Wait::Interrupt,
                Timeout::Forever,
                |out| {
                    assert!(client.held_mask() & (1 << slot) == 0, "CPU0 handed it back");
                    out.to_vec()
                },
            )
            .unwrap();
        assert_eq!(seen_bytes, answer(&staged, OUT));
        // An output larger than the caller's buffer.
        let session = client.session(Timeout::Forever).unwrap();
        let mut small = [0u8; 4];
        assert_eq!(
            session.infer(
                model,
                KWS_IN,
                &mut small,
                Priority::Normal,
                Timeout::Forever
            ),
            Err(ClientError::OutputTooSmall {
                needed: OUT,
                actual: 4
            })
        );
    });
    assert_eq!(seen.answered, 54);
    let s = client.stats();
    assert_eq!(
        (s.sent, s.delivered, s.discarded, s.timeouts, s.polled),
        (54, 54, 0, 0, 0)
    );
    assert!(!client.slot_held());
}

#[test]
fn a_remote_errno_is_the_callers_result() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    let failing = Behaviour {
        error: Some(Errno::Io.negative()),
        ..PROMPT
    };
    with_cpu0(region, &client, failing, true, |_| {
        let session = client.session(Timeout::Forever).unwrap();
        let mut out = [0u8; 16];
        let r = session.infer(kws(), KWS_IN, &mut out, Priority::Normal, Timeout::Forever);
        assert_eq!(r, Err(ClientError::Remote(Errno::Io)));
        assert_eq!(ClientError::status(r), -5);
        assert!(
            !client.slot_held(),
            "an error reply hands the slot back too"
        );
    });
}

#[test]
fn late_replies_racing_timeouts_are_each_delivered_or_discarded_once() {
    const ROUNDS: u32 = 200;
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    // Delays of 0, 1.5 and 3 ms against a 2 ms timeout: both outcomes, and
    // replies landing near the deadline (the mix is printed, not asserted:
    // it depends on the host's scheduling).
    let racing = Behaviour {
        delay: |id| match id.wrapping_mul(7919) % 4 {
            0 | 1 => Duration::ZERO,
            2 => Duration::from_micros(1500),
            _ => Duration::from_millis(3),
        },
        ..PROMPT
    };
    let ((ok, timed_out), _) = with_cpu0(region, &client, racing, true, |_| {
        let (mut ok, mut timed_out) = (0u32, 0u32);
        for seq in 0..ROUNDS {
            let mut session = client.session(Timeout::Forever).unwrap();
            let staged = stage(session.infer_input(), KWS_IN, seq);
            let mut out = [0u8; OUT];
            match session.infer(
                kws(),
                KWS_IN,
                &mut out,
                Priority::Normal,
                Timeout::Millis(2),
            ) {
                Ok(OUT) => {
                    assert_eq!(out.to_vec(), answer(&staged, OUT), "round {seq}");
                    ok += 1;
                }
                Err(ClientError::TimedOut) => timed_out += 1,
                other => panic!("round {seq}: {other:?}"),
            }
        }
        // Wait for the last late reply (or a barrier proving it lost).
        drop(client.session(Timeout::Forever).unwrap());
        (ok, timed_out)
    });
    let s = client.stats();
    println!("{ROUNDS} rounds: {ok} answered in time, {timed_out} timed out, {s:?}");
    assert_eq!(ok + timed_out, ROUNDS);
    assert_eq!(s.delivered, ok);
    // Every timed-out request's slot came back exactly once: by its late
    // reply (discarded) or, the reply not yet in, by a barrier status that
    // proved CPU0 done with it (this fake CPU0 answers in order, so the
    // late reply then precedes the status and is the one that frees it).
    assert_eq!(
        s.discarded, timed_out,
        "every late reply discarded exactly once"
    );
    assert_eq!(s.reclaimed, 0);
    assert_eq!(s.timeouts, timed_out);
    assert!(!client.slot_held());
}

#[test]
fn pings_fold_round_trips_into_the_control_block() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    let slow = Behaviour {
        delay: |_| Duration::from_millis(1),
        ..PROMPT
    };
    with_cpu0(region, &client, slow, true, |_| {
        for _ in 0..5 {
            let pong = client.ping(Timeout::Forever).unwrap();
            assert!(!pong.slot_held);
            assert_eq!(pong.held_mask, 0);
            assert!(pong.rtt_us >= 1000, "the stand-in sleeps 1 ms per reply");
        }
    });
    let published = region.rtt();
    assert_eq!(published, client.rtt());
    assert_eq!(published.count, 5);
    assert!(published.min_us >= 1000);
    assert!(published.min_us <= published.last_us && published.last_us <= published.max_us);
    let control = region.control_block();
    assert_eq!(control.rtt_count, 5);
    assert_eq!(control.rtt_max_us, published.max_us);
}

#[test]
fn dispatch_drains_every_reply_and_counts_strays() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    let bell = HostSemaphore::new();
    let mut cpu0 = FakeCpu0::new(&region, &bell);
    cpu0.pong(7, 0);
    cpu0.reply_slot(MessageType::InferResp, 8, 0, 0);
    cpu0.reply_slot(MessageType::ModelLoad, 9, 1, 1);
    // Not a reply at all.
    cpu0.reply_slot(MessageType::InferReq, 10, 0, 2);
    assert_eq!(client.dispatch(), 4);
    assert_eq!(client.poll_replies(), 0, "nothing left");
    let s = client.stats();
    assert_eq!(
        (s.pongs, s.discarded, s.delivered, s.unexpected),
        (1, 2, 0, 1)
    );
}

#[test]
fn concurrent_callers_on_k_slots_get_their_own_outputs_when_replies_overtake() {
    const THREADS: u32 = 4;
    const ROUNDS: u32 = 100;
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    // CPU0 collects up to three slot requests and answers the newest first.
    let lifo = Behaviour { batch: 3, ..PROMPT };
    let ((), seen) = with_cpu0(region, &client, lifo, true, |_| {
        thread::scope(|s| {
            for t in 0..THREADS {
                let client = &client;
                s.spawn(move || {
                    for round in 0..ROUNDS {
                        let seq = t * 10_000 + round;
                        // Thread 0 uses the frame slot, the others any slot.
                        let mut session = if t == 0 {
                            client.session(Timeout::Millis(10_000)).unwrap()
                        } else {
                            client.reserve(KWS_IN, Timeout::Millis(10_000)).unwrap()
                        };
                        let staged = stage(session.infer_input(), KWS_IN, seq);
                        let mut out = [0u8; OUT];
                        let priority = Priority::ALL[(seq % 3) as usize];
                        let n = session
                            .infer(kws(), KWS_IN, &mut out, priority, Timeout::Millis(10_000))
                            .unwrap_or_else(|e| panic!("thread {t} round {round}: {e:?}"));
                        assert_eq!(
                            out[..n],
                            answer(&staged, OUT)[..],
                            "thread {t} round {round}"
                        );
                    }
                });
            }
        });
    });
    let s = client.stats();
    let total = THREADS * ROUNDS;
    assert_eq!((s.sent, s.delivered), (total, total));
    assert_eq!(
        (s.discarded, s.timeouts, s.busy, s.unexpected),
        (0, 0, 0, 0)
    );
    // The replies really did overtake: answered in an order other than sent.
    let overtaken = seen.order.windows(2).filter(|w| w[1] < w[0]).count();
    println!(
        "{total} requests from {THREADS} threads, {overtaken} replies overtaking an earlier one"
    );
    assert!(overtaken > 0);
    assert!(!client.slot_held());
}

#[test]
fn polled_completion_needs_no_dispatch_thread_and_no_doorbell() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach(&region);
    // No CPU1 dispatch thread: whoever waits must drain the ring itself.
    let ((), seen) = with_cpu0(region, &client, PROMPT, false, |rings| {
        for seq in 0..20 {
            let mut session = client.reserve(KWS_IN, Timeout::NoWait).unwrap();
            let staged = stage(session.infer_input(), KWS_IN, seq);
            let mut out = [0u8; OUT];
            let n = session
                .infer_with(
                    kws(),
                    KWS_IN,
                    &mut out,
                    Priority::Normal,
                    Wait::Poll,
                    Timeout::Millis(5_000),
                )
                .unwrap();
            assert_eq!(out[..n], answer(&staged, OUT)[..]);
        }
        let pong = client
            .ping_with(Wait::Poll, Timeout::Millis(5_000))
            .unwrap();
        assert_eq!(pong.held_mask, 0);
        assert_eq!(client.stats().polled, 21, "each caller collected its reply");
        assert_eq!(rings.get(), 0, "CPU0 rang no doorbell");
        // An interrupt-driven wait, with nobody dispatching, times out ...
        let session = client.reserve(KWS_IN, Timeout::NoWait).unwrap();
        assert_eq!(session.slot(), 3);
        let mut out = [0u8; OUT];
        let r = session.infer_with(
            kws(),
            KWS_IN,
            &mut out,
            Priority::Normal,
            Wait::Interrupt,
            Timeout::Millis(20),
        );
        assert_eq!(r, Err(ClientError::TimedOut));
        // ... and the next polling caller collects its late reply as well.
        let session = client.reserve(KWS_IN, Timeout::NoWait).unwrap();
        assert_eq!(session.slot(), 2, "slot 3 is still CPU0's");
        session
            .infer_with(
                kws(),
                KWS_IN,
                &mut out,
                Priority::Normal,
                Wait::Poll,
                Timeout::Millis(5_000),
            )
            .unwrap();
        assert!(!client.slot_held());
        assert_eq!(rings.get(), 1, "only the interrupt-driven reply rang");
    });
    assert_eq!(
        seen.polled, 22,
        "every polled request asked CPU0 for no doorbell"
    );
    let s = client.stats();
    assert_eq!(
        (
            s.sent,
            s.delivered,
            s.discarded,
            s.timeouts,
            s.polled,
            s.pongs
        ),
        (23, 21, 1, 1, 22, 1)
    );
}

#[test]
fn auto_polls_once_cpu0_publishes_an_estimate_under_the_threshold() {
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach_with(&region, 500);
    let other = ModelHandle::from_raw(0x0002_0001);
    let infer = |seq| {
        let mut session = client.reserve(KWS_IN, Timeout::NoWait).unwrap();
        let staged = stage(session.infer_input(), KWS_IN, seq);
        let mut out = [0u8; OUT];
        let n = session
            .infer(
                kws(),
                KWS_IN,
                &mut out,
                Priority::Normal,
                Timeout::Millis(5_000),
            )
            .unwrap();
        assert_eq!(out[..n], answer(&staged, OUT)[..]);
    };
    let ((), seen) = with_cpu0(region, &client, PROMPT, true, |rings| {
        // No estimate yet: sleep on the doorbell.
        assert_eq!(client.service_time_us(kws()), None);
        assert!(!client.polls(kws(), Wait::Auto));
        infer(1);
        assert_eq!((client.stats().polled, rings.get()), (0, 1));
        // CPU0 publishes 200 us for the model (another model's is ignored).
        region.publish_service_time(0, other.raw(), 1);
        region.publish_service_time(1, KWS, 200);
        assert_eq!(client.service_time_us(kws()), Some(200));
        assert!(client.polls(kws(), Wait::Auto));
        assert!(!client.polls(kws(), Wait::Interrupt));
        for seq in 2..12 {
            infer(seq);
        }
        let polled = client.stats().polled;
        println!("auto: {polled} of 10 polled replies collected by their callers");
        assert_eq!(rings.get(), 1, "no doorbell for a polled reply");
        // An estimate over the threshold: sleep again.
        region.publish_service_time(1, KWS, 501);
        assert!(!client.polls(kws(), Wait::Auto));
        infer(12);
        assert_eq!(rings.get(), 2);
    });
    assert_eq!(
        seen.polled, 10,
        "Auto asked for polled replies exactly while under the threshold"
    );
    // A client with no threshold never polls on its own.
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    region.publish_service_time(0, KWS, 1);
    let client = attach(&region);
    assert!(!client.polls(kws(), Wait::Auto));
    assert!(client.polls(kws(), Wait::Poll));
}

#[test]
fn a_ping_asks_for_a_doorbell_exactly_when_its_caller_sleeps() {
    for (threshold, wait, polled) in [
        (500, Wait::Interrupt, false),
        (500, Wait::Poll, true),
        (500, Wait::Auto, true),
        (0, Wait::Poll, true),
        (0, Wait::Auto, false),
        (0, Wait::Interrupt, false),
    ] {
        // A fresh window per case: a client attached after another would
        // be a restart, with its sync request first on the ring.
        let mut buffer = RegionBuffer::new();
        let region = publish(buffer.bytes()).unwrap();
        let bell = HostSemaphore::new();
        let mut cpu0 = FakeCpu0::new(&region, &bell);
        let client = attach_with(&region, threshold);
        assert_eq!(
            client.ping_with(wait, Timeout::NoWait),
            Err(ClientError::TimedOut)
        );
        let request = cpu0.pop().unwrap();
        assert_eq!(request.msg_type, MessageType::StatusReq);
        assert_eq!(
            request.status & REQUEST_FLAG_POLLED != 0,
            polled,
            "threshold {threshold}, {wait:?}"
        );
    }
}

/// A hook to run at a clock reading: the readings left, the action.
type Hook = Option<(u32, Box<dyn FnMut()>)>;

thread_local! {
    /// A hook [`HookClock`] runs on this thread at its `n`th reading.
    static HOOK: RefCell<Hook> = const { RefCell::new(None) };
}

/// The monotonic clock, running this thread's [`HOOK`] when it is due: a
/// way to act at a precise point inside a client call.
#[derive(Clone, Copy, Default)]
struct HookClock(MonotonicClock);

impl Clock for HookClock {
    fn now_us(&self) -> u64 {
        HOOK.with(|hook| {
            let mut hook = hook.borrow_mut();
            if let Some((n, f)) = hook.as_mut() {
                *n -= 1;
                if *n == 0 {
                    f();
                    *hook = None;
                }
            }
        });
        self.0.now_us()
    }
}

#[test]
fn a_caller_waiting_for_a_slot_is_woken_by_a_free_just_before_it_sleeps() {
    const PATIENCE_MS: u32 = 2_000;
    let mut buffer = RegionBuffer::new();
    let region = publish(buffer.bytes()).unwrap();
    let client = attach_clock(&region, HookClock::default(), 0, false, true);
    let held = client.session(Timeout::NoWait).unwrap();
    let (free_now, told) = mpsc::channel::<()>();
    let (freed, done) = mpsc::channel::<()>();
    thread::scope(|s| {
        let waiter = s.spawn(|| {
            // The waiter's second clock reading is where it decides how long
            // to sleep, after its look at the slots found none free: the
            // slot is freed right there.
            HOOK.with(|hook| {
                *hook.borrow_mut() = Some((
                    2,
                    Box::new(move || {
                        free_now.send(()).unwrap();
                        done.recv().unwrap();
                    }),
                ));
            });
            let start = Instant::now();
            let session = client.session(Timeout::Millis(PATIENCE_MS));
            (session.map(|s| s.slot()), start.elapsed())
        });
        told.recv().unwrap();
        drop(held);
        freed.send(()).unwrap();
        let (slot, waited) = waiter.join().unwrap();
        assert_eq!(slot, Ok(0));
        assert!(
            waited < Duration::from_millis(u64::from(PATIENCE_MS) / 2),
            "the free was lost: the waiter slept {waited:?} with the slot free"
        );
    });
}

#[test]
fn a_deadline_leaves_whole_milliseconds_rounded_up_and_nothing_once_passed() {
    use synaptic_serve::client::Deadline;
    let at = Deadline::after(5_000, Timeout::Millis(3));
    assert_eq!(at, Deadline::At(8_000));
    assert_eq!(at.left(5_000), Some(Timeout::Millis(3)));
    // 1 us short of a millisecond still waits one: never a wait cut short.
    assert_eq!(at.left(7_001), Some(Timeout::Millis(1)));
    assert_eq!(at.left(7_999), Some(Timeout::Millis(1)));
    assert_eq!(at.left(8_000), None);
    assert_eq!(at.left(u64::MAX), None);
    assert_eq!(Deadline::after(5_000, Timeout::NoWait).left(5_000), None);
    let never = Deadline::after(5_000, Timeout::Forever);
    assert_eq!(never, Deadline::Never);
    assert_eq!(never.left(u64::MAX), Some(Timeout::Forever));
    // No overflow at the clock's end.
    assert_eq!(
        Deadline::after(u64::MAX - 1, Timeout::Millis(u32::MAX)),
        Deadline::At(u64::MAX)
    );
}
