//! K = 4 exchange slots in use at once: several CPU1 threads share one
//! client, CPU0 serves up to one request per slot through its scheduler,
//! and replies overtake each other by priority. Every output is checked
//! against the stub NPU's documented function.

use std::thread;

use synaptic_abi::{MessageType, Priority};
use synaptic_ipc::Timeout;
use synaptic_sim::{run, Cpu0Config, FACE, KWS, SLOTS};

const LONG: Timeout = Timeout::Millis(30_000);

#[test]
fn four_cpu1_threads_share_the_four_slots_and_each_gets_its_own_output() {
    const THREADS: u32 = 4;
    const SERVES: u32 = 100;
    let config = Cpu0Config {
        // Some device time, so that requests overlap on CPU0.
        npu_latency_us: 200,
        trace: false,
        ..Cpu0Config::default()
    };
    let ((), cpu0) = run(config, |sim| {
        let ((), cpu1) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            thread::scope(|s| {
                for t in 0..THREADS {
                    s.spawn(move || {
                        for k in 0..SERVES {
                            let seq = t * 100_000 + k;
                            let (model, handle) = if (t + k) % 3 == 0 {
                                (&FACE, face)
                            } else {
                                (&KWS, kws)
                            };
                            let priority = Priority::ALL[(seq % 3) as usize];
                            let c = cpu1
                                .infer(model, handle, seq, priority, LONG)
                                .unwrap_or_else(|e| panic!("thread {t} serve {k}: {e:?}"));
                            assert!(c.correct, "thread {t} serve {k}: output differs");
                            assert_eq!(c.len, model.output);
                            if model == &FACE {
                                assert_eq!(c.slot, 0, "a frame fits the frame slot only");
                            }
                        }
                    });
                }
            });
        });
        let c = cpu1.client;
        let total = THREADS * SERVES + 2;
        assert_eq!((c.sent, c.delivered), (total, total));
        assert_eq!(
            (c.discarded, c.timeouts, c.busy, c.unexpected),
            (0, 0, 0, 0)
        );
    });
    let s = cpu0.stats.merged(&cpu0.intake);
    assert_eq!((s.served, s.errors, s.busy), (THREADS * SERVES, 0, 0));
    println!(
        "{THREADS} threads x {SERVES}: at most {} of {} slots in flight on CPU0",
        cpu0.max_in_flight, SLOTS.count
    );
    assert!(cpu0.max_in_flight >= 2, "the slots were used concurrently");
    assert!(cpu0.max_in_flight <= SLOTS.count);
}

#[test]
fn a_realtime_request_overtakes_normal_ones_waiting_on_cpu0() {
    let ((ids, pong), cpu0) = run(Cpu0Config::default(), |sim| {
        let (ids, _) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            // CPU0 is held inside the first request's invoke while three
            // more arrive, one at a time: NORMAL, NORMAL, then REALTIME.
            sim.cpu0().hold_next_invoke();
            let plan = [
                (&FACE, face, Priority::Normal),
                (&KWS, kws, Priority::Normal),
                (&KWS, kws, Priority::Normal),
                (&KWS, kws, Priority::RealTime),
            ];
            thread::scope(|s| {
                let mut callers = Vec::new();
                for (k, &(model, handle, priority)) in plan.iter().enumerate() {
                    let forwarded = sim.cpu0().forwarded();
                    callers.push(
                        s.spawn(move || cpu1.infer(model, handle, 10 + k as u32, priority, LONG)),
                    );
                    sim.wait_for(|c| c.forwarded() > forwarded);
                    if k == 0 {
                        sim.cpu0().wait_parked();
                    }
                }
                // All four slots are CPU0's now; the intake says so at once.
                let pong = cpu1.client().ping(LONG).unwrap();
                sim.cpu0().resume();
                let slots: Vec<usize> = callers
                    .into_iter()
                    .map(|c| {
                        let c = c.join().unwrap().unwrap();
                        assert!(c.correct);
                        c.slot
                    })
                    .collect();
                // FACE in the frame slot, the KWS requests smallest first.
                assert_eq!(slots, [0, 3, 2, 1]);
                // Lookups were 1 and 2; the four requests 3..=6, the ping 7.
                ([3u32, 4, 5, 6], pong)
            })
        });
        ids
    });
    assert_eq!(
        pong.held_mask, 0b1111,
        "every slot held while CPU0 computes"
    );
    let [a, b, c, d] = ids;
    let order: Vec<u32> = cpu0
        .answered
        .iter()
        .filter(|&&(_, t, _)| t == MessageType::InferResp)
        .map(|&(id, _, _)| id)
        .collect();
    // The one in progress finishes; then the REALTIME request, sent last,
    // is answered before the two NORMAL ones that were waiting.
    assert_eq!(order, [a, d, b, c]);
    assert_eq!(cpu0.max_in_flight, 4);
    assert_eq!(cpu0.stats.served, 4);
}
