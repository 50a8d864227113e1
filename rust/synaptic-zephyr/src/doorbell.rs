//! The doorbell between the cores: ring the peer, and wake a thread when it rings us.
//!
//! The devicetree names the doorbell with the chosen property
//! `synaptic,doorbell`; the module's C glue (`src/synaptic_doorbell.c`,
//! Kconfig `SYNAPTIC_DOORBELL`) drives it, because Zephyr's IPM and mbox
//! calls are static inline syscall wrappers. On `mps2/an521` it is the SSE-200
//! MHU (IPM API, `synaptic,doorbell-ipm`); on the MCXN947 it is the inter-CPU
//! MAILBOX (mbox API, `synaptic,doorbell-mbox`), behind the same two C
//! functions. Nothing here names the hardware.
//!
//! # Invariants
//!
//! * The doorbell interrupt does one short thing: it gives the
//!   [`KernelSemaphore`] passed to [`init`] (CPU1: its dispatch thread
//!   drains the replies), or calls the `fn()` passed to [`init_with_handler`]
//!   (CPU0: the intake drains at most one ring's worth of requests in the
//!   ISR, answering status requests and handing slot requests to the
//!   serving thread).
//! * Polled completion uses the event register instead: [`Doorbell::event`]
//!   is `sev`, [`crate::sync::wait_for_event`] is `wfe`. This assumes the peer's `sev`
//!   reaches this core's event input (the SSE-200 and the MCXN947 connect
//!   the two cores' TXEV/RXEV); where it does not, a poller still wakes on
//!   its next interrupt.
//! * A doorbell carries no data and may coalesce: several rings can produce
//!   one interrupt, and an interrupt that arrives before [`init`] is lost.
//!   The woken thread therefore drains the ring completely and waits with a
//!   timeout, so a lost doorbell costs one timeout, never a message.
//! * [`init`] succeeds once per boot and hands out the [`PeerDoorbell`], the
//!   capability to ring the peer; it is `Copy`, as ringing is stateless.
#![cfg(CONFIG_SYNAPTIC_DOORBELL)]

use core::ffi::{c_int, c_void};
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use synaptic_abi::Errno;
use synaptic_ipc::platform::{Doorbell, Semaphore};

use crate::sync::KernelSemaphore;

extern "C" {
    fn syn_doorbell_init(on_ring: unsafe extern "C" fn(*mut c_void), ctx: *mut c_void) -> c_int;
    fn syn_doorbell_ring() -> c_int;
    fn syn_doorbell_set_enabled(enable: bool) -> c_int;
}

/// Stop (`false`) or resume (`true`) taking the peer's doorbell interrupt
/// (CPU0 polls its ring while CPU1 floods it); a ring while stopped is
/// taken once resumed.
///
/// # Errors
///
/// The driver's refusal; [`DoorbellError::Driver`] with `-EINVAL` before
/// an init succeeded.
pub fn set_enabled(enable: bool) -> Result<(), DoorbellError> {
    // SAFETY: the C glue takes a plain bool and touches only the doorbell
    // device's interrupt line (or mbox channel) it owns.
    match unsafe { syn_doorbell_set_enabled(enable) } {
        0 => Ok(()),
        code => Err(DoorbellError::from_errno(code)),
    }
}

/// Why the doorbell could not be set up or rung.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DoorbellError {
    /// The doorbell device did not initialise (`-ENODEV`).
    NotReady,
    /// [`init`] already succeeded this boot (`-EALREADY`).
    AlreadyInitialised,
    /// The driver refused with this negative errno, passed through as is.
    Driver(i32),
}

impl DoorbellError {
    fn from_errno(code: c_int) -> Self {
        match Errno::from_code(code) {
            Some(Errno::NoDev) => DoorbellError::NotReady,
            Some(Errno::Already) => DoorbellError::AlreadyInitialised,
            _ => DoorbellError::Driver(code),
        }
    }

    /// The negative errno at the C boundary.
    pub fn negative_errno(self) -> i32 {
        match self {
            DoorbellError::NotReady => Errno::NoDev.negative(),
            DoorbellError::AlreadyInitialised => Errno::Already.negative(),
            DoorbellError::Driver(code) => code,
        }
    }
}

/// The capability to ring the peer core; obtained from [`init`].
#[derive(Clone, Copy, Debug)]
pub struct PeerDoorbell {
    _private: (),
}

/// Rings that the driver refused (through [`Doorbell::ring`], which cannot
/// return an error).
static FAILED_RINGS: AtomicU32 = AtomicU32::new(0);

impl PeerDoorbell {
    /// Interrupt the peer core. Does not block.
    ///
    /// # Errors
    ///
    /// The driver's refusal, as a [`DoorbellError`].
    pub fn try_ring(&self) -> Result<(), DoorbellError> {
        // SAFETY: a plain C call without arguments; the C glue checks that
        // the device is ready before it touches it.
        let code = unsafe { syn_doorbell_ring() };
        if in_isr() {
            // Not inside an interrupt: CPU0's doorbell ISR would let
            // CPU1 push its next request into the drain still running,
            // which then reads as a flood (a ring's worth in one drain).
            // The ISR yields once it returns from its handler.
            // Ordering: a local hint, nothing is published with it.
            RUNG_IN_ISR.store(true, Ordering::Relaxed);
        } else {
            let_peer_run();
        }
        match code {
            0 => Ok(()),
            code => Err(DoorbellError::from_errno(code)),
        }
    }

    /// The capability for the model store's park requests
    /// (`crate::park`), which ring CPU1 from the store's thread: ringing
    /// is stateless, and the C glue refuses while the device is not ready.
    #[cfg(feature = "store")]
    pub(crate) fn for_parks() -> PeerDoorbell {
        PeerDoorbell { _private: () }
    }

    /// How many rings through [`Doorbell::ring`] the driver refused so far.
    pub fn failed_rings() -> u32 {
        // Ordering: a statistic; nothing is published with it.
        FAILED_RINGS.load(Ordering::Relaxed)
    }
}

impl Doorbell for PeerDoorbell {
    fn ring(&self) {
        if self.try_ring().is_err() {
            // Ordering: a statistic; nothing is published with it. A local
            // read-modify-write, never on shared memory.
            FAILED_RINGS.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn event(&self) {
        // SAFETY: `sev` only sets the event register of the cores; it
        // touches no memory, stack or flags.
        unsafe { core::arch::asm!("sev", options(nomem, nostack, preserves_flags)) };
    }
}

/// Set by a ring from an interrupt; the doorbell ISR yields for it.
static RUNG_IN_ISR: AtomicBool = AtomicBool::new(false);

/// Whether this code runs in an exception handler (IPSR non-zero).
fn in_isr() -> bool {
    let ipsr: u32;
    // SAFETY: reading IPSR touches no memory, stack or flags.
    unsafe {
        core::arch::asm!("mrs {}, ipsr", out(reg) ipsr, options(nomem, nostack, preserves_flags))
    };
    ipsr != 0
}

/// The peer has work now: let it run. `yield` is a hint, a no-op on
/// cores that run in parallel (the Cortex-M33s of the SSE-200 and the
/// MCXN947); an emulator that runs both cores on one host thread (QEMU's
/// round-robin TCG, always so with -icount) takes it to switch to the
/// next core. Without it the ringing core went on until it slept or its
/// time slice ended, and the rung one waited: in the offload benchmark
/// (profiled with `scripts/qemu_profile.py`), a loaded STATUS round trip
/// by interrupt held 16,528 CPU1 instructions of a load thread summing a
/// 4,096-byte output before CPU0's doorbell ISR ran (p99 68,685 ticks,
/// 12.6x its p50), though CPU0 answers STATUS in that ISR.
fn let_peer_run() {
    // SAFETY: `yield` touches no memory, stack or flags.
    unsafe { core::arch::asm!("yield", options(nomem, nostack, preserves_flags)) };
}

/// The doorbell ISR of [`init_with_handler`]: call the `fn()` in `ctx`.
///
/// # Safety
///
/// `ctx` must be a `fn()` cast to a pointer, as [`init_with_handler`]
/// passes it.
unsafe extern "C" fn call_from_isr(ctx: *mut c_void) {
    // SAFETY: `init_with_handler` registered `ctx` as a `fn()` cast to a
    // data pointer (same size on every target Zephyr supports).
    let handler = unsafe { core::mem::transmute::<*mut c_void, fn()>(ctx) };
    handler();
    // Ordering: a local hint, nothing is published with it.
    if RUNG_IN_ISR.swap(false, Ordering::Relaxed) {
        let_peer_run();
    }
}

/// Start listening for the peer's doorbell: from now on its interrupt
/// calls `on_ring` (in ISR context: it must not block). Returns the
/// capability to ring the peer.
///
/// # Errors
///
/// As [`init`].
pub fn init_with_handler(on_ring: fn()) -> Result<PeerDoorbell, DoorbellError> {
    let ctx = on_ring as *const () as *mut c_void;
    // SAFETY: `call_from_isr` has the C handler's signature and only turns
    // `ctx` back into the `fn()` it came from.
    match unsafe { syn_doorbell_init(call_from_isr, ctx) } {
        0 => Ok(PeerDoorbell { _private: () }),
        code => Err(DoorbellError::from_errno(code)),
    }
}

/// The doorbell ISR: give the semaphore that `ctx` points to.
///
/// # Safety
///
/// `ctx` must come from a `&'static KernelSemaphore`, as [`init`] passes it.
unsafe extern "C" fn give_from_isr(ctx: *mut c_void) {
    // SAFETY: `init` registered `ctx` as a pointer to a `'static`
    // `KernelSemaphore`, only ever read through shared references.
    let wake = unsafe { &*(ctx as *const KernelSemaphore) };
    // k_sem_give is callable from an ISR.
    wake.give();
}

/// Start listening for the peer's doorbell: from now on its interrupt gives
/// `wake`, and nothing else. Returns the capability to ring the peer.
///
/// `wake` is typically the semaphore the dispatch thread passes to
/// `Dispatcher::wait_and_dispatch`. Give it a limit of 1 or more; gives past
/// the limit are dropped, which is harmless because the thread drains
/// everything on each wake-up.
///
/// # Errors
///
/// * [`DoorbellError::AlreadyInitialised`] on a second call;
/// * [`DoorbellError::NotReady`] when the doorbell device did not initialise;
/// * [`DoorbellError::Driver`] when the driver refuses to enable it.
///
/// # Examples
///
/// ```ignore
/// static WAKE: KernelSemaphore = KernelSemaphore::new(0, 1);
/// let doorbell = synaptic_zephyr::doorbell::init(&WAKE)?;
/// let mut sender = synaptic_ipc::Sender::new(producer, doorbell);
/// ```
pub fn init(wake: &'static KernelSemaphore) -> Result<PeerDoorbell, DoorbellError> {
    // Initialise the k_sem now, in thread context, rather than lazily on the
    // first give from the ISR.
    let _ = wake.kernel().count_get();
    let ctx = wake as *const KernelSemaphore as *mut c_void;
    // SAFETY: `give_from_isr` has the C handler's signature and only reads
    // through `ctx`, which points to a `'static` semaphore (never freed,
    // never written through this pointer).
    match unsafe { syn_doorbell_init(give_from_isr, ctx) } {
        0 => Ok(PeerDoorbell { _private: () }),
        code => Err(DoorbellError::from_errno(code)),
    }
}
