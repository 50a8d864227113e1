//! `SemLock`: mutual exclusion and no lost wake-up under contention.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use synaptic_ipc::host::HostSemaphore;
use synaptic_serve::{LocalLock, SemLock};

type Lock<T> = SemLock<T, HostSemaphore>;

#[test]
fn try_lock_fails_while_held_and_succeeds_after() {
    let lock: Lock<u32> = LocalLock::new(7);
    let guard = lock.lock();
    assert!(lock.try_lock().is_none());
    drop(guard);
    let mut again = lock.try_lock().expect("free after the guard dropped");
    *again += 1;
    drop(again);
    assert_eq!(*lock.lock(), 8);
}

#[test]
fn contended_increments_are_neither_lost_nor_overlapping() {
    const THREADS: usize = 6;
    const ROUNDS: u64 = 20_000;
    // (counter, inside) — `inside` proves no two holders overlap.
    let lock: Arc<Lock<(u64, bool)>> = Arc::new(LocalLock::new((0, false)));
    let overlap = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let lock = Arc::clone(&lock);
            let overlap = Arc::clone(&overlap);
            thread::spawn(move || {
                for i in 0..ROUNDS {
                    let mut g = lock.lock();
                    if g.1 {
                        overlap.store(true, Ordering::Relaxed);
                    }
                    g.1 = true;
                    let v = g.0;
                    // Hold it across a yield now and then, so others sleep.
                    if (i + t as u64) % 64 == 0 {
                        thread::yield_now();
                    }
                    g.0 = v + 1;
                    g.1 = false;
                }
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker panicked");
    }
    assert!(!overlap.load(Ordering::Relaxed), "two holders at once");
    assert_eq!(lock.lock().0, THREADS as u64 * ROUNDS);
}
