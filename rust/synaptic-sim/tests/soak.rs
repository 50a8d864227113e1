//! Soak: alternating face (96x96x3 int8) and KWS (49x10 int8) inferences
//! from CPU1, every priority class in turn, every output checked against
//! the stub NPU's documented pure function of (seed, model, input), with a
//! ping every 500 serves for the round-trip statistics.
//!
//! `soak_10k` runs by default; `soak_100k` is `#[ignore]`d for debug builds
//! and meant for `cargo test --release -p synaptic-sim --test soak -- --ignored`.

use std::time::Instant;

use synaptic_abi::Priority;
use synaptic_ipc::Timeout;
use synaptic_sim::{run, Cpu0Config, FACE, KWS};

const TIMEOUT: Timeout = Timeout::Millis(30_000);
const PING_EVERY: u32 = 500;

fn soak(serves: u32) {
    let config = Cpu0Config {
        trace: false,
        ..Cpu0Config::default()
    };
    let started = Instant::now();
    let ((wrong, failed, pings, rtt, cpu1), cpu0) = run(config, |sim| {
        let ((wrong, failed, pings), cpu1) = sim.cpu1(|cpu1| {
            let face = cpu1.lookup(&FACE, TIMEOUT).expect("face");
            let kws = cpu1.lookup(&KWS, TIMEOUT).expect("kws");
            let (mut wrong, mut failed, mut pings) = (0u32, 0u32, 0u32);
            for seq in 0..serves {
                let (model, handle) = if seq % 2 == 0 {
                    (&FACE, face)
                } else {
                    (&KWS, kws)
                };
                let priority = Priority::ALL[seq as usize % Priority::COUNT];
                match cpu1.infer(model, handle, seq, priority, TIMEOUT) {
                    Ok(c) if c.correct && c.len == model.output => {}
                    Ok(_) => wrong += 1,
                    Err(e) => {
                        eprintln!("serve {seq}: {e:?}");
                        failed += 1;
                    }
                }
                if seq % PING_EVERY == 0 {
                    cpu1.client().ping(TIMEOUT).expect("ping");
                    pings += 1;
                }
            }
            (wrong, failed, pings)
        });
        (wrong, failed, pings, sim.region().rtt(), cpu1)
    });
    let elapsed = started.elapsed();
    println!(
        "soak: {serves} serves ({} face, {} kws) in {:.2} s ({:.1} us each), {wrong} wrong, {failed} failed",
        serves.div_ceil(2),
        serves / 2,
        elapsed.as_secs_f64(),
        elapsed.as_secs_f64() * 1e6 / f64::from(serves)
    );
    println!(
        "soak: CPU0 latency avg {} us max {} us (wall clock, stub NPU latency 0); RTT over {} pings: last {} min {} max {} us",
        cpu0.stats.latency_average_us(),
        cpu0.stats.latency_max_us,
        rtt.count,
        rtt.last_us,
        rtt.min_us,
        rtt.max_us
    );
    println!("soak: CPU0 {:?}", cpu0.stats);
    println!("soak: CPU1 {:?}", cpu1.client);

    assert_eq!(wrong, 0, "outputs differing from the stub NPU's function");
    assert_eq!(failed, 0, "failed serves");
    let requests = serves + 2 + pings;
    // CPU1: every request answered to its own caller, nothing late or lost.
    let c = cpu1.client;
    assert_eq!((c.sent, c.delivered), (requests, requests));
    assert_eq!(
        (c.discarded, c.timeouts, c.busy, c.unexpected),
        (0, 0, 0, 0)
    );
    assert_eq!(c.pongs, pings);
    assert_eq!(cpu1.replies.len(), requests as usize);
    // CPU0: every inference served, no error of any kind.
    let s = cpu0.stats;
    assert_eq!(
        (s.requests, s.served, s.lookups, s.status),
        (requests, serves, 2, pings)
    );
    assert_eq!(
        (s.errors, s.violations, s.busy, s.reply_failures),
        (0, 0, 0, 0)
    );
    assert_eq!(s.timed, serves);
    for d in [cpu0.dispatch, cpu1.dispatch] {
        assert_eq!((d.invalid, d.corrupt, d.inbox_full), (0, 0, 0));
    }
    assert_eq!(cpu0.dispatch.queued, requests);
    assert_eq!(cpu1.dispatch.handled, requests);
    // Ids: 1, 2, 3, ... each received once and answered once, in order.
    let ids: Vec<u32> = cpu0.received.iter().map(|&(id, _)| id).collect();
    assert!(
        ids.iter().copied().eq(1..=requests),
        "ids received in order"
    );
    let answered: Vec<u32> = cpu1.replies.iter().map(|&(_, id, _)| id).collect();
    assert_eq!(answered, ids, "replies in request order");
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
