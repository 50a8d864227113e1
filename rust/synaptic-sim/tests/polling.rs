//! Polled completion end to end: a polling caller asks CPU0 for no doorbell
//! (`REQUEST_FLAG_POLLED`), CPU0 answers with an event instead of an
//! interrupt, and the caller drains the reply ring itself; `Wait::Auto`
//! polls once CPU0 has published a service-time estimate at most the
//! client's threshold, and sleeps on the doorbell otherwise.

use std::thread;
use std::time::Duration;

use synaptic_abi::Priority;
use synaptic_ipc::{Semaphore, Timeout};
use synaptic_serve::Wait;
use synaptic_sim::{fill_input, run, Cpu0Config, Cpu1Config, Request, FACE, KWS};

const LONG: Timeout = Timeout::Millis(30_000);

fn polled(priority: Priority) -> Request {
    Request {
        wait: Wait::Poll,
        ..Request::new(priority, LONG)
    }
}

#[test]
fn polling_callers_complete_without_a_dispatch_thread_or_a_doorbell() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        // CPU0's handles outlive a CPU1 life: resolve them once.
        let ((face, kws), _) = sim.cpu1(|cpu1| {
            (
                cpu1.lookup(&FACE, LONG).unwrap(),
                cpu1.lookup(&KWS, LONG).unwrap(),
            )
        });
        sim.wait_slots_free();
        let no_dispatch = Cpu1Config {
            dispatch_thread: false,
            ..Cpu1Config::default()
        };
        let ((), life) = sim.cpu1_with(no_dispatch, |cpu1| {
            // A restarted CPU1 presumes every slot held and trusts no reply
            // until CPU0 has taken its sync request: a polled ping drains
            // the ring itself until then, and its answer frees the slots (a
            // reservation's own barrier would wait for a dispatch thread
            // this life does not have).
            assert_eq!(cpu1.client().held_mask(), 0b1111);
            let pong = cpu1.client().ping_with(Wait::Poll, LONG).unwrap();
            assert_eq!((pong.held_mask, cpu1.client().held_mask()), (0, 0));
            // The sync request's answer rang the doorbell (it wakes a
            // dispatch thread, where there is one). CPU0 may ring after
            // CPU1 has already seen the ping's answer: wait for the ring
            // before counting from it (seen under load: one ring late).
            assert!(
                cpu1.doorbell().take(Timeout::Millis(10_000)),
                "the sync request's answer rings"
            );
            while cpu1.doorbell().take(Timeout::NoWait) {}
            let (rings, events) = (sim.cpu0().doorbells(), sim.cpu0().doorbell_events());
            let polled_before = cpu1.client().stats().polled;
            for seq in 0..40u32 {
                let (model, handle) = if seq % 2 == 0 {
                    (&FACE, face)
                } else {
                    (&KWS, kws)
                };
                let c = cpu1
                    .request(model, handle, polled(Priority::Normal), |i| {
                        fill_input(seq, i)
                    })
                    .unwrap();
                assert!(c.correct, "serve {seq}");
            }
            assert_eq!(
                cpu1.client().stats().polled - polled_before,
                40,
                "each caller collected its reply"
            );
            // Four polling threads at once: whoever drains delivers to all.
            thread::scope(|s| {
                for t in 0..4u32 {
                    s.spawn(move || {
                        for k in 0..25 {
                            let seq = 1000 * (t + 1) + k;
                            let (model, handle) = if t == 0 { (&FACE, face) } else { (&KWS, kws) };
                            let c = cpu1
                                .request(
                                    model,
                                    handle,
                                    polled(Priority::ALL[t as usize % 3]),
                                    |i| fill_input(seq, i),
                                )
                                .unwrap_or_else(|e| panic!("thread {t} serve {k}: {e:?}"));
                            assert!(c.correct, "thread {t} serve {k}");
                        }
                    });
                }
            });
            cpu1.client().ping_with(Wait::Poll, LONG).unwrap();
            assert!(!cpu1.client().slot_held());
            // Not one interrupt: every reply came with an event only, and
            // CPU1's doorbell semaphore was never given.
            assert_eq!(sim.cpu0().doorbells(), rings);
            assert_eq!(sim.cpu0().doorbell_events(), events + 40 + 100 + 1);
            assert!(!cpu1.doorbell().take(Timeout::NoWait));
        });
        let c = life.client;
        // The sync request, the first ping and its second sending after
        // the sync, 140 requests, the last ping. The answers to the first
        // three are dropped unread or taken as statuses, depending on how
        // quickly CPU0 answered.
        assert_eq!((c.sent, c.delivered), (144, 140));
        assert_eq!(c.pongs + c.stale, 4, "{c:?}");
        assert!(c.pongs >= 2, "{c:?}");
        assert_eq!(c.reclaimed, 4);
        assert!(c.polled >= 42 && c.polled <= 142, "{c:?}");
        assert_eq!((c.timeouts, c.discarded, c.unexpected), (0, 0, 0));
        assert_eq!((life.dispatched, life.doorbell_wakes), (0, 0));
    });
    assert_eq!(cpu0.stats.served, 140);
}

#[test]
fn auto_polls_once_cpu0_publishes_an_estimate_under_the_threshold() {
    let ((), cpu0) = run(Cpu0Config::default(), |sim| {
        let config = Cpu1Config {
            // Any estimate of a stub NPU with no device time is under 1 s.
            poll_threshold_us: 1_000_000,
            // The dispatch thread drains only when a doorbell wakes it.
            dispatch_fallback: Duration::from_secs(60),
            ..Cpu1Config::default()
        };
        let ((), life) = sim.cpu1_with(config, |cpu1| {
            let client = cpu1.client();
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            // No estimate yet: the first request sleeps on the doorbell.
            assert_eq!(client.service_time_us(kws), None);
            assert!(!client.polls(kws, Wait::Auto));
            let rings = sim.cpu0().doorbells();
            let c = cpu1.infer(&KWS, kws, 1, Priority::Normal, LONG).unwrap();
            assert!(c.correct);
            assert_eq!(sim.cpu0().doorbells(), rings + 1);
            // CPU0 published its accept-to-reply time for the model.
            let estimate = client.service_time_us(kws).expect("an estimate");
            assert!(estimate > 0 && estimate <= 1_000_000, "{estimate} us");
            assert!(client.polls(kws, Wait::Auto));
            let (rings, events, polled) = (
                sim.cpu0().doorbells(),
                sim.cpu0().doorbell_events(),
                client.stats().polled,
            );
            for seq in 2..22 {
                let c = cpu1.infer(&KWS, kws, seq, Priority::Normal, LONG).unwrap();
                assert!(c.correct);
            }
            assert_eq!(
                sim.cpu0().doorbells(),
                rings,
                "no interrupt for a polled reply"
            );
            assert_eq!(sim.cpu0().doorbell_events(), events + 20);
            // No doorbell, so the dispatch thread slept: the callers
            // collected their own replies. (The first one may still be
            // popped by the dispatch thread finishing the drain that
            // delivered the interrupt-driven reply before it.)
            let collected = client.stats().polled - polled;
            assert!((19..=20).contains(&collected), "{collected} of 20 polled");
            // A ping with a threshold set polls too.
            client.ping(LONG).unwrap();
            assert_eq!(sim.cpu0().doorbells(), rings);
            assert_eq!(sim.cpu0().doorbell_events(), events + 21);
        });
        assert_eq!((life.client.delivered, life.client.timeouts), (22, 0));
    });
    assert_eq!(cpu0.stats.served, 21);
}

#[test]
fn auto_sleeps_when_cpu0_estimates_the_model_over_the_threshold() {
    let config = Cpu0Config {
        // 3 ms of device time on the wall clock: every estimate is over 500 us.
        npu_latency_us: 3_000,
        ..Cpu0Config::default()
    };
    let ((), cpu0) = run(config, |sim| {
        let config = Cpu1Config {
            poll_threshold_us: 500,
            ..Cpu1Config::default()
        };
        let ((), life) = sim.cpu1_with(config, |cpu1| {
            let client = cpu1.client();
            let face = cpu1.lookup(&FACE, LONG).unwrap();
            let rings = sim.cpu0().doorbells();
            for seq in 0..6 {
                let c = cpu1
                    .infer(&FACE, face, seq, Priority::Normal, LONG)
                    .unwrap();
                assert!(c.correct);
            }
            let estimate = client.service_time_us(face).expect("an estimate");
            assert!(estimate >= 3_000, "{estimate} us");
            assert!(!client.polls(face, Wait::Auto));
            assert_eq!(sim.cpu0().doorbells(), rings + 6, "every reply rang");
            assert_eq!(sim.cpu0().doorbell_events(), 0);
        });
        assert_eq!(life.client.polled, 0);
        assert!(
            life.doorbell_wakes > 0,
            "the dispatch thread was woken by doorbells"
        );
    });
    assert_eq!(cpu0.stats.served, 6);
}
