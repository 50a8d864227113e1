//! The park handshake between two threads standing in for the cores: CPU0
//! "writes flash" only inside `with_cpu1_parked`, CPU1 "executes from
//! flash" between doorbells and holds when asked. A shared flag says which
//! of them is touching the bank; the test fails if both ever are.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread;

use synaptic_abi::{region_size, Core, Errno, SlotGeometry};
use synaptic_ipc::platform::Doorbell;
use synaptic_runtime::time::{Clock, FakeClock};
use synaptic_serve::park::{Held, ParkError, ParkHold, ParkLimits, ParkRecord, Parker};
use synaptic_serve::SharedRegion;

const N: usize = 8;

/// The generous limits of the threaded tests: 5 s to acknowledge, 10 s
/// of hold.
const WALL: ParkLimits = match ParkLimits::new(5_000_000, 10_000_000) {
    Some(limits) => limits,
    None => panic!("limits"),
};
/// The fake clock's: 1 ms to acknowledge, 4 ms of hold.
const FAKE: ParkLimits = match ParkLimits::new(1_000, 4_000) {
    Some(limits) => limits,
    None => panic!("limits"),
};
/// Reads a test's CPU1 holds for at most (far beyond its CPU0's writes).
const HOLD_READS: u32 = u32::MAX;

/// CPU0's record of a test (leaked, as the region).
fn record() -> &'static ParkRecord {
    Box::leak(Box::new(ParkRecord::new()))
}

/// A published region on leaked, 16-byte aligned memory (threads share it
/// for the rest of the test binary), with CPU1 marked attached or not.
fn region(cpu1_attached: bool) -> SharedRegion<'static, N> {
    let size = region_size::<N>(SlotGeometry::DEFAULT);
    let memory: &'static mut [u128] = Box::leak(vec![0u128; size.div_ceil(16)].into_boxed_slice());
    let base = NonNull::new(memory.as_mut_ptr().cast::<u8>()).unwrap();
    // SAFETY: the memory is leaked (it outlives every use), 16-aligned and
    // `size` long.
    let region = unsafe { SharedRegion::from_raw(base, size, SlotGeometry::DEFAULT) }.unwrap();
    // SAFETY: no ring handle exists yet.
    unsafe { region.publish() };
    if cpu1_attached {
        region.set_ready(Core::Cpu1);
    }
    region
}

/// A doorbell that raises a flag the CPU1 thread polls, as its interrupt.
#[derive(Clone)]
struct Flag(Arc<AtomicBool>);

impl Doorbell for Flag {
    fn ring(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Wall-clock time for the threaded tests (their timeouts are generous).
struct Wall(std::time::Instant);

impl Clock for Wall {
    fn now_us(&self) -> u64 {
        self.0.elapsed().as_micros() as u64
    }
}

#[test]
fn cpu0_writes_only_while_cpu1_holds() {
    let region = region(true);
    let bell = Arc::new(AtomicBool::new(false));
    let cpu1_in_flash = Arc::new(AtomicBool::new(false));
    let cpu0_writing = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let overlaps = Arc::new(AtomicU32::new(0));

    let cpu1 = {
        let (bell, in_flash, writing, stop, overlaps) = (
            bell.clone(),
            cpu1_in_flash.clone(),
            cpu0_writing.clone(),
            stop.clone(),
            overlaps.clone(),
        );
        let hold = ParkHold::new(region.park_words(), HOLD_READS);
        thread::spawn(move || {
            let mut held = 0u32;
            while !stop.load(Ordering::SeqCst) {
                // Executing from flash: the bank must not be written now.
                in_flash.store(true, Ordering::SeqCst);
                for _ in 0..50 {
                    if writing.load(Ordering::SeqCst) {
                        overlaps.fetch_add(1, Ordering::SeqCst);
                    }
                }
                in_flash.store(false, Ordering::SeqCst);
                // The doorbell interrupt: park when asked.
                if bell.swap(false, Ordering::SeqCst) && hold.asked() {
                    held += hold.hold(thread::yield_now).acknowledged;
                }
            }
            held
        })
    };

    let mut parker = Parker::new(region.park_words(), record(), Flag(bell));
    let clock = Wall(std::time::Instant::now());
    let writes = 2_000;
    for _ in 0..writes {
        let wrote = parker.with_cpu1_parked(&clock, WALL, thread::yield_now, || {
            cpu0_writing.store(true, Ordering::SeqCst);
            // CPU1 is parked: it must not be in flash while we write.
            let clash = cpu1_in_flash.load(Ordering::SeqCst);
            for _ in 0..50 {
                std::hint::spin_loop();
            }
            cpu0_writing.store(false, Ordering::SeqCst);
            clash
        });
        assert_eq!(wrote, Ok(false), "CPU1 was in flash during a write");
    }
    stop.store(true, Ordering::SeqCst);
    let held = cpu1.join().unwrap();
    assert_eq!(overlaps.load(Ordering::SeqCst), 0);
    let stats = parker.stats();
    assert_eq!(stats.parks, writes);
    assert_eq!(stats.refused, 0);
    // CPU1 may hold once for two back-to-back generations, never more
    // often than CPU0 asked.
    assert!(held >= 1 && held <= writes, "held {held}");
    let block = region.control_block();
    assert_eq!((block.park_request, block.park_ack), (0, 0));
}

#[test]
fn an_unanswered_request_is_withdrawn_and_the_write_skipped() {
    let region = region(true);
    let bell = Arc::new(AtomicBool::new(false));
    let mut parker = Parker::new(region.park_words(), record(), Flag(bell.clone()));
    let clock = FakeClock::new(0);
    let mut wrote = false;
    let result = parker.with_cpu1_parked(&clock, FAKE, || clock.advance(100), || wrote = true);
    assert_eq!(result, Err(ParkError::Timeout { generation: 1 }));
    assert_eq!(ParkError::Timeout { generation: 1 }.errno(), Errno::Busy);
    assert!(!wrote);
    assert!(bell.load(Ordering::SeqCst), "the doorbell was rung");
    assert_eq!(region.control_block().park_request, 0, "request withdrawn");
    assert_eq!(parker.stats().refused, 1);

    // CPU1 wakes late: it finds the request gone and runs on.
    let hold = ParkHold::new(region.park_words(), HOLD_READS);
    assert!(!hold.asked());
    assert_eq!(hold.hold(|| {}), Held::default());
    // A late acknowledgement of generation 1 left in the word does not pass
    // for the next request's.
    region.shared_word(60).unwrap().store(1, Ordering::SeqCst);
    let result = parker.with_cpu1_parked(&clock, FAKE, || clock.advance(100), || ());
    assert_eq!(result, Err(ParkError::Timeout { generation: 2 }));
    assert_eq!(parker.stats().parks, 0);
}

#[test]
fn a_cpu1_that_never_attached_is_not_asked() {
    let region = region(false);
    let bell = Arc::new(AtomicBool::new(false));
    let mut parker = Parker::new(region.park_words(), record(), Flag(bell.clone()));
    let clock = FakeClock::new(0);
    let result = parker.with_cpu1_parked(&clock, FAKE, || clock.advance(100), || ());
    assert_eq!(result, Err(ParkError::NotAttached));
    assert!(!bell.load(Ordering::SeqCst));
    assert_eq!(region.control_block().park_request, 0);
}

#[test]
fn the_request_is_released_when_the_write_panics() {
    let region = region(true);
    let bell = Arc::new(AtomicBool::new(false));
    let hold = ParkHold::new(region.park_words(), HOLD_READS);
    let cpu1 = thread::spawn(move || {
        while !hold.asked() {
            thread::yield_now();
        }
        hold.hold(thread::yield_now).acknowledged
    });
    let mut parker = Parker::new(region.park_words(), record(), Flag(bell));
    let clock = Wall(std::time::Instant::now());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parker.with_cpu1_parked(&clock, WALL, thread::yield_now, || panic!("flash driver"))
    }));
    assert!(panicked.is_err());
    assert_eq!(cpu1.join().unwrap(), 1, "CPU1 held once and was let go");
    assert_eq!(region.control_block().park_request, 0);
}

#[test]
fn a_request_older_than_cpu1s_attach_is_ignored() {
    let region = region(true);
    // A previous life of CPU1 scribbled the request word, then rebooted.
    let request = region.shared_word(56).unwrap();
    request.store(0x5eed, Ordering::SeqCst);
    let hold = ParkHold::new(region.park_words(), HOLD_READS);
    assert!(!hold.asked(), "not a request to this CPU1");
    assert_eq!(
        hold.hold(|| panic!("held for a stale request")),
        Held::default()
    );
    assert_eq!(region.control_block().park_ack, 0, "never acknowledged");
    // CPU0's next real request is answered (the stale value is forgotten).
    request.store(1, Ordering::SeqCst);
    assert!(hold.asked());
    let mut reads = 0;
    let held = hold.hold(|| {
        reads += 1;
        if reads == 3 {
            request.store(0, Ordering::SeqCst);
        }
    });
    assert_eq!(held.acknowledged, 1);
    assert!(!held.abandoned);
    // The old value is not ignored any more once CPU0 has moved past it.
    request.store(0x5eed, Ordering::SeqCst);
    assert!(hold.asked());
}

#[test]
fn a_hold_never_released_ends_after_its_bound() {
    let region = region(true);
    let hold = ParkHold::new(region.park_words(), 1_000);
    // CPU0 asks and never releases (a CPU0 that died in the write, or a
    // request word a peer wrote after this CPU1 attached).
    region.shared_word(56).unwrap().store(7, Ordering::SeqCst);
    assert!(hold.asked());
    let mut relaxes = 0u32;
    let held = hold.hold(|| relaxes += 1);
    assert_eq!(
        held,
        Held {
            acknowledged: 1,
            abandoned: true
        }
    );
    assert_eq!(relaxes, 999, "one relax between two of the 1,000 reads");
    assert_eq!(region.control_block().park_ack, 0, "CPU1 says it runs");
    // That generation is not held for again; the next one is.
    assert!(!hold.asked());
    region.shared_word(56).unwrap().store(8, Ordering::SeqCst);
    assert!(hold.asked());
}

#[test]
fn cpu0s_maintenance_keeps_the_request_cpu0_stands_by() {
    let region = region(true);
    let record = record();
    let mut parker = Parker::new(
        region.park_words(),
        record,
        Flag(Arc::new(AtomicBool::new(false))),
    );
    let request = region.shared_word(56).unwrap();
    // Outside a park the request is zero: a scribble is undone.
    request.store(0x1234, Ordering::SeqCst);
    assert_eq!(region.repair_cpu0_words(record), 1);
    assert_eq!(request.load(Ordering::SeqCst), 0);
    // During a park it is the generation, even if a peer zeroed it.
    region.shared_word(60).unwrap().store(1, Ordering::SeqCst); // CPU1's ack
    let clock = FakeClock::new(0);
    let during = parker.with_cpu1_parked(
        &clock,
        FAKE,
        || (),
        || {
            request.store(0, Ordering::SeqCst);
            let repaired = region.repair_cpu0_words(record);
            (repaired, request.load(Ordering::SeqCst))
        },
    );
    assert_eq!(during, Ok((1, 1)));
    assert_eq!(record.get(), 0, "released");
    assert_eq!(request.load(Ordering::SeqCst), 0);
    assert_eq!(region.repair_cpu0_words(record), 0);
}

#[test]
fn cpu0_writes_only_within_the_hold_cpu1_grants() {
    assert_eq!(ParkLimits::new(0, 1_000), None);
    assert_eq!(
        ParkLimits::new(600, 1_000),
        None,
        "the wait is half the hold at most"
    );
    assert!(ParkLimits::new(500, 1_000).is_some());
    // A write longer than the other half is counted: CPU1 may have run.
    let region = region(true);
    let mut parker = Parker::new(
        region.park_words(),
        record(),
        Flag(Arc::new(AtomicBool::new(false))),
    );
    region.shared_word(60).unwrap().store(1, Ordering::SeqCst);
    let clock = FakeClock::new(0);
    let slow = parker.with_cpu1_parked(&clock, FAKE, || (), || clock.advance(5_000));
    assert_eq!(slow, Ok(()));
    assert_eq!(parker.stats().overruns, 1);
}

#[test]
fn a_refused_park_reaches_cpu1_as_ebusy() {
    use synaptic_store::ota::OtaError;
    use synaptic_store::StoreError;
    assert_eq!(
        synaptic_serve::update::ota_errno(OtaError::Store(StoreError::PeerBusy)),
        Errno::Busy
    );
    assert_eq!(
        synaptic_serve::update::ota_errno(OtaError::Store(StoreError::Flash)),
        Errno::Io
    );
}
