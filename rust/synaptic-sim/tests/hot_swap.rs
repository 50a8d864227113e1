//! A model hot-swapped again and again while CPU1 threads keep inferring
//! on it (`Server::replace`): no request fails, each output is exactly one
//! version's (the stub NPU's function of the version's registry handle),
//! and no caller ever sees an older version after a newer one.

use std::thread;
use std::time::Duration;

use synaptic_ipc::Timeout;
use synaptic_sim::{run, Cpu0Config, KWS};

const LONG: Timeout = Timeout::Millis(30_000);

#[test]
fn cpu1_threads_keep_inferring_through_twenty_hot_swaps_and_none_fails() {
    const THREADS: u32 = 4;
    const SWAPS: u32 = 20;
    let config = Cpu0Config {
        // Device time, so that swaps find requests in flight.
        npu_latency_us: 200,
        trace: false,
        ..Cpu0Config::default()
    };
    let (seen, cpu0) = run(config, |sim| {
        let control = sim.cpu0();
        let handles = || control.kws_versions().iter().map(|v| v.1).collect();
        let (seen, cpu1) = sim.cpu1(|cpu1| {
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            thread::scope(|s| {
                let callers: Vec<_> = (0..THREADS)
                    .map(|t| {
                        s.spawn(move || {
                            let mut versions = Vec::new();
                            for k in 0..100_000 {
                                let seq = t * 100_000 + k;
                                let version = cpu1
                                    .infer_version(&KWS, kws, seq, LONG, handles)
                                    .unwrap_or_else(|e| panic!("thread {t} serve {k}: {e:?}"))
                                    .unwrap_or_else(|| {
                                        panic!("thread {t} serve {k}: no version's output")
                                    });
                                versions.push(version);
                                if version == SWAPS as usize && k >= 50 {
                                    return versions;
                                }
                            }
                            panic!("thread {t} never saw the last version")
                        })
                    })
                    .collect();
                for version in 2..=SWAPS + 1 {
                    thread::sleep(Duration::from_millis(3));
                    control.swap_kws(version);
                    for _ in 0..25_000 {
                        if control.swap_done() {
                            break;
                        }
                        thread::sleep(Duration::from_micros(200));
                    }
                    assert!(control.swap_done(), "swap to version {version} never done");
                }
                callers
                    .into_iter()
                    .map(|c| c.join().unwrap())
                    .collect::<Vec<_>>()
            })
        });
        let c = cpu1.client;
        assert_eq!((c.timeouts, c.busy, c.unexpected), (0, 0, 0));
        assert_eq!(control.swap_failures(), 0);
        let versions: Vec<u32> = control.kws_versions().iter().map(|v| v.0).collect();
        assert_eq!(versions, (1..=SWAPS + 1).collect::<Vec<_>>());
        seen
    });
    assert_eq!(cpu0.stats.reply_failures, 0);
    let mut distinct = std::collections::BTreeSet::new();
    for (t, versions) in seen.iter().enumerate() {
        assert!(
            versions.windows(2).all(|w| w[0] <= w[1]),
            "thread {t} saw an older version after a newer one: {versions:?}"
        );
        distinct.extend(versions.iter().copied());
    }
    let served: usize = seen.iter().map(Vec::len).sum();
    println!(
        "{THREADS} threads, {SWAPS} swaps: {served} inferences, {} versions seen",
        distinct.len()
    );
    assert!(distinct.len() >= 3, "requests ran on several versions");
    assert_eq!(cpu0.stats.errors, 0);
    assert_eq!(cpu0.stats.served as usize, served);
}
