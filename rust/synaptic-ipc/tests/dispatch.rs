//! Host tests of the dispatch layer: routing to handlers vs the inbox,
//! receive timeouts, message ids, inbox overflow, malformed messages, and a
//! two-thread round trip woken by a Condvar doorbell.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use synaptic_abi::{Message, MessageType, Priority, ValidMessage};
use synaptic_ipc::host::{HostSemaphore, SemaphoreDoorbell};
use synaptic_ipc::{Dispatcher, Doorbell, Inbox, IpcError, Sender, Timeout};
use synaptic_ring::Ring;

fn request(msg_type: MessageType) -> ValidMessage {
    ValidMessage::new(msg_type, Priority::Normal)
}

#[test]
fn routes_registered_types_to_handlers_and_the_rest_to_the_inbox() {
    let mut ring = Ring::<8>::new();
    let (tx, rx) = ring.split();
    let wake = HostSemaphore::new();
    let doorbell = SemaphoreDoorbell::new(&wake);
    let mut sender = Sender::new(tx, &doorbell);
    let inbox: Inbox<HostSemaphore, 4> = Inbox::new(HostSemaphore::new());
    let seen = Mutex::new(Vec::new());
    let status_handler = |m: &ValidMessage| seen.lock().unwrap().push((m.msg_type, m.msg_id));
    let mut dispatcher = Dispatcher::new(rx, &inbox);
    dispatcher
        .register(MessageType::StatusReq, &status_handler)
        .unwrap();
    assert_eq!(
        dispatcher.register(MessageType::StatusReq, &status_handler),
        Err(IpcError::AlreadyRegistered)
    );

    let status_id = sender.send(request(MessageType::StatusReq)).unwrap();
    let infer_id = sender.send(request(MessageType::InferReq)).unwrap();
    assert_eq!(doorbell.rung(), 2);
    assert_eq!(dispatcher.wait_and_dispatch(&wake, Timeout::NoWait), 2);

    assert_eq!(
        *seen.lock().unwrap(),
        vec![(MessageType::StatusReq, status_id)]
    );
    let got = inbox.receive(Timeout::NoWait).unwrap();
    assert_eq!(
        (got.msg_type, got.msg_id),
        (MessageType::InferReq, infer_id)
    );
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
    let stats = dispatcher.stats();
    assert_eq!((stats.handled, stats.queued, stats.invalid), (1, 1, 0));

    // Unregistered, the type goes to the inbox.
    assert!(dispatcher.unregister(MessageType::StatusReq));
    sender.send(request(MessageType::StatusReq)).unwrap();
    dispatcher.dispatch_all();
    assert_eq!(
        inbox.receive(Timeout::NoWait).unwrap().msg_type,
        MessageType::StatusReq
    );
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn receive_times_out() {
    let inbox: Inbox<HostSemaphore, 2> = Inbox::new(HostSemaphore::new());
    let began = Instant::now();
    assert_eq!(inbox.receive(Timeout::Millis(30)), Err(IpcError::TimedOut));
    assert!(
        began.elapsed() >= Duration::from_millis(30),
        "returned after {:?}, before the timeout",
        began.elapsed()
    );
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
    assert_eq!(Timeout::from_c_millis(-1), Timeout::Forever);
    assert_eq!(Timeout::from_c_millis(0), Timeout::NoWait);
    assert_eq!(Timeout::from_c_millis(5), Timeout::Millis(5));
}

struct CountingDoorbell(std::sync::atomic::AtomicU32);

impl Doorbell for CountingDoorbell {
    fn ring(&self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

#[test]
fn ids_count_successful_sends_and_skip_zero() {
    let mut ring = Ring::<2>::new();
    let (tx, mut rx) = ring.split();
    let doorbell = CountingDoorbell(0.into());
    let mut sender = Sender::with_next_id(tx, &doorbell, u32::MAX);
    let msg = request(MessageType::StatusReq);
    assert_eq!(sender.send(msg), Ok(u32::MAX));
    assert_eq!(sender.send(msg), Ok(1), "0 is skipped on the wrap");
    // Full: no id is used up, the doorbell still rings.
    assert_eq!(sender.send(msg), Err(IpcError::Full));
    assert_eq!(sender.next_id(), 2);
    assert_eq!(doorbell.0.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert_eq!(rx.pop().unwrap().unwrap().msg_id, u32::MAX);
    assert_eq!(sender.send(msg), Ok(2));
    // A reply keeps the request's id.
    rx.pop().unwrap();
    let mut response = request(MessageType::InferResp);
    response.msg_id = 77;
    sender.reply(response).unwrap();
    assert_eq!(rx.pop().unwrap().unwrap().msg_id, 2);
    assert_eq!(rx.pop().unwrap().unwrap().msg_id, 77);
    assert_eq!(IpcError::Full.errno(), synaptic_abi::Errno::Again);
    assert_eq!(IpcError::TimedOut.errno(), synaptic_abi::Errno::TimedOut);
}

#[test]
fn full_inbox_drops_the_newest_and_counts_it() {
    let mut ring = Ring::<8>::new();
    let (mut tx, rx) = ring.split();
    let inbox: Inbox<HostSemaphore, 2> = Inbox::new(HostSemaphore::new());
    let mut dispatcher = Dispatcher::new(rx, &inbox);
    for id in 10..15 {
        let mut msg = request(MessageType::InferReq);
        msg.msg_id = id;
        tx.push(Message::from(msg)).unwrap();
    }
    assert_eq!(dispatcher.dispatch_all(), 5);
    let stats = dispatcher.stats();
    assert_eq!((stats.queued, stats.inbox_full), (2, 3));
    assert_eq!(inbox.receive(Timeout::NoWait).unwrap().msg_id, 10);
    assert_eq!(inbox.receive(Timeout::NoWait).unwrap().msg_id, 11);
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
}

#[test]
fn malformed_messages_are_counted_and_dropped() {
    let mut ring = Ring::<4>::new();
    let (mut tx, rx) = ring.split();
    let inbox: Inbox<HostSemaphore, 4> = Inbox::new(HostSemaphore::new());
    let mut dispatcher = Dispatcher::new(rx, &inbox);
    tx.push(Message {
        // The first type byte that names no type.
        msg_type: synaptic_abi::MSG_TYPE_COUNT as u8,
        ..Message::default()
    })
    .unwrap();
    tx.push(Message {
        priority: 3,
        ..Message::default()
    })
    .unwrap();
    tx.push(Message {
        msg_id: 5,
        msg_type: 4,
        ..Message::default()
    })
    .unwrap();
    assert_eq!(dispatcher.dispatch_all(), 3);
    assert_eq!(dispatcher.stats().invalid, 2);
    assert_eq!(inbox.receive(Timeout::NoWait).unwrap().msg_id, 5);
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
}

#[test]
fn dispatch_budget_is_n_per_call() {
    let mut ring = Ring::<4>::new();
    let (mut tx, rx) = ring.split();
    let inbox: Inbox<HostSemaphore, 16> = Inbox::new(HostSemaphore::new());
    let mut dispatcher = Dispatcher::new(rx, &inbox);
    for _ in 0..4 {
        tx.push(Message::default()).unwrap();
    }
    assert_eq!(dispatcher.dispatch_pending(), 4);
    for _ in 0..3 {
        tx.push(Message::default()).unwrap();
    }
    assert_eq!(dispatcher.dispatch_pending(), 3);
    assert_eq!(dispatcher.dispatch_pending(), 0);
}

/// Two "cores" as threads: core A sends requests and receives responses
/// through its inbox; core B's dispatch thread answers each request from a
/// handler, woken only by A's doorbell.
#[test]
fn round_trip_between_two_threads() {
    const REQUESTS: u32 = 500;
    let mut a_to_b = Ring::<4>::new();
    let mut b_to_a = Ring::<4>::new();
    let (a_tx, b_rx) = a_to_b.split();
    let (b_tx, a_rx) = b_to_a.split();
    let wake_a = HostSemaphore::new();
    let wake_b = HostSemaphore::new();
    let bell_to_a = SemaphoreDoorbell::new(&wake_a);
    let bell_to_b = SemaphoreDoorbell::new(&wake_b);
    let inbox_a: Inbox<HostSemaphore, 8> = Inbox::new(HostSemaphore::new());
    let inbox_b: Inbox<HostSemaphore, 8> = Inbox::new(HostSemaphore::new());
    let stop = std::sync::atomic::AtomicBool::new(false);

    // Core B: the handler answers on B's sender.
    let b_sender = Mutex::new(Sender::new(b_tx, &bell_to_a));
    let answer = |req: &ValidMessage| {
        let mut resp = ValidMessage::new(MessageType::InferResp, req.priority);
        resp.msg_id = req.msg_id;
        resp.status = req.timestamp_us as i32 * 2;
        b_sender.lock().unwrap().reply(resp).unwrap();
    };

    std::thread::scope(|s| {
        let (stop, answer) = (&stop, &answer);
        let (inbox_b, wake_b) = (&inbox_b, &wake_b);
        s.spawn(move || {
            let mut dispatcher = Dispatcher::new(b_rx, inbox_b);
            dispatcher.register(MessageType::InferReq, answer).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                dispatcher.wait_and_dispatch(wake_b, Timeout::Millis(50));
            }
            assert_eq!(dispatcher.stats().handled, REQUESTS);
        });
        // Core A's dispatch thread: responses go to A's inbox.
        let (inbox_a_ref, wake_a) = (&inbox_a, &wake_a);
        s.spawn(move || {
            let mut dispatcher = Dispatcher::new(a_rx, inbox_a_ref);
            while !stop.load(std::sync::atomic::Ordering::Acquire) {
                dispatcher.wait_and_dispatch(wake_a, Timeout::Millis(50));
            }
            assert_eq!(dispatcher.stats().queued, REQUESTS);
        });

        let mut sender = Sender::new(a_tx, &bell_to_b);
        for n in 0..REQUESTS {
            let mut req = request(MessageType::InferReq);
            req.timestamp_us = n;
            let id = sender.send(req).unwrap();
            let resp = inbox_a.receive(Timeout::Millis(5_000)).unwrap();
            assert_eq!(resp.msg_id, id);
            assert_eq!(resp.status, n as i32 * 2);
        }
        stop.store(true, std::sync::atomic::Ordering::Release);
    });
    assert_eq!(bell_to_b.rung(), REQUESTS);
    assert_eq!(bell_to_a.rung(), REQUESTS);
}

#[test]
fn dispatcher_and_sender_can_move_to_their_threads() {
    fn send<T: Send>() {}
    send::<Dispatcher<'static, 16, HostSemaphore, 8>>();
    send::<Sender<'static, 16, SemaphoreDoorbell<'static>>>();
    fn sync<T: Sync>() {}
    sync::<Inbox<HostSemaphore, 8>>();
}

#[test]
fn inbox_looks_without_waiting_in_order_and_wakes() {
    let inbox: Inbox<HostSemaphore, 4> = Inbox::new(HostSemaphore::new());
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
    inbox.post(request(MessageType::InferReq)).unwrap();
    inbox.post(request(MessageType::StatusReq)).unwrap();
    assert_eq!(
        inbox.receive(Timeout::NoWait).map(|m| m.msg_type),
        Ok(MessageType::InferReq)
    );
    assert_eq!(
        inbox.receive(Timeout::NoWait).map(|m| m.msg_type),
        Ok(MessageType::StatusReq)
    );
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
    // A wake ends one wait with a timeout; a look without waiting does
    // not consume it.
    inbox.wake();
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
    assert_eq!(inbox.receive(Timeout::Forever), Err(IpcError::TimedOut));
    inbox.post(request(MessageType::ModelLoad)).unwrap();
    assert_eq!(
        inbox.receive(Timeout::Millis(10)).map(|m| m.msg_type),
        Ok(MessageType::ModelLoad)
    );
    assert_eq!(inbox.receive(Timeout::NoWait), Err(IpcError::TimedOut));
}
