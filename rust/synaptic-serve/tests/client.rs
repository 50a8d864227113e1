//! The CPU1 client: argument checks, timeouts, late replies, slot
//! ownership across a timeout and a restart, round-trip statistics.
//!
//! CPU0 is played by the test: it pops requests from the ring CPU1→CPU0
//! and hands replies straight to the client's handler (what CPU1's
//! dispatch thread does), either by hand or from a thread.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread;
use std::time::Duration;

use synaptic_abi::{
    Direction, Errno, MessageType, Priority, ValidMessage, EXCHANGE_INPUT_OFFSET,
    EXCHANGE_INPUT_SIZE,
};
use synaptic_ipc::host::HostSemaphore;
use synaptic_ipc::{Handler, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::host::MonotonicClock;
use synaptic_serve::protocol::{STATUS_SLOT_FREE, STATUS_SLOT_HELD};
use synaptic_serve::{Caller, Client, ClientError, SharedRegion};

use support::{Silent, Window, N};

type TestClient<'r> =
    Client<'r, N, Silent, HostSemaphore, MonotonicClock, Mutex<Caller<'r, N, Silent>>>;

const KWS: u32 = 0x0001_0000;
const KWS_IN: usize = 490;

fn attach<'r>(region: &SharedRegion<'r, N>) -> TestClient<'r> {
    // SAFETY: each test keeps at most one producer of this ring alive.
    let producer = unsafe { Producer::attach(region.ring(Direction::Cpu1ToCpu0)) };
    Client::attach(
        region,
        producer,
        Silent,
        HostSemaphore::new(),
        MonotonicClock::new(),
    )
}

fn cpu0_end<'r>(region: &SharedRegion<'r, N>) -> Consumer<'r, N> {
    // SAFETY: each test keeps one consumer of this ring (CPU0's).
    unsafe { Consumer::attach(region.ring(Direction::Cpu1ToCpu0)) }
}

fn reply(msg_type: MessageType, msg_id: u32, status: i32) -> ValidMessage {
    ValidMessage {
        msg_id,
        status,
        ..ValidMessage::new(msg_type, Priority::Normal)
    }
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

#[test]
fn invalid_arguments_send_nothing() {
    let window = Window::new();
    let region = window.region();
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
        let r = session.infer(
            ModelHandle::from_raw(KWS),
            len,
            &mut out,
            Priority::Normal,
            Timeout::NoWait,
        );
        assert_eq!(r, Err(ClientError::InvalidArgument));
        assert_eq!(ClientError::status(r), Errno::Inval.negative());
    }
    assert_eq!(client.stats().sent, 0);
    assert!(!client.slot_held());
    assert!(cpu0_end(&region).pop().unwrap().is_none());
}

#[test]
fn a_timed_out_request_keeps_the_slot_until_its_late_reply() {
    let window = Window::new();
    let region = window.region();
    let client = attach(&region);
    let mut cpu0 = cpu0_end(&region);
    assert!(
        !client.slot_held(),
        "a fresh ring starts with the slot free"
    );

    let mut session = client.session(Timeout::NoWait).unwrap();
    stage(session.infer_input(), KWS_IN, 1);
    let mut out = [0u8; 12];
    let r = session.infer(
        ModelHandle::from_raw(KWS),
        KWS_IN,
        &mut out,
        Priority::RealTime,
        Timeout::Millis(5),
    );
    assert_eq!(r, Err(ClientError::TimedOut));
    assert_eq!(ClientError::status(r), Errno::TimedOut.negative());
    assert!(client.slot_held());

    // What CPU0 received: the request naming the slot, and its header.
    let req = cpu0.pop().unwrap().unwrap();
    assert_eq!(req.msg_type, MessageType::InferReq as u8);
    assert_eq!(req.priority, Priority::RealTime as u8);
    assert_eq!(req.payload_offset as usize, region.exchange_offset());
    assert_eq!(req.payload_len as usize, EXCHANGE_INPUT_OFFSET + KWS_IN);
    let header = region.exchange().read_header();
    assert_eq!((header.model, header.input_len), (KWS, KWS_IN as u32));

    // The next caller cannot stage: CPU0 may still be reading the slot.
    assert!(matches!(
        client.session(Timeout::NoWait),
        Err(ClientError::Busy)
    ));
    assert!(matches!(
        client.session(Timeout::Millis(3)),
        Err(ClientError::Busy)
    ));
    // Each attempt asked CPU0 for a barrier.
    for _ in 0..2 {
        let ping = cpu0.pop().unwrap().unwrap();
        assert_eq!(ping.msg_type, MessageType::StatusReq as u8);
        assert!(synaptic_serve::protocol::is_after(ping.msg_id, req.msg_id));
    }

    // The late reply frees the slot and is discarded, delivered to nobody.
    client.handle(&reply(MessageType::InferResp, req.msg_id, 12));
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
    let window = Window::new();
    let region = window.region();
    let client = attach(&region);
    let mut cpu0 = cpu0_end(&region);
    let session = client.session(Timeout::NoWait).unwrap();
    let mut out = [0u8; 12];
    let r = session.infer(
        ModelHandle::from_raw(KWS),
        KWS_IN,
        &mut out,
        Priority::Normal,
        Timeout::NoWait,
    );
    assert_eq!(r, Err(ClientError::TimedOut));
    let lost = cpu0.pop().unwrap().unwrap(); // CPU0 "drops" it.
    assert!(client.session(Timeout::NoWait).is_err());
    let ping = cpu0.pop().unwrap().unwrap();
    // "Held" proves nothing; nor does "free" from a ping older than the request.
    client.handle(&reply(
        MessageType::StatusResp,
        ping.msg_id,
        STATUS_SLOT_HELD,
    ));
    assert!(client.slot_held());
    client.handle(&reply(
        MessageType::StatusResp,
        lost.msg_id - 1,
        STATUS_SLOT_FREE,
    ));
    assert!(client.slot_held());
    // "Free" in answer to a ping sent after the request does.
    client.handle(&reply(
        MessageType::StatusResp,
        ping.msg_id,
        STATUS_SLOT_FREE,
    ));
    assert!(!client.slot_held());
    assert!(client.session(Timeout::NoWait).is_ok());
    let s = client.stats();
    assert_eq!((s.pongs, s.discarded, s.delivered), (3, 0, 0));
}

#[test]
fn a_restarted_client_numbers_after_the_live_head_and_presumes_the_slot_held() {
    let window = Window::new();
    let region = window.region();
    let mut cpu0 = cpu0_end(&region);
    {
        // The first life: three pings CPU0 never answers, then it dies.
        let first_life = attach(&region);
        for _ in 0..3 {
            assert_eq!(first_life.ping(Timeout::NoWait), Err(ClientError::TimedOut));
        }
    }
    for id in 1..=3 {
        assert_eq!(cpu0.pop().unwrap().unwrap().msg_id, id);
    }

    let second_life = attach(&region);
    assert!(
        second_life.slot_held(),
        "it cannot know what the first life left"
    );
    assert!(second_life.session(Timeout::NoWait).is_err());
    let ping = cpu0.pop().unwrap().unwrap();
    assert_eq!(ping.msg_id, 4, "ids continue after the live head");
    // Replies to the first life are never delivered, only used as proofs.
    second_life.handle(&reply(MessageType::StatusResp, 3, STATUS_SLOT_FREE));
    assert!(
        second_life.slot_held(),
        "a ping from before the restart proves nothing"
    );
    second_life.handle(&reply(MessageType::InferResp, 2, 12));
    assert!(
        !second_life.slot_held(),
        "a slot reply at or before the head does"
    );
    let s = second_life.stats();
    assert_eq!((s.delivered, s.discarded, s.pongs), (0, 1, 1));
}

/// A CPU0 stand-in on a thread: answers each request after `delay(seq)`.
fn serve(
    region: SharedRegion<'_, N>,
    client: &TestClient<'_>,
    mut cpu0: Consumer<'_, N>,
    stop: &AtomicBool,
    delay: impl Fn(u32) -> Duration,
    remote_error: Option<i32>,
) -> u32 {
    let mut answered = 0;
    while !stop.load(Ordering::Acquire) {
        let Some(raw) = cpu0.pop().unwrap() else {
            thread::sleep(Duration::from_micros(50));
            continue;
        };
        let msg = ValidMessage::try_from(raw).unwrap();
        thread::sleep(delay(msg.msg_id));
        let exchange = region.exchange();
        let answer = match msg.msg_type {
            MessageType::InferReq => {
                let header = exchange.read_header();
                let len = header.input_len().unwrap();
                let status = match remote_error {
                    Some(errno) => errno,
                    None => {
                        // SAFETY: CPU0 owns the slot until the reply below.
                        let (input, output) = unsafe { (exchange.input(), exchange.output_mut()) };
                        let result = answer(&input[..len], 12);
                        output[..12].copy_from_slice(&result);
                        12
                    }
                };
                reply(MessageType::InferResp, msg.msg_id, status)
            }
            MessageType::ModelLoad => {
                let header = exchange.read_header();
                let status = if header.model_name() == Ok(&b"kws"[..]) {
                    KWS as i32
                } else {
                    Errno::NoEnt.negative()
                };
                reply(MessageType::ModelLoad, msg.msg_id, status)
            }
            MessageType::StatusReq => reply(MessageType::StatusResp, msg.msg_id, STATUS_SLOT_FREE),
            other => panic!("unexpected {other:?}"),
        };
        client.handle(&answer);
        answered += 1;
    }
    answered
}

#[test]
fn replies_reach_the_caller_that_waits_for_them() {
    let window = Window::new();
    let region = window.region();
    let client = attach(&region);
    let cpu0 = cpu0_end(&region);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let cpu0 = s.spawn(|| serve(region, &client, cpu0, &stop, |_| Duration::ZERO, None));
        let model = client.model_lookup("kws", Timeout::Forever).unwrap();
        assert_eq!(model.raw(), KWS);
        assert_eq!(
            client.model_lookup("face", Timeout::Forever),
            Err(ClientError::Remote(Errno::NoEnt))
        );
        for seq in 0..50 {
            let mut session = client.session(Timeout::Forever).unwrap();
            let staged = stage(session.infer_input(), KWS_IN, seq);
            let mut out = [0u8; 16];
            let n = session
                .infer(model, KWS_IN, &mut out, Priority::Normal, Timeout::Forever)
                .unwrap();
            assert_eq!(&out[..n], &answer(&staged, 12)[..]);
        }
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
                needed: 12,
                actual: 4
            })
        );
        stop.store(true, Ordering::Release);
        assert_eq!(cpu0.join().unwrap(), 53);
    });
    let s = client.stats();
    assert_eq!(
        (s.sent, s.delivered, s.discarded, s.timeouts),
        (53, 53, 0, 0)
    );
}

#[test]
fn a_remote_errno_is_the_callers_result() {
    let window = Window::new();
    let region = window.region();
    let client = attach(&region);
    let cpu0 = cpu0_end(&region);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        let io = Errno::Io.negative();
        let (client, stop) = (&client, &stop);
        s.spawn(move || serve(region, client, cpu0, stop, |_| Duration::ZERO, Some(io)));
        let session = client.session(Timeout::Forever).unwrap();
        let mut out = [0u8; 16];
        let r = session.infer(
            ModelHandle::from_raw(KWS),
            KWS_IN,
            &mut out,
            Priority::Normal,
            Timeout::Forever,
        );
        assert_eq!(r, Err(ClientError::Remote(Errno::Io)));
        assert_eq!(ClientError::status(r), -5);
        assert!(
            !client.slot_held(),
            "an error reply hands the slot back too"
        );
        stop.store(true, Ordering::Release);
    });
}

#[test]
fn late_replies_racing_timeouts_are_each_delivered_or_discarded_once() {
    const ROUNDS: u32 = 200;
    let window = Window::new();
    let region = window.region();
    let client = attach(&region);
    let cpu0 = cpu0_end(&region);
    let stop = AtomicBool::new(false);
    let (mut ok, mut timed_out) = (0u32, 0u32);
    thread::scope(|s| {
        // Delays of 0, 1.5 and 3 ms against a 2 ms timeout: both outcomes,
        // and replies landing near the deadline (the mix is printed, not
        // asserted: it depends on the host's scheduling).
        let delay = |id: u32| match id.wrapping_mul(7919) % 4 {
            0 | 1 => Duration::ZERO,
            2 => Duration::from_micros(1500),
            _ => Duration::from_millis(3),
        };
        let (client, stop) = (&client, &stop);
        let cpu0 = s.spawn(move || serve(region, client, cpu0, stop, delay, None));
        let model = ModelHandle::from_raw(KWS);
        for seq in 0..ROUNDS {
            let mut session = client.session(Timeout::Forever).unwrap();
            let staged = stage(session.infer_input(), KWS_IN, seq);
            let mut out = [0u8; 12];
            match session.infer(
                model,
                KWS_IN,
                &mut out,
                Priority::Normal,
                Timeout::Millis(2),
            ) {
                Ok(12) => {
                    assert_eq!(out.to_vec(), answer(&staged, 12), "round {seq}");
                    ok += 1;
                }
                Err(ClientError::TimedOut) => timed_out += 1,
                other => panic!("round {seq}: {other:?}"),
            }
        }
        // Wait for the last late reply, then stop CPU0.
        drop(client.session(Timeout::Forever).unwrap());
        stop.store(true, Ordering::Release);
        cpu0.join().unwrap();
    });
    let s = client.stats();
    println!("{ROUNDS} rounds: {ok} answered in time, {timed_out} timed out, {s:?}");
    assert_eq!(ok + timed_out, ROUNDS);
    assert_eq!(s.delivered, ok);
    assert_eq!(
        s.discarded, timed_out,
        "every late reply discarded exactly once"
    );
    assert_eq!(s.timeouts, timed_out);
    assert!(!client.slot_held());
}

#[test]
fn pings_fold_round_trips_into_the_control_block() {
    let window = Window::new();
    let region = window.region();
    let client = attach(&region);
    let cpu0 = cpu0_end(&region);
    let stop = AtomicBool::new(false);
    thread::scope(|s| {
        s.spawn(|| {
            serve(
                region,
                &client,
                cpu0,
                &stop,
                |_| Duration::from_millis(1),
                None,
            )
        });
        for _ in 0..5 {
            let pong = client.ping(Timeout::Forever).unwrap();
            assert!(!pong.slot_held);
            assert!(pong.rtt_us >= 1000, "the stand-in sleeps 1 ms per reply");
        }
        stop.store(true, Ordering::Release);
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
fn register_routes_the_three_reply_types_to_the_client() {
    use synaptic_ipc::{Dispatcher, Inbox, IpcError};
    let window = Window::new();
    let region = window.region();
    let client = attach(&region);
    let ring = region.ring(Direction::Cpu0ToCpu1);
    // SAFETY: the only producer (CPU0's, played here) and consumer of this ring.
    let (mut cpu0, consumer) = unsafe { (Producer::attach(ring), Consumer::attach(ring)) };
    let inbox: Inbox<HostSemaphore, 4> = Inbox::new(HostSemaphore::new());
    let mut dispatcher = Dispatcher::new(consumer, &inbox);
    client.register(&mut dispatcher).unwrap();
    assert_eq!(
        client.register(&mut dispatcher),
        Err(IpcError::AlreadyRegistered)
    );
    for (t, id) in [
        (MessageType::StatusResp, 7),
        (MessageType::InferResp, 8),
        (MessageType::ModelLoad, 9),
        (MessageType::InferReq, 10),
    ] {
        cpu0.push(reply(t, id, 0).into()).unwrap();
    }
    assert_eq!(dispatcher.dispatch_all(), 4);
    let d = dispatcher.stats();
    assert_eq!(
        (d.handled, d.queued),
        (3, 1),
        "INFER_REQ is not the client's"
    );
    let s = client.stats();
    assert_eq!((s.pongs, s.discarded, s.delivered), (1, 2, 0));
}
