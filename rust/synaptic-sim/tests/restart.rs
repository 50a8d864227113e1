//! CPU1 restarted mid-conversation: each life serves some inferences, then
//! dies with a request in flight (CPU0 stalled, so the replies pile up in
//! the ring with no CPU1 to read them; or CPU0 slow, so the reply arrives
//! after the next life has attached). The next life re-attaches to the live
//! ring indices. Checked: no message lost or duplicated across lives, ids
//! never reused, every stale reply discarded (never delivered), every
//! output correct.

use std::collections::BTreeMap;

use synaptic_abi::{MessageType, Priority};
use synaptic_ipc::Timeout;
use synaptic_serve::ClientError;
use synaptic_sim::{run, Cpu0Config, Cpu1Report, FACE, KWS};

const LONG: Timeout = Timeout::Millis(30_000);
const LIVES: u32 = 8;
const SERVES_PER_LIFE: u32 = 25;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Death {
    /// CPU0 stalled: the dangling request and a ping wait in the ring; their
    /// replies are pushed while no CPU1 runs.
    CpuZeroStalled,
    /// CPU0 busy: it is inside the dangling request's NPU invoke when the
    /// next life attaches, and answers it once that life runs.
    CpuZeroBusy,
}

#[test]
fn cpu1_restarts_mid_conversation_without_losing_or_duplicating_messages() {
    let (lives, cpu0) = run(Cpu0Config::default(), |sim| {
        let mut lives: Vec<(Death, Cpu1Report)> = Vec::new();
        for life in 0..LIVES {
            let death = if life % 2 == 0 {
                Death::CpuZeroStalled
            } else {
                Death::CpuZeroBusy
            };
            let previous = lives.last().map(|&(death, _)| death);
            let ((), report) = sim.cpu1(|cpu1| {
                if previous == Some(Death::CpuZeroBusy) {
                    // Attached: now let CPU0 finish the dead life's request.
                    sim.cpu0().resume();
                }
                // A new life knows no handle: resolve them again.
                let face = cpu1.lookup(&FACE, LONG).expect("face");
                let kws = cpu1.lookup(&KWS, LONG).expect("kws");
                for k in 0..SERVES_PER_LIFE {
                    let (model, handle) = if k % 2 == 0 {
                        (&FACE, face)
                    } else {
                        (&KWS, kws)
                    };
                    let seq = life * 1000 + k;
                    let r = cpu1.infer(model, handle, seq, Priority::Normal, LONG);
                    assert_eq!(r.map(|c| c.correct), Ok(true), "life {life} serve {k}");
                }
                // Die mid-conversation.
                match death {
                    Death::CpuZeroStalled => sim.cpu0().stall(),
                    Death::CpuZeroBusy => sim.cpu0().hold_next_invoke(),
                }
                let r = cpu1.infer(
                    &FACE,
                    face,
                    life * 1000 + 999,
                    Priority::RealTime,
                    Timeout::Millis(5),
                );
                assert_eq!(r, Err(ClientError::TimedOut), "life {life} dies waiting");
                match death {
                    Death::CpuZeroStalled => {
                        assert_eq!(
                            cpu1.client().ping(Timeout::Millis(5)),
                            Err(ClientError::TimedOut)
                        );
                    }
                    // CPU0 has accepted the request and is computing it.
                    Death::CpuZeroBusy => sim.cpu0().wait_parked(),
                }
            });
            match death {
                Death::CpuZeroStalled => {
                    // Let CPU0 answer into the ring while no CPU1 runs.
                    let before = sim.cpu0().serve_stats().requests;
                    sim.cpu0().resume();
                    sim.wait_for(|c| c.serve_stats().requests == before + 2);
                }
                Death::CpuZeroBusy => {}
            }
            lives.push((death, report));
        }
        // A last life that only checks the link works.
        let ((), last) = sim.cpu1(|cpu1| {
            sim.cpu0().resume();
            let kws = cpu1.lookup(&KWS, LONG).expect("kws");
            for seq in 0..10 {
                let r = cpu1.infer(&KWS, kws, 90_000 + seq, Priority::Normal, LONG);
                assert_eq!(r.map(|c| c.correct), Ok(true));
            }
            assert!(cpu1.client().ping(LONG).is_ok());
        });
        lives.push((Death::CpuZeroBusy, last));
        lives
    });

    // Ids continue from the live ring head: each life starts right after the
    // previous one's last id, and none is ever reused.
    let mut next_id = 1;
    for (life, (_, report)) in lives.iter().enumerate() {
        assert_eq!(
            report.first_id, next_id,
            "life {life} numbers after the live head"
        );
        next_id += report.client.sent;
    }
    let total_sent = next_id - 1;

    // CPU0 received every request exactly once, in order, and answered each.
    let received: Vec<u32> = cpu0.received.iter().map(|&(id, _)| id).collect();
    assert!(
        received.iter().copied().eq(1..=total_sent),
        "no request lost or duplicated"
    );
    let mut answered: Vec<u32> = cpu0.answered.iter().map(|&(id, _, _)| id).collect();
    answered.sort_unstable();
    assert!(
        answered.iter().copied().eq(1..=total_sent),
        "every request answered once"
    );

    // CPU1 lives popped every reply exactly once between them.
    let mut popped: BTreeMap<u32, usize> = BTreeMap::new();
    for (_, report) in &lives {
        for &(_, id, _) in &report.replies {
            *popped.entry(id).or_default() += 1;
        }
    }
    assert_eq!(popped.len() as u32, total_sent, "no reply lost");
    assert!(popped.values().all(|&n| n == 1), "no reply duplicated");

    // Stale replies: a life after a death pops the dead life's dangling
    // INFER_RESP (and, after a stall, its STATUS_RESP) and delivers neither.
    for (life, (_, report)) in lives.iter().enumerate() {
        let stale: Vec<_> = report
            .replies
            .iter()
            .filter(|&&(_, id, _)| id < report.first_id)
            .collect();
        let stale_infer = stale
            .iter()
            .filter(|&&&(t, _, _)| t == MessageType::InferResp)
            .count() as u32;
        let c = report.client;
        if life == 0 {
            assert!(stale.is_empty());
        } else {
            let (previous_death, _) = lives[life - 1];
            let expected = match previous_death {
                Death::CpuZeroStalled => 2,
                Death::CpuZeroBusy => 1,
            };
            assert_eq!(stale.len(), expected, "life {life}: stale replies popped");
            assert_eq!(stale_infer, 1, "life {life}: the dead life's INFER_RESP");
        }
        // The only slot reply a life discards is its predecessor's; its own
        // dying request's reply goes to the next life.
        assert_eq!(
            c.discarded, stale_infer,
            "life {life}: stale reply discarded"
        );
        let own_slot_replies = report
            .replies
            .iter()
            .filter(|&&(t, id, _)| t != MessageType::StatusResp && id >= report.first_id)
            .count() as u32;
        assert_eq!(
            c.delivered,
            own_slot_replies + u32::from(life as u32 == LIVES)
        );
        assert_eq!(c.unexpected, 0);
    }
    let s = cpu0.stats;
    assert_eq!(
        (s.errors, s.violations, s.busy, s.reply_failures),
        (0, 0, 0, 0)
    );
    let dangling = LIVES;
    assert_eq!(s.served, LIVES * SERVES_PER_LIFE + dangling + 10);
    println!(
        "restart: {} lives, {total_sent} messages, {} replies popped once each, {} stale replies discarded; CPU0 {s:?}",
        lives.len(),
        popped.len(),
        lives.iter().map(|(_, r)| r.client.discarded).sum::<u32>()
    );
}
