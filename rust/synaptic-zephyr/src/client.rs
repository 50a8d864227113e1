//! CPU1's side of the service on Zephyr: attach to the region CPU0
//! published, start the dispatch thread, and hand out the client.
//!
//! [`attach`] announces this image's layout version, checks the control
//! block (magic, layout version, ring geometry, shared size, exchange
//! slots), attaches to both rings *at their live indices* (never
//! re-zeroing them, so a restarted CPU1 rejoins with nothing from CPU0),
//! starts a dispatch thread that drains the replies after each doorbell
//! (and every `CONFIG_SYNAPTIC_CLIENT_SWEEP_MS`, when it also times out
//! sleeping callers), sets `cpu1_ready`, and measures a first round trip.
//! The handshake ping first pushes the client's sync request, a
//! `STATUS_REQ` (the handshake CPU0's boot waits for): until CPU0 has taken it, the client
//! trusts no reply a previous life of CPU1 may have left, and a ping sent
//! meanwhile is sent again once it has.
//!
//! The client ([`ZephyrClient`]) takes requests from any number of CPU1
//! threads, up to one per exchange slot in flight; it sends under one
//! [`SemLock`] and drains under another (a `k_sem` only under contention:
//! a `k_mutex` costs more than the ring push it guards), and a polling
//! caller waits with `wfe` ([`crate::sync::wait_for_event`]). It uses no
//! floating point (this core has no FPU, and CI checks the image links no
//! soft-float helper).

use core::ffi::c_void;
use core::sync::atomic::{AtomicBool, Ordering};

use static_cell::StaticCell;
use synaptic_abi::Direction;
use synaptic_ipc::{Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::time::Clock;
use synaptic_serve::boot::{self, AttachError};
use synaptic_serve::client::{ClientConfig, Deadline};
use synaptic_serve::{Client, ClientError, Pong, SemLock};
use zephyr::raw;
use zephyr::thread::{stack_len, ThreadStack};

use crate::clock::ZephyrClock;
use crate::doorbell::{self, PeerDoorbell};
use crate::service::{region_from_devicetree, StartError, N};
use crate::sync::KernelSemaphore;
use crate::thread::StaticThread;
use crate::timer::PeriodicTimer;

/// The client's sending lock.
pub type SenderLock = SemLock<Sender<'static, N, PeerDoorbell>, KernelSemaphore>;
/// The client's receiving lock.
pub type ReceiverLock = SemLock<Consumer<'static, N>, KernelSemaphore>;
/// The CPU1 client on Zephyr.
pub type ZephyrClient =
    Client<'static, N, PeerDoorbell, KernelSemaphore, ZephyrClock, SenderLock, ReceiverLock>;

/// How often the dispatch thread wakes on its own
/// (`CONFIG_SYNAPTIC_CLIENT_SWEEP_MS`; 0: no timer, 100 ms waits).
const SWEEP_MS: u32 = zephyr::kconfig::CONFIG_SYNAPTIC_CLIENT_SWEEP_MS as u32;
/// The dispatch thread's own timeout when no sweep timer runs.
const DISPATCH_POLL_MS: u32 = 100;
/// Polling threshold of the completion policy (Kconfig).
pub const POLL_THRESHOLD_US: u32 = zephyr::kconfig::CONFIG_SYNAPTIC_POLL_THRESHOLD_US as u32;

static WAKE: KernelSemaphore = KernelSemaphore::new(0, 1);
/// Set by the sweep timer, cleared by the dispatch thread that sweeps.
static SWEEP_DUE: AtomicBool = AtomicBool::new(false);

/// The periodic sweep timer, started once by [`attach`].
static SWEEP_TIMER: PeriodicTimer = PeriodicTimer::new();

/// The sweep timer's expiry (ISR): ask the dispatch thread to sweep.
extern "C" fn on_sweep(_timer: *mut raw::k_timer) {
    // Ordering: the semaphore give orders it before the thread's take.
    SWEEP_DUE.store(true, Ordering::Relaxed);
    WAKE.give();
}

/// Start the sweep timer (once per boot, from `attach`).
fn start_sweep() {
    // `on_sweep` only gives a semaphore and stores an atomic, which an ISR
    // may.
    SWEEP_TIMER.start(SWEEP_MS, on_sweep);
}
static CLIENT: StaticCell<ZephyrClient> = StaticCell::new();

/// Why CPU1 could not attach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachFailure {
    /// [`attach`] already ran this boot.
    AlreadyAttached,
    /// Devicetree's region is missing or does not match this build.
    Region(StartError),
    /// The control block does not describe this image's layout, or CPU0
    /// has not published it.
    Layout(AttachError),
    /// The doorbell did not start.
    Doorbell,
    /// The first `STATUS_REQ` was not answered.
    Handshake(ClientError),
}

/// Attach CPU1 and return the client with the first round trip measured.
/// `handshake` bounds the wait for the first `STATUS_REQ`'s answer.
///
/// # Errors
///
/// [`AttachFailure`].
pub fn attach(handshake: Timeout) -> Result<(&'static ZephyrClient, Pong), AttachFailure> {
    let region = region_from_devicetree().map_err(AttachFailure::Region)?;
    region.announce_cpu1_version();
    // Within the handshake's time, wait for a sane control block: CPU0's
    // maintenance restores words a previous life of CPU1 scribbled.
    let deadline = Deadline::after(ZephyrClock.now_us(), handshake);
    let left = || deadline.left(ZephyrClock.now_us());
    while let Err(e) = region.check() {
        if left().is_none() {
            return Err(AttachFailure::Layout(AttachError::Region(e)));
        }
        zephyr::time::sleep(zephyr::time::Duration::millis_at_least(1));
    }
    crate::park::serve_on_cpu1(region.park_words());
    let bell = doorbell::init_with_handler(on_doorbell).map_err(|e| match e {
        doorbell::DoorbellError::AlreadyInitialised => AttachFailure::AlreadyAttached,
        _ => AttachFailure::Doorbell,
    })?;
    // SAFETY: the doorbell's one-time init just succeeded, so this is the
    // first attach of this boot: no other handle of these rings exists on
    // CPU1, and CPU1 is the only producer of CPU1→CPU0 and the only
    // consumer of CPU0→CPU1. The handles take the live indices.
    let (producer, consumer) = unsafe {
        (
            Producer::attach(region.ring(Direction::Cpu1ToCpu0)),
            Consumer::attach(region.ring(Direction::Cpu0ToCpu1)),
        )
    };
    let config = ClientConfig {
        poll_threshold_us: POLL_THRESHOLD_US,
        relax: crate::sync::wait_for_event,
        swept: SWEEP_MS > 0,
    };
    // Built in its static: a client on this stack first would cost its
    // size again (the main thread's stack is CPU1's scarcest RAM).
    let client: &'static ZephyrClient = CLIENT
        .try_init_with(|| {
            Client::attach(
                &region,
                producer,
                consumer,
                bell,
                || KernelSemaphore::new(0, 1),
                ZephyrClock,
                config,
            )
        })
        .ok_or(AttachFailure::AlreadyAttached)?;
    // SAFETY: the stack is the dispatch thread's alone, and the argument is
    // the `&'static ZephyrClient` that `dispatch` reads.
    unsafe {
        DISPATCH.start(
            &DISPATCH_STACK,
            dispatch,
            core::ptr::from_ref(client).cast_mut().cast(),
            DISPATCH_PRIORITY,
            c"syn_dispatch",
        );
    }
    boot::attach(&region).map_err(AttachFailure::Layout)?;
    // After the attach: the sweep's maintenance rewrites `cpu1_ready`.
    if SWEEP_MS > 0 {
        start_sweep();
    }
    // A ping may be refused (a ring a previous life scribbled looks full
    // until CPU0 repairs it, woken by this push's doorbell) or lost to a
    // resynchronisation: retry within the handshake's time.
    loop {
        // Past the deadline, one last ping that does not wait.
        let attempt = match left() {
            Some(Timeout::Millis(ms)) => Timeout::Millis(ms.min(HANDSHAKE_TRY_MS)),
            Some(other) => other,
            None => Timeout::NoWait,
        };
        match client.ping(attempt) {
            Ok(pong) => return Ok((client, pong)),
            Err(e) if left().is_none() => return Err(AttachFailure::Handshake(e)),
            Err(_) => {
                zephyr::time::sleep(zephyr::time::Duration::millis_at_least(1));
            }
        }
    }
}

/// CPU1's doorbell interrupt: park while CPU0 writes CPU1's flash bank,
/// then wake the dispatch thread.
fn on_doorbell() {
    crate::park::on_cpu1_doorbell();
    // k_sem_give is callable from an ISR.
    WAKE.give();
}

/// Longest single handshake ping of [`attach`] (it retries within its
/// timeout).
const HANDSHAKE_TRY_MS: u32 = 50;

/// The dispatch thread (started by [`attach`]) and its stack.
static DISPATCH: StaticThread = StaticThread::new();
#[unsafe(link_section = ".noinit.synaptic_dispatch_stack")]
static DISPATCH_STACK: ThreadStack<{ stack_len(1536) }> = ThreadStack::new();
/// The dispatch thread's priority (`CONFIG_SYNAPTIC_CLIENT_DISPATCH_PRIORITY`,
/// by default the lowest cooperative one, -1): above every preemptible
/// application thread. Zephyr does not preempt a running thread for a
/// woken one of equal priority, so at the application's priority (it was
/// the main thread's, 0) the doorbell's wake-up waited until whatever
/// thread ran blocked: in the offload benchmark's trace, a load thread
/// summing a 4,096-byte output (16,528 instructions) ran before the
/// drain that woke the STATUS caller. A drain is a few hundred
/// instructions and never waits for a lower thread but on the receiver
/// lock (it then blocks), so a cooperative dispatch thread costs the
/// others little; the caller it wakes then runs by its own priority.
const DISPATCH_PRIORITY: i32 = zephyr::kconfig::CONFIG_SYNAPTIC_CLIENT_DISPATCH_PRIORITY as i32;

/// The dispatch thread: drain replies after each doorbell, sweep when the
/// timer asks.
extern "C" fn dispatch(client: *mut c_void, _: *mut c_void, _: *mut c_void) {
    // SAFETY: `attach` starts this thread with its `&'static ZephyrClient`.
    let client = unsafe { &*client.cast_const().cast::<ZephyrClient>() };
    // With the sweep timer the thread blocks without a timeout of its own
    // (arming and cancelling one per doorbell costs more than the drain).
    let wait = if SWEEP_MS > 0 {
        Timeout::Forever
    } else {
        Timeout::Millis(DISPATCH_POLL_MS)
    };
    loop {
        let _ = WAKE.take(wait);
        client.dispatch();
        if SWEEP_DUE.swap(false, Ordering::Relaxed) {
            client.expire_sleepers();
            client.maintain();
        }
    }
}

/// Restart CPU1 in place: run its reset handler again, as a reset would,
/// with interrupts masked and the stack pointer reloaded from its vector
/// table. CPU1's RAM is re-initialised by Zephyr's startup; the shared
/// region is not touched, so the next [`attach`] rejoins the live rings.
///
/// For tests of the rejoin path (a CPU1 watchdog or fault reset does the
/// same from CPU0's point of view).
///
/// # Safety
///
/// Every peripheral this image uses must tolerate re-initialisation
/// without a reset (the AN521's MHU and UART do), and nothing may rely on
/// state in CPU1's RAM surviving.
pub unsafe fn restart() -> ! {
    const VTOR: *const u32 = 0xE000_ED08 as *const u32;
    // SAFETY: VTOR is the architectural vector table offset register of
    // every ARMv7-M/ARMv8-M core; reading it has no side effect. The
    // vector table it names holds the initial SP and the reset handler
    // (Thumb address); the caller accepts re-running startup (contract).
    unsafe {
        let table = core::ptr::read_volatile(VTOR) as *const u32;
        let sp = core::ptr::read_volatile(table);
        let reset = core::ptr::read_volatile(table.add(1));
        core::arch::asm!(
            "cpsid i",
            "msr msp, {sp}",
            "bx {reset}",
            sp = in(reg) sp,
            reset = in(reg) reset,
            options(noreturn)
        )
    }
}
