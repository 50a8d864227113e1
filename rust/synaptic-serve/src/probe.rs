//! Non-generic instantiations of the CPU1 client, compiled only under
//! `--cfg synaptic_probe`, so `scripts/check-no-float.sh` can disassemble
//! what CPU1 (Cortex-M33 without FPU) really executes.
//!
//! Invariant checked there: no floating-point instruction and no call to a
//! soft-float helper on any path reachable from these entry points.

use core::cell::{RefCell, RefMut};
use core::sync::atomic::{AtomicU32, Ordering};

use synaptic_abi::{Priority, SlotGeometry, RING_ENTRIES_DEFAULT};
use synaptic_ipc::{Doorbell, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::registry::ModelHandle;
use synaptic_runtime::time::Clock;

use crate::client::{Client, ClientConfig, ClientError, Wait};
use crate::lock::LocalLock;
use crate::region::SharedRegion;

/// Ring entries of the probe build.
const N: usize = RING_ENTRIES_DEFAULT;

static TICKS: AtomicU32 = AtomicU32::new(0);
static RUNG: AtomicU32 = AtomicU32::new(0);

/// A single-thread lock (the probe only needs the code paths).
pub struct ProbeLock<T>(RefCell<T>);

impl<T> LocalLock<T> for ProbeLock<T> {
    type Guard<'g>
        = RefMut<'g, T>
    where
        Self: 'g;

    fn new(value: T) -> Self {
        ProbeLock(RefCell::new(value))
    }

    fn lock(&self) -> RefMut<'_, T> {
        self.0.borrow_mut()
    }

    fn try_lock(&self) -> Option<RefMut<'_, T>> {
        self.0.try_borrow_mut().ok()
    }
}

/// A clock reading a counter.
pub struct ProbeClock;

impl Clock for ProbeClock {
    fn now_us(&self) -> u64 {
        u64::from(TICKS.load(Ordering::Relaxed))
    }
}

/// A counting semaphore that never blocks.
pub struct ProbeSemaphore(AtomicU32);

impl Semaphore for ProbeSemaphore {
    fn give(&self) {
        self.0.fetch_add(1, Ordering::Release);
    }

    fn take(&self, _timeout: Timeout) -> bool {
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok()
    }
}

/// A doorbell that counts.
pub struct ProbeBell;

impl Doorbell for ProbeBell {
    fn ring(&self) {
        RUNG.fetch_add(1, Ordering::Relaxed);
    }
}

/// The client as CPU1 instantiates it.
pub type ProbeClient = Client<
    'static,
    N,
    ProbeBell,
    ProbeSemaphore,
    ProbeClock,
    ProbeLock<Sender<'static, N, ProbeBell>>,
    ProbeLock<Consumer<'static, N>>,
>;

fn relax() {
    core::hint::spin_loop();
}

/// `Client::attach` over the region at `base`.
///
/// # Safety
///
/// `base` is a valid, 16-aligned region of `size` bytes, only used through
/// this client, and no other producer of the ring CPU1→CPU0 nor consumer
/// of the ring CPU0→CPU1 exists.
#[no_mangle]
pub unsafe fn synaptic_probe_client_attach(
    base: core::ptr::NonNull<u8>,
    size: usize,
) -> Option<ProbeClient> {
    // SAFETY: the caller's obligations above.
    let region =
        unsafe { SharedRegion::<'static, N>::from_raw(base, size, SlotGeometry::DEFAULT) }.ok()?;
    // SAFETY: the caller guarantees these are the only producer and consumer.
    let (producer, consumer) = unsafe {
        (
            Producer::attach(region.ring(synaptic_abi::Direction::Cpu1ToCpu0)),
            Consumer::attach(region.ring(synaptic_abi::Direction::Cpu0ToCpu1)),
        )
    };
    let config = ClientConfig {
        poll_threshold_us: 400,
        relax,
        swept: true,
    };
    Some(Client::attach(
        &region,
        producer,
        consumer,
        ProbeBell,
        || ProbeSemaphore(AtomicU32::new(0)),
        ProbeClock,
        config,
    ))
}

/// `reserve` + `infer_input` + `infer_with` (polled).
#[no_mangle]
pub fn synaptic_probe_client_infer_polled(
    client: &ProbeClient,
    model: u32,
    len: usize,
    out: &mut [u8; 64],
    timeout_ms: i32,
) -> i32 {
    let timeout = Timeout::from_c_millis(timeout_ms);
    let result = client.reserve(len, timeout).and_then(|mut session| {
        session.infer_input()[0] = len as u8;
        session.infer_with(
            ModelHandle::from_raw(model),
            len,
            out,
            Priority::Normal,
            Wait::Poll,
            timeout,
        )
    });
    ClientError::status(result)
}

/// `session` + `infer_input` + `infer`.
#[no_mangle]
pub fn synaptic_probe_client_infer(
    client: &ProbeClient,
    model: u32,
    len: usize,
    out: &mut [u8; 64],
    timeout_ms: i32,
) -> i32 {
    let timeout = Timeout::from_c_millis(timeout_ms);
    let result = client.session(timeout).and_then(|mut session| {
        session.infer_input()[0] = len as u8;
        session.infer(
            ModelHandle::from_raw(model),
            len,
            out,
            Priority::RealTime,
            timeout,
        )
    });
    ClientError::status(result)
}

/// `model_lookup`.
#[no_mangle]
pub fn synaptic_probe_client_lookup(client: &ProbeClient, name: &[u8; 8], timeout_ms: i32) -> i32 {
    let Ok(name) = core::str::from_utf8(name) else {
        return -22;
    };
    match client.model_lookup(name, Timeout::from_c_millis(timeout_ms)) {
        Ok(handle) => handle.raw() as i32,
        Err(e) => e.to_errno().negative(),
    }
}

/// `ping`.
#[no_mangle]
pub fn synaptic_probe_client_ping(client: &ProbeClient, timeout_ms: i32) -> i32 {
    match client.ping(Timeout::from_c_millis(timeout_ms)) {
        Ok(pong) => pong.rtt_us as i32,
        Err(e) => e.to_errno().negative(),
    }
}

/// The dispatch thread's call into the client.
#[no_mangle]
pub fn synaptic_probe_client_dispatch(client: &ProbeClient) -> usize {
    client.dispatch()
}

/// The sweep timer's call into the client (timeouts of sleeping callers).
#[no_mangle]
pub fn synaptic_probe_client_sweep(client: &ProbeClient) {
    client.expire_sleepers()
}
