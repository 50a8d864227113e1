//! A model hot-swapped again and again while CPU1 threads keep inferring
//! on it (`Server::replace`): no request fails, each output is exactly one
//! version's (the stub NPU's function of the version's registry handle),
//! and no caller ever sees an older version after a newer one.

use std::thread;
use std::time::Duration;

use synaptic_abi::Errno;
use synaptic_ipc::Timeout;
use synaptic_runtime::registry::ModelHandle;
use synaptic_serve::ClientError;
use synaptic_sim::{run, Cpu0Config, Cpu1, KWS};

const LONG: Timeout = Timeout::Millis(30_000);

/// CPU1 thread `t`'s inferences on KWS until `enough(version, k)` after
/// its `k`th: the index in `handles()` of the version each ran on.
fn infer_versions(
    cpu1: &Cpu1<'_, '_>,
    kws: ModelHandle,
    t: u32,
    handles: impl Fn() -> Vec<ModelHandle>,
    enough: impl Fn(usize, u32) -> bool,
) -> Vec<usize> {
    let mut versions = Vec::new();
    for k in 0..100_000 {
        let version = cpu1
            .infer_version(&KWS, kws, t * 100_000 + k, LONG, &handles)
            .unwrap_or_else(|e| panic!("thread {t} serve {k}: {e:?}"))
            .unwrap_or_else(|| panic!("thread {t} serve {k}: no version's output"));
        versions.push(version);
        if enough(version, k) {
            return versions;
        }
    }
    panic!("thread {t} never finished")
}

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
                            infer_versions(cpu1, kws, t, handles, |version, k| {
                                version == SWAPS as usize && k >= 50
                            })
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

/// A KWS container (int8 49x10 in, 12 out) of `len` payload bytes.
fn kws_container(version: u32, len: usize) -> Vec<u8> {
    use synaptic_store::{Header, TensorShape};
    let payload: Vec<u8> = (0..len).map(|i| (i as u32 * 7 + version) as u8).collect();
    let header = Header::new(
        "kws",
        version,
        &payload,
        TensorShape::int8(&[49, 10]),
        TensorShape::int8(&[12]),
    )
    .unwrap();
    [header.encode().as_slice(), &payload].concat()
}

#[test]
fn cpu1_streams_updates_and_a_rollback_while_three_threads_keep_inferring() {
    const INFERRING: u32 = 3;
    let config = Cpu0Config {
        npu_latency_us: 200,
        trace: false,
        store: true,
        ..Cpu0Config::default()
    };
    let (seen, cpu0) = run(config, |sim| {
        let control = sim.cpu0();
        let handles = || control.kws_versions().iter().map(|v| v.1).collect();
        let (seen, cpu1) = sim.cpu1(|cpu1| {
            let kws = cpu1.lookup(&KWS, LONG).unwrap();
            let done = std::sync::atomic::AtomicBool::new(false);
            thread::scope(|s| {
                let callers: Vec<_> = (0..INFERRING)
                    .map(|t| {
                        let done = &done;
                        s.spawn(move || {
                            infer_versions(cpu1, kws, t, handles, |_, _| {
                                done.load(std::sync::atomic::Ordering::SeqCst)
                            })
                        })
                    })
                    .collect();
                let client = cpu1.client();
                let results = [
                    // Two chunks through the frame slot, a tail through a small one.
                    client.update_model("kws", &kws_container(2, 40_000), LONG),
                    client.update_model("kws", &kws_container(3, 1_000), LONG),
                    // While version 3's requests may still run on version 2:
                    // the client retries the -EBUSY.
                    client.rollback_model(LONG),
                    // A container whose header names another model.
                    client.update_model("face", &kws_container(4, 100), LONG),
                ];
                done.store(true, std::sync::atomic::Ordering::SeqCst);
                assert_eq!(
                    results,
                    [Ok(2), Ok(3), Ok(2), Err(ClientError::Remote(Errno::Inval))]
                );
                callers
                    .into_iter()
                    .map(|c| c.join().unwrap())
                    .collect::<Vec<_>>()
            })
        });
        let c = cpu1.client;
        assert_eq!((c.timeouts, c.unexpected), (0, 0));
        let versions: Vec<u32> = control.kws_versions().iter().map(|v| v.0).collect();
        assert_eq!(versions, [1, 2, 3, 2], "served versions, in order");
        seen
    });
    for (t, versions) in seen.iter().enumerate() {
        assert!(
            versions.windows(2).all(|w| w[0] <= w[1]),
            "thread {t} saw an older version after a newer one: {versions:?}"
        );
    }
    let served: usize = seen.iter().map(Vec::len).sum();
    println!("{INFERRING} threads inferring through 2 updates and a rollback: {served} inferences");
    assert_eq!(cpu0.stats.served as usize, served);
    assert!(cpu0.stats.updates >= 3 * 3);
}
