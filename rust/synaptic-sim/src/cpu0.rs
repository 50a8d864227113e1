//! The simulated CPU0: a dispatch thread that moves CPU1's messages from the
//! ring into an inbox, and a serving thread that owns the runtime (registry,
//! stub NPU, pipelines, scheduler) and the serving layer.
//!
//! The serving thread's loop is the runtime thread of the real CPU0: take
//! every waiting request, run one scheduler step (a local job's stage or a
//! remote inference), answer a finished inference, and sleep on the inbox
//! only when there is nothing to do. Requests are therefore noticed at every
//! stage boundary, which is what bounds a remote `RealTime` request's wait
//! to one stage of a preemptible local job.
//!
//! Invariants: the runtime lives on the serving thread only (its fake clock
//! is not `Sync`); injection goes through [`Cpu0Control`]'s atomics, checked
//! before every request, after every step, and inside every local stage.

use std::cell::RefCell;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

use synaptic_abi::{MessageType, Priority, ValidMessage};
use synaptic_ipc::host::{HostSemaphore, SemaphoreDoorbell};
use synaptic_ipc::{DispatchStats, Dispatcher, Inbox, Semaphore, Sender, Timeout};
use synaptic_ring::{Consumer, Producer};
use synaptic_runtime::arena::{TensorMeta, TensorRef};
use synaptic_runtime::npu::{NpuDevice, StubNpu};
use synaptic_runtime::pipeline::{PipelineId, PipelinePool, Stage};
use synaptic_runtime::process::stages::StageConfig;
use synaptic_runtime::process::ProcessError;
use synaptic_runtime::registry::{ModelHandle, Registry};
use synaptic_runtime::sched::{JobId, JobRequest, Scheduler, StepOutcome};
use synaptic_runtime::time::{Clock, Delay, FakeClock};
use synaptic_serve::host::MonotonicClock;
use synaptic_serve::{Disposition, Runtime, ServeStats, Server, SharedRegion};

use crate::models::{FACE, KWS, SEED};
use crate::RING;

/// Entries of CPU0's inbox between its dispatch and serving threads.
pub const INBOX_ENTRIES: usize = 16;

/// Fake time a local pre/postprocessing stage takes, microseconds.
pub const STAGE_US: u64 = 250;

/// Stage limit of the simulated pipelines.
const MAX_STAGES: usize = 64;

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
}

impl Default for Cpu0Config {
    fn default() -> Self {
        Cpu0Config {
            npu_latency_us: 0,
            fail_every: None,
            fail_on_marker: false,
            fake_time: false,
            local_job: None,
            trace: true,
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
    /// The serving layer's counters.
    pub stats: ServeStats,
    /// CPU0's dispatcher counters.
    pub dispatch: DispatchStats,
    /// Every request taken from the inbox, in order: id and type.
    pub received: Vec<(u32, MessageType)>,
    /// Every reply pushed, in order: id, type, status.
    pub answered: Vec<(u32, MessageType, i32)>,
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
    dispatched: AtomicU32,
    stats: Mutex<ServeStats>,
    events: Mutex<Vec<Event>>,
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
            dispatched: AtomicU32::new(0),
            stats: Mutex::new(ServeStats::default()),
            events: Mutex::new(Vec::new()),
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
    /// Stall CPU0: both threads stop at their next check (the serving thread
    /// finishes the step it is in) until [`resume`](Self::resume).
    pub fn stall(&self) {
        self.stalled.store(true, Ordering::SeqCst);
    }

    /// Let a stalled (or held) CPU0 run again.
    pub fn resume(&self) {
        self.stalled.store(false, Ordering::SeqCst);
        self.held.store(false, Ordering::SeqCst);
    }

    /// Hold the serving thread inside the local job's stage that runs when
    /// `local_steps` steps have completed, as if that stage were still
    /// computing; the dispatch thread keeps running (on the target it is
    /// the doorbell ISR and a higher-priority thread), so a request sent
    /// meanwhile arrives mid-stage. [`resume`](Self::resume) ends the stage.
    pub fn hold_in_local_step(&self, local_steps: u32) {
        self.hold_in_local_step.store(local_steps, Ordering::SeqCst);
    }

    /// Hold the serving thread inside the next NPU invoke (remote or
    /// local), as if the inference were still computing, until
    /// [`resume`](Self::resume); the dispatch thread keeps running.
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

    /// Messages CPU0's dispatcher has put in the inbox so far.
    pub fn dispatched(&self) -> u32 {
        self.dispatched.load(Ordering::SeqCst)
    }

    /// The serving layer's counters as of its last turn with work.
    pub fn serve_stats(&self) -> ServeStats {
        *lock(&self.stats)
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

/// CPU0's dispatch thread: the single consumer of the ring CPU1→CPU0.
pub(crate) fn dispatch(
    requests: Consumer<'_, RING>,
    inbox: &Inbox<HostSemaphore, INBOX_ENTRIES>,
    doorbell: &HostSemaphore,
    control: &Cpu0Control,
) -> DispatchStats {
    let mut dispatcher = Dispatcher::new(requests, inbox);
    while !control.stopped() {
        control.park_while_stalled(false);
        dispatcher.wait_and_dispatch(doorbell, Timeout::Millis(2));
        control
            .dispatched
            .store(dispatcher.stats().queued, Ordering::SeqCst);
    }
    dispatcher.stats()
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

/// What a reply to a request of `msg_type` is called.
fn reply_type(msg_type: MessageType) -> MessageType {
    match msg_type {
        MessageType::InferReq => MessageType::InferResp,
        MessageType::StatusReq => MessageType::StatusResp,
        other => other,
    }
}

/// CPU0's serving thread: the runtime, the serving layer, the local job.
pub(crate) fn serve(
    region: SharedRegion<'_, RING>,
    inbox: &Inbox<HostSemaphore, INBOX_ENTRIES>,
    replies: Producer<'_, RING>,
    cpu1_doorbell: &HostSemaphore,
    control: &Arc<Cpu0Control>,
    config: &Cpu0Config,
) -> Cpu0Report {
    STAGE_CONTROL.with(|c| *c.borrow_mut() = Some(Arc::clone(control)));
    let clock = if config.fake_time {
        SimClock::Fake(FakeClock::new(0))
    } else {
        SimClock::Wall(MonotonicClock::new())
    };
    let mut registry: Registry<4> = Registry::new();
    let face = registry.register(&FACE.desc()).expect("register face");
    let kws = registry.register(&KWS.desc()).expect("register kws");
    let mut npu: StubNpu<&SimClock> = StubNpu::new(&clock, SEED);
    npu.init().expect("NPU init");
    npu.set_latency_us(config.npu_latency_us);
    npu.fail_every(config.fail_every);
    npu.fail_on_marker(config.fail_on_marker);
    let mut pool: PipelinePool<4, MAX_STAGES> = PipelinePool::new();
    let mut server: Server<'_> = Server::new(&region);
    server
        .export(&registry, &mut pool, face)
        .expect("export face");
    server
        .export(&registry, &mut pool, kws)
        .expect("export kws");
    let local = config
        .local_job
        .map(|job| (local_pipeline(&mut pool, kws, &job), job));
    // The local job's input must outlive the scheduler, which borrows it.
    let local_input = vec![1u8; KWS.input_len()];
    let local_meta = KWS.desc().input;
    let mut work = vec![0u8; 16 * 1024];
    let mut scheduler: Scheduler<'_, 4> = Scheduler::new(&mut work);
    let mut core = Core {
        server,
        rt: Runtime {
            scheduler: &mut scheduler,
            registry: &mut registry,
            npu: &mut npu,
            pipelines: &mut pool,
            clock: &clock,
            profiler: None,
        },
        sender: Sender::new(replies, SemaphoreDoorbell::new(cpu1_doorbell)),
        control,
        trace: config.trace,
        report: Cpu0Report::default(),
        local_job: None,
        local_steps: 0,
    };
    control.ready.store(true, Ordering::SeqCst);
    while !control.stopped() {
        control.park_while_stalled(true);
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
        let mut busy = false;
        while let Ok(msg) = inbox.receive(Timeout::NoWait) {
            core.handle(&msg);
            busy = true;
        }
        busy |= core.step();
        control.park_while_stalled(true);
        busy |= core.complete();
        if !busy {
            // Nothing to do: sleep on the inbox (the doorbell wakes it).
            if let Ok(msg) = inbox.receive(Timeout::Millis(2)) {
                core.handle(&msg);
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

/// The serving thread's state.
struct Core<'a, 'e> {
    server: Server<'a>,
    rt: Runtime<'e, 'a, StubNpu<&'e SimClock>, SimClock, 4, 4, MAX_STAGES, 4>,
    sender: Sender<'a, RING, SemaphoreDoorbell<'e>>,
    control: &'e Cpu0Control,
    trace: bool,
    report: Cpu0Report,
    local_job: Option<(JobId, LocalJob)>,
    local_steps: u32,
}

impl Core<'_, '_> {
    fn record(&self, event: Event) {
        if self.trace {
            lock(&self.control.events).push(event);
        }
    }

    fn now(&self) -> u64 {
        self.rt.clock.now_us()
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
        match self
            .server
            .handle_valid(msg, &mut self.rt, &mut self.sender)
        {
            Disposition::Answered { status } => {
                self.report
                    .answered
                    .push((msg.msg_id, reply_type(msg.msg_type), status));
                self.record(Event::Answered {
                    msg_id: msg.msg_id,
                    status,
                    local_steps: self.local_steps,
                    at_us: self.now(),
                });
            }
            Disposition::Accepted { .. } => self.record(Event::Accepted {
                msg_id: msg.msg_id,
                local_steps: self.local_steps,
                at_us: self.now(),
            }),
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
        let remote = self.server.in_flight_job() == Some(job);
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

    /// Answer a finished inference; returns whether one was answered.
    fn complete(&mut self) -> bool {
        let Some(done) = self.server.complete(&mut self.rt, &mut self.sender) else {
            return false;
        };
        self.report
            .answered
            .push((done.msg_id, MessageType::InferResp, done.status));
        self.record(Event::Answered {
            msg_id: done.msg_id,
            status: done.status,
            local_steps: self.local_steps,
            at_us: self.now(),
        });
        true
    }
}
