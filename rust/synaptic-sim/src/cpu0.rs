//! The simulated CPU0: an "ISR" thread, the single consumer of the ring
//! CPU1→CPU0, running [`Intake::drain`] on each doorbell (and on a 2 ms
//! timeout, as a lost doorbell's fallback), and a serving thread that owns
//! the runtime (registry, stub NPU, pipelines, scheduler) and the serving
//! layer.
//!
//! The intake answers `STATUS_REQ` itself with the slot ledger's mask, so a
//! status round trip never waits for the serving thread; slot requests are
//! marked held and posted to the serving thread's inbox. The serving
//! thread's loop is one turn of [`Server::poll`] spelled out (take every
//! waiting request, run one scheduler step, take what arrived meanwhile,
//! answer finished inferences, sleep on the inbox only when there was
//! nothing to do), so that the trace sees every request, step and answer,
//! and injection can act between them. Requests are therefore noticed at
//! every stage boundary, which is what bounds a remote `RealTime` request's
//! wait to one stage of a preemptible local job; up to one request per
//! exchange slot is in the scheduler at once.
//!
//! Invariants: the runtime lives on the serving thread only (its fake clock
//! is not `Sync`); CPU0's one sender is shared by both threads behind a
//! mutex ([`SharedSender`]), and every reply is logged under one more lock
//! taken around the push, so [`Cpu0Report::answered`] is in ring order;
//! injection goes through [`Cpu0Control`]'s atomics, checked before every
//! drain, before every request, after every step, and inside every local
//! stage and NPU invoke.

use std::cell::RefCell;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use synaptic_abi::{MessageType, Priority, ValidMessage};
use synaptic_ipc::host::HostSemaphore;
use synaptic_ipc::{Doorbell, Inbox, IpcError, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::arena::{TensorMeta, TensorRef};
use synaptic_runtime::pipeline::{PipelineId, PipelinePool, Stage};
use synaptic_runtime::process::stages::StageConfig;
use synaptic_runtime::process::ProcessError;
use synaptic_runtime::registry::{ModelDesc, ModelHandle};
use synaptic_runtime::sched::{JobId, JobRequest, Scheduler, StepOutcome};
use synaptic_runtime::time::{Clock, Delay, FakeClock};
use synaptic_serve::host::MonotonicClock;
use synaptic_serve::loopback::{Service, ServiceRuntime, JOBS};
use synaptic_serve::update::StoreUpdates;
use synaptic_serve::{
    Disposition, Intake, ReplyPort, ServeError, ServeStats, Server, SharedRegion, SharedSender,
    SlotLedger,
};
use synaptic_store::ota::Ota;
use synaptic_store::{Layout, MemFlash, Store};

use crate::models::{KWS, SEED};
use crate::RING;

/// Entries of CPU0's inbox between its intake and serving threads (at
/// least one per exchange slot: the intake never posts more).
pub const INBOX_ENTRIES: usize = 16;

/// Fake time a local pre/postprocessing stage takes, microseconds.
pub const STAGE_US: u64 = 250;

/// How long the harness waits for CPU0 to come up before giving up.
const START_LIMIT: Duration = Duration::from_secs(20);

/// A local CPU0 job competing with remote requests: preprocessing stages,
/// the KWS model, postprocessing stages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LocalJob {
    /// Stages before the model.
    pub pre_stages: usize,
    /// Stages after the model.
    pub post_stages: usize,
    /// Whether higher-priority work may run between its steps.
    pub preemptible: bool,
    /// Its class.
    pub priority: Priority,
}

impl LocalJob {
    /// Steps of the job (stages plus the model).
    pub fn steps(&self) -> usize {
        self.pre_stages + 1 + self.post_stages
    }
}

/// How the simulated CPU0 is built.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cpu0Config {
    /// Device time of each NPU invoke, microseconds (fake or wall time).
    pub npu_latency_us: u64,
    /// Make every `n`th invoke fail (the stub's `fail_every`).
    pub fail_every: Option<NonZeroU32>,
    /// Make invokes whose input starts with 0x7F fail.
    pub fail_on_marker: bool,
    /// Run the runtime on a fake clock (time moves only in the NPU and in
    /// local stages) instead of the wall clock.
    pub fake_time: bool,
    /// The local job [`Cpu0Control::start_local_job`] submits.
    pub local_job: Option<LocalJob>,
    /// Record every request, step and answer in [`Cpu0Report::events`].
    pub trace: bool,
    /// Give the serving layer a model store (host flash: [`STORE_FLASH`]
    /// bytes, [`STORE_MODELS`] models of up to [`STORE_SLOT`] container
    /// bytes), so CPU1 can stream `MODEL_UPDATE`s.
    pub store: bool,
}

/// Bytes of the simulated CPU0's flash for its model store.
pub const STORE_FLASH: usize = 256 * 1024;
/// Models the simulated store holds.
pub const STORE_MODELS: usize = 2;
/// Largest container a simulated store slot holds.
pub const STORE_SLOT: usize = 48 * 1024;

impl Default for Cpu0Config {
    fn default() -> Self {
        Cpu0Config {
            npu_latency_us: 0,
            fail_every: None,
            fail_on_marker: false,
            fake_time: false,
            local_job: None,
            trace: true,
            store: false,
        }
    }
}

/// Something the serving thread did, with the number of local-job steps
/// run so far and the runtime clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A request was taken from the inbox.
    Received {
        /// Its id.
        msg_id: u32,
        /// Its type.
        msg_type: MessageType,
        /// Local steps run so far.
        local_steps: u32,
        /// Runtime clock.
        at_us: u64,
    },
    /// An inference was submitted to the scheduler.
    Accepted {
        /// Its request id.
        msg_id: u32,
        /// Local steps run so far.
        local_steps: u32,
        /// Runtime clock.
        at_us: u64,
    },
    /// One scheduler step ran.
    Step {
        /// Whether it was the remote inference's.
        remote: bool,
        /// Step index within its job.
        step: u8,
        /// Whether its job finished.
        finished: bool,
        /// Local steps run so far (this one included).
        local_steps: u32,
        /// Runtime clock after the step.
        at_us: u64,
    },
    /// A request was answered.
    Answered {
        /// Its id.
        msg_id: u32,
        /// The reply's status.
        status: i32,
        /// Local steps run so far.
        local_steps: u32,
        /// Runtime clock.
        at_us: u64,
    },
    /// The local job finished.
    LocalDone {
        /// Whether it produced an output.
        ok: bool,
        /// Local steps run.
        local_steps: u32,
        /// Runtime clock.
        at_us: u64,
    },
}

/// What CPU0 did during a simulation.
#[derive(Clone, Debug, Default)]
pub struct Cpu0Report {
    /// The serving layer's counters (slot requests the intake forwarded).
    pub stats: ServeStats,
    /// The intake's counters: every message popped, statuses answered,
    /// requests refused at the front door, requests forwarded.
    pub intake: ServeStats,
    /// Every slot request the serving thread took from the inbox, in
    /// order: id and type.
    pub received: Vec<(u32, MessageType)>,
    /// Every reply pushed (by the intake or the serving thread), in ring
    /// order: id, type, status.
    pub answered: Vec<(u32, MessageType, i32)>,
    /// Most exchange slots held by inferences at once.
    pub max_in_flight: u32,
    /// Doorbell interrupts rung to CPU1 (replies to requests that sleep).
    pub doorbells: u32,
    /// Events signalled to CPU1 instead (replies to requests that poll).
    pub doorbell_events: u32,
    /// The trace (when [`Cpu0Config::trace`] is on).
    pub events: Vec<Event>,
}

const NO_STEP: u32 = u32::MAX;

/// Injection into and observation of the simulated CPU0, shared by its two
/// threads and the test.
#[derive(Debug)]
pub struct Cpu0Control {
    ready: AtomicBool,
    stop: AtomicBool,
    stalled: AtomicBool,
    held: AtomicBool,
    parked: AtomicU32,
    hold_in_local_step: AtomicU32,
    hold_next_invoke: AtomicBool,
    step_delay_us: AtomicU64,
    start_local: AtomicBool,
    local_steps: AtomicU32,
    forwarded: AtomicU32,
    /// The most messages one wake of the intake handled.
    largest_batch: AtomicU32,
    serving_stalled: AtomicBool,
    doorbells: AtomicU32,
    doorbell_events: AtomicU32,
    replies: AtomicU32,
    stats: Mutex<ServeStats>,
    intake: Mutex<ServeStats>,
    events: Mutex<Vec<Event>>,
    /// A KWS version the serving thread is to swap in (0: none asked).
    swap_to: AtomicU32,
    /// KWS's versions so far, with their registry handles.
    versions: Mutex<Vec<(u32, ModelHandle)>>,
    /// Swaps the serving layer refused for a reason other than the last
    /// one still retiring.
    swap_failures: AtomicU32,
}

impl Default for Cpu0Control {
    fn default() -> Self {
        Cpu0Control {
            ready: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            stalled: AtomicBool::new(false),
            held: AtomicBool::new(false),
            parked: AtomicU32::new(0),
            hold_in_local_step: AtomicU32::new(NO_STEP),
            hold_next_invoke: AtomicBool::new(false),
            step_delay_us: AtomicU64::new(0),
            start_local: AtomicBool::new(false),
            local_steps: AtomicU32::new(0),
            forwarded: AtomicU32::new(0),
            largest_batch: AtomicU32::new(0),
            serving_stalled: AtomicBool::new(false),
            doorbells: AtomicU32::new(0),
            doorbell_events: AtomicU32::new(0),
            replies: AtomicU32::new(0),
            stats: Mutex::new(ServeStats::default()),
            intake: Mutex::new(ServeStats::default()),
            events: Mutex::new(Vec::new()),
            swap_to: AtomicU32::new(0),
            versions: Mutex::new(Vec::new()),
            swap_failures: AtomicU32::new(0),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Sleep a little, waiting for another thread (never a measurement).
fn nap() {
    thread::sleep(Duration::from_micros(100));
}

impl Cpu0Control {
    /// Ask the serving thread to hot-swap KWS to `version` (same name and
    /// shapes; the stub NPU's outputs differ by handle) at its next turn,
    /// retrying while the previous swap's old version still runs
    /// ([`Server::replace`]).
    pub fn swap_kws(&self, version: u32) {
        self.swap_to.store(version, Ordering::SeqCst);
    }

    /// Whether the last [`swap_kws`](Self::swap_kws) is done.
    pub fn swap_done(&self) -> bool {
        self.swap_to.load(Ordering::SeqCst) == 0
    }

    /// KWS's versions so far, oldest first, with their registry handles.
    pub fn kws_versions(&self) -> Vec<(u32, ModelHandle)> {
        lock(&self.versions).clone()
    }

    /// Swaps refused for another reason than a retiring version.
    pub fn swap_failures(&self) -> u32 {
        self.swap_failures.load(Ordering::SeqCst)
    }

    /// Stall CPU0: both threads stop at their next check (the intake takes
    /// no more doorbells, the serving thread finishes the step it is in)
    /// until [`resume`](Self::resume).
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    /// Stall only the serving thread (at its next check, as
    /// [`stall`](Self::stall)); the intake keeps draining the ring,
    /// answering statuses and forwarding slot requests, as the doorbell ISR
    /// of a CPU0 whose runtime thread is busy does.
    pub fn stall_serving(&self) {
        self.serving_stalled.store(true, Ordering::SeqCst);
    }

    /// Let a stalled (or held) CPU0 run again.
    pub fn resume(&self) {
        self.stalled.store(false, Ordering::SeqCst);
        self.serving_stalled.store(false, Ordering::SeqCst);
        self.held.store(false, Ordering::SeqCst);
    }

    /// Hold the serving thread inside the local job's stage that runs when
    /// `local_steps` steps have completed, as if that stage were still
    /// computing; the intake keeps running (on the target it is the
    /// doorbell ISR), so a request sent meanwhile arrives mid-stage.
    /// [`resume`](Self::resume) ends the stage.
    pub fn hold_in_local_step(&self, local_steps: u32) {
        self.hold_in_local_step.store(local_steps, Ordering::SeqCst);
    }

    /// Hold the serving thread inside the next NPU invoke (remote or
    /// local), as if the inference were still computing, until
    /// [`resume`](Self::resume); the intake keeps running.
    pub fn hold_next_invoke(&self) {
        self.hold_next_invoke.store(true, Ordering::SeqCst);
    }

    /// Whether the serving thread is parked by a stall or a hold.
    pub fn serving_parked(&self) -> bool {
        self.parked.load(Ordering::SeqCst) > 0
    }

    /// Wait until the serving thread is parked by a stall or a hold.
    ///
    /// # Panics
    ///
    /// When it does not park within 20 s (the simulation is broken).
    pub fn wait_parked(&self) {
        let start = Instant::now();
        while !self.serving_parked() {
            assert!(start.elapsed() < START_LIMIT, "CPU0 never parked");
            nap();
        }
    }

    /// Sleep this long (wall clock) after every scheduler step: a slow CPU0.
    pub fn set_step_delay(&self, delay: Duration) {
        let us = u64::try_from(delay.as_micros()).unwrap_or(u64::MAX);
        self.step_delay_us.store(us, Ordering::SeqCst);
    }

    /// Submit the configured local job at the serving thread's next turn.
    pub fn start_local_job(&self) {
        self.start_local.store(true, Ordering::SeqCst);
    }

    /// Steps of local jobs run so far.
    pub fn local_steps(&self) -> u32 {
        self.local_steps.load(Ordering::SeqCst)
    }

    /// Slot requests CPU0's intake has posted to the serving thread so far.
    pub fn forwarded(&self) -> u32 {
        self.forwarded.load(Ordering::SeqCst)
    }

    /// The most messages one wake of the intake (one doorbell) handled.
    pub fn largest_batch(&self) -> u32 {
        self.largest_batch.load(Ordering::SeqCst)
    }

    /// Replies CPU0 has pushed so far (intake and serving thread).
    pub fn replies(&self) -> u32 {
        self.replies.load(Ordering::SeqCst)
    }

    /// Doorbell interrupts CPU0 has rung to CPU1 so far.
    pub fn doorbells(&self) -> u32 {
        self.doorbells.load(Ordering::SeqCst)
    }

    /// Wake-up events (no interrupt) CPU0 has signalled to CPU1 so far.
    pub fn doorbell_events(&self) -> u32 {
        self.doorbell_events.load(Ordering::SeqCst)
    }

    /// The serving layer's counters as of its last turn with work.
    pub fn serve_stats(&self) -> ServeStats {
        *lock(&self.stats)
    }

    /// The intake's counters as of its last drain.
    pub fn intake_stats(&self) -> ServeStats {
        *lock(&self.intake)
    }

    /// The trace so far.
    pub fn events(&self) -> Vec<Event> {
        lock(&self.events).clone()
    }

    pub(crate) fn stop(&self, wake: &HostSemaphore) {
        self.stop.store(true, Ordering::SeqCst);
        self.resume();
        wake.give();
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    pub(crate) fn wait_ready(&self) {
        let start = Instant::now();
        while !self.ready.load(Ordering::SeqCst) {
            assert!(start.elapsed() < START_LIMIT, "CPU0 did not start");
            nap();
        }
    }

    fn park_while_stalled(&self, serving: bool) {
        self.park_while(&self.stalled, serving);
        if serving {
            self.park_while(&self.serving_stalled, true);
        }
    }

    fn park_while(&self, flag: &AtomicBool, serving: bool) {
        if !flag.load(Ordering::SeqCst) {
            return;
        }
        if serving {
            self.parked.fetch_add(1, Ordering::SeqCst);
        }
        while flag.load(Ordering::SeqCst) && !self.stopped() {
            nap();
        }
        if serving {
            self.parked.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Called by every NPU invoke, on the serving thread.
    fn in_invoke(&self) {
        if self.hold_next_invoke.swap(false, Ordering::SeqCst) {
            self.held.store(true, Ordering::SeqCst);
        }
        self.park_while(&self.held, true);
    }

    /// Called by every local stage, on the serving thread.
    fn in_local_stage(&self) {
        let at = self.hold_in_local_step.load(Ordering::SeqCst);
        if at != NO_STEP && self.local_steps() == at {
            self.hold_in_local_step.store(NO_STEP, Ordering::SeqCst);
            self.held.store(true, Ordering::SeqCst);
        }
        self.park_while(&self.held, true);
        self.park_while_stalled(true);
    }
}

thread_local! {
    /// The control of the CPU0 whose serving thread this is (for the hooks
    /// in local stages and NPU invokes).
    static STAGE_CONTROL: RefCell<Option<Arc<Cpu0Control>>> = const { RefCell::new(None) };
}

/// A local pre/postprocessing stage: copies its input, and lets the
/// simulation stall CPU0 in the middle of it.
fn local_stage(
    input: &TensorRef<'_>,
    out: &mut [u8],
    _: &StageConfig,
) -> Result<TensorMeta, ProcessError> {
    STAGE_CONTROL.with(|c| {
        if let Some(control) = c.borrow().as_ref() {
            control.in_local_stage();
        }
    });
    let n = input.data().len();
    let actual = out.len();
    let out = out
        .get_mut(..n)
        .ok_or(ProcessError::OutputTooSmall { needed: n, actual })?;
    out.copy_from_slice(input.data());
    Ok(input.meta())
}

/// The runtime clock: fake (moves only when told) or the wall clock.
#[derive(Debug)]
pub enum SimClock {
    /// Fake time.
    Fake(FakeClock),
    /// Wall time.
    Wall(MonotonicClock),
}

impl Clock for SimClock {
    fn now_us(&self) -> u64 {
        match self {
            SimClock::Fake(c) => c.now_us(),
            SimClock::Wall(c) => c.now_us(),
        }
    }
}

impl Delay for SimClock {
    /// The stub NPU's invoke time: where a hold of the next invoke parks.
    fn delay_us(&self, us: u64) {
        STAGE_CONTROL.with(|c| {
            if let Some(control) = c.borrow().as_ref() {
                control.in_invoke();
            }
        });
        match self {
            SimClock::Fake(c) => c.delay_us(us),
            SimClock::Wall(c) => c.delay_us(us),
        }
    }
}

impl SimClock {
    /// Let `us` of compute time pass (fake time only; wall time passes by itself).
    fn spend(&self, us: u64) {
        if let SimClock::Fake(c) = self {
            c.advance(us);
        }
    }
}

/// CPU0's doorbell to CPU1: gives CPU1's doorbell semaphore (what the
/// interrupt does there), or only signals an event for a poller; counts
/// both in the control.
#[derive(Debug)]
pub struct Cpu0Doorbell<'a> {
    peer: &'a HostSemaphore,
    control: &'a Cpu0Control,
}

impl<'a> Cpu0Doorbell<'a> {
    pub(crate) fn new(peer: &'a HostSemaphore, control: &'a Cpu0Control) -> Self {
        Cpu0Doorbell { peer, control }
    }
}

impl Doorbell for Cpu0Doorbell<'_> {
    fn ring(&self) {
        self.control.doorbells.fetch_add(1, Ordering::SeqCst);
        self.peer.give();
    }

    fn event(&self) {
        // An `sev`: nothing to give, CPU1's poller is looking anyway.
        self.control.doorbell_events.fetch_add(1, Ordering::SeqCst);
    }
}

/// CPU0's one sender, shared by the intake and the serving thread.
pub(crate) type Cpu0Sender<'a> =
    SharedSender<'a, RING, Cpu0Doorbell<'a>, Mutex<Sender<'a, RING, Cpu0Doorbell<'a>>>>;

/// CPU0's reply port: the shared sender, with every pushed reply logged in
/// ring order (the log's lock is held around the push).
pub(crate) struct Replies<'a> {
    sender: Cpu0Sender<'a>,
    log: Mutex<Vec<(u32, MessageType, i32)>>,
    control: &'a Cpu0Control,
}

impl<'a> Replies<'a> {
    pub(crate) fn new(producer: Producer<'a, RING>, doorbell: Cpu0Doorbell<'a>) -> Self {
        let control = doorbell.control;
        Replies {
            sender: SharedSender::new(Sender::new(producer, doorbell)),
            log: Mutex::new(Vec::new()),
            control,
        }
    }

    pub(crate) fn into_log(self) -> Vec<(u32, MessageType, i32)> {
        self.log
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl ReplyPort for Replies<'_> {
    fn reply(&self, reply: ValidMessage, polled: bool) -> Result<(), IpcError> {
        let mut log = lock(&self.log);
        let pushed = self.sender.reply(reply, polled);
        if pushed.is_ok() {
            log.push((reply.msg_id, reply.msg_type, reply.status));
            self.control.replies.fetch_add(1, Ordering::SeqCst);
        }
        pushed
    }

    fn restore_head(&self) -> bool {
        self.sender.restore_head()
    }
}

/// CPU0's doorbell ISR, as a thread: on each doorbell (or every 2 ms, a
/// lost doorbell's fallback) drain the ring CPU1→CPU0 through the intake,
/// one ring's worth per wake as the firmware's ISR: a CPU1 that pushes
/// faster than CPU0 answers cannot hold it in the drain.
pub(crate) fn isr(
    requests: Consumer<'_, RING>,
    region: &SharedRegion<'_, RING>,
    ledger: &SlotLedger,
    inbox: &Inbox<HostSemaphore, INBOX_ENTRIES>,
    replies: &Replies<'_>,
    doorbell: &HostSemaphore,
    control: &Cpu0Control,
) -> ServeStats {
    let mut intake = Intake::new(region, requests);
    while !control.stopped() {
        control.park_while_stalled(false);
        let _ = doorbell.take(Timeout::Millis(2));
        // A stalled CPU0 takes no interrupt: the ring keeps its messages.
        control.park_while_stalled(false);
        let batch = intake.drain(ledger, inbox, replies) as u32;
        control.largest_batch.fetch_max(batch, Ordering::SeqCst);
        // CPU0's maintenance of the shared words it owns, every wake (the
        // firmware does it on its idle timer).
        intake.maintain();
        replies.sender.repair();
        let stats = front_stats(&intake, replies);
        control.forwarded.store(stats.forwarded, Ordering::SeqCst);
        *lock(&control.intake) = stats;
    }
    front_stats(&intake, replies)
}

/// The intake's counters, the reply ring's head repairs included.
fn front_stats(intake: &Intake<'_, RING>, replies: &Replies<'_>) -> ServeStats {
    let stats = intake.stats();
    ServeStats {
        repairs: stats.repairs.wrapping_add(replies.sender.repair_count()),
        ..stats
    }
}

fn local_pipeline<const P: usize, const S: usize>(
    pool: &mut PipelinePool<P, S>,
    model: ModelHandle,
    job: &LocalJob,
) -> PipelineId {
    let stage = Stage {
        name: "local",
        func: local_stage,
        config: StageConfig::None,
    };
    let id = pool.create("local").expect("local pipeline");
    for _ in 0..job.pre_stages {
        pool.add_preprocess(id, stage).expect("pre stage");
    }
    pool.add_model(id, model).expect("model");
    for _ in 0..job.post_stages {
        pool.add_postprocess(id, stage).expect("post stage");
    }
    pool.build(id).expect("build");
    id
}

/// CPU0's serving thread: the runtime, the serving layer, the local job.
pub(crate) fn serve(
    region: SharedRegion<'_, RING>,
    inbox: &Inbox<HostSemaphore, INBOX_ENTRIES>,
    replies: &Replies<'_>,
    ledger: &SlotLedger,
    control: &Arc<Cpu0Control>,
    config: &Cpu0Config,
) -> Cpu0Report {
    STAGE_CONTROL.with(|c| *c.borrow_mut() = Some(Arc::clone(control)));
    let clock = if config.fake_time {
        SimClock::Fake(FakeClock::new(0))
    } else {
        SimClock::Wall(MonotonicClock::new())
    };
    let mut server: Server<'_, RING> = Server::new(&region);
    let mut service = Service::new(&mut server, &clock, SEED).expect("CPU0's models");
    service.npu.set_latency_us(config.npu_latency_us);
    service.npu.fail_every(config.fail_every);
    service.npu.fail_on_marker(config.fail_on_marker);
    let local = config.local_job.map(|job| {
        (
            local_pipeline(&mut service.pipelines, service.kws, &job),
            job,
        )
    });
    // The local job's input must outlive the scheduler, which borrows it.
    let local_input = vec![1u8; KWS.input_len()];
    let local_meta = KWS.desc().input;
    let mut work = vec![0u8; 24 * 1024];
    let mut scheduler: Scheduler<'_, JOBS> = Scheduler::new(&mut work);
    lock(&control.versions).push((KWS.desc().version, service.kws));
    let mut core = Core {
        kws: service.kws,
        server,
        rt: service.runtime(&mut scheduler, &clock),
        replies,
        ledger,
        control,
        trace: config.trace,
        report: Cpu0Report::default(),
        local_job: None,
        local_steps: 0,
    };
    if config.store {
        core.rt.updates = Some(model_store());
    }
    control.ready.store(true, Ordering::SeqCst);
    while !control.stopped() {
        control.park_while_stalled(true);
        core.swap_if_asked();
        if let Some((pipeline, job)) = local {
            if control.start_local.swap(false, Ordering::SeqCst) {
                let input = TensorRef::wrap(local_meta, &local_input).expect("local input");
                let request = JobRequest {
                    priority: job.priority,
                    preemptible: job.preemptible,
                    ..JobRequest::new(pipeline, input)
                };
                let id = core
                    .rt
                    .scheduler
                    .submit(request, &*core.rt.pipelines, core.rt.clock)
                    .expect("submit the local job");
                core.local_job = Some((id, job));
            }
        }
        // One turn of `Server::poll`, step by step.
        let mut busy = core.take_requests(inbox);
        if core.step() {
            busy = true;
            control.park_while_stalled(true);
            // What arrived during the step is queued while its result is fresh.
            core.take_requests(inbox);
        }
        busy |= core.complete();
        if !busy {
            // Nothing to do: sleep on the inbox (the intake's post wakes it),
            // then make the service-time table true again (maintenance).
            if let Ok(msg) = inbox.receive(Timeout::Millis(2)) {
                core.handle(&msg);
                busy = true;
            } else if core.server.repair_estimates() > 0 {
                busy = true;
            }
        }
        if busy {
            *lock(&control.stats) = core.server.stats();
        }
    }
    *lock(&control.stats) = core.server.stats();
    let mut report = core.report;
    report.stats = core.server.stats();
    report.events = lock(&control.events).clone();
    report
}

/// A blank model store over host flash, for the serving thread's life
/// (leaked: the runtime borrows it as long as the thread runs).
fn model_store() -> &'static mut StoreUpdates<'static, MemFlash<'static>, STORE_MODELS> {
    let bytes = Box::leak(vec![0xFF; STORE_FLASH].into_boxed_slice());
    let flash = MemFlash::new(bytes, 4096, 4);
    let layout = Layout::new(&flash, STORE_MODELS, STORE_SLOT).expect("store layout");
    let (store, _) = Store::open(flash, layout).expect("blank store");
    Box::leak(Box::new(StoreUpdates::new(
        Box::leak(Box::new(store)),
        Box::leak(Box::new(Ota::new())),
    )))
}

/// The serving thread's state (`'a`: what the scheduler's jobs borrow,
/// `'p`: the reply port's ring, invariant behind its mutex).
struct Core<'a, 'e, 'p> {
    /// KWS's handle as CPU1 knows it.
    kws: ModelHandle,
    server: Server<'a, RING>,
    rt: ServiceRuntime<'e, 'a, &'e SimClock, SimClock>,
    replies: &'e Replies<'p>,
    ledger: &'e SlotLedger,
    control: &'e Cpu0Control,
    trace: bool,
    report: Cpu0Report,
    local_job: Option<(JobId, LocalJob)>,
    local_steps: u32,
}

impl Core<'_, '_, '_> {
    /// Note the KWS version served if it is new (a `MODEL_UPDATE`'s
    /// activation swaps it inside the serving layer).
    fn note_version(&self) {
        if let Ok(serving) = self.rt.registry.find(KWS.name) {
            let mut versions = lock(&self.control.versions);
            if versions.last().is_some_and(|v| v.1 != serving) {
                let version = self.rt.registry.info(serving).map_or(0, |i| i.version);
                versions.push((version, serving));
            }
        }
    }

    /// Swap KWS to the version the test asked for, if any.
    fn swap_if_asked(&mut self) {
        let version = self.control.swap_to.load(Ordering::SeqCst);
        if version == 0 {
            return;
        }
        let desc = ModelDesc {
            version,
            ..KWS.desc()
        };
        match self.server.replace(self.kws, &desc, &mut self.rt) {
            Ok(handle) => lock(&self.control.versions).push((version, handle)),
            // The previous swap's old version still runs: next turn.
            Err(ServeError::Busy) => return,
            Err(_) => {
                self.control.swap_failures.fetch_add(1, Ordering::SeqCst);
            }
        }
        self.control.swap_to.store(0, Ordering::SeqCst);
    }

    fn record(&self, event: Event) {
        if self.trace {
            lock(&self.control.events).push(event);
        }
    }

    fn now(&self) -> u64 {
        self.rt.clock.now_us()
    }

    /// Handle every request waiting in the inbox; returns whether there was one.
    fn take_requests(&mut self, inbox: &Inbox<HostSemaphore, INBOX_ENTRIES>) -> bool {
        let mut any = false;
        while let Ok(msg) = inbox.receive(Timeout::NoWait) {
            self.handle(&msg);
            any = true;
        }
        any
    }

    fn handle(&mut self, msg: &ValidMessage) {
        self.control.park_while_stalled(true);
        self.report.received.push((msg.msg_id, msg.msg_type));
        self.record(Event::Received {
            msg_id: msg.msg_id,
            msg_type: msg.msg_type,
            local_steps: self.local_steps,
            at_us: self.now(),
        });
        let disposition = self
            .server
            .handle_valid(msg, &mut self.rt, self.replies, self.ledger);
        if msg.msg_type == MessageType::ModelUpdate {
            self.note_version();
        }
        match disposition {
            Disposition::Answered { status } => self.record(Event::Answered {
                msg_id: msg.msg_id,
                status,
                local_steps: self.local_steps,
                at_us: self.now(),
            }),
            Disposition::Accepted { .. } => {
                let in_flight = self.server.busy_mask().count_ones();
                self.report.max_in_flight = self.report.max_in_flight.max(in_flight);
                self.record(Event::Accepted {
                    msg_id: msg.msg_id,
                    local_steps: self.local_steps,
                    at_us: self.now(),
                });
            }
            Disposition::Ignored => {}
        }
    }

    /// One scheduler step; returns whether anything ran.
    fn step(&mut self) -> bool {
        let StepOutcome::Ran {
            job,
            step,
            finished,
        } = self.rt.step()
        else {
            return false;
        };
        let remote = self.server.in_flight_jobs().any(|j| j == job);
        if !remote {
            self.local_steps += 1;
            self.control
                .local_steps
                .store(self.local_steps, Ordering::SeqCst);
            let model_step = self.local_job.map(|(_, j)| j.pre_stages);
            if model_step != Some(usize::from(step)) {
                self.rt.clock.spend(STAGE_US);
            }
        }
        self.record(Event::Step {
            remote,
            step,
            finished,
            local_steps: self.local_steps,
            at_us: self.now(),
        });
        if let Some((id, _)) = self.local_job {
            if id == job && finished {
                let mut out = [0u8; 64];
                let ok = self.rt.scheduler.get_result(id, &mut out).is_ok();
                self.local_job = None;
                self.record(Event::LocalDone {
                    ok,
                    local_steps: self.local_steps,
                    at_us: self.now(),
                });
            }
        }
        let delay = self.control.step_delay_us.load(Ordering::SeqCst);
        if delay > 0 {
            thread::sleep(Duration::from_micros(delay));
        }
        true
    }

    /// Answer finished inferences (one step finishes at most one job, and
    /// this runs after every step); returns whether one was answered.
    fn complete(&mut self) -> bool {
        let Some(done) = self
            .server
            .complete(&mut self.rt, self.replies, self.ledger)
        else {
            return false;
        };
        self.record(Event::Answered {
            msg_id: done.msg_id,
            status: done.status,
            local_steps: self.local_steps,
            at_us: self.now(),
        });
        true
    }
}
