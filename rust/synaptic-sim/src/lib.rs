//! Two-core host simulator: CPU0 and CPU1 as threads over one shared buffer
//! laid out exactly per ABI v1, with reset, stall and delay injection.
//!
//! The shared buffer is 96 KiB (the platforms' window), 64-byte aligned:
//! control block, ring CPU0→CPU1, ring CPU1→CPU0, then the payload pool
//! whose start is the exchange slot ([`window`]). Everything above it is the
//! real code: `synaptic-ring` rings, `synaptic-ipc` senders, dispatchers and
//! inboxes with the host semaphore doorbells, `synaptic-runtime`'s registry,
//! stub NPU and scheduler, and `synaptic-serve`'s server and client.
//!
//! * [`run`] publishes the region, starts CPU0 (a dispatch thread feeding an
//!   inbox, and a serving thread that owns the runtime and drives the
//!   scheduler between requests), runs the test body, stops CPU0 and returns
//!   its [`Cpu0Report`].
//! * [`Sim::cpu1`] runs one *life* of CPU1: it attaches to the live ring
//!   indices, starts a dispatch thread, runs the body with the client, then
//!   drops every CPU1 object. Calling it again is a CPU1 reset: only the
//!   shared buffer survives.
//! * Injection, through [`Cpu0Control`]: stall CPU0 (both threads park at
//!   their next check), hold its serving thread in the middle of a chosen
//!   stage of a local job (requests still arrive), delay every scheduler
//!   step by a wall-clock amount, start a local job.
//!
//! Invariants: one producer and one consumer per ring at any time (CPU1's
//! handles live only inside [`Sim::cpu1`], and lives do not overlap); a
//! panicking body stops every thread it started (drop guards), so a failed
//! test fails instead of hanging.

pub mod cpu0;
pub mod cpu1;
pub mod models;
pub mod window;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread;

use synaptic_abi::{Direction, RING_ENTRIES_DEFAULT};
use synaptic_ipc::host::HostSemaphore;
use synaptic_ipc::Inbox;
use synaptic_ring::{Consumer, Producer};
use synaptic_serve::SharedRegion;

pub use cpu0::{
    Cpu0Config, Cpu0Control, Cpu0Report, Event, LocalJob, SimClock, INBOX_ENTRIES, STAGE_US,
};
pub use cpu1::{Checked, Cpu1, Cpu1Report, SimClient};
pub use models::{expected_output, fill_input, SimModel, FACE, KWS, SEED};
pub use window::{SharedWindow, SHARED_SIZE};

/// Ring entries of the simulated region (the Kconfig default).
pub const RING: usize = RING_ENTRIES_DEFAULT;

/// What a test body sees: the region, CPU0's controls, and CPU1 lives.
pub struct Sim<'s> {
    region: SharedRegion<'s, RING>,
    cpu0_bell: &'s HostSemaphore,
    cpu1_bell: &'s HostSemaphore,
    control: &'s Arc<Cpu0Control>,
    config: &'s Cpu0Config,
    /// A CPU1 life is running (lives must not overlap: each holds ring handles).
    cpu1_alive: AtomicBool,
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
    let mut window = SharedWindow::new();
    let region = window.publish();
    let cpu0_bell = HostSemaphore::new();
    let cpu1_bell = HostSemaphore::new();
    let control = Arc::new(Cpu0Control::default());
    let inbox: Inbox<HostSemaphore, INBOX_ENTRIES> = Inbox::new(HostSemaphore::new());
    // SAFETY: CPU0's handles: the only consumer of CPU1→CPU0 and the only
    // producer of CPU0→CPU1 for as long as the simulation runs.
    let (requests, replies) = unsafe {
        (
            Consumer::attach(region.ring(Direction::Cpu1ToCpu0)),
            Producer::attach(region.ring(Direction::Cpu0ToCpu1)),
        )
    };
    thread::scope(|s| {
        let stop = StopOnDrop(|| control.stop(&cpu0_bell));
        let dispatch = thread::Builder::new()
            .name("cpu0-dispatch".into())
            .spawn_scoped(s, || cpu0::dispatch(requests, &inbox, &cpu0_bell, &control))
            .expect("spawn CPU0 dispatch thread");
        let serve = thread::Builder::new()
            .name("cpu0-serve".into())
            .spawn_scoped(s, || {
                cpu0::serve(region, &inbox, replies, &cpu1_bell, &control, &config)
            })
            .expect("spawn CPU0 serving thread");
        control.wait_ready();
        let sim = Sim {
            region,
            cpu0_bell: &cpu0_bell,
            cpu1_bell: &cpu1_bell,
            control: &control,
            config: &config,
            cpu1_alive: AtomicBool::new(false),
        };
        let value = body(&sim);
        drop(stop);
        let dispatch = dispatch.join().expect("CPU0 dispatch thread");
        let mut report = serve.join().expect("CPU0 serving thread");
        report.dispatch = dispatch;
        (value, report)
    })
}
