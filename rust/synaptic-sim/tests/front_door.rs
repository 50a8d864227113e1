//! CPU0's front door: the intake (the doorbell ISR) answers `STATUS_REQ`
//! itself, so pings are answered while the serving thread is stalled or
//! deep in an inference, with the mask of the slots CPU0 holds; and it
//! refuses bad slot requests (a held slot: `-EBUSY` without disturbing the
//! holder; unknown flag bits: `-EINVAL`) before the serving thread sees
//! them.

use std::thread;
use std::time::Duration;

use synaptic_abi::{Errno, MessageType, Priority, ValidMessage, REQUEST_FLAG_POLLED};
use synaptic_ipc::Timeout;
use synaptic_serve::protocol::infer_payload_len;
use synaptic_serve::ClientError;
use synaptic_sim::{expected_output, fill_input, run, Cpu0Config, FACE, KWS};

const LONG: Timeout = Timeout::Millis(30_000);
const REPLY: Duration = Duration::from_secs(10);

#[test]
fn a_stalled_serving_thread_still_answers_pings() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        let ((), cpu1) = sim.cpu1(|cpu1| {
            let client = cpu1.client();
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            sim.wait_slots_free();
            sim.cpu0().stall_serving();
            // Answered at the front door, while the serving thread sleeps.
            let pong = client.ping(Timeout::Millis(5_000)).expect("pong");
            assert_eq!(pong.held_mask, 0);
            // An inference cannot be served now ...
            let r = cpu1.infer(&KWS, kws, 1, Priority::RealTime, Timeout::Millis(50));
            assert_eq!(r, Err(ClientError::TimedOut));
            // ... but the intake took its slot (3, the smallest) and says so.
            let pong = client.ping(Timeout::Millis(5_000)).expect("pong");
            assert_eq!(pong.held_mask, 0b1000);
            assert_eq!(client.held_mask(), 0b1000, "CPU1 still counts it CPU0's");
            assert_eq!(
                sim.cpu0().serve_stats().requests,
                1,
                "only the lookup served"
            );
            // The ISR publishes its counters after the batch whose reply
            // CPU1 already has: wait for them (the wait fails when stuck).
            let start = std::time::Instant::now();
            while sim.cpu0().intake_stats().status < 2 && start.elapsed() < REPLY {
                thread::sleep(Duration::from_micros(200));
            }
            assert_eq!(sim.cpu0().intake_stats().status, 2);
            sim.cpu0().resume();
            let r = cpu1.infer(&KWS, kws, 2, Priority::Normal, LONG);
            assert_eq!(r.map(|c| c.correct), Ok(true));
            // The late reply freed slot 3: CPU1 has every slot back. (A
            // slot shows held for a moment after its reply, until CPU0's
            // serving thread releases it: the conservative side.)
            assert!(!client.slot_held());
            sim.wait_slots_free();
            let pong = client.ping(LONG).unwrap();
            assert_eq!(pong.held_mask, 0);
        });
        let c = cpu1.client;
        assert_eq!((c.timeouts, c.discarded, c.pongs), (1, 1, 3));
    });
    assert_eq!(cpu0.intake.status, 3);
    assert_eq!(cpu0.stats.status, 0, "the serving layer answered no status");
    assert_eq!(cpu0.stats.served, 2);
}

#[test]
fn pings_are_answered_during_an_inference_with_its_slot_held() {
    let ((), _) = run(Cpu0Config::default(), |sim| {
        sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            sim.cpu0().hold_next_invoke();
            thread::scope(|s| {
                let caller = s.spawn(|| cpu1.infer(&FACE, face, 7, Priority::Normal, LONG));
                sim.cpu0().wait_parked();
                for _ in 0..5 {
                    let pong = cpu1.client().ping(Timeout::Millis(5_000)).expect("pong");
                    assert_eq!(pong.held_mask, 0b0001, "the frame slot is in the NPU");
                }
                sim.cpu0().resume();
                assert_eq!(caller.join().unwrap().map(|c| c.correct), Ok(true));
            });
        });
    });
}

#[test]
fn bad_slot_requests_are_refused_at_the_front_door_without_disturbing_the_holder() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        let (face, _) = sim.cpu1(|cpu1| cpu1.lookup(&FACE, LONG).unwrap());
        sim.cpu1_raw(|cpu1| {
            let region = cpu1.region();
            let frame = region.exchange(0).unwrap();
            let small = region.exchange(1).unwrap();
            let infer = |slot: usize, len: usize, flags: i32| ValidMessage {
                payload_offset: region.slot_offset(slot).unwrap() as u32,
                payload_len: infer_payload_len(len, if slot == 0 { 27_648 } else { 4_096 })
                    .unwrap(),
                status: flags,
                ..ValidMessage::new(MessageType::InferReq, Priority::Normal)
            };
            // A proper request in the frame slot; CPU0 holds it in the NPU.
            frame.set_request(face.raw(), FACE.input_len() as u32);
            // SAFETY: this CPU1 owns the frame slot until its request is sent.
            let input = unsafe { &mut frame.input_mut()[..FACE.input_len()] };
            fill_input(42, input);
            let expected = expected_output(face, input, FACE.output);
            sim.cpu0().hold_next_invoke();
            let holder = cpu1.send(infer(0, FACE.input_len(), 0));
            sim.cpu0().wait_parked();

            // A second request naming the held slot (without restaging it).
            let busy = cpu1.send(infer(0, FACE.input_len(), REQUEST_FLAG_POLLED));
            let r = cpu1.receive(REPLY).expect("a refusal");
            assert_eq!((r.msg_id, r.status), (busy, Errno::Busy.negative()));
            assert_eq!(r.payload_len, 0, "the refusal hands no slot back");
            // Unknown flag bits on a free slot: refused, the slot not taken.
            small.set_request(face.raw(), 8);
            let flagged = cpu1.send(infer(1, 8, 0x10));
            let r = cpu1.receive(REPLY).expect("a refusal");
            assert_eq!((r.msg_id, r.status), (flagged, Errno::Inval.negative()));
            let status = cpu1.send(ValidMessage::new(MessageType::StatusReq, Priority::Normal));
            let r = cpu1.receive(REPLY).expect("a status");
            assert_eq!(
                (r.msg_id, r.msg_type, r.status),
                (status, MessageType::StatusResp, 0b0001)
            );
            // All answered by the intake: the serving thread is still parked.
            assert!(sim.cpu0().serving_parked());

            sim.cpu0().resume();
            let r = cpu1.receive(REPLY).expect("the holder's reply");
            assert_eq!((r.msg_id, r.msg_type), (holder, MessageType::InferResp));
            assert_eq!(r.status, FACE.output as i32);
            // SAFETY: the reply handed the frame slot back to this CPU1.
            let output = unsafe { &frame.output()[..FACE.output] };
            assert_eq!(output, &expected[..], "the holder's output, undisturbed");
            assert_eq!(frame.read_header().infer_status, 0);
        });
    });
    let i = cpu0.intake;
    assert_eq!((i.busy, i.errors, i.violations, i.status), (1, 2, 2, 1));
    let s = cpu0.stats;
    assert_eq!(
        (s.requests, s.served, s.errors),
        (2, 1, 0),
        "one lookup, one inference"
    );
}
