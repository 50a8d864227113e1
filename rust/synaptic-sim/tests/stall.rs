//! CPU0 stalled or slow: the CPU1 caller times out with ETIMEDOUT, nobody
//! can restage the slot while CPU0 may still read it (EBUSY for the frame
//! slot, while the other slots stay usable), and once CPU0 answers, the
//! late reply frees the slot and is discarded, and the next request
//! succeeds with its own output.

use std::time::Duration;

use synaptic_abi::{Errno, Priority};
use synaptic_ipc::Timeout;
use synaptic_serve::ClientError;
use synaptic_sim::{run, Checked, Cpu0Config, Request, SlotChoice, FACE, KWS};

const LONG: Timeout = Timeout::Millis(30_000);

/// A request for the frame slot.
fn frame(priority: Priority, timeout: Timeout) -> Request {
    Request {
        slot: SlotChoice::Frame,
        ..Request::new(priority, timeout)
    }
}

#[test]
fn a_stalled_cpu0_times_out_the_caller_and_recovers_when_it_resumes() {
    let (pongs, cpu0) = run(Cpu0Config::default(), |sim| {
        let ((), cpu1) = sim.cpu1(|cpu1| {
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            assert_eq!(
                cpu1.infer(&KWS, kws, 1, Priority::Normal, LONG),
                Ok(Checked {
                    len: KWS.output,
                    correct: true,
                    slot: 3
                })
            );

            sim.cpu0().stall();
            let seq = |s: u32| move |input: &mut [u8]| synaptic_sim::fill_input(s, input);
            let r = cpu1.request(
                &KWS,
                kws,
                frame(Priority::RealTime, Timeout::Millis(50)),
                seq(2),
            );
            assert_eq!(r, Err(ClientError::TimedOut));
            assert_eq!(
                r.unwrap_err().to_errno().negative(),
                Errno::TimedOut.negative()
            );
            assert_eq!(
                cpu1.client().held_mask(),
                0b0001,
                "CPU0 may still read the frame slot"
            );
            // The next caller cannot stage the frame slot while CPU0 holds it ...
            let r = cpu1.request(
                &KWS,
                kws,
                frame(Priority::Normal, Timeout::Millis(20)),
                seq(3),
            );
            assert_eq!(r, Err(ClientError::Busy));
            assert_eq!(r.unwrap_err().to_errno(), Errno::Busy);
            // ... while a small slot is free to stage.
            let small = cpu1.client().reserve(KWS.input_len(), Timeout::NoWait);
            assert_eq!(small.map(|s| s.slot()).ok(), Some(3));
            assert_eq!(
                sim.cpu0().serve_stats().served,
                1,
                "stalled: nothing served"
            );

            sim.cpu0().resume();
            // Waits for the late reply (discarded), then runs with its own input.
            let r = cpu1.request(&KWS, kws, frame(Priority::Normal, LONG), seq(4));
            assert_eq!(r.map(|c| (c.correct, c.slot)), Ok((true, 0)));
            let s = cpu1.client().stats();
            assert_eq!((s.timeouts, s.busy, s.discarded), (1, 1, 1));
            assert!(!cpu1.client().slot_held());
            // And the link is healthy afterwards.
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            for seq in 5..25 {
                let r = cpu1.infer(&FACE, face, seq, Priority::Normal, LONG);
                assert_eq!(r.map(|c| c.correct), Ok(true));
            }
        });
        // The late INFER_RESP of request 3 was delivered to nobody.
        let c = cpu1.client;
        assert_eq!((c.discarded, c.reclaimed, c.unexpected), (1, 0, 0));
        // Replies this life popped: its own (delivered), the late one, and
        // the answers to the barriers the refused caller (and, unless the
        // late reply beat it, the caller after the resume) sent.
        assert_eq!(c.delivered + c.discarded + c.pongs, cpu1.dispatched);
        assert!((1..=2).contains(&c.pongs), "{c:?}");
        c.pongs
    });
    let s = cpu0.stats;
    // 1 + the late one + the one after + 20: all served, no violation, no
    // EBUSY seen by CPU0 (the client never restaged over the request in
    // flight).
    assert_eq!((s.served, s.errors, s.violations, s.busy), (23, 0, 0, 0));
    let i = cpu0.intake;
    assert_eq!((i.errors, i.busy, i.status), (0, 0, pongs));
    let ids: Vec<u32> = cpu0.received.iter().map(|&(id, _)| id).collect();
    assert!(
        ids.windows(2).all(|w| w[0] < w[1]),
        "received once, in order"
    );
    // Every message CPU1 sent was answered once.
    let mut answered: Vec<u32> = cpu0.answered.iter().map(|&(id, _, _)| id).collect();
    answered.sort_unstable();
    let n = answered.len() as u32;
    assert!(answered.iter().copied().eq(1..=n), "answered once each");
    assert_eq!(i.requests, n);
}

#[test]
fn a_slow_cpu0_answers_late_and_the_late_reply_is_discarded() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        let ((), cpu1) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            let mut timed_out = 0;
            for seq in 0..5 {
                // CPU0 takes 100 ms per step; the caller gives it 5 ms (a
                // wide margin, for a loaded host).
                sim.cpu0().set_step_delay(Duration::from_millis(100));
                let r = cpu1.infer(&FACE, face, 2 * seq, Priority::Normal, Timeout::Millis(5));
                assert_eq!(r, Err(ClientError::TimedOut));
                timed_out += 1;
                sim.cpu0().set_step_delay(Duration::ZERO);
                // The next caller waits for the late reply, then gets its own
                // output in the same (frame) slot.
                let r = cpu1.infer(&FACE, face, 2 * seq + 1, Priority::Normal, LONG);
                assert_eq!(r.map(|c| (c.correct, c.slot)), Ok((true, 0)), "round {seq}");
            }
            let s = cpu1.client().stats();
            assert_eq!((s.timeouts, s.discarded, s.busy), (timed_out, timed_out, 0));
        });
        assert_eq!(cpu1.client.delivered, 1 + 5);
    });
    assert_eq!((cpu0.stats.served, cpu0.stats.busy), (10, 0));
}
