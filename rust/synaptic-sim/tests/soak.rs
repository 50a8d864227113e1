//! Soak: four CPU1 threads sharing one client over the K = 4 exchange
//! slots, alternating face (96x96x3 int8, the frame slot) and KWS (49x10
//! int8, the smallest free slot) inferences, every priority class in turn,
//! two threads sleeping on the doorbell and two polling, every output
//! checked against the stub NPU's documented pure function of (seed, model,
//! input), with a ping every 500 serves of the first thread for the
//! round-trip statistics.
//!
//! `soak_10k` runs by default; `soak_100k` is `#[ignore]`d for debug builds
//! and meant for `cargo test --release -p synaptic-sim --test soak -- --ignored`.

use std::sync::atomic::{AtomicU32, Ordering};
use std::thread;
use std::time::Instant;

use synaptic_abi::Priority;
use synaptic_ipc::Timeout;
use synaptic_serve::Wait;
use synaptic_sim::{fill_input, run, Cpu0Config, Request, FACE, KWS, SLOTS};

const TIMEOUT: Timeout = Timeout::Millis(30_000);
const PING_EVERY: u32 = 500;
/// CPU1 threads, as many as exchange slots.
const THREADS: u32 = SLOTS.count;

fn soak(serves: u32) {
    assert_eq!(serves % THREADS, 0);
    let per_thread = serves / THREADS;
    let config = Cpu0Config {
        trace: false,
        ..Cpu0Config::default()
    };
    let started = Instant::now();
    let ((wrong, failed, pings, rtt, cpu1), cpu0) = run(config, |sim| {
        let ((wrong, failed, pings), cpu1) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, TIMEOUT).expect("face");
            let kws = cpu1.lookup(&KWS, TIMEOUT).expect("kws");
            let (wrong, failed, pings) = (AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0));
            thread::scope(|s| {
                for t in 0..THREADS {
                    let (wrong, failed, pings) = (&wrong, &failed, &pings);
                    s.spawn(move || {
                        let wait = if t % 2 == 0 {
                            Wait::Interrupt
                        } else {
                            Wait::Poll
                        };
                        for k in 0..per_thread {
                            let seq = k * THREADS + t;
                            // Threads start on different models, so both
                            // kinds of slot are always in demand.
                            let (model, handle) = if (k + t) % 2 == 0 {
                                (&FACE, face)
                            } else {
                                (&KWS, kws)
                            };
                            let request = Request {
                                wait,
                                ..Request::new(
                                    Priority::ALL[seq as usize % Priority::COUNT],
                                    TIMEOUT,
                                )
                            };
                            match cpu1.request(model, handle, request, |i| fill_input(seq, i)) {
                                Ok(c) if c.correct && c.len == model.output => {}
                                Ok(_) => {
                                    wrong.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(e) => {
                                    eprintln!("thread {t} serve {k}: {e:?}");
                                    failed.fetch_add(1, Ordering::Relaxed);
                                }
                            }
                            if t == 0 && k % PING_EVERY == 0 {
                                cpu1.client().ping(TIMEOUT).expect("ping");
                                pings.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    });
                }
            });
            (wrong.into_inner(), failed.into_inner(), pings.into_inner())
        });
        (wrong, failed, pings, sim.region().rtt(), cpu1)
    });
    let elapsed = started.elapsed();
    println!(
        "soak: {serves} serves from {THREADS} CPU1 threads over {} slots in {:.2} s ({:.1} us each), {wrong} wrong, {failed} failed",
        SLOTS.count,
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / f64::from(serves)
    );
    println!(
        "soak: CPU0 latency avg {} us max {} us (wall clock, stub NPU latency 0), at most {} slots in flight; RTT over {} pings: last {} min {} max {} us",
        cpu0.stats.latency_average_us(),
        cpu0.stats.latency_max_us,
        cpu0.max_in_flight,
        rtt.count,
        rtt.last_us,
        rtt.min_us,
        rtt.max_us
    );
    println!("soak: CPU0 serving {:?}", cpu0.stats);
    println!("soak: CPU0 intake {:?}", cpu0.intake);
    println!(
        "soak: CPU0 rang {} doorbells, signalled {} events",
        cpu0.doorbells, cpu0.doorbell_events
    );
    println!("soak: CPU1 {:?}", cpu1.client);

    assert_eq!(wrong, 0, "outputs differing from the stub NPU's function");
    assert_eq!(failed, 0, "failed serves");
    let slot_requests = serves + 2;
    let requests = slot_requests + pings;
    // CPU1: every request answered to its own caller, nothing late or lost.
    let c = cpu1.client;
    assert_eq!(
        (c.sent, c.delivered, c.pongs),
        (requests, slot_requests, pings)
    );
    assert_eq!(
        (c.discarded, c.timeouts, c.busy, c.unexpected, c.reclaimed),
        (0, 0, 0, 0, 0)
    );
    // Every reply was popped once, by the dispatch thread or a poller.
    assert!(c.polled <= serves / 2);
    assert!(
        c.polled > 0,
        "the polling threads collected replies themselves"
    );
    // CPU0: the intake saw every message and answered the pings itself; the
    // serving thread served every inference, no error of any kind.
    let i = cpu0.intake;
    assert_eq!(
        (i.requests, i.status, i.forwarded),
        (requests, pings, slot_requests)
    );
    let s = cpu0.stats;
    assert_eq!(
        (s.requests, s.served, s.lookups, s.status),
        (slot_requests, serves, 2, 0)
    );
    let all = s.merged(&i);
    assert_eq!(
        (
            all.errors,
            all.violations,
            all.busy,
            all.reply_failures,
            all.corrupt
        ),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(s.timed, serves);
    assert!(cpu0.max_in_flight >= 2, "requests overlapped on CPU0");
    // The polled half of the replies rang no doorbell.
    assert_eq!(cpu0.doorbells + cpu0.doorbell_events, requests);
    assert_eq!(cpu0.doorbell_events, serves / 2);
    // Ids: the serving thread took the slot requests in ring order, and
    // every message was answered exactly once.
    let ids: Vec<u32> = cpu0.received.iter().map(|&(id, _)| id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "in order");
    let mut answered: Vec<u32> = cpu0.answered.iter().map(|&(id, _, _)| id).collect();
    answered.sort_unstable();
    assert!(
        answered.iter().copied().eq(1..=requests),
        "answered once each"
    );
    // The round-trip words CPU1 published.
    assert_eq!(rtt.count, pings);
    assert!(rtt.min_us <= rtt.last_us && rtt.last_us <= rtt.max_us);
}

#[test]
fn soak_10k() {
    soak(10_000);
}

#[test]
#[ignore = "100,000 serves: run in release (cargo test --release -p synaptic-sim --test soak -- --ignored)"]
fn soak_100k() {
    soak(100_000);
}
