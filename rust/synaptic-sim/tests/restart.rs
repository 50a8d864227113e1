//! CPU1 restarted mid-conversation: each life serves some inferences, then
//! dies with a request in flight (CPU0 stalled, so the replies pile up in
//! the ring with no CPU1 to read them; or CPU0 busy, so the reply arrives
//! after the next life has attached). The next life re-attaches to the live
//! ring indices, presumes every exchange slot held and trusts no reply
//! until CPU0 has taken its sync request; then `STATUS_RESP` masks free the
//! slots. Checked: no message lost or duplicated across lives, ids never
//! reused, every stale reply dropped or discarded (never delivered),
//! presumed slots freed by status masks only, every output correct.

use synaptic_abi::Priority;
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
                // A status proves every slot the previous life may have left
                // free (the ones no reserve needed were still presumed held).
                cpu1.client().ping(LONG).expect("ping");
                assert_eq!(cpu1.client().held_mask(), 0, "life {life}");
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
                    // Let CPU0 answer into the ring while no CPU1 runs: the
                    // dangling request (serving thread) and the ping (intake).
                    let before = sim.cpu0().replies();
                    sim.cpu0().resume();
                    sim.wait_for(|c| c.replies() == before + 2);
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
            assert_eq!(cpu1.client().held_mask(), 0);
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

    // CPU0 took every request exactly once, in order, and answered each
    // exactly once.
    assert_eq!(
        cpu0.intake.requests, total_sent,
        "no request lost or duplicated"
    );
    let slot_requests: Vec<u32> = cpu0.received.iter().map(|&(id, _)| id).collect();
    assert!(
        slot_requests.windows(2).all(|w| w[0] < w[1]),
        "slot requests reached the serving thread once each, in order"
    );
    let mut answered: Vec<u32> = cpu0.answered.iter().map(|&(id, _, _)| id).collect();
    answered.sort_unstable();
    assert!(
        answered.iter().copied().eq(1..=total_sent),
        "every request answered once"
    );

    // CPU1 lives popped every reply exactly once between them: each popped
    // reply is counted once, as delivered, discarded, a status or dropped
    // unread while the life synchronised.
    let popped: u32 = lives
        .iter()
        .map(|(_, r)| {
            let c = r.client;
            c.delivered + c.discarded + c.pongs + c.stale
        })
        .sum();
    assert_eq!(popped, total_sent, "no reply lost or duplicated");
    let dispatched: u32 = lives.iter().map(|(_, r)| r.dispatched).sum();
    assert_eq!(
        dispatched, total_sent,
        "all popped by the lives' dispatch threads"
    );

    for (life, (death, report)) in lives.iter().enumerate() {
        let c = report.client;
        assert_eq!(c.unexpected, 0);
        // Each life's own slot requests: its lookups and serves, all
        // delivered; the dying one (if it died) times out.
        let own = if life as u32 == LIVES {
            1 + 10
        } else {
            2 + SERVES_PER_LIFE
        };
        assert_eq!(c.delivered, own, "life {life}: own replies delivered");
        if (life as u32) < LIVES {
            let ping_timeout = u32::from(*death == Death::CpuZeroStalled);
            assert_eq!(c.timeouts, 1 + ping_timeout, "life {life}");
        }
        if life == 0 {
            // A fresh ring: nothing presumed, nothing stale.
            assert_eq!((c.discarded, c.reclaimed, c.stale), (0, 0, 0));
        } else {
            // The dead life's dangling INFER_RESP is popped and never
            // delivered: dropped unread while the life synchronised (CPU0
            // answered before it took the sync request), or discarded
            // after (it names a presumed slot). Every slot, presumed held,
            // is freed by a STATUS_RESP mask only (the sync's own, a
            // reserve's barrier or the ping).
            assert!(c.stale >= 1, "life {life}: {c:?}");
            assert!(c.discarded <= 1, "life {life}: {c:?}");
            assert_eq!(
                c.reclaimed, 4,
                "life {life}: presumed slots freed by a status mask: {c:?}"
            );
        }
    }
    let s = cpu0.stats.merged(&cpu0.intake);
    assert_eq!(
        (s.errors, s.violations, s.busy, s.reply_failures),
        (0, 0, 0, 0)
    );
    let dangling = LIVES;
    assert_eq!(s.served, LIVES * SERVES_PER_LIFE + dangling + 10);
    println!(
        "restart: {} lives, {total_sent} messages, {popped} replies popped once each, {} stale replies dropped or discarded, {} presumed slots freed by a status mask; CPU0 {s:?}",
        lives.len(),
        lives
            .iter()
            .map(|(_, r)| r.client.discarded + r.client.stale)
            .sum::<u32>(),
        lives.iter().map(|(_, r)| r.client.reclaimed).sum::<u32>()
    );
}

#[test]
fn a_restarted_cpu1_presumes_every_slot_held_until_a_status_mask_frees_them() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        let ((face, kws), _) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, LONG).expect("face");
            let kws = cpu1.lookup(&KWS, LONG).expect("kws");
            let r = cpu1.infer(&KWS, kws, 1, Priority::Normal, LONG);
            assert_eq!(r.map(|c| c.correct), Ok(true));
            (face, kws)
        });
        // The next life cannot know the first left nothing in flight: it
        // presumes every slot held until its sync (the dispatch thread may
        // have completed it by now) and a status this life sent.
        sim.wait_slots_free();
        let ((), second) = sim.cpu1(|cpu1| {
            let client = cpu1.client();
            let pong = client.ping(LONG).expect("ping");
            assert_eq!(pong.held_mask, 0, "CPU0 holds none");
            assert_eq!(client.held_mask(), 0, "the mask freed them all");
            // All four slots usable at once, from four threads.
            std::thread::scope(|s| {
                for t in 0..4u32 {
                    s.spawn(move || {
                        let (model, handle) = if t == 0 { (&FACE, face) } else { (&KWS, kws) };
                        for k in 0..20 {
                            let r = cpu1.infer(model, handle, 100 * t + k, Priority::Normal, LONG);
                            assert_eq!(r.map(|c| c.correct), Ok(true), "thread {t} serve {k}");
                        }
                    });
                }
            });
        });
        let c = second.client;
        assert_eq!((c.reclaimed, c.discarded, c.delivered), (4, 0, 80));
        // The sync request, the status owed after it (which carries the
        // ping if it was sent before the sync completed) and perhaps the
        // ping: their answers are dropped unread or taken as statuses.
        assert!(c.pongs >= 1 && c.pongs + c.stale <= 3, "{c:?}");
        assert_eq!(c.sent, 80 + c.pongs + c.stale, "{c:?}");
    });
    assert_eq!(cpu0.stats.merged(&cpu0.intake).errors, 0);
}
