//! Suite `ipc_dispatch`: `synaptic-ipc`'s sender and dispatcher over the
//! ring in the static region, with Zephyr semaphores
//! ([`KernelSemaphore`]) and, for the last case, a second Zephyr thread as
//! the peer that attaches its own producer and rings a semaphore doorbell.

use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::{Direction, MessageType, Priority, ValidMessage};
use synaptic_ipc::{Dispatcher, Doorbell, Handler, Inbox, IpcError, Semaphore, Sender, Timeout};
use synaptic_ring::Producer;
use synaptic_zephyr::sync::KernelSemaphore;
use synaptic_zephyr::ztest::Outcome;
use synaptic_zephyr::{zassert, zassert_eq, ztest_suite};
use zephyr::time::{now, sleep, Duration};

use crate::region::{RegionLease, RingAddress};
use crate::N;

/// Capacity of the inbox of unhandled messages.
const INBOX: usize = 4;
/// Messages the peer thread sends.
const THREAD_MESSAGES: u32 = 1_000;
/// The dispatcher sleeps after this many wake-ups, so the peer fills the
/// ring and meets `Full`.
const WAKES_PER_NAP: u32 = 64;
/// How long the dispatcher keeps going before it gives up on the peer.
const THREAD_GIVE_UP_MS: u32 = 20_000;

type TestInbox = Inbox<KernelSemaphore, INBOX>;
type TestSender<'a> = Sender<'a, N, &'a TestDoorbell>;
type TestDispatcher<'a> = Dispatcher<'a, N, KernelSemaphore, INBOX>;

/// A handler that outlives every dispatcher, for registrations that must
/// be refused.
static SPARE_HANDLER: Tally = Tally::new();

fn new_inbox() -> TestInbox {
    Inbox::new(KernelSemaphore::new(0, INBOX as u32))
}

/// A doorbell that counts its rings and may give a semaphore (the peer's
/// doorbell interrupt giving the dispatch semaphore).
struct TestDoorbell {
    rung: AtomicU32,
    wake: Option<&'static KernelSemaphore>,
}

impl TestDoorbell {
    const fn counting() -> Self {
        TestDoorbell {
            rung: AtomicU32::new(0),
            wake: None,
        }
    }

    const fn waking(wake: &'static KernelSemaphore) -> Self {
        TestDoorbell {
            rung: AtomicU32::new(0),
            wake: Some(wake),
        }
    }

    fn reset(&self) {
        // Ordering: a counter; no thread rings it while it is reset.
        self.rung.store(0, Ordering::Relaxed);
    }

    fn rung(&self) -> u32 {
        // Ordering: a counter; the thread case reads it after joining.
        self.rung.load(Ordering::Relaxed)
    }
}

impl Doorbell for TestDoorbell {
    fn ring(&self) {
        // Ordering: a counter only.
        self.rung.fetch_add(1, Ordering::Relaxed);
        if let Some(wake) = self.wake {
            wake.give();
        }
    }
}

/// A handler that counts, remembers the last id, and checks that the
/// status words arrive as 0, 1, 2, ... (the senders put the sequence there).
struct Tally {
    handled: AtomicU32,
    out_of_order: AtomicU32,
    last_id: AtomicU32,
}

impl Tally {
    const fn new() -> Self {
        Tally {
            handled: AtomicU32::new(0),
            out_of_order: AtomicU32::new(0),
            last_id: AtomicU32::new(0),
        }
    }

    fn handled(&self) -> u32 {
        // Ordering: written and read on the dispatch thread only.
        self.handled.load(Ordering::Relaxed)
    }

    fn out_of_order(&self) -> u32 {
        // Ordering: as above.
        self.out_of_order.load(Ordering::Relaxed)
    }

    fn last_id(&self) -> u32 {
        // Ordering: as above.
        self.last_id.load(Ordering::Relaxed)
    }
}

impl Handler for Tally {
    fn handle(&self, msg: &ValidMessage) {
        let seen = self.handled();
        if msg.status != seen as i32 {
            // Ordering: dispatch thread only.
            self.out_of_order.fetch_add(1, Ordering::Relaxed);
        }
        // Ordering: dispatch thread only.
        self.last_id.store(msg.msg_id, Ordering::Relaxed);
        self.handled.store(seen + 1, Ordering::Relaxed);
    }
}

/// A request of `msg_type` carrying sequence number `seq` in its status.
fn request(msg_type: MessageType, seq: u32) -> ValidMessage {
    ValidMessage {
        status: seq as i32,
        timestamp_us: seq,
        ..ValidMessage::new(msg_type, Priority::Normal)
    }
}

/// The inbox's next message must be `msg_type` with id `id`.
fn expect_received(inbox: &TestInbox, msg_type: MessageType, id: u32) -> Outcome {
    let received = inbox.receive(Timeout::NoWait);
    zassert!(received.is_ok(), "the inbox is empty");
    let msg = received.unwrap_or(ValidMessage::new(MessageType::InferReq, Priority::Normal));
    zassert!(msg.msg_type == msg_type, "wrong type from the inbox");
    zassert_eq!(msg.msg_id, id);
    Ok(())
}

fn expect_inbox_empty(inbox: &TestInbox) -> Outcome {
    zassert!(
        inbox.receive(Timeout::NoWait) == Err(IpcError::TimedOut),
        "the inbox holds an unexpected message"
    );
    Ok(())
}

/// Run `body` with a sender and a dispatcher over a fresh ring in the
/// region: `StatusReq` goes to the `Tally`, every other type to the inbox.
fn with_dispatch(
    body: impl FnOnce(&mut TestSender<'_>, &mut TestDispatcher<'_>, &TestInbox, &Tally) -> Outcome,
) -> Outcome {
    let mut lease = RegionLease::claim()?;
    let (tx, rx) = lease.ring(Direction::Cpu1ToCpu0, 0).attach();
    let doorbell = TestDoorbell::counting();
    let mut sender = Sender::new(tx, &doorbell);
    let inbox = new_inbox();
    let status = Tally::new();
    let mut dispatcher = Dispatcher::new(rx, &inbox);
    zassert!(dispatcher.register(MessageType::StatusReq, &status).is_ok());
    body(&mut sender, &mut dispatcher, &inbox, &status)
}

fn routes_by_type() -> Outcome {
    with_dispatch(expect_routing)
}

fn expect_routing(
    sender: &mut TestSender<'_>,
    dispatcher: &mut TestDispatcher<'_>,
    inbox: &TestInbox,
    status: &Tally,
) -> Outcome {
    zassert!(
        dispatcher.register(MessageType::StatusReq, &SPARE_HANDLER)
            == Err(IpcError::AlreadyRegistered),
        "a second handler for one type was accepted"
    );

    let status_id = sender.send(request(MessageType::StatusReq, 0));
    let infer_id = sender.send(request(MessageType::InferReq, 1));
    let load_id = sender.send(request(MessageType::ModelLoad, 2));
    zassert_eq!(dispatcher.dispatch_all(), 3);
    zassert_eq!(status.handled(), 1);
    zassert!(status_id == Ok(status.last_id()), "handler saw another id");
    expect_received(inbox, MessageType::InferReq, infer_id.unwrap_or(0))?;
    expect_received(inbox, MessageType::ModelLoad, load_id.unwrap_or(0))?;
    expect_inbox_empty(inbox)?;
    let stats = dispatcher.stats();
    zassert_eq!(stats.handled, 1);
    zassert_eq!(stats.queued, 2);
    zassert_eq!(stats.invalid, 0);

    // Unregistered, the type goes to the inbox instead.
    zassert!(dispatcher.unregister(MessageType::StatusReq));
    let again = sender.send(request(MessageType::StatusReq, 1));
    zassert_eq!(dispatcher.dispatch_all(), 1);
    expect_received(inbox, MessageType::StatusReq, again.unwrap_or(0))?;
    zassert_eq!(status.handled(), 1);
    Ok(())
}

fn receive_times_out() -> Outcome {
    const TIMEOUT_MS: u32 = 50;
    let inbox = new_inbox();
    zassert!(
        inbox.receive(Timeout::NoWait) == Err(IpcError::TimedOut),
        "an empty inbox returned a message"
    );
    let start = now();
    let received = inbox.receive(Timeout::Millis(TIMEOUT_MS));
    let waited = (now() - start).to_millis();
    zephyr::printkln!(
        "receive(Millis({})) on an empty inbox returned after {} ms",
        TIMEOUT_MS,
        waited
    );
    zassert!(
        received == Err(IpcError::TimedOut),
        "receive on an empty inbox did not time out"
    );
    zassert_eq!(
        IpcError::TimedOut.errno().code(),
        zephyr::raw::ETIMEDOUT as i32
    );
    Ok(())
}

fn send_assigns_increasing_ids() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let (tx, mut rx) = lease.ring(Direction::Cpu0ToCpu1, 0).attach();
    let doorbell = TestDoorbell::counting();
    let mut sender = Sender::new(tx, &doorbell);
    for expected in 1..=N as u32 {
        let id = sender.send(request(MessageType::StatusReq, expected - 1));
        zassert!(id == Ok(expected), "ids are not 1, 2, 3, ...");
    }
    // A refused send uses no id.
    zassert!(sender.send(request(MessageType::StatusReq, 0)) == Err(IpcError::Full));
    zassert_eq!(sender.next_id(), N as u32 + 1);
    for expected in 1..=N as u32 {
        let popped = rx.pop().ok().flatten().map(|m| m.msg_id);
        zassert!(popped == Some(expected), "the ring holds other ids");
    }

    // Past u32::MAX the ids continue at 1: 0 is never used.
    let (tx, _rx) = lease.ring(Direction::Cpu0ToCpu1, 0).attach();
    let mut sender = Sender::with_next_id(tx, &doorbell, u32::MAX);
    zassert!(sender.send(request(MessageType::StatusReq, 0)) == Ok(u32::MAX));
    zassert!(sender.send(request(MessageType::StatusReq, 1)) == Ok(1));
    zassert_eq!(sender.next_id(), 2);
    Ok(())
}

fn send_rings_doorbell() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let (tx, mut rx) = lease.ring(Direction::Cpu0ToCpu1, 0).attach();
    let doorbell = TestDoorbell::counting();
    let mut sender = Sender::new(tx, &doorbell);
    zassert_eq!(doorbell.rung(), 0);
    let id = sender.send(request(MessageType::InferReq, 0));
    zassert_eq!(doorbell.rung(), 1);
    let reply = ValidMessage {
        msg_id: id.unwrap_or(0),
        ..request(MessageType::InferResp, 1)
    };
    zassert!(sender.reply(reply).is_ok());
    zassert_eq!(doorbell.rung(), 2);
    // Rung even when the ring is full: the peer may be asleep on a
    // coalesced doorbell and must drain.
    for seq in 2..N as u32 {
        zassert!(sender.send(request(MessageType::InferReq, seq)).is_ok());
    }
    zassert!(sender.send(request(MessageType::InferReq, 0)) == Err(IpcError::Full));
    zassert_eq!(doorbell.rung(), N as u32 + 1);
    let request_id = rx.pop().ok().flatten().map(|m| m.msg_id);
    let reply_id = rx.pop().ok().flatten().map(|m| m.msg_id);
    zassert!(
        request_id == id.ok(),
        "the request is not first in the ring"
    );
    zassert!(reply_id == id.ok(), "a reply must keep its request's id");
    Ok(())
}

fn inbox_full_drops_newest() -> Outcome {
    with_dispatch(expect_inbox_overflow)
}

fn expect_inbox_overflow(
    sender: &mut TestSender<'_>,
    dispatcher: &mut TestDispatcher<'_>,
    inbox: &TestInbox,
    status: &Tally,
) -> Outcome {
    // Two more unhandled messages than the inbox holds, with handled ones
    // in between: the handled ones must not be blocked by the full inbox.
    let unhandled = INBOX as u32 + 2;
    for seq in 0..unhandled {
        zassert!(sender.send(request(MessageType::InferReq, seq)).is_ok());
        if seq % 2 == 1 {
            let handled_seq = seq / 2;
            zassert!(sender
                .send(request(MessageType::StatusReq, handled_seq))
                .is_ok());
        }
        dispatcher.dispatch_all();
    }
    let stats = dispatcher.stats();
    zassert_eq!(stats.queued, INBOX as u32);
    zassert_eq!(stats.inbox_full, 2);
    zassert_eq!(stats.handled, unhandled / 2);
    zassert_eq!(status.handled(), unhandled / 2);
    zassert_eq!(status.out_of_order(), 0);
    // The oldest ones were kept, in order (ids: requests interleave with
    // the handled status messages).
    for seq in 0..INBOX as u32 {
        let received = inbox.receive(Timeout::NoWait).map(|m| m.status);
        zassert!(received == Ok(seq as i32), "the inbox lost its order");
    }
    expect_inbox_empty(inbox)
}

/// The peer thread's results, read after joining it.
struct PeerReport {
    full: AtomicU32,
    failed: AtomicU32,
}

static PEER: PeerReport = PeerReport {
    full: AtomicU32::new(0),
    failed: AtomicU32::new(0),
};
static WAKE: KernelSemaphore = KernelSemaphore::new(0, 1);
static PEER_DOORBELL: TestDoorbell = TestDoorbell::waking(&WAKE);

/// The peer: attach a producer to the ring at `ring` and send `count`
/// `InferReq`s whose status is their sequence number, napping when full.
#[zephyr::thread(stack_size = 2048)]
fn peer_thread(ring: RingAddress, count: u32) {
    // SAFETY: the case initialised the ring, attached only its consumer,
    // and joins this thread before it releases the region (or keeps the
    // region claimed for good if the join times out).
    let producer = unsafe { Producer::attach(ring.ring()) };
    let mut sender = Sender::new(producer, &PEER_DOORBELL);
    for seq in 0..count {
        let mut naps = 0;
        loop {
            match sender.send(request(MessageType::InferReq, seq)) {
                Ok(_) => break,
                Err(IpcError::Full) if naps < 1_000 => {
                    // Ordering: a counter read after the join.
                    PEER.full.fetch_add(1, Ordering::Relaxed);
                    naps += 1;
                    sleep(Duration::millis_at_least(1));
                }
                Err(_) => {
                    // Ordering: read after the join.
                    PEER.failed.fetch_add(1, Ordering::Relaxed);
                    return;
                }
            }
        }
    }
}

/// What the dispatch side saw of the peer thread.
struct ThreadRun {
    joined: bool,
    handled: u32,
    out_of_order: u32,
    queued: u32,
    corrupt: u32,
    wakes: u32,
}

fn run_against_peer(lease: &mut RegionLease) -> ThreadRun {
    let (rx, address) = lease.ring(Direction::Cpu1ToCpu0, 0).consumer();
    while WAKE.take(Timeout::NoWait) {}
    PEER_DOORBELL.reset();
    // Ordering: the peer thread does not exist yet; its start orders these.
    PEER.full.store(0, Ordering::Relaxed);
    PEER.failed.store(0, Ordering::Relaxed);
    let inbox = new_inbox();
    let order = Tally::new();
    let mut dispatcher = Dispatcher::new(rx, &inbox);
    let registered = dispatcher.register(MessageType::InferReq, &order);
    let peer = peer_thread(address, THREAD_MESSAGES).start();
    let give_up = now() + Duration::millis_at_least(THREAD_GIVE_UP_MS.into());
    let mut wakes = 0;
    // Ordering: `failed` is a flag the peer sets before it exits.
    while registered.is_ok()
        && order.handled() < THREAD_MESSAGES
        && PEER.failed.load(Ordering::Relaxed) == 0
        && now() < give_up
    {
        dispatcher.wait_and_dispatch(&WAKE, Timeout::Millis(100));
        wakes += 1;
        if wakes % WAKES_PER_NAP == 0 {
            sleep(Duration::millis_at_least(2));
        }
    }
    let joined = peer.join_timeout(Duration::millis_at_least(2_000)).is_ok();
    let stats = dispatcher.stats();
    ThreadRun {
        joined,
        handled: order.handled(),
        out_of_order: order.out_of_order(),
        queued: stats.queued,
        corrupt: stats.corrupt,
        wakes,
    }
}

fn two_threads_thousand_messages() -> Outcome {
    let mut lease = RegionLease::claim()?;
    let run = run_against_peer(&mut lease);
    if !run.joined {
        lease.keep_claimed();
    }
    zassert!(run.joined, "the peer thread did not finish");
    // Ordering: read after the join, which orders the peer's writes.
    let full = PEER.full.load(Ordering::Relaxed);
    let failed = PEER.failed.load(Ordering::Relaxed);
    zephyr::printkln!(
        "two threads: {} messages handled in {} wake-ups, the peer met a full ring {} times",
        run.handled,
        run.wakes,
        full
    );
    zassert_eq!(failed, 0);
    zassert_eq!(run.handled, THREAD_MESSAGES);
    zassert_eq!(run.out_of_order, 0);
    zassert_eq!(run.queued, 0);
    zassert_eq!(run.corrupt, 0);
    zassert!(full > 0, "the peer never met a full ring");
    // One ring per send attempt, refused ones included.
    zassert_eq!(PEER_DOORBELL.rung(), THREAD_MESSAGES + full);
    Ok(())
}

ztest_suite!(ipc_dispatch {
    routes_by_type,
    receive_times_out,
    send_assigns_increasing_ids,
    send_rings_doorbell,
    inbox_full_drops_newest,
    two_threads_thousand_messages,
});
