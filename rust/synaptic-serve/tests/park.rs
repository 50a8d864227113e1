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
use synaptic_serve::park::{ParkError, Parker};
use synaptic_serve::SharedRegion;

const N: usize = 8;

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
        let words = region.park_words();
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
                if bell.swap(false, Ordering::SeqCst) && words.requested() != 0 {
                    held += words.hold(thread::yield_now);
                }
            }
            held
        })
    };

    let mut parker = Parker::new(region.park_words(), Flag(bell));
    let clock = Wall(std::time::Instant::now());
    let writes = 2_000;
    for _ in 0..writes {
        let wrote = parker.with_cpu1_parked(&clock, 5_000_000, thread::yield_now, || {
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
    let mut parker = Parker::new(region.park_words(), Flag(bell.clone()));
    let clock = FakeClock::new(0);
    let mut wrote = false;
    let result = parker.with_cpu1_parked(&clock, 1_000, || clock.advance(100), || wrote = true);
    assert_eq!(result, Err(ParkError::Timeout { generation: 1 }));
    assert_eq!(ParkError::Timeout { generation: 1 }.errno(), Errno::Busy);
    assert!(!wrote);
    assert!(bell.load(Ordering::SeqCst), "the doorbell was rung");
    assert_eq!(region.control_block().park_request, 0, "request withdrawn");
    assert_eq!(parker.stats().refused, 1);

    // CPU1 wakes late: it finds the request gone and runs on.
    assert_eq!(region.park_words().hold(|| {}), 0);
    // A late acknowledgement of generation 1 left in the word does not pass
    // for the next request's.
    region.shared_word(60).unwrap().store(1, Ordering::SeqCst);
    let result = parker.with_cpu1_parked(&clock, 1_000, || clock.advance(100), || ());
    assert_eq!(result, Err(ParkError::Timeout { generation: 2 }));
    assert_eq!(parker.stats().parks, 0);
}

#[test]
fn a_cpu1_that_never_attached_is_not_asked() {
    let region = region(false);
    let bell = Arc::new(AtomicBool::new(false));
    let mut parker = Parker::new(region.park_words(), Flag(bell.clone()));
    let clock = FakeClock::new(0);
    let result = parker.with_cpu1_parked(&clock, 1_000, || clock.advance(100), || ());
    assert_eq!(result, Err(ParkError::NotAttached));
    assert!(!bell.load(Ordering::SeqCst));
    assert_eq!(region.control_block().park_request, 0);
}

#[test]
fn the_request_is_released_when_the_write_panics() {
    let region = region(true);
    let bell = Arc::new(AtomicBool::new(false));
    let words = region.park_words();
    let cpu1 = thread::spawn(move || {
        while words.requested() == 0 {
            thread::yield_now();
        }
        words.hold(thread::yield_now)
    });
    let mut parker = Parker::new(region.park_words(), Flag(bell));
    let clock = Wall(std::time::Instant::now());
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parker.with_cpu1_parked(&clock, 5_000_000, thread::yield_now, || {
            panic!("flash driver")
        })
    }));
    assert!(panicked.is_err());
    assert_eq!(cpu1.join().unwrap(), 1, "CPU1 held once and was let go");
    assert_eq!(region.control_block().park_request, 0);
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
