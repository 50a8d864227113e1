//! CPU0 stalled or slow: the CPU1 caller times out with ETIMEDOUT, nobody
//! can restage the slot while CPU0 may still read it (EBUSY), and once CPU0
//! answers the late reply is discarded and the next request succeeds with
//! its own output.

use std::time::Duration;

use synaptic_abi::{Errno, MessageType, Priority};
use synaptic_ipc::Timeout;
use synaptic_serve::ClientError;
use synaptic_sim::{run, Cpu0Config, FACE, KWS};

const LONG: Timeout = Timeout::Millis(30_000);

#[test]
fn a_stalled_cpu0_times_out_the_caller_and_recovers_when_it_resumes() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        let ((), cpu1) = sim.cpu1(|cpu1| {
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            assert_eq!(
                cpu1.infer(&KWS, kws, 1, Priority::Normal, LONG),
                Ok(synaptic_sim::Checked {
                    len: KWS.output,
                    correct: true
                })
            );

            sim.cpu0().stall();
            let r = cpu1.infer(&KWS, kws, 2, Priority::RealTime, Timeout::Millis(50));
            assert_eq!(r, Err(ClientError::TimedOut));
            assert_eq!(
                r.unwrap_err().to_errno().negative(),
                Errno::TimedOut.negative()
            );
            assert!(cpu1.client().slot_held(), "CPU0 may still read the slot");
            // The next caller cannot stage while CPU0 holds the slot.
            let r = cpu1.infer(&KWS, kws, 3, Priority::Normal, Timeout::Millis(20));
            assert_eq!(r, Err(ClientError::Busy));
            assert_eq!(r.unwrap_err().to_errno(), Errno::Busy);
            assert_eq!(
                sim.cpu0().serve_stats().served,
                1,
                "stalled: nothing served"
            );

            sim.cpu0().resume();
            // Waits for the late reply (discarded), then runs with its own input.
            let r = cpu1.infer(&KWS, kws, 4, Priority::Normal, LONG);
            assert_eq!(r.map(|c| c.correct), Ok(true));
            let s = cpu1.client().stats();
            assert_eq!((s.timeouts, s.busy, s.discarded), (1, 1, 1));
            assert!(!cpu1.client().slot_held());
            // And the link is healthy afterwards.
            for seq in 5..25 {
                let r = cpu1.infer(
                    &FACE,
                    cpu1.lookup(&FACE, LONG).unwrap(),
                    seq,
                    Priority::Normal,
                    LONG,
                );
                assert_eq!(r.map(|c| c.correct), Ok(true));
            }
        });
        // Replies this life saw: the late INFER_RESP of request 3 is among
        // them, but it was delivered to nobody.
        let late = cpu1
            .replies
            .iter()
            .filter(|&&(t, id, _)| t == MessageType::InferResp && id == 3)
            .count();
        assert_eq!(late, 1);
        assert_eq!(cpu1.client.discarded, 1);
        assert_eq!(
            cpu1.client.delivered + cpu1.client.discarded + 2,
            cpu1.replies.len() as u32
        );
    });
    let s = cpu0.stats;
    // 1 + the late one + the one after + 20: all served, no violation, no EBUSY
    // seen by CPU0 (the client never restaged over the request in flight).
    assert_eq!((s.served, s.errors, s.violations, s.busy), (23, 0, 0, 0));
    let ids: Vec<u32> = cpu0.received.iter().map(|&(id, _)| id).collect();
    let n = ids.len() as u32;
    assert!(
        ids.iter().copied().eq(1..=n),
        "every request received once, in order"
    );
    assert_eq!(cpu0.answered.len(), ids.len(), "and answered once");
}

#[test]
fn a_slow_cpu0_answers_late_and_the_late_reply_is_discarded() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        let ((), cpu1) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            let mut timed_out = 0;
            for seq in 0..5 {
                // CPU0 takes 40 ms per step; the caller gives it 5 ms.
                sim.cpu0().set_step_delay(Duration::from_millis(40));
                let r = cpu1.infer(&FACE, face, 2 * seq, Priority::Normal, Timeout::Millis(5));
                assert_eq!(r, Err(ClientError::TimedOut));
                timed_out += 1;
                sim.cpu0().set_step_delay(Duration::ZERO);
                // The next caller waits for the late reply, then gets its own output.
                let r = cpu1.infer(&FACE, face, 2 * seq + 1, Priority::Normal, LONG);
                assert_eq!(r.map(|c| c.correct), Ok(true), "round {seq}");
            }
            let s = cpu1.client().stats();
            assert_eq!((s.timeouts, s.discarded, s.busy), (timed_out, timed_out, 0));
        });
        assert_eq!(cpu1.client.delivered, 1 + 5);
    });
    assert_eq!((cpu0.stats.served, cpu0.stats.busy), (10, 0));
}
