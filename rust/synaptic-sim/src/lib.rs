//! Two-core host simulator: CPU0 and CPU1 as threads over one shared buffer
//! laid out exactly per ABI v2, with reset, stall and delay injection.
//!
//! The shared buffer is 96 KiB (the platforms' window, [`SHARED_SIZE`]),
//! 64-byte aligned: control block, ring CPU0→CPU1, ring CPU1→CPU0, the
//! service-time table, then the payload pool holding the K = 4 exchange
//! slots ([`SLOTS`]). Everything above it is the real code: `synaptic-ring`
//! rings, `synaptic-ipc` senders and inboxes with host semaphore doorbells,
//! `synaptic-runtime`'s registry, stub NPU and scheduler, and
//! `synaptic-serve`'s intake, server and client.
//!
//! The pieces are the host entry point's ([`synaptic_serve::loopback`]),
//! which stands the same two cores up on one thread: its buffer and
//! [`publish`](synaptic_serve::loopback::publish), its ring ends, CPU0's
//! [`Service`](synaptic_serve::loopback::Service) (models, pipelines, stub
//! NPU) and its client type. What is the simulator's own is the threads,
//! the wall clock (or a fake one that moves only in the NPU and in local
//! stages), the doorbells between them, and injection.
//!
//! * [`run`] publishes the region, starts CPU0 (an "ISR" thread running the
//!   intake on each doorbell, and a serving thread that owns the runtime and
//!   drives the scheduler between requests), runs the test body, stops CPU0
//!   and returns its [`Cpu0Report`].
//! * [`Sim::cpu1`] runs one *life* of CPU1: it attaches to the live ring
//!   indices, starts a dispatch thread calling [`Client::dispatch`] on each
//!   doorbell, runs the body with the client (which may start any number of
//!   CPU1 threads sharing it), then drops every CPU1 object. Calling it
//!   again is a CPU1 reset: only the shared buffer survives.
//!   [`Sim::cpu1_with`] chooses the poll threshold and whether the life has
//!   a dispatch thread at all; [`Sim::cpu1_raw`] is a life without a
//!   client, writing raw messages (a buggy or hostile CPU1).
//! * Injection, through [`Cpu0Control`]: stall CPU0 (both threads park at
//!   their next check) or only its serving thread, hold the serving thread
//!   in the middle of a chosen stage of a local job or of the next NPU
//!   invoke (requests still arrive), delay every scheduler step by a
//!   wall-clock amount, start a local job.
//!
//! Invariants: one producer and one consumer per ring at any time (CPU1's
//! handles live only inside [`Sim::cpu1`], and lives do not overlap); a
//! panicking body stops every thread it started (drop guards), so a failed
//! test fails instead of hanging.
//!
//! [`Client::dispatch`]: synaptic_serve::Client::dispatch

pub mod cpu0;
pub mod cpu1;
pub mod devices;
pub mod models;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;

use synaptic_abi::{Direction, SlotGeometry};
use synaptic_ipc::host::HostSemaphore;
use synaptic_ipc::Inbox;
use synaptic_serve::loopback::{self, RegionBuffer};
use synaptic_serve::{SharedRegion, SlotLedger};

pub use cpu0::{
    Cpu0Config, Cpu0Control, Cpu0Doorbell, Cpu0Report, Event, LocalJob, SimClock, INBOX_ENTRIES,
    STAGE_US,
};
pub use cpu1::{
    Checked, Cpu1, Cpu1Config, Cpu1Report, Cpu1Sender, RawCpu1, Request, SimClient, SlotChoice,
};
pub use models::{expected_output, fill_input, SimModel, FACE, KWS, SEED};

/// Ring entries of the simulated region (the Kconfig default).
pub const RING: usize = loopback::RING;

/// The exchange slots of the simulated region: K = 4, the frame slot
/// (27,648 in / 4,096 out) and three small slots (4,096 / 1,024), the
/// Kconfig default.
pub const SLOTS: SlotGeometry = loopback::SLOTS;

/// Bytes of the shared window (the platforms' 96 KiB).
pub const SHARED_SIZE: usize = synaptic_abi::memory_map::SHARED_SIZE as usize;

/// What a test body sees: the region, CPU0's controls, and CPU1 lives.
pub struct Sim<'s> {
    region: SharedRegion<'s, RING>,
    cpu0_bell: &'s HostSemaphore,
    cpu1_bell: &'s HostSemaphore,
    control: &'s Arc<Cpu0Control>,
    config: &'s Cpu0Config,
    ledger: &'s SlotLedger,
    /// A CPU1 life is running (lives must not overlap: each holds ring handles).
    cpu1_alive: AtomicBool,
    /// A CPU1 life has run: the next one is a restart.
    cpu1_lived: AtomicBool,
}

impl<'s> Sim<'s> {
    /// The shared region.
    pub fn region(&self) -> SharedRegion<'s, RING> {
        self.region
    }

    /// CPU0's injection and observation handle.
    pub fn cpu0(&self) -> &Cpu0Control {
        self.control
    }

    /// CPU0's configuration.
    pub fn config(&self) -> &Cpu0Config {
        self.config
    }

    /// The exchange slots CPU0 holds now (its ledger's mask, what a
    /// `STATUS_RESP` reports). A slot stays held for a moment after its
    /// reply is pushed, until the serving thread releases it.
    pub fn slots_held(&self) -> u32 {
        self.ledger.mask()
    }

    /// Wait until CPU0 holds no exchange slot.
    ///
    /// # Panics
    ///
    /// After 20 s (the simulation is stuck).
    pub fn wait_slots_free(&self) {
        let start = std::time::Instant::now();
        while self.slots_held() != 0 {
            assert!(
                start.elapsed() < std::time::Duration::from_secs(20),
                "CPU0 never released its slots"
            );
            thread::sleep(std::time::Duration::from_micros(100));
        }
    }
}

/// Stops a thread group when dropped (also on unwinding).
struct StopOnDrop<F: Fn()>(F);

impl<F: Fn()> Drop for StopOnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// Publish a fresh region, start CPU0 with `config`, run `body`, stop CPU0.
///
/// # Panics
///
/// When CPU0 cannot start (a model fails to register or export), and when
/// `body` or a CPU0 thread panics.
pub fn run<R>(config: Cpu0Config, body: impl FnOnce(&Sim<'_>) -> R) -> (R, Cpu0Report) {
    let mut window = RegionBuffer::with_len(SHARED_SIZE);
    let region = loopback::publish(window.bytes()).expect("the window holds the region");
    let cpu0_bell = HostSemaphore::new();
    let cpu1_bell = HostSemaphore::new();
    let control = Arc::new(Cpu0Control::default());
    let inbox: Inbox<HostSemaphore, INBOX_ENTRIES> = Inbox::new(HostSemaphore::new());
    let ledger = SlotLedger::new();
    // SAFETY: CPU0's handles: the only consumer of CPU1→CPU0 and the only
    // producer of CPU0→CPU1 for as long as the simulation runs.
    let (requests, producer) = unsafe { loopback::ring_ends(&region, Direction::Cpu1ToCpu0) };
    let replies = cpu0::Replies::new(producer, Cpu0Doorbell::new(&cpu1_bell, &control));
    let (value, intake, mut report) = thread::scope(|s| {
        let stop = StopOnDrop(|| control.stop(&cpu0_bell));
        let isr = thread::Builder::new()
            .name("cpu0-isr".into())
            .spawn_scoped(s, || {
                cpu0::isr(
                    requests, &region, &ledger, &inbox, &replies, &cpu0_bell, &control,
                )
            })
            .expect("spawn CPU0 intake (ISR) thread");
        let serve = thread::Builder::new()
            .name("cpu0-serve".into())
            .spawn_scoped(s, || {
                cpu0::serve(region, &inbox, &replies, &ledger, &control, &config)
            })
            .expect("spawn CPU0 serving thread");
        control.wait_ready();
        let sim = Sim {
            region,
            cpu0_bell: &cpu0_bell,
            cpu1_bell: &cpu1_bell,
            control: &control,
            config: &config,
            ledger: &ledger,
            cpu1_alive: AtomicBool::new(false),
            cpu1_lived: AtomicBool::new(false),
        };
        let value = body(&sim);
        drop(stop);
        let intake = isr.join().expect("CPU0 intake (ISR) thread");
        let report = serve.join().expect("CPU0 serving thread");
        (value, intake, report)
    });
    report.intake = intake;
    report.answered = replies.into_log();
    report.doorbells = control.doorbells();
    report.doorbell_events = control.doorbell_events();
    (value, report)
}
