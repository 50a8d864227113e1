//! Priority scheduler: jobs run a pipeline step by step, and the choice of
//! what runs next is made again at every stage boundary.
//!
//! Rules and limits:
//!
//! * `RealTime` first (strict priority); `Normal` and `BestEffort` share
//!   by weighted round robin, 4:1 by default ([`Scheduler::set_weights`],
//!   [`crate::arbiter`], which states the starvation bound); FIFO
//!   (submission order) within a class. With two devices this order holds
//!   per device: a job whose model step waits for its busy device is
//!   passed over, so it holds up neither the other device nor other jobs'
//!   stages.
//! * A job runs one step (a stage or the model) per [`Scheduler::step`].
//!   Between steps the scheduler picks again, so a `RealTime` job arriving
//!   while a *preemptible* job runs starts at the next stage boundary: its
//!   wait is bounded by one stage, not one job. A non-preemptible job keeps
//!   the CPU until it finishes.
//! * At most `max_concurrent` jobs are started and unfinished at once
//!   (default `J`); a preempted job counts, so with 1 nothing is preempted.
//! * At most `J` jobs exist ([`DEFAULT_MAX_JOBS`]), queued, running or
//!   finished-but-unclaimed. Each job slot owns two equal halves of its
//!   share of the caller's work buffer for intermediate tensors (ping-pong);
//!   the input is read in place (zero-copy) and is borrowed for the
//!   scheduler's lifetime.
//! * A job with a completion callback is reclaimed right after the callback;
//!   one without keeps its result until [`Scheduler::get_result`] or
//!   [`Scheduler::release`].
//! * [`JobId`]s carry a generation: an id kept after its job was reclaimed
//!   is rejected with [`SchedError::StaleJob`].
//! * A job whose deadline has passed when it is picked fails with
//!   [`JobError::DeadlineMissed`] instead of running another step.
//! * **Overlap** ([`Scheduler::set_overlap`], off by default): a model
//!   step starts its device with `invoke_async` and the job waits on the
//!   device while other jobs' steps run; the next `step` after the device
//!   finishes collects its output and, in the same call, starts the next
//!   model step, so the device waits only for that hand-over (an NPU that
//!   is done as soon as it starts, a null executor, is collected in the
//!   step that started it). Each device has its own step in flight (one
//!   per [`Device`]), so the NPU and the CPU interpreter run two jobs at
//!   once. While a job's device is busy, a job whose next step was placed
//!   there waits
//!   ([`StepOutcome::Waiting`] when nothing else can run); the caller waits
//!   for the device's completion (an interrupt) or for new work, then steps
//!   again.
//! * **Sliced CPU device**: a CPU device whose capabilities say `sliced`
//!   ([`crate::device::TfliteDevice`]: one interpreter step, an operator
//!   or a few rows of a convolution, per slice) is started
//!   asynchronously too, but it progresses only when polled, on this
//!   thread: every `step` first runs one slice of it, then collects and
//!   feeds the NPU. A slice counts as a step that ran
//!   ([`StepOutcome::Ran`] of that job, unfinished), so the caller keeps
//!   stepping rather than waiting. Two exceptions keep a `RealTime` job off
//!   the slices: while one waits for the NPU or runs on it and the NPU's
//!   step is done or predicted to end within the longest slice seen, the
//!   slice is put off (the outcome is [`StepOutcome::Waiting`] when nothing
//!   else ran: the caller waits for the NPU); and an NPU freed during a
//!   slice is fed before the next slice. The step's time is the **sum of its
//!   slices** (and of its start), not the wall time from start to done:
//!   between slices the thread runs other jobs' stages and hands the NPU
//!   its jobs, which is not interpreter work. That sum is booked as
//!   [`InferenceProfile::interpreter_us`] and learnt as the model's CPU
//!   service time. A cancelled job's sliced step is aborted at the next
//!   step ([`NpuDevice::abort`]). A CPU device that is not sliced runs its
//!   model step to the end inside `step`, as without overlap.
//! * **Devices** ([`crate::device`]): a model step runs on the NPU
//!   (`Env::npu`) or on the CPU interpreter (`Env::cpu`), whichever the
//!   [`Placement`] picks among the devices the model was registered for
//!   and `Env` has (default [`prefer_npu`]: the NPU when allowed, else the
//!   CPU; [`Scheduler::set_policy`] selects another shipped [`Policy`],
//!   [`Scheduler::set_placement`] any function). The step is placed when
//!   it is first picked, with which devices are busy, the model's
//!   predicted service time on each device and each device's remaining
//!   predicted work in the query; a step placed on a busy device keeps
//!   that placement while it waits. Remote (CPU1) requests are jobs of
//!   this scheduler like local ones: one policy places both. No usable
//!   device fails the job with [`JobError::NoDevice`]. Each step's time is
//!   booked to its device in the [`InferenceProfile`], and a successful
//!   model step's time also feeds the model's prediction for that device
//!   ([`Registry::service_time`], [`crate::predict`]), profiler or not.
//! * Nothing here blocks or spawns: the caller's thread drives
//!   [`Scheduler::step`] (or [`Scheduler::wait`], [`Scheduler::run_sync`]),
//!   and time comes from the [`Clock`] in [`Env`].

use synaptic_abi::{Errno, Priority};

use crate::arbiter::{Weights, Wrr, DEFAULT_WEIGHTS};
use crate::arena::{TensorMeta, TensorRef, ALIGN};
use crate::device::{prefer_npu, Device, DeviceMask, Placement, PlacementQuery, Policy};
use crate::npu::{NpuDevice, NpuError, NpuState};
use crate::pipeline::{PipelineError, PipelineId, PipelinePool, Step};
use crate::process::ProcessError;
use crate::prof::{InferenceProfile, Profiler};
use crate::registry::{ModelHandle, Registry, RegistryError};
use crate::time::Clock;

/// Default number of job slots.
pub const DEFAULT_MAX_JOBS: usize = 4;

/// A submitted job: slot and generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct JobId {
    index: u16,
    generation: u16,
}

impl JobId {
    /// Generation in the high half, slot in the low.
    pub const fn raw(self) -> u32 {
        ((self.generation as u32) << 16) | self.index as u32
    }

    /// Decodes a raw id; the scheduler validates it on use.
    pub const fn from_raw(raw: u32) -> JobId {
        JobId {
            index: raw as u16,
            generation: (raw >> 16) as u16,
        }
    }
}

/// Completion callback: `(job, output or error, context)`.
pub type JobCallback = fn(JobId, Result<TensorRef<'_>, JobError>, usize);

/// What to run, how urgently, and whom to tell.
#[derive(Clone, Copy, Debug)]
pub struct JobRequest<'a> {
    /// A built pipeline.
    pub pipeline: PipelineId,
    /// The input, read in place.
    pub input: TensorRef<'a>,
    /// Scheduling class.
    pub priority: Priority,
    /// Absolute deadline on the scheduler's clock, microseconds.
    pub deadline_us: Option<u64>,
    /// Whether higher-priority work may run between this job's steps.
    pub preemptible: bool,
    /// Called on completion with the output (or error) and the context word.
    pub callback: Option<(JobCallback, usize)>,
}

impl<'a> JobRequest<'a> {
    /// A `Normal`, preemptible job without deadline or callback.
    pub fn new(pipeline: PipelineId, input: TensorRef<'a>) -> Self {
        JobRequest {
            pipeline,
            input,
            priority: Priority::Normal,
            deadline_us: None,
            preemptible: true,
            callback: None,
        }
    }
}

/// Why a job failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum JobError {
    /// The pipeline was destroyed or is not built.
    Pipeline(PipelineError),
    /// The model handle is bad or the model could not be loaded.
    Registry(RegistryError),
    /// The NPU failed.
    Npu(NpuError),
    /// A processing stage failed.
    Stage {
        /// Step index in the pipeline.
        step: u8,
        /// What went wrong.
        error: ProcessError,
    },
    /// A step output does not fit the job's work buffer.
    BufferTooSmall {
        /// Bytes needed.
        needed: usize,
        /// Bytes per work buffer.
        available: usize,
    },
    /// The deadline passed before the job finished.
    DeadlineMissed,
    /// [`Scheduler::cancel`] was called.
    Cancelled,
    /// No device the model was registered for is present (or the
    /// placement policy named one that is not usable).
    NoDevice {
        /// The devices the model was registered for.
        allowed: DeviceMask,
        /// The devices the scheduler's `Env` has.
        present: DeviceMask,
    },
}

impl JobError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            JobError::Pipeline(e) => e.to_errno(),
            JobError::Registry(e) => e.to_errno(),
            JobError::Npu(e) => e.to_errno(),
            JobError::Stage { error, .. } => error.to_errno(),
            JobError::BufferTooSmall { .. } => Errno::NoMem,
            JobError::DeadlineMissed => Errno::TimedOut,
            JobError::Cancelled => Errno::Canceled,
            JobError::NoDevice { .. } => Errno::NoDev,
        }
    }
}

/// Errors of the scheduler's own operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchedError {
    /// Every job slot is in use.
    Full,
    /// The pipeline cannot be run.
    Pipeline(PipelineError),
    /// The id names no slot or an empty one.
    InvalidJob,
    /// The id's job was reclaimed.
    StaleJob,
    /// The job has not finished.
    NotFinished,
    /// The job already finished (it cannot be cancelled).
    AlreadyFinished,
    /// `wait` ran out of time; the job continues.
    TimedOut,
    /// The caller's buffer is shorter than the output.
    OutputTooSmall {
        /// Bytes of output.
        needed: usize,
        /// Bytes of buffer.
        actual: usize,
    },
    /// An argument is out of range.
    InvalidArgument,
    /// The job failed.
    Job(JobError),
}

impl SchedError {
    /// The errno this error becomes at the C and wire boundary.
    pub fn to_errno(self) -> Errno {
        match self {
            SchedError::Full => Errno::Again,
            SchedError::Pipeline(e) => e.to_errno(),
            SchedError::InvalidJob | SchedError::InvalidArgument => Errno::Inval,
            SchedError::StaleJob => Errno::NoEnt,
            SchedError::NotFinished => Errno::Busy,
            SchedError::AlreadyFinished => Errno::Already,
            SchedError::TimedOut => Errno::TimedOut,
            SchedError::OutputTooSmall { .. } => Errno::NoBufs,
            SchedError::Job(e) => e.to_errno(),
        }
    }
}

/// Where a job is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobStatus {
    /// Waiting to start.
    Queued,
    /// Started; `next_step` is the step it runs next.
    Running {
        /// Index of the next step.
        next_step: u8,
    },
    /// Finished with an output.
    Done(TensorMeta),
    /// Finished with an error.
    Failed(JobError),
}

/// What [`Scheduler::submit_alone`] did with a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Alone {
    /// Run at once, and the device was done as it started: the output is
    /// in the caller's buffer (its descriptor here) and nothing of the
    /// job is left in the scheduler; or the reason it failed.
    Done(Result<TensorMeta, JobError>),
    /// Submitted as [`Scheduler::submit_into`] does (and started on the
    /// device when that was possible): step as usual and take its result.
    Submitted(JobId),
}

/// What one [`Scheduler::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StepOutcome {
    /// Nothing was runnable.
    Idle,
    /// A job is on the device ([`Scheduler::set_overlap`]) and nothing
    /// else can run until it finishes: wait for the device (or new work)
    /// and step again.
    Waiting,
    /// A step of `job` ran (or the job was failed before running it).
    Ran {
        /// The job.
        job: JobId,
        /// Index of the step.
        step: u8,
        /// Whether the job is now finished.
        finished: bool,
    },
}

/// What the scheduler needs from the rest of the runtime while it works.
pub struct Env<'e, N, C, const M: usize, const P: usize, const S: usize> {
    /// Model registry (models are loaded on demand).
    pub registry: &'e mut Registry<M>,
    /// The NPU.
    pub npu: &'e mut N,
    /// The CPU interpreter device, if the firmware has one (see
    /// [`crate::device`] for why it is a trait object and not a third
    /// generic parameter).
    pub cpu: Option<&'e mut dyn NpuDevice>,
    /// The pipelines.
    pub pipelines: &'e PipelinePool<P, S>,
    /// Time source.
    pub clock: &'e C,
    /// Optional profiler; every successful job is recorded.
    pub profiler: Option<&'e mut Profiler>,
}

// Word-aligned variants: a state written by value is a few word stores,
// not a byte-wise copy from an odd offset.
#[derive(Clone, Copy, Debug)]
#[repr(C, u32)]
enum State {
    Free,
    Queued,
    Running {
        next: u8,
        /// Which work buffer holds the current tensor (`None`: the input).
        current: Option<u8>,
        meta: TensorMeta,
    },
    /// The model step `at.next` runs on the device (overlap mode); its
    /// output goes to the buffer after `at.current`.
    OnDevice {
        at: StepAt,
        /// The step's output descriptor.
        out_meta: TensorMeta,
        started_us: u64,
    },
    Finished(Result<(u8, TensorMeta), JobError>),
}

impl State {
    /// Whether a step of the job may start.
    fn runnable(&self) -> bool {
        matches!(self, State::Queued | State::Running { .. })
    }

    /// Whether the job is unfinished.
    fn active(&self) -> bool {
        self.runnable() || matches!(self, State::OnDevice { .. })
    }
}

/// The buffer index of a finished job's output in the caller's buffer
/// ([`Scheduler::submit_into`]; 0 and 1 are the work buffer's halves).
const EXTERNAL: u8 = 2;

/// The output buffer of a step whose input is in `current`.
fn out_buffer(current: Option<u8>) -> u8 {
    match current {
        Some(b) => 1 - b,
        None => 0,
    }
}

fn no_callback(_: usize, _: Result<crate::npu::NpuRun, NpuError>) {}

/// Which step of a job runs, on what: step `next` (the pipeline's `last`
/// or not), its input `meta` in work buffer `current` (`None`: the job's
/// input).
#[derive(Clone, Copy, Debug)]
struct StepAt {
    next: u8,
    current: Option<u8>,
    meta: TensorMeta,
    last: bool,
}

/// How step `at` of job `i` ended (its output went to buffer `into`).
struct Collected {
    i: usize,
    at: StepAt,
    into: u8,
    result: Result<TensorMeta, JobError>,
}

#[derive(Debug)]
struct Slot<'a> {
    generation: u16,
    state: State,
    request: Option<JobRequest<'a>>,
    /// The caller's output buffer ([`Scheduler::submit_into`]).
    output: Option<&'a mut [u8]>,
    seq: u64,
    submitted_us: u64,
    profile: InferenceProfile,
    /// The device step `.0` was placed on while that device was busy: it
    /// waits for it rather than being placed afresh every step.
    placed: Option<(u8, Device)>,
}

/// The scheduler: `J` job slots over a caller-provided work buffer.
///
/// `CPU = false` builds it for firmware without a CPU device: it never
/// looks at [`Env::cpu`], and every path to that device (placement among
/// devices, staging, starting and running on it) compiles away.
pub struct Scheduler<'a, const J: usize = DEFAULT_MAX_JOBS, const CPU: bool = true> {
    slots: [Slot<'a>; J],
    work: &'a mut [u8],
    buffer_len: usize,
    next_seq: u64,
    max_concurrent: usize,
    current: Option<usize>,
    overlap: bool,
    /// The job whose model step is on each device (overlap mode), by
    /// [`Device::index`].
    on_device: [Option<usize>; 2],
    /// Jobs queued or running (a step may start), and those plus the
    /// job on the device: kept by [`Scheduler::set_state`], so that an
    /// idle turn neither scans the slots nor counts them.
    runnable: usize,
    active: usize,
    /// Which device runs a model step.
    placement: Placement,
    /// The shipped policy `placement` is, if it is one.
    policy: Option<Policy>,
    /// The model step last started asynchronously on each device, by
    /// [`Device::index`], until the device is seen idle again (its job may
    /// have been cancelled).
    runs: [Option<DeviceRun>; 2],
    /// An NPU with a command queue: the job whose model step is queued
    /// behind the running one (`None` once cancelled), and that step's run
    /// (kept while the device holds it). It becomes the running step when
    /// the running one is collected.
    queued: Option<usize>,
    queued_run: Option<DeviceRun>,
    /// xorshift32 state for [`PlacementQuery::random`] (never 0).
    random: u32,
    /// `Normal` / `BestEffort` arbitration ([`crate::arbiter`]).
    wrr: Wrr,
    /// The longest slice of the sliced CPU device seen, µs: how long a
    /// slice started now may hold the thread (see [`Scheduler::step`]).
    slice_us: u64,
    /// The NPU was freed during the last turn's slice and held: this turn
    /// feeds it before any slice (see [`Scheduler::step`]).
    feed_npu: bool,
    /// The slot of the job submitted last: with one job active it is
    /// usually that one, and a free slot is usually the one freed last,
    /// so the one-request path finds both without a scan (both checked
    /// before use: a hint, never trusted).
    newest: usize,
    freed: usize,
}

/// A model step on a device in overlap mode: which model, since when,
/// and what the scheduler knows about when it finished.
#[derive(Clone, Copy, Debug)]
struct DeviceRun {
    model: ModelHandle,
    started_us: u64,
    /// A sliced device (the CPU interpreter): it runs only inside the
    /// scheduler's polls, so its service time is `busy_us`.
    sliced: bool,
    /// Sliced: the time of its start and of its slices so far. Not the
    /// wall time from start to done: between slices the thread runs other
    /// jobs' stages and feeds the NPU, which is not this step's work.
    busy_us: u64,
    /// The last time the scheduler saw the device still busy.
    seen_busy_us: u64,
    /// Whether a synchronous step ran on the scheduler's thread since
    /// then: the device may have finished at any moment of it, so the
    /// collection time is late by an unknown amount.
    late: bool,
}

impl DeviceRun {
    /// The service-time sample of this run, collected at `now_us`, given
    /// the model's current estimate (see [`crate::predict`], "Limits").
    ///
    /// Collected promptly (nothing ran on the scheduler's thread since the
    /// device was last seen busy: the caller was waiting for it), the
    /// sample is the time from start to collection. Collected late, the
    /// device finished somewhere in `[seen_busy, now]`: the sample is the
    /// current estimate moved just into that interval (unchanged when it
    /// already lies there), or its upper end when there is no estimate yet.
    fn sample_us(&self, now_us: u64, estimate_us: Option<u32>) -> u64 {
        let upper = now_us.saturating_sub(self.started_us);
        let lower = self.seen_busy_us.saturating_sub(self.started_us).min(upper);
        match (self.late, estimate_us) {
            (true, Some(e)) => u64::from(e).clamp(lower, upper),
            _ => upper,
        }
    }
}

/// Default seed of the placement's random words.
pub const DEFAULT_RANDOM_SEED: u32 = 0x9E37_79B9;

/// The scheduler's pick: job `i`, and the class whose WRR credit it spends
/// when it runs (a contended `Normal` / `BestEffort` selection).
#[derive(Clone, Copy, Debug)]
struct Pick {
    i: usize,
    charge: Option<Priority>,
}

/// Whether a device has its asynchronous step in flight, by [`Device::index`].
type Busy = [bool; 2];

impl<'a, const J: usize, const CPU: bool> Scheduler<'a, J, CPU> {
    /// Whether `env` has a CPU device this scheduler uses (never with
    /// `CPU = false`).
    fn has_cpu<N, C, const M: usize, const P: usize, const S: usize>(
        env: &Env<'_, N, C, M, P, S>,
    ) -> bool {
        CPU && env.cpu.is_some()
    }

    const FITS: () = assert!(J > 0 && J <= u16::MAX as usize, "1..=65535 jobs");

    /// A scheduler whose jobs share `work`: each slot gets two buffers of
    /// `work.len() / (2 J)` bytes rounded down to [`ALIGN`].
    pub fn new(work: &'a mut [u8]) -> Self {
        let () = Self::FITS;
        let buffer_len = (work.len() / (2 * J)) & !(ALIGN - 1);
        Scheduler {
            slots: core::array::from_fn(|_| Slot {
                generation: 1,
                state: State::Free,
                request: None,
                output: None,
                seq: 0,
                submitted_us: 0,
                profile: InferenceProfile::default(),
                placed: None,
            }),
            work,
            buffer_len,
            next_seq: 0,
            max_concurrent: J,
            current: None,
            overlap: false,
            on_device: [None; 2],
            runnable: 0,
            active: 0,
            placement: prefer_npu,
            policy: Some(Policy::NpuOnly),
            runs: [None; 2],
            queued: None,
            queued_run: None,
            random: DEFAULT_RANDOM_SEED,
            wrr: Wrr::new(DEFAULT_WEIGHTS),
            slice_us: 0,
            feed_npu: false,
            newest: 0,
            freed: 0,
        }
    }

    /// Replaces the placement function (default [`prefer_npu`]); see
    /// [`crate::device`]. An answer outside the model's usable devices
    /// fails the job with [`JobError::NoDevice`].
    pub fn set_placement(&mut self, placement: Placement) {
        self.placement = placement;
        self.policy = None;
    }

    /// Selects one of the shipped placement policies (default
    /// [`Policy::NpuOnly`]); it applies from the next model step on, to
    /// local and remote jobs alike.
    ///
    /// # Examples
    ///
    /// ```
    /// use synaptic_runtime::device::Policy;
    /// use synaptic_runtime::sched::Scheduler;
    /// let mut work = [0u8; 256];
    /// let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
    /// assert_eq!(sched.policy(), Some(Policy::NpuOnly));
    /// sched.set_policy(Policy::EarliestFinish);
    /// assert_eq!(sched.policy(), Some(Policy::EarliestFinish));
    /// sched.set_placement(|_| None);
    /// assert_eq!(sched.policy(), None);
    /// ```
    pub fn set_policy(&mut self, policy: Policy) {
        self.placement = policy.placement();
        self.policy = Some(policy);
    }

    /// The shipped policy in use; `None` after [`Scheduler::set_placement`].
    pub fn policy(&self) -> Option<Policy> {
        self.policy
    }

    /// Restarts the random words placement queries carry (xorshift32;
    /// seed 0, which xorshift cannot leave, becomes
    /// [`DEFAULT_RANDOM_SEED`]).
    pub fn set_random_seed(&mut self, seed: u32) {
        self.random = if seed == 0 { DEFAULT_RANDOM_SEED } else { seed };
    }

    /// Sets the weighted-round-robin weights of `Normal` and `BestEffort`
    /// (default 4:1, [`crate::arbiter`]) and starts a new round.
    ///
    /// # Errors
    ///
    /// [`SchedError::InvalidArgument`] for a zero weight (it would starve
    /// that class).
    pub fn set_weights(&mut self, weights: Weights) -> Result<(), SchedError> {
        if !weights.is_valid() {
            return Err(SchedError::InvalidArgument);
        }
        self.wrr = Wrr::new(weights);
        Ok(())
    }

    /// The weighted-round-robin weights.
    pub fn weights(&self) -> Weights {
        self.wrr.weights()
    }

    /// The next random word (xorshift32, Marsaglia's 13, 17, 5).
    fn next_random(&mut self) -> u32 {
        let mut x = self.random;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.random = x;
        x
    }

    /// The device that runs model `handle`'s step now. Without a CPU device
    /// the NPU is the only candidate and no policy is asked (the offload
    /// path pays no registry lookup for it): [`stage_model`] refuses a
    /// model that does not allow the NPU.
    #[inline(always)]
    fn place<N, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        handle: ModelHandle,
        priority: Priority,
        busy: Busy,
        env: &Env<'_, N, C, M, P, S>,
    ) -> Result<Device, JobError> {
        if !Self::has_cpu(env) {
            return Ok(Device::Npu);
        }
        self.place_among(handle, priority, busy, env)
    }

    /// [`Scheduler::place`] with a CPU device: ask the policy. Out of line,
    /// off the NPU-only path.
    #[inline(never)]
    fn place_among<N, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        handle: ModelHandle,
        priority: Priority,
        busy: Busy,
        env: &Env<'_, N, C, M, P, S>,
    ) -> Result<Device, JobError> {
        let allowed = env
            .registry
            .info(handle)
            .map_err(JobError::Registry)?
            .devices;
        let present = if Self::has_cpu(env) {
            DeviceMask::ALL
        } else {
            DeviceMask::NPU
        };
        let predicted = |device| {
            env.registry
                .service_time(handle, device)
                .ok()
                .and_then(|t| t.estimate_us())
        };
        // Each device's backlog: what its step in flight has left to run
        // (the NPU runs by itself; a sliced CPU step only in its slices).
        let now = env.clock.now_us();
        let backlog = |device: Device| match self.runs[device.index()] {
            Some(run) if busy[device.index()] => {
                let ran = if run.sliced {
                    run.busy_us
                } else {
                    now.saturating_sub(run.started_us)
                };
                let whole = env
                    .registry
                    .service_time(run.model, device)
                    .ok()
                    .and_then(|t| t.estimate_us())
                    .map_or(0, u64::from);
                whole.saturating_sub(ran)
            }
            _ => 0,
        };
        let mut backlogs = Device::ALL.map(backlog);
        // A step in the NPU's command queue runs next there, unless this
        // step is REALTIME and would take a lower class's queued place.
        if let Some(run) = self.queued_run {
            let class = |i: usize| self.slots[i].request.as_ref().map(|r| r.priority);
            let taken = priority == Priority::RealTime
                && self
                    .queued
                    .and_then(class)
                    .is_some_and(|c| c != Priority::RealTime);
            let whole = env
                .registry
                .service_time(run.model, Device::Npu)
                .ok()
                .and_then(|t| t.estimate_us());
            if let (false, Some(us)) = (taken, whole) {
                let b = &mut backlogs[Device::Npu.index()];
                *b = b.saturating_add(u64::from(us));
            }
        }
        // Steps placed on a busy device and waiting for it are its work
        // too, those that will run first: of this class or a higher one.
        for s in self.slots.iter() {
            let (Some((step, device)), Some(r)) = (s.placed, s.request.as_ref()) else {
                continue;
            };
            if r.priority.index() < priority.index() {
                continue;
            }
            let model = env.pipelines.runnable(r.pipeline).ok().and_then(|p| {
                match p.steps().get(usize::from(step)) {
                    Some(Step::Model(h)) => Some(*h),
                    _ => None,
                }
            });
            if let Some(us) = model.and_then(|h| {
                env.registry
                    .service_time(h, device)
                    .ok()
                    .and_then(|t| t.estimate_us())
            }) {
                let b = &mut backlogs[device.index()];
                *b = b.saturating_add(u64::from(us));
            }
        }
        let query = PlacementQuery::new(handle.raw(), allowed, present, busy[0])
            .with_busy(Device::CpuInterpreter, busy[1])
            .with_prediction(Device::Npu, predicted(Device::Npu))
            .with_prediction(Device::CpuInterpreter, predicted(Device::CpuInterpreter))
            .with_backlog(Device::Npu, backlogs[0])
            .with_backlog(Device::CpuInterpreter, backlogs[1])
            .with_random(self.next_random());
        match (self.placement)(&query) {
            Some(d) if query.usable().contains(d) => Ok(d),
            _ => Err(JobError::NoDevice { allowed, present }),
        }
    }

    /// Job `i` moves to `state`; the counts follow. Inlined, so that the
    /// state is built in its slot rather than copied there.
    #[inline(always)]
    fn set_state(&mut self, i: usize, state: State) {
        let slot = &mut self.slots[i];
        let (was_runnable, was_active) = (slot.state.runnable(), slot.state.active());
        slot.state = state;
        let (runnable, active) = (slot.state.runnable(), slot.state.active());
        self.runnable = self.runnable + usize::from(runnable) - usize::from(was_runnable);
        self.active = self.active + usize::from(active) - usize::from(was_active);
        debug_assert_eq!(
            (self.runnable, self.active),
            self.slots.iter().fold((0, 0), |(r, a), s| (
                r + usize::from(s.state.runnable()),
                a + usize::from(s.state.active())
            )),
            "the counts agree with the slots"
        );
    }

    /// Run model steps asynchronously (`invoke_async`) so that CPU work,
    /// including the caller's between steps, overlaps the device. Needs a
    /// device with `async_invoke`; change it only while no job runs.
    ///
    /// # Errors
    ///
    /// [`SchedError::InvalidArgument`] while a job is on the device.
    pub fn set_overlap(&mut self, on: bool) -> Result<(), SchedError> {
        if self.on_device.iter().any(Option::is_some) {
            return Err(SchedError::InvalidArgument);
        }
        self.overlap = on;
        Ok(())
    }

    /// Bytes of each intermediate buffer.
    pub fn buffer_len(&self) -> usize {
        self.buffer_len
    }

    /// Limits how many jobs may be started and unfinished at once.
    ///
    /// # Errors
    ///
    /// [`SchedError::InvalidArgument`] unless `1 <= n <= J`.
    pub fn set_max_concurrent(&mut self, n: usize) -> Result<(), SchedError> {
        if n == 0 || n > J {
            return Err(SchedError::InvalidArgument);
        }
        self.max_concurrent = n;
        Ok(())
    }

    /// Queues a job.
    ///
    /// # Errors
    ///
    /// [`SchedError::Pipeline`] when the pipeline is not runnable;
    /// [`SchedError::Full`] when every slot is in use.
    pub fn submit<C: Clock, const P: usize, const S: usize>(
        &mut self,
        request: JobRequest<'a>,
        pipelines: &PipelinePool<P, S>,
        clock: &C,
    ) -> Result<JobId, SchedError> {
        self.submit_to(request, None, pipelines, clock)
    }

    /// Queues a job whose last step writes its output straight into
    /// `output` (zero copy out; [`Scheduler::take_result`] then reclaims
    /// it without copying). The scheduler holds the buffer until the job
    /// is reclaimed.
    ///
    /// # Errors
    ///
    /// As [`Scheduler::submit`]; a too small `output` fails the job with
    /// [`JobError::BufferTooSmall`] when its last step runs.
    // Inlined, with `submit_to`: see there.
    #[inline(always)]
    pub fn submit_into<C: Clock, const P: usize, const S: usize>(
        &mut self,
        request: JobRequest<'a>,
        output: &'a mut [u8],
        pipelines: &PipelinePool<P, S>,
        clock: &C,
    ) -> Result<JobId, SchedError> {
        self.submit_to(request, Some(output), pipelines, clock)
    }

    /// [`submit_into`](Self::submit_into), and when the job is alone (no
    /// other job queued, running or on a device, nothing to reap), its
    /// pipeline is one model step, the NPU is the only device and runs
    /// asynchronously (overlap), and the request has neither deadline nor
    /// callback: start it on the NPU now, without a queue pass, a pick or
    /// a placement (there is nothing to choose), and if the NPU is done as
    /// it starts (a null executor, a fast accelerator), finish it here as
    /// a step would have: the profile and the model's service time are
    /// recorded the same, and the job never takes a slot. One request at
    /// a time, the common case of a serving core, pays for none of the
    /// arbitration it does not need. A device still busy after one poll
    /// keeps the job as a step would have left it (on the device).
    ///
    /// # Errors
    ///
    /// As [`submit_into`](Self::submit_into).
    pub fn submit_alone<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        request: JobRequest<'a>,
        output: &'a mut [u8],
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> Result<Alone, SchedError> {
        let alone = self.overlap
            && !Self::has_cpu(env)
            && self.is_idle()
            && self.current.is_none()
            && request.deadline_us.is_none()
            && request.callback.is_none();
        let model = match env.pipelines.runnable(request.pipeline).map(|p| p.steps()) {
            Ok([Step::Model(handle)]) if alone => Some(*handle),
            _ => None,
        };
        let Some(handle) = model else {
            return self
                .submit_to(request, Some(output), env.pipelines, env.clock)
                .map(Alone::Submitted);
        };
        // Timed as a step is: the clock read afresh.
        env.clock.new_turn();
        let started = env.clock.now_us();
        let out_meta = match start_model(handle, &request.input, output.len(), env) {
            Ok(meta) => meta,
            Err(e) => return Ok(Alone::Done(Err(e))),
        };
        if env.npu.state() == NpuState::Busy {
            env.npu.poll();
        }
        let run = DeviceRun {
            model: handle,
            started_us: started,
            sliced: false,
            busy_us: 0,
            seen_busy_us: started,
            late: false,
        };
        if env.npu.state() == NpuState::Busy {
            // Still running: the job waits on the device for a step to
            // collect it, as if a step had started it.
            let meta = request.input.meta();
            let id = self.submit_to(request, Some(output), env.pipelines, env.clock)?;
            let i = usize::from(id.index);
            let at = StepAt {
                next: 0,
                current: None,
                meta,
                last: true,
            };
            self.slots[i].submitted_us = started;
            self.set_state(
                i,
                State::OnDevice {
                    at,
                    out_meta,
                    started_us: started,
                },
            );
            self.current = Some(i);
            self.on_device[Device::Npu.index()] = Some(i);
            self.runs[Device::Npu.index()] = Some(run);
            return Ok(Alone::Submitted(id));
        }
        // Done as it started: what `collect_from`, `advance` and `finish`
        // do for a one-step job, on the caller's buffer.
        let now = env.clock.now_us();
        let result = if env.npu.state() == NpuState::Error {
            let _ = env.npu.clear_error();
            Err(JobError::Npu(NpuError::DeviceFault))
        } else {
            // `start_model` checked that the output fits.
            let needed = out_meta.byte_len();
            env.npu
                .get_output(&mut output[..needed])
                .map(|_| out_meta)
                .map_err(JobError::Npu)
        };
        if result.is_ok() {
            let _ = match env.npu.last_run() {
                Some(measured) => {
                    env.registry
                        .record_service_time(handle, Device::Npu, measured.latency_us)
                }
                None => env
                    .registry
                    .record_service_sample(handle, Device::Npu, |estimate| {
                        run.sample_us(now, estimate)
                    }),
            };
            if let Some(p) = env.profiler.as_deref_mut() {
                let spent = now.saturating_sub(started);
                p.record(InferenceProfile {
                    total_us: spent,
                    npu_us: spent,
                    memory_peak: out_meta.byte_len(),
                    ..InferenceProfile::default()
                });
            }
        }
        Ok(Alone::Done(result))
    }

    // Inlined: the request is then built in its slot, not on the caller's
    // stack and copied there (a 72-byte copy per submission).
    #[inline(always)]
    fn submit_to<C: Clock, const P: usize, const S: usize>(
        &mut self,
        request: JobRequest<'a>,
        output: Option<&'a mut [u8]>,
        pipelines: &PipelinePool<P, S>,
        clock: &C,
    ) -> Result<JobId, SchedError> {
        pipelines
            .runnable(request.pipeline)
            .map_err(SchedError::Pipeline)?;
        let index = match self.slots.get(self.freed) {
            Some(s) if matches!(s.state, State::Free) => self.freed,
            _ => self
                .slots
                .iter()
                .position(|s| matches!(s.state, State::Free))
                .ok_or(SchedError::Full)?,
        };
        self.newest = index;
        let seq = self.next_seq;
        self.next_seq += 1;
        self.set_state(index, State::Queued);
        let slot = &mut self.slots[index];
        slot.request = Some(request);
        slot.output = output;
        slot.seq = seq;
        slot.submitted_us = clock.now_us();
        slot.profile = InferenceProfile::default();
        Ok(JobId {
            index: index as u16,
            generation: slot.generation,
        })
    }

    fn index(&self, id: JobId) -> Result<usize, SchedError> {
        let i = usize::from(id.index);
        let slot = self.slots.get(i).ok_or(SchedError::InvalidJob)?;
        if id.generation == 0 || id.generation > slot.generation {
            Err(SchedError::InvalidJob)
        } else if id.generation < slot.generation {
            Err(SchedError::StaleJob)
        } else if matches!(slot.state, State::Free) {
            Err(SchedError::InvalidJob)
        } else {
            Ok(i)
        }
    }

    fn id_of(&self, i: usize) -> JobId {
        JobId {
            index: i as u16,
            generation: self.slots[i].generation,
        }
    }

    /// Where a job is.
    ///
    /// # Errors
    ///
    /// [`SchedError::InvalidJob`], [`SchedError::StaleJob`].
    pub fn status(&self, id: JobId) -> Result<JobStatus, SchedError> {
        let i = self.index(id)?;
        Ok(match self.slots[i].state {
            State::Free => return Err(SchedError::InvalidJob),
            State::Queued => JobStatus::Queued,
            State::Running { next, .. }
            | State::OnDevice {
                at: StepAt { next, .. },
                ..
            } => JobStatus::Running { next_step: next },
            State::Finished(Ok((_, meta))) => JobStatus::Done(meta),
            State::Finished(Err(e)) => JobStatus::Failed(e),
        })
    }

    fn free(&mut self, i: usize) {
        for on in self.on_device.iter_mut().filter(|on| **on == Some(i)) {
            // The device finishes on its own and its result is dropped,
            // or (sliced) the next step aborts it.
            *on = None;
        }
        if self.queued == Some(i) {
            // Queued on the NPU: it runs when its turn comes, unclaimed.
            self.queued = None;
        }
        self.set_state(i, State::Free);
        let slot = &mut self.slots[i];
        slot.request = None;
        slot.output = None;
        slot.placed = None;
        slot.generation = match slot.generation.wrapping_add(1) {
            0 => 1,
            g => g,
        };
        if self.current == Some(i) {
            self.current = None;
        }
        self.freed = i;
    }

    fn buffer_range(&self, slot: usize, buffer: u8) -> core::ops::Range<usize> {
        let start = (2 * slot + usize::from(buffer)) * self.buffer_len;
        start..start + self.buffer_len
    }

    /// The bytes of job `i`'s buffer `buffer` (a work half or the caller's).
    fn buffer(&self, i: usize, buffer: u8) -> &[u8] {
        if buffer == EXTERNAL {
            return self.slots[i].output.as_deref().unwrap_or(&[]);
        }
        &self.work[self.buffer_range(i, buffer)]
    }

    /// Where the step after input `current` writes: the caller's buffer
    /// for the last step when it gave one, else the other work half.
    fn target(&self, i: usize, current: Option<u8>, last: bool) -> u8 {
        if last && self.slots[i].output.is_some() {
            EXTERNAL
        } else {
            out_buffer(current)
        }
    }

    fn finish<N, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        i: usize,
        result: Result<(u8, TensorMeta), JobError>,
        env: &mut Env<'_, N, C, M, P, S>,
    ) {
        let now = env.clock.now_us();
        let slot = &mut self.slots[i];
        slot.profile.total_us = now.saturating_sub(slot.submitted_us);
        if result.is_ok() {
            if let Some(p) = env.profiler.as_deref_mut() {
                p.record(slot.profile);
            }
        }
        self.set_state(i, State::Finished(result));
        if self.current == Some(i) {
            self.current = None;
        }
        let callback = self.slots[i].request.as_ref().and_then(|r| r.callback);
        if let Some((f, context)) = callback {
            let id = self.id_of(i);
            match result {
                Ok((buffer, meta)) => {
                    let view = TensorRef::wrap(meta, self.buffer(i, buffer));
                    // The view fits: every step checked its output length.
                    f(
                        id,
                        view.map_err(|_| JobError::BufferTooSmall {
                            needed: meta.byte_len(),
                            available: self.buffer_len,
                        }),
                        context,
                    );
                }
                Err(e) => f(id, Err(e), context),
            }
            self.free(i);
        }
    }

    /// The job to run next. A job whose model step waits for its busy
    /// device is passed over: each device serves the jobs placed on it in
    /// priority order, and one device's queue does not hold up the other
    /// device or other jobs' stages.
    fn pick(&self, busy: Busy) -> Option<Pick> {
        // Only a queued or running job can be picked.
        if self.runnable == 0 {
            return None;
        }
        let no_charge = |i| Some(Pick { i, charge: None });
        let waits = |s: &Slot<'_>| {
            s.placed.is_some_and(|(step, d)| {
                let next = match s.state {
                    State::Running { next, .. } => next,
                    _ => 0,
                };
                step == next && busy[d.index()]
            })
        };
        if let Some(i) = self.current {
            let holds = self.slots[i]
                .request
                .as_ref()
                .is_some_and(|r| !r.preemptible);
            match self.slots[i].state {
                State::Running { .. } if holds && waits(&self.slots[i]) => return None,
                State::Running { .. } if holds => return no_charge(i),
                State::OnDevice { .. } if holds => return None,
                _ => {}
            }
        }
        // The one job there is (nothing else queued, running or on a
        // device): it runs unless it waits for its device.
        if self.active == 1 {
            if let Some(s) = self.slots.get(self.newest).filter(|s| s.state.runnable()) {
                let runs = !waits(s) && s.request.is_some() && self.max_concurrent > 0;
                return runs.then_some(Pick {
                    i: self.newest,
                    charge: None,
                });
            }
        }
        // One pass: how many jobs are started, and per class the oldest
        // running job and the oldest queued one (a queued job may start
        // only below the concurrency limit).
        type Oldest = [Option<(u64, usize)>; Priority::COUNT];
        let older = |best: Option<(u64, usize)>, seq: u64| best.is_none_or(|(b, _)| seq < b);
        let mut started = 0;
        let mut running: Oldest = [None; Priority::COUNT];
        let mut queued: Oldest = [None; Priority::COUNT];
        for (i, s) in self.slots.iter().enumerate() {
            let oldest = match s.state {
                State::Running { .. } => {
                    started += 1;
                    &mut running
                }
                State::OnDevice { .. } => {
                    started += 1;
                    continue;
                }
                State::Queued => &mut queued,
                State::Free | State::Finished(_) => continue,
            };
            if waits(s) {
                continue;
            }
            let Some(r) = s.request.as_ref() else {
                continue;
            };
            let best = &mut oldest[r.priority.index()];
            if older(*best, s.seq) {
                *best = Some((s.seq, i));
            }
        }
        let may_start = started < self.max_concurrent;
        let candidate = |class: Priority| {
            let (r, q) = (running[class.index()], queued[class.index()]);
            match (r, q.filter(|_| may_start)) {
                (Some(r), Some(q)) => Some(if q.0 < r.0 { q.1 } else { r.1 }),
                (Some((_, i)), None) | (None, Some((_, i))) => Some(i),
                (None, None) => None,
            }
        };
        // RealTime: strict priority. Normal and BestEffort: WRR when both
        // can run.
        if let Some(i) = candidate(Priority::RealTime) {
            return no_charge(i);
        }
        match (candidate(Priority::Normal), candidate(Priority::BestEffort)) {
            (Some(n), Some(b)) => {
                let class = self.wrr.choose();
                let i = if class == Priority::Normal { n } else { b };
                Some(Pick {
                    i,
                    charge: Some(class),
                })
            }
            (Some(i), None) | (None, Some(i)) => no_charge(i),
            (None, None) => None,
        }
    }

    /// Runs one step of the most urgent job.
    pub fn step<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> StepOutcome {
        // An idle turn costs these loads.
        if self.is_idle() {
            return StepOutcome::Idle;
        }
        // Overlap: a sliced CPU step in flight runs its next slice first
        // (this turn's own CPU work), then each finished device's output is
        // taken, the next step started (a freed device's next job first),
        // and the collected jobs are moved on. The NPU is collected after
        // the slice, so one that finished during it is fed in this turn.
        //
        // A REALTIME job waiting for the NPU, or running on it, is not made
        // to wait for a slice: when the NPU's step is done, or predicted to
        // end within the longest slice seen, the slice waits for a later
        // turn (the caller waits for the NPU, StepOutcome::Waiting). And an
        // NPU held last turn (below) is fed this turn before any slice: a
        // slice first would let a job that arrives during it find the NPU
        // taken by an older one that started after it arrived.
        let feed_npu = core::mem::take(&mut self.feed_npu);
        let (cpu_done, sliced, slice, npu_done) = if self.overlap {
            let (cpu_done, sliced) = if feed_npu || self.defer_slice(env) {
                (None, false)
            } else {
                self.collect(Device::CpuInterpreter, env)
            };
            // A slice put off to feed the NPU is still due: the caller
            // steps again at once, as after a slice.
            let slice = (sliced || feed_npu)
                .then(|| self.in_flight(Device::CpuInterpreter))
                .flatten();
            (cpu_done, sliced, slice, self.collect(Device::Npu, env).0)
        } else {
            (None, false, None, None)
        };
        let busy = [
            self.overlap && env.npu.state() == NpuState::Busy,
            CPU && self.overlap
                && env
                    .cpu
                    .as_deref()
                    .is_some_and(|c| c.state() == NpuState::Busy),
        ];
        // A device freed during a slice starts its next step next turn:
        // the caller first submits what arrived while the slice held the
        // thread (a REALTIME job must not find it taken by an older one).
        let held = [sliced && npu_done.is_some(), sliced && cpu_done.is_some()];
        self.feed_npu = held[0];
        let npu_free = self.on_device[Device::Npu.index()].is_none();
        let ran = self.run_next(busy, held, env);
        // An NPU that finishes as it starts (a null executor, a fast
        // accelerator) is collected in the same turn, not a turn later: a
        // turn per request saved. A device still running costs one poll.
        let at_once = if self.overlap && npu_free && self.on_device[Device::Npu.index()].is_some() {
            self.collect(Device::Npu, env).0
        } else {
            None
        };
        // Every collected step moves on, in this order; the outcome is the
        // first of: the step finished at once, the step that ran, the
        // NPU's, the CPU's (filled in as they come: no chain of options
        // built and copied on the request path).
        let mut outcome = ran;
        for c in [npu_done, cpu_done].into_iter().flatten() {
            let advanced = self.advance(c, env);
            outcome = outcome.or(Some(advanced));
        }
        if let Some(c) = at_once {
            outcome = Some(self.advance(c, env));
        }
        // A slice that did not end its step is work done too: the caller
        // steps again at once (the CPU device runs only when polled).
        match outcome.or(slice) {
            Some(outcome) => outcome,
            None if busy[0] || busy[1] => StepOutcome::Waiting,
            None => StepOutcome::Idle,
        }
    }

    /// Whether this turn's CPU slice is put off for a REALTIME job: a
    /// sliced CPU step is in flight, a REALTIME job runs on the NPU or can
    /// be started there (queued or running, not placed on the CPU), and the
    /// NPU's step is done or predicted to end within the longest slice
    /// seen. A slice holds the thread for its whole length, so an NPU that
    /// finishes during it is collected only after it: put off, the slice
    /// costs the CPU at most that much idle time, and the REALTIME job gets
    /// the NPU as it frees (or its own result as it is ready). Not when the
    /// NPU has no prediction for its step, or has overrun it by more than a
    /// slice (the CPU would idle on a guess).
    fn defer_slice<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &self,
        env: &Env<'_, N, C, M, P, S>,
    ) -> bool {
        let cpu = Device::CpuInterpreter.index();
        let (Some(cpu_run), Some(npu_run)) = (self.runs[cpu], self.runs[Device::Npu.index()])
        else {
            return false;
        };
        if !cpu_run.sliced || self.on_device[cpu].is_none() {
            return false;
        }
        let realtime = |i: usize| {
            self.slots[i]
                .request
                .as_ref()
                .is_some_and(|r| r.priority == Priority::RealTime)
        };
        let rt_on_npu = self.on_device[Device::Npu.index()].is_some_and(realtime);
        let rt_for_npu = || {
            self.slots.iter().enumerate().any(|(i, s)| {
                let next = match s.state {
                    State::Running { next, .. } => next,
                    State::Queued => 0,
                    _ => return false,
                };
                let on_cpu = s.placed == Some((next, Device::CpuInterpreter));
                !on_cpu && realtime(i)
            })
        };
        if !(rt_on_npu || rt_for_npu()) {
            return false;
        }
        if env.npu.state() != NpuState::Busy {
            return true;
        }
        let Some(whole) = env
            .registry
            .service_time(npu_run.model, Device::Npu)
            .ok()
            .and_then(|t| t.estimate_us())
        else {
            return false;
        };
        let ran = env.clock.now_us().saturating_sub(npu_run.started_us);
        let whole = u64::from(whole);
        ran.saturating_add(self.slice_us) > whole && ran <= whole.saturating_add(self.slice_us)
    }

    /// The job whose step is on `device`, as a step that ran unfinished.
    fn in_flight(&self, device: Device) -> Option<StepOutcome> {
        let i = self.on_device[device.index()]?;
        match self.slots[i].state {
            State::OnDevice { at, .. } => Some(StepOutcome::Ran {
                job: self.id_of(i),
                step: at.next,
                finished: false,
            }),
            _ => None,
        }
    }

    /// Run (or start on a device) the most urgent job's next step;
    /// `None` when nothing could run.
    /// `held`: devices that may not start a step this turn although idle.
    fn run_next<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        busy: Busy,
        held: Busy,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> Option<StepOutcome> {
        let npu = Device::Npu.index();
        // A busy NPU with room in its command queue takes a step of the
        // model it has loaded, queued behind the running one: it starts
        // as that one ends, without waiting for this thread.
        let queue_room = busy[npu]
            && !held[npu]
            && self.queued_run.is_none()
            && env.npu.capabilities().queue_depth > 1;
        let mut blocked = [(busy[npu] && !queue_room) || held[npu], busy[1] || held[1]];
        // A model step is placed when it is first picked: the answer says
        // whether it waits for a busy device and where it runs (a placement
        // error is reported when it runs). A step waiting for its device
        // keeps that answer, and the next pick passes it over; each turn
        // places at most every job once, so this ends.
        let (i, charge, next, pipeline_id, placed) = loop {
            let Pick { i, charge } = self.pick(blocked)?;
            let request = self.slots[i].request.as_ref()?;
            let (pipeline_id, priority) = (request.pipeline, request.priority);
            let next = match self.slots[i].state {
                State::Running { next, .. } => next,
                _ => 0,
            };
            // With idle devices and no CPU device there is nothing to
            // decide, and no lookup is made.
            let mut model = None;
            let placed = if busy[0] || busy[1] || Self::has_cpu(env) {
                model = env.pipelines.runnable(pipeline_id).ok().and_then(|p| {
                    match p.steps().get(usize::from(next)) {
                        Some(Step::Model(h)) => Some(*h),
                        _ => None,
                    }
                });
                match (model, self.slots[i].placed) {
                    (Some(_), Some((step, device))) if step == next => Some(Ok(device)),
                    (model, _) => model.map(|h| self.place(h, priority, busy, env)),
                }
            } else {
                None
            };
            let loaded = |env: &Env<'_, N, C, M, P, S>| {
                model.is_some_and(|h| {
                    env.registry
                        .info_resident(h, &*env.npu)
                        .is_ok_and(|(_, resident)| resident)
                })
            };
            match placed {
                // A REALTIME step takes the queue from a step of another
                // class: that one runs again later, so the REALTIME job
                // waits for the running step only, as without a queue.
                Some(Ok(Device::Npu))
                    if blocked[npu]
                        && !held[npu]
                        && priority == Priority::RealTime
                        && loaded(env)
                        && self.overtake_queued(env) =>
                {
                    break (i, charge, next, pipeline_id, placed);
                }
                Some(Ok(device)) if blocked[device.index()] => {
                    self.slots[i].placed = Some((next, device));
                }
                // Queued behind the running step: only a step of the model
                // the device has loaded; another waits for the device.
                Some(Ok(Device::Npu)) if busy[npu] && !loaded(env) => {
                    self.slots[i].placed = Some((next, Device::Npu));
                    blocked[npu] = true;
                }
                _ => break (i, charge, next, pipeline_id, placed),
            }
        };
        let id = self.id_of(i);
        self.slots[i].placed = None;
        if let Some(class) = charge {
            self.wrr.charge(class);
        }
        // The fields this step needs, not a copy of the whole request.
        let request = self.slots[i].request.as_ref()?;
        let (deadline_us, input_data) = (request.deadline_us, request.input.data());
        let (current, meta) = match self.slots[i].state {
            State::Running { current, meta, .. } => (current, meta),
            _ => (None, request.input.meta()),
        };
        self.current = Some(i);
        let done = |finished| StepOutcome::Ran {
            job: id,
            step: next,
            finished,
        };
        if deadline_us.is_some_and(|d| env.clock.now_us() > d) {
            self.finish(i, Err(JobError::DeadlineMissed), env);
            return Some(done(true));
        }
        let pipeline = match env.pipelines.runnable(pipeline_id) {
            Ok(p) => p,
            Err(e) => {
                self.finish(i, Err(JobError::Pipeline(e)), env);
                return Some(done(true));
            }
        };
        let steps = pipeline.steps();
        // By reference: a stage step is some 50 bytes.
        let Some(step) = steps.get(usize::from(next)) else {
            self.finish(i, Err(JobError::Pipeline(PipelineError::NoModel)), env);
            return Some(done(true));
        };
        let last = usize::from(next) + 1 == steps.len();
        let device = match (step, placed) {
            (Step::Model(_), Some(Ok(d))) if CPU => d,
            (Step::Model(_), Some(Err(e))) => {
                self.finish(i, Err(e), env);
                return Some(done(true));
            }
            // Not placed, or by a scheduler without a CPU device: the NPU
            // (`stage_model` refuses a model that does not allow it); or
            // not a model step.
            _ => Device::Npu,
        };
        // Overlap: the NPU, and a sliced CPU device, start asynchronously;
        // a CPU device that is not sliced runs the step here, to the end.
        let start_async = match (self.overlap, step, device) {
            (true, Step::Model(_), Device::Npu) => true,
            (true, Step::Model(_), Device::CpuInterpreter) => {
                CPU && env.cpu.as_deref().is_some_and(|c| c.capabilities().sliced)
            }
            _ => false,
        };
        let at = StepAt {
            next,
            current,
            meta,
            last,
        };
        let into = self.target(i, current, last);
        // Split this slot's region into the current tensor and the output.
        let base = self.buffer_range(i, 0).start;
        let len = self.buffer_len;
        let region = &mut self.work[base..base + 2 * len];
        let (first, second) = region.split_at_mut(len);
        let (input_bytes, work_out): (&[u8], &mut [u8]) = match current {
            None => (input_data, first),
            Some(0) => (&first[..meta.byte_len()], second),
            Some(_) => (&second[..meta.byte_len()], first),
        };
        let output = match self.slots[i].output.as_deref_mut() {
            Some(o) if into == EXTERNAL => o,
            _ => work_out,
        };
        // Step times are measured, not stamped: read the clock afresh (a
        // clock that keeps one reading per turn would say 0 µs).
        env.clock.new_turn();
        let started = env.clock.now_us();
        let input = TensorRef::wrap(meta, input_bytes).map_err(|_| JobError::BufferTooSmall {
            needed: meta.byte_len(),
            available: len,
        });
        if let (true, &Step::Model(handle)) = (start_async, step) {
            let sliced = CPU && device == Device::CpuInterpreter;
            let begun = input.and_then(|input| {
                if sliced {
                    start_on_cpu(handle, &input, output.len(), env)
                } else {
                    start_model(handle, &input, output.len(), env)
                }
            });
            return match begun {
                Ok(out_meta) => {
                    self.set_state(
                        i,
                        State::OnDevice {
                            at,
                            out_meta,
                            started_us: started,
                        },
                    );
                    // Starting a sliced step (load, plan, input copy) is
                    // already some of its CPU time.
                    let busy_us = if sliced {
                        env.clock.new_turn();
                        self.mark_late();
                        env.clock.now_us().saturating_sub(started)
                    } else {
                        0
                    };
                    let run = DeviceRun {
                        model: handle,
                        started_us: started,
                        sliced,
                        busy_us,
                        seen_busy_us: started,
                        late: false,
                    };
                    if device == Device::Npu && busy[npu] {
                        // In the NPU's queue: its time starts when the
                        // running step is collected.
                        self.queued = Some(i);
                        self.queued_run = Some(run);
                    } else {
                        self.on_device[device.index()] = Some(i);
                        self.runs[device.index()] = Some(run);
                    }
                    Some(done(false))
                }
                Err(e) => {
                    self.finish(i, Err(e), env);
                    Some(done(true))
                }
            };
        }
        let result = input.and_then(|input| run_step(step, next, device, &input, output, env));
        self.mark_late();
        env.clock.new_turn();
        let elapsed = env.clock.now_us().saturating_sub(started);
        let profile = &mut self.slots[i].profile;
        match (step, device) {
            (Step::Pre(_), _) => profile.preprocess_us += elapsed,
            (Step::Model(_), Device::Npu) => profile.npu_us += elapsed,
            (Step::Model(_), Device::CpuInterpreter) => profile.interpreter_us += elapsed,
            (Step::Post(_), _) => profile.postprocess_us += elapsed,
        }
        if let (Step::Model(handle), Ok(_)) = (step, &result) {
            // The same figure as the profile's: the prediction learns it.
            let _ = env.registry.record_service_time(*handle, device, elapsed);
        }
        Some(self.advance(
            Collected {
                i,
                at,
                into,
                result,
            },
            env,
        ))
    }

    /// Whether the NPU's queued step belongs to a job that is not
    /// REALTIME and the device gave it back: the job then waits for the
    /// NPU again, from the same step, and the queue is free.
    fn overtake_queued<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> bool {
        let Some(q) = self.queued else {
            return false;
        };
        let realtime = self.slots[q]
            .request
            .as_ref()
            .is_some_and(|r| r.priority == Priority::RealTime);
        if realtime || !env.npu.withdraw() {
            return false;
        }
        self.queued = None;
        self.queued_run = None;
        self.requeue(q);
        true
    }

    /// Job `i`, whose model step was on a device that gave it back (a
    /// withdrawn or dropped queue entry), waits to run that step again.
    fn requeue(&mut self, i: usize) {
        if let State::OnDevice { at, .. } = self.slots[i].state {
            self.set_state(
                i,
                State::Running {
                    next: at.next,
                    current: at.current,
                    meta: at.meta,
                },
            );
        }
    }

    /// The NPU's running step was collected: the queued one, which the
    /// device started as that one ended, is now the running step, timed
    /// from `now_us`; or, when the device dropped it with a fault, its job
    /// waits to run the step again.
    fn promote(&mut self, dropped: bool, now_us: u64) {
        let Some(mut run) = self.queued_run.take() else {
            return;
        };
        let queued = self.queued.take();
        let npu = Device::Npu.index();
        if dropped {
            if let Some(q) = queued {
                self.requeue(q);
            }
            return;
        }
        run.started_us = now_us;
        run.seen_busy_us = now_us;
        run.late = false;
        self.runs[npu] = Some(run);
        self.on_device[npu] = queued;
        if let Some(State::OnDevice { started_us, .. }) = queued.map(|q| &mut self.slots[q].state) {
            *started_us = now_us;
        }
    }

    /// Work held the scheduler's thread: a device that runs by itself may
    /// have finished at any moment of it.
    fn mark_late(&mut self) {
        for run in self.runs.iter_mut().flatten().filter(|r| !r.sliced) {
            run.late = true;
        }
    }

    /// Overlap mode: let `device` finish what it can (a sliced device runs
    /// one slice) and, if the job on it is done, take its output. Returns
    /// the collected step and whether a slice ran.
    fn collect<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        device: Device,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> (Option<Collected>, bool) {
        let Env {
            registry,
            npu,
            cpu,
            clock,
            ..
        } = env;
        match device {
            Device::Npu => self.collect_from(device, &mut **npu, registry, *clock),
            Device::CpuInterpreter => match cpu.as_deref_mut() {
                Some(cpu) if CPU => self.collect_from(device, cpu, registry, *clock),
                _ => (None, false),
            },
        }
    }

    /// [`Scheduler::collect`] from `dev`, the device `device` names.
    fn collect_from<D: NpuDevice + ?Sized, C: Clock, const M: usize>(
        &mut self,
        device: Device,
        dev: &mut D,
        registry: &mut Registry<M>,
        clock: &C,
    ) -> (Option<Collected>, bool) {
        let k = device.index();
        let mut sliced = false;
        // The device's runs this scheduler started and has not collected:
        // the running step's, and (NPU) the one queued behind it. Fewer in
        // flight means the running one is done, although a device with a
        // queue stays busy with the next; it is not polled again before
        // that output is taken (a poll may complete the next run, and the
        // device keeps one output).
        let queued = u8::from(device == Device::Npu && self.queued_run.is_some());
        let ours = u8::from(self.runs[k].is_some()).max(1) + queued;
        if dev.in_flight() >= ours {
            let orphan = self.on_device[k].is_none();
            match self.runs[k] {
                // A cancelled job's sliced step: stop it, or (a device
                // that cannot) run it out now, its result dropped.
                Some(run) if run.sliced && orphan => {
                    if !dev.abort() {
                        while dev.state() == NpuState::Busy {
                            dev.poll();
                        }
                    }
                }
                Some(run) if run.sliced => {
                    // One slice, timed: the step's CPU time is its slices'.
                    clock.new_turn();
                    let start = clock.now_us();
                    dev.poll();
                    clock.new_turn();
                    let spent = clock.now_us().saturating_sub(start);
                    if let Some(run) = &mut self.runs[k] {
                        run.busy_us = run.busy_us.saturating_add(spent);
                    }
                    self.slice_us = self.slice_us.max(spent);
                    self.mark_late();
                    sliced = true;
                }
                _ => {
                    dev.poll();
                }
            }
            if dev.in_flight() >= ours {
                if let Some(run) = &mut self.runs[k] {
                    run.seen_busy_us = clock.now_us();
                    run.late = false;
                }
                return (None, sliced);
            }
        }
        // The device is done: its step in flight (if any) with it, and the
        // queued step runs now (or, dropped with a fault, waits again).
        let run = self.runs[k].take();
        let head = self.on_device[k].take();
        if queued > 0 {
            self.promote(dev.state() == NpuState::Error, clock.now_us());
        }
        let Some(i) = head else {
            // A cancelled job's invoke failed: leave the device usable.
            if dev.state() == NpuState::Error {
                let _ = dev.clear_error();
            }
            return (None, sliced);
        };
        let State::OnDevice {
            at,
            out_meta,
            started_us,
        } = self.slots[i].state
        else {
            return (None, sliced);
        };
        let now = clock.now_us();
        let profile = &mut self.slots[i].profile;
        match (device, run) {
            (Device::CpuInterpreter, Some(r)) if r.sliced => profile.interpreter_us += r.busy_us,
            (Device::CpuInterpreter, _) => {
                profile.interpreter_us += now.saturating_sub(started_us);
            }
            (Device::Npu, _) => profile.npu_us += now.saturating_sub(started_us),
        }
        let into = self.target(i, at.current, at.last);
        let result = if dev.state() == NpuState::Error {
            let _ = dev.clear_error();
            Err(JobError::Npu(NpuError::DeviceFault))
        } else {
            let needed = out_meta.byte_len();
            let output: &mut [u8] = if into == EXTERNAL {
                // `target` names EXTERNAL only for a job with an output.
                self.slots[i].output.as_deref_mut().unwrap_or(&mut [])
            } else {
                let range = self.buffer_range(i, into);
                &mut self.work[range]
            };
            match output.get_mut(..needed) {
                Some(output) => dev
                    .get_output(output)
                    .map(|_| out_meta)
                    .map_err(JobError::Npu),
                None => Err(JobError::BufferTooSmall {
                    needed,
                    available: output.len(),
                }),
            }
        };
        // The step's service time: a sliced step's slices, else the
        // device's own measure of its run, else the time to collection.
        if let (Ok(_), Some(run)) = (&result, run) {
            let _ = match (run.sliced, dev.last_run()) {
                (true, _) => registry.record_service_time(run.model, device, run.busy_us),
                (false, Some(measured)) => {
                    registry.record_service_time(run.model, device, measured.latency_us)
                }
                (false, None) => registry.record_service_sample(run.model, device, |estimate| {
                    run.sample_us(now, estimate)
                }),
            };
        }
        (
            Some(Collected {
                i,
                at,
                into,
                result,
            }),
            sliced,
        )
    }

    /// A step ended: finish the job or make it ready for its next step.
    fn advance<N, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        step: Collected,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> StepOutcome {
        let Collected {
            i,
            at,
            into,
            result,
        } = step;
        let StepAt {
            next,
            current,
            meta,
            last,
        } = at;
        let job = self.id_of(i);
        let done = |finished| StepOutcome::Ran {
            job,
            step: next,
            finished,
        };
        match result {
            Err(e) => {
                self.finish(i, Err(e), env);
                done(true)
            }
            Ok(out_meta) => {
                let profile = &mut self.slots[i].profile;
                let in_use = out_meta.byte_len()
                    + if current.is_some() {
                        meta.byte_len()
                    } else {
                        0
                    };
                profile.memory_peak = profile.memory_peak.max(in_use);
                if last {
                    self.finish(i, Ok((into, out_meta)), env);
                    done(true)
                } else {
                    self.set_state(
                        i,
                        State::Running {
                            next: next + 1,
                            current: Some(into),
                            meta: out_meta,
                        },
                    );
                    done(false)
                }
            }
        }
    }

    /// Steps until nothing is runnable; returns the number of steps.
    pub fn run_until_idle<
        N: NpuDevice,
        C: Clock,
        const M: usize,
        const P: usize,
        const S: usize,
    >(
        &mut self,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> usize {
        let mut n = 0;
        while self.step(env) != StepOutcome::Idle {
            n += 1;
        }
        n
    }

    /// Drives the scheduler until `id` finishes or `timeout_us` passes on
    /// the clock (checked between steps); returns the output descriptor.
    /// The result stays claimable with [`Scheduler::get_result`].
    ///
    /// # Errors
    ///
    /// [`SchedError::TimedOut`] (the job continues); [`SchedError::Job`]
    /// when it failed; id errors (a job with a callback is reclaimed on
    /// completion, so its id turns stale).
    pub fn wait<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        id: JobId,
        timeout_us: u64,
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> Result<TensorMeta, SchedError> {
        let start = env.clock.now_us();
        loop {
            match self.status(id)? {
                JobStatus::Done(meta) => return Ok(meta),
                JobStatus::Failed(e) => return Err(SchedError::Job(e)),
                _ => {}
            }
            if env.clock.now_us().saturating_sub(start) >= timeout_us {
                return Err(SchedError::TimedOut);
            }
            if self.step(env) == StepOutcome::Idle {
                return Err(SchedError::TimedOut);
            }
        }
    }

    /// The output of a finished job, borrowed; the job stays claimable.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::NotFinished`]; [`SchedError::Job`].
    pub fn output(&self, id: JobId) -> Result<TensorRef<'_>, SchedError> {
        let i = self.index(id)?;
        match self.slots[i].state {
            State::Finished(Ok((buffer, meta))) => TensorRef::wrap(meta, self.buffer(i, buffer))
                .map_err(|_| {
                    SchedError::Job(JobError::BufferTooSmall {
                        needed: meta.byte_len(),
                        available: self.buffer_len,
                    })
                }),
            State::Finished(Err(e)) => Err(SchedError::Job(e)),
            _ => Err(SchedError::NotFinished),
        }
    }

    /// Copies a finished job's output into `out`, reclaims the job, and
    /// returns the output descriptor and length. A failed job is reclaimed
    /// and its error returned.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::NotFinished`];
    /// [`SchedError::OutputTooSmall`] (the job stays claimable);
    /// [`SchedError::Job`].
    pub fn get_result(
        &mut self,
        id: JobId,
        out: &mut [u8],
    ) -> Result<(TensorMeta, usize), SchedError> {
        let i = self.index(id)?;
        match self.slots[i].state {
            State::Finished(Ok((buffer, meta))) => {
                let n = meta.byte_len();
                if out.len() < n {
                    return Err(SchedError::OutputTooSmall {
                        needed: n,
                        actual: out.len(),
                    });
                }
                out[..n].copy_from_slice(&self.buffer(i, buffer)[..n]);
                self.free(i);
                Ok((meta, n))
            }
            State::Finished(Err(e)) => {
                self.free(i);
                Err(SchedError::Job(e))
            }
            _ => Err(SchedError::NotFinished),
        }
    }

    /// Reclaims a finished job whose output went to the caller's buffer
    /// ([`Scheduler::submit_into`]) and returns the output descriptor and length (nothing is copied; a
    /// job without one is reclaimed the same way). A failed job is
    /// reclaimed and its error returned.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::NotFinished`]; [`SchedError::Job`].
    pub fn take_result(&mut self, id: JobId) -> Result<(TensorMeta, usize), SchedError> {
        let i = self.index(id)?;
        match self.slots[i].state {
            State::Finished(Ok((_, meta))) => {
                self.free(i);
                Ok((meta, meta.byte_len()))
            }
            State::Finished(Err(e)) => {
                self.free(i);
                Err(SchedError::Job(e))
            }
            _ => Err(SchedError::NotFinished),
        }
    }

    /// Reclaims a finished job without reading it.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::NotFinished`].
    pub fn release(&mut self, id: JobId) -> Result<(), SchedError> {
        let i = self.index(id)?;
        if matches!(self.slots[i].state, State::Finished(_)) {
            self.free(i);
            Ok(())
        } else {
            Err(SchedError::NotFinished)
        }
    }

    /// Cancels a queued or running job (between steps, so at once); its
    /// callback, if any, sees [`JobError::Cancelled`]. The job is reclaimed.
    ///
    /// # Errors
    ///
    /// Id errors; [`SchedError::AlreadyFinished`].
    pub fn cancel(&mut self, id: JobId) -> Result<(), SchedError> {
        let i = self.index(id)?;
        if matches!(self.slots[i].state, State::Finished(_)) {
            return Err(SchedError::AlreadyFinished);
        }
        if let Some((f, context)) = self.slots[i].request.as_ref().and_then(|r| r.callback) {
            f(id, Err(JobError::Cancelled), context);
        }
        self.free(i);
        Ok(())
    }

    /// Submits, runs to completion and copies the output into `out`
    /// (any callback in `request` is ignored).
    ///
    /// # Errors
    ///
    /// As [`Scheduler::submit`] and [`Scheduler::get_result`].
    pub fn run_sync<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
        &mut self,
        mut request: JobRequest<'a>,
        out: &mut [u8],
        env: &mut Env<'_, N, C, M, P, S>,
    ) -> Result<(TensorMeta, usize), SchedError> {
        request.callback = None;
        let id = self.submit(request, env.pipelines, env.clock)?;
        match self.wait(id, u64::MAX, env) {
            Ok(_) | Err(SchedError::Job(_)) => self.get_result(id, out),
            Err(e) => {
                let _ = self.cancel(id);
                Err(e)
            }
        }
    }

    /// Jobs queued or running.
    pub fn pending(&self) -> usize {
        self.active
    }

    /// Whether a step would find nothing to do: no job queued, running or
    /// on a device, and no device run left to reap (a cancelled job's).
    pub fn is_idle(&self) -> bool {
        self.active == 0 && !self.feed_npu && self.runs.iter().all(Option::is_none)
    }

    /// Whether a job not yet reclaimed was submitted to `pipeline`, or a
    /// device still runs `model` (a cancelled job's step): while either
    /// holds, the pipeline and the model must stay (a hot swap retires the
    /// old version only after).
    pub fn uses(&self, pipeline: PipelineId, model: ModelHandle) -> bool {
        self.slots.iter().any(|s| {
            !matches!(s.state, State::Free)
                && s.request.as_ref().is_some_and(|r| r.pipeline == pipeline)
        }) || self
            .runs
            .iter()
            .chain(&[self.queued_run])
            .flatten()
            .any(|r| r.model == model)
    }
}

/// Load `handle` and stage `input` on the device; returns the output
/// descriptor (checked to fit `output_len`).
fn stage_model<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
    handle: crate::registry::ModelHandle,
    input: &TensorRef<'_>,
    output_len: usize,
    env: &mut Env<'_, N, C, M, P, S>,
) -> Result<TensorMeta, JobError> {
    // One handle check for both: the model's figures, and whether it is
    // already resident (then `Registry::load` would do nothing).
    let (info, resident) = env
        .registry
        .info_resident(handle, &*env.npu)
        .map_err(JobError::Registry)?;
    if !info.devices.contains(Device::Npu) {
        return Err(JobError::NoDevice {
            allowed: info.devices,
            present: if env.cpu.is_some() {
                DeviceMask::ALL
            } else {
                DeviceMask::NPU
            },
        });
    }
    let out_meta = info.output;
    let needed = out_meta.byte_len();
    if output_len < needed {
        return Err(JobError::BufferTooSmall {
            needed,
            available: output_len,
        });
    }
    if !resident {
        env.registry
            .load(handle, env.npu)
            .map_err(JobError::Registry)?;
    }
    env.npu.set_input(input.data()).map_err(JobError::Npu)?;
    Ok(out_meta)
}

/// Overlap mode: stage the model step and start it on the device.
fn start_model<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
    handle: crate::registry::ModelHandle,
    input: &TensorRef<'_>,
    output_len: usize,
    env: &mut Env<'_, N, C, M, P, S>,
) -> Result<TensorMeta, JobError> {
    let out_meta = stage_model(handle, input, output_len, env)?;
    env.npu
        .invoke_async(no_callback, 0)
        .map_err(JobError::Npu)?;
    Ok(out_meta)
}

/// Overlap mode with a sliced CPU device: stage the model step and start
/// it there (its slices run in the scheduler's polls).
#[inline(never)]
fn start_on_cpu<N, C: Clock, const M: usize, const P: usize, const S: usize>(
    handle: crate::registry::ModelHandle,
    input: &TensorRef<'_>,
    output_len: usize,
    env: &mut Env<'_, N, C, M, P, S>,
) -> Result<TensorMeta, JobError> {
    let (out_meta, cpu) = stage_on_cpu(handle, input, output_len, env)?;
    if let Err(e) = cpu.invoke_async(no_callback, 0) {
        let _ = cpu.clear_error();
        return Err(JobError::Npu(e));
    }
    Ok(out_meta)
}

/// A model step on the CPU interpreter, start to end. Out of line: the
/// NPU's path through `run_step` stays as small as it was.
#[inline(never)]
fn run_on_cpu<N, C: Clock, const M: usize, const P: usize, const S: usize>(
    handle: crate::registry::ModelHandle,
    input: &TensorRef<'_>,
    output: &mut [u8],
    env: &mut Env<'_, N, C, M, P, S>,
) -> Result<TensorMeta, JobError> {
    let (out_meta, cpu) = stage_on_cpu(handle, input, output.len(), env)?;
    if let Err(e) = cpu.invoke() {
        let _ = cpu.clear_error();
        return Err(JobError::Npu(e));
    }
    cpu.get_output(&mut output[..out_meta.byte_len()])
        .map_err(JobError::Npu)?;
    Ok(out_meta)
}

/// CPU interpreter: load `handle` if it is not resident and stage `input`;
/// returns the output descriptor (checked to fit `output_len`).
fn stage_on_cpu<'x, N, C: Clock, const M: usize, const P: usize, const S: usize>(
    handle: crate::registry::ModelHandle,
    input: &TensorRef<'_>,
    output_len: usize,
    env: &'x mut Env<'_, N, C, M, P, S>,
) -> Result<(TensorMeta, &'x mut dyn NpuDevice), JobError> {
    let model = env
        .registry
        .device_model(handle)
        .map_err(JobError::Registry)?;
    let needed = model.output.byte_len();
    if output_len < needed {
        return Err(JobError::BufferTooSmall {
            needed,
            available: output_len,
        });
    }
    let Some(cpu) = env.cpu.as_deref_mut() else {
        return Err(JobError::NoDevice {
            allowed: DeviceMask::CPU_INTERPRETER,
            present: DeviceMask::NPU,
        });
    };
    if cpu.loaded_model() != Some(model.id) {
        cpu.load_model(&model).map_err(JobError::Npu)?;
    }
    cpu.set_input(input.data()).map_err(JobError::Npu)?;
    Ok((model.output, cpu))
}

fn run_step<N: NpuDevice, C: Clock, const M: usize, const P: usize, const S: usize>(
    step: &Step,
    index: u8,
    device: Device,
    input: &TensorRef<'_>,
    output: &mut [u8],
    env: &mut Env<'_, N, C, M, P, S>,
) -> Result<TensorMeta, JobError> {
    match step {
        Step::Pre(stage) | Step::Post(stage) => {
            (stage.func)(input, output, &stage.config).map_err(|error| match error {
                ProcessError::OutputTooSmall { needed, .. } => JobError::BufferTooSmall {
                    needed,
                    available: output.len(),
                },
                error => JobError::Stage { step: index, error },
            })
        }
        Step::Model(handle) if device == Device::CpuInterpreter => {
            run_on_cpu(*handle, input, output, env)
        }
        Step::Model(handle) => {
            let out_meta = stage_model(*handle, input, output.len(), env)?;
            let needed = out_meta.byte_len();
            if let Err(e) = env.npu.invoke() {
                // Leave the device usable for the next job.
                let _ = env.npu.clear_error();
                return Err(JobError::Npu(e));
            }
            env.npu
                .get_output(&mut output[..needed])
                .map_err(JobError::Npu)?;
            Ok(out_meta)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::DType;
    use crate::npu::{stub_output, StubNpu, FAIL_MARKER};
    use crate::pipeline::Stage;
    use crate::process::stages::{StageConfig, StageFn};
    use crate::registry::{ModelDesc, ModelHandle};
    use crate::time::FakeClock;
    use core::cell::{Cell, RefCell};
    use heapless::Vec;

    const STAGE_US: u64 = 200;
    const NPU_US: u64 = 1000;
    const SEED: u32 = 7;

    type Calls = Vec<(JobId, Result<[u8; 4], JobError>, usize), 8>;

    std::thread_local! {
        static STAGE_CLOCK: Cell<Option<&'static FakeClock>> = const { Cell::new(None) };
        static CALLS: RefCell<Calls> = const { RefCell::new(Vec::new()) };
    }

    /// A clock shared by the NPU, the scheduler and the test stages of this thread.
    fn new_clock() -> &'static FakeClock {
        let c: &'static FakeClock = std::boxed::Box::leak(std::boxed::Box::new(FakeClock::new(0)));
        STAGE_CLOCK.with(|s| s.set(Some(c)));
        c
    }

    /// Copies its input and takes `STAGE_US` of (fake) time.
    fn slow_identity(
        input: &TensorRef<'_>,
        out: &mut [u8],
        _: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        if let Some(c) = STAGE_CLOCK.with(Cell::get) {
            c.advance(STAGE_US);
        }
        let n = input.data().len();
        if out.len() < n {
            return Err(ProcessError::OutputTooSmall {
                needed: n,
                actual: out.len(),
            });
        }
        out[..n].copy_from_slice(input.data());
        Ok(input.meta())
    }

    /// Adds 1 to every byte (makes the stage's effect visible).
    fn increment(
        input: &TensorRef<'_>,
        out: &mut [u8],
        _: &StageConfig,
    ) -> Result<TensorMeta, ProcessError> {
        for (o, &i) in out.iter_mut().zip(input.data()) {
            *o = i.wrapping_add(1);
        }
        Ok(input.meta())
    }

    fn stage(func: StageFn) -> Stage {
        Stage {
            name: "test",
            func,
            config: StageConfig::None,
        }
    }

    fn record(id: JobId, result: Result<TensorRef<'_>, JobError>, context: usize) {
        let result = result.map(|t| {
            let mut b = [0u8; 4];
            b.copy_from_slice(&t.data()[..4]);
            b
        });
        CALLS.with(|c| c.borrow_mut().push((id, result, context)).unwrap());
    }

    struct Rig {
        clock: &'static FakeClock,
        registry: Registry<4>,
        npu: StubNpu<&'static FakeClock, 64, 16>,
        pool: PipelinePool<4, 8>,
        model: ModelHandle,
        profiler: Profiler,
    }

    impl Rig {
        fn new() -> Rig {
            let clock = new_clock();
            let mut registry = Registry::new();
            let model = registry
                .register(&ModelDesc {
                    name: "m",
                    version: 1,
                    input: TensorMeta::vector(DType::Int8, 8).unwrap(),
                    output: TensorMeta::vector(DType::Int8, 4).unwrap(),
                    flash_offset: 0,
                    flash_size: 0,
                    sram_needed: 0,
                    crc32: 0,
                    devices: crate::device::DeviceMask::NPU,
                    image: &[],
                })
                .unwrap();
            let mut npu = StubNpu::new(clock, SEED);
            npu.init().unwrap();
            npu.set_latency_us(NPU_US);
            let mut profiler = Profiler::new();
            profiler.enable(clock);
            Rig {
                clock,
                registry,
                npu,
                pool: PipelinePool::new(),
                model,
                profiler,
            }
        }

        /// `pre` stages, the model, then `post` stages.
        fn pipeline(&mut self, name: &str, pre: &[StageFn], post: &[StageFn]) -> PipelineId {
            let id = self.pool.create(name).unwrap();
            for f in pre {
                self.pool.add_preprocess(id, stage(*f)).unwrap();
            }
            self.pool.add_model(id, self.model).unwrap();
            for f in post {
                self.pool.add_postprocess(id, stage(*f)).unwrap();
            }
            self.pool.build(id).unwrap();
            id
        }

        /// A scheduler over `work` in overlap mode with one job of `p` on
        /// `data` submitted.
        fn overlapped<'a>(
            &self,
            work: &'a mut [u8],
            p: PipelineId,
            data: &'a [u8; 8],
        ) -> (Scheduler<'a, 2>, JobId) {
            let mut sched = Scheduler::new(work);
            sched.set_overlap(true).unwrap();
            let id = sched
                .submit(JobRequest::new(p, input(data)), &self.pool, self.clock)
                .unwrap();
            (sched, id)
        }

        fn env(&mut self) -> Env<'_, StubNpu<&'static FakeClock, 64, 16>, FakeClock, 4, 4, 8> {
            Env {
                registry: &mut self.registry,
                npu: &mut self.npu,
                cpu: None,
                pipelines: &self.pool,
                clock: self.clock,
                profiler: Some(&mut self.profiler),
            }
        }
    }

    /// A scheduler over `work` in overlap mode, with no job.
    fn overlapped_empty(work: &mut [u8]) -> Scheduler<'_, 2> {
        let mut sched = Scheduler::new(work);
        sched.set_overlap(true).unwrap();
        sched
    }

    fn input(bytes: &[u8; 8]) -> TensorRef<'_> {
        TensorRef::wrap(TensorMeta::vector(DType::Int8, 8).unwrap(), bytes).unwrap()
    }

    fn expected(model: ModelHandle, input: &[u8]) -> [u8; 4] {
        let mut out = [0u8; 4];
        stub_output(SEED, model.raw(), input, &mut out);
        out
    }

    /// A finished job's 4-byte output, claimed.
    fn claim<const J: usize>(sched: &mut Scheduler<'_, J>, id: JobId) -> [u8; 4] {
        let mut out = [0u8; 4];
        sched.get_result(id, &mut out).unwrap();
        out
    }

    fn ran(job: JobId, step: u8, finished: bool) -> StepOutcome {
        StepOutcome::Ran {
            job,
            step,
            finished,
        }
    }

    fn with(request: JobRequest<'_>, priority: Priority, preemptible: bool) -> JobRequest<'_> {
        JobRequest {
            priority,
            preemptible,
            ..request
        }
    }

    #[test]
    fn run_sync_gives_the_stub_output_through_every_stage() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[increment], &[increment]);
        let data = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        assert_eq!(sched.buffer_len(), 64);
        let mut out = [0u8; 16];
        let (meta, n) = sched
            .run_sync(JobRequest::new(p, input(&data)), &mut out, &mut rig.env())
            .unwrap();
        assert_eq!((meta.dtype, n), (DType::Int8, 4));
        let mut e = expected(rig.model, &[2, 3, 4, 5, 6, 7, 8, 9]);
        e.iter_mut().for_each(|b| *b = b.wrapping_add(1));
        assert_eq!(&out[..4], &e);
        let last = rig.profiler.last().unwrap();
        assert_eq!((last.npu_us, last.total_us), (NPU_US, NPU_US));
        // The model step holds its 8-byte input and 4-byte output buffers.
        assert_eq!(last.memory_peak, 12);
    }

    #[test]
    fn step_times_are_measured_under_a_turn_clock() {
        // A clock that keeps one reading per turn still times every step.
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[slow_identity], &[slow_identity]);
        let turn = crate::time::TurnClock::new(rig.clock);
        let data = [1u8; 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        let mut out = [0u8; 16];
        let mut env = Env {
            registry: &mut rig.registry,
            npu: &mut rig.npu,
            cpu: None,
            pipelines: &rig.pool,
            clock: &turn,
            profiler: Some(&mut rig.profiler),
        };
        sched
            .run_sync(JobRequest::new(p, input(&data)), &mut out, &mut env)
            .unwrap();
        let last = rig.profiler.last().unwrap();
        assert_eq!(
            (last.preprocess_us, last.npu_us, last.postprocess_us),
            (STAGE_US, NPU_US, STAGE_US)
        );
        assert_eq!(last.total_us, 2 * STAGE_US + NPU_US);
    }

    #[test]
    fn overlap_runs_the_model_on_the_device_while_the_caller_steps() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[increment]);
        let data = [1u8, 2, 3, 4, 5, 6, 7, 8];
        let mut work = [0u8; 256];
        let (mut sched, id) = rig.overlapped(&mut work, p, &data);
        // The model step starts the device and returns at once.
        assert_eq!(sched.step(&mut rig.env()), ran(id, 0, false));
        assert_eq!(rig.npu.state(), NpuState::Busy);
        assert_eq!(sched.set_overlap(false), Err(SchedError::InvalidArgument));
        assert_eq!(sched.status(id), Ok(JobStatus::Running { next_step: 0 }));
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        rig.clock.advance(NPU_US);
        // Collected (the device's next job would start first), then the
        // post stage runs at the next step.
        assert_eq!(sched.step(&mut rig.env()), ran(id, 0, false));
        assert_eq!(rig.npu.state(), NpuState::Idle);
        assert_eq!(sched.step(&mut rig.env()), ran(id, 1, true));
        let mut e = expected(rig.model, &data);
        e.iter_mut().for_each(|b| *b = b.wrapping_add(1));
        assert_eq!(claim(&mut sched, id), e);
        assert_eq!(rig.profiler.last().unwrap().npu_us, NPU_US);
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Idle);
    }

    #[test]
    fn overlap_collects_a_device_done_at_once_in_the_same_step() {
        let mut rig = Rig::new();
        rig.npu.set_latency_us(0);
        let p = rig.pipeline("p", &[], &[]);
        let data = [7u8; 8];
        let mut work = [0u8; 256];
        let (mut sched, id) = rig.overlapped(&mut work, p, &data);
        // Started, done and collected in one call: the job is finished
        // and the device free, without a second step.
        assert_eq!(sched.step(&mut rig.env()), ran(id, 0, true));
        assert_eq!(rig.npu.state(), NpuState::Idle);
        assert_eq!(claim(&mut sched, id), expected(rig.model, &data));
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Idle);
    }

    #[test]
    fn submit_into_writes_the_output_in_place_sync_and_overlapped() {
        for overlap in [false, true] {
            let mut rig = Rig::new();
            let p = rig.pipeline("p", &[increment], &[]);
            let data = [4u8; 8];
            let mut work = [0u8; 256];
            let mut out = [0u8; 4];
            let mut small = [0u8; 3];
            {
                let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
                sched.set_overlap(overlap).unwrap();
                let id = sched
                    .submit_into(
                        JobRequest::new(p, input(&data)),
                        &mut out,
                        &rig.pool,
                        rig.clock,
                    )
                    .unwrap();
                let short = sched
                    .submit_into(
                        JobRequest::new(p, input(&data)),
                        &mut small,
                        &rig.pool,
                        rig.clock,
                    )
                    .unwrap();
                for _ in 0..8 {
                    sched.step(&mut rig.env());
                    rig.clock.advance(NPU_US);
                }
                assert_eq!(sched.output(id).unwrap().data().len(), 4);
                assert_eq!(sched.take_result(id).map(|(_, n)| n), Ok(4));
                assert_eq!(sched.take_result(id), Err(SchedError::StaleJob));
                assert_eq!(
                    sched.take_result(short),
                    Err(SchedError::Job(JobError::BufferTooSmall {
                        needed: 4,
                        available: 3
                    }))
                );
            }
            assert_eq!(out, expected(rig.model, &[5u8; 8]), "overlap {overlap}");
            // The model's output never touched the work buffer.
            let e = expected(rig.model, &[5u8; 8]);
            assert!(!work.windows(4).any(|w| w == e), "overlap {overlap}");
        }
    }

    #[test]
    fn a_job_alone_runs_at_once_on_an_instant_device_and_waits_on_a_busy_one() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let data = [7u8; 8];
        let mut work = [0u8; 256];
        let mut out = [0u8; 4];
        // The NPU is done as it starts: the job never takes a slot.
        rig.npu.set_latency_us(0);
        {
            let mut sched = overlapped_empty(&mut work);
            let done =
                sched.submit_alone(JobRequest::new(p, input(&data)), &mut out, &mut rig.env());
            assert_eq!(
                done,
                Ok(Alone::Done(Ok(TensorMeta::vector(DType::Int8, 4).unwrap())))
            );
            assert!(sched.is_idle());
            assert_eq!(sched.step(&mut rig.env()), StepOutcome::Idle);
        }
        assert_eq!(out, expected(rig.model, &data));
        // Recorded as a step would have: one profile, one service sample.
        assert_eq!(rig.profiler.summary().count, 1);
        let service = rig.registry.service_time(rig.model, Device::Npu).unwrap();
        assert_eq!(service.samples(), 1);

        // A device still busy after one poll: the job is on it, and a step
        // collects it as if a step had started it.
        rig.npu.set_latency_us(NPU_US);
        let mut out = [0u8; 4];
        let mut work = [0u8; 256];
        let mut sched = overlapped_empty(&mut work);
        let Ok(Alone::Submitted(id)) =
            sched.submit_alone(JobRequest::new(p, input(&data)), &mut out, &mut rig.env())
        else {
            panic!("a busy device keeps the job");
        };
        assert!(matches!(
            sched.status(id),
            Ok(JobStatus::Running { next_step: 0 })
        ));
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        rig.clock.advance(NPU_US);
        assert!(matches!(
            sched.step(&mut rig.env()),
            StepOutcome::Ran { finished: true, .. }
        ));
        assert_eq!(sched.take_result(id).map(|(_, n)| n), Ok(4));
        assert!(sched.is_idle());
        assert_eq!(rig.profiler.summary().count, 2);

        // Not alone (another job queued), or a pipeline of more than the
        // model: submitted as `submit_into` does, run by steps.
        let q = rig.pipeline("q", &[increment], &[]);
        let (mut out_a, mut out_b) = ([0u8; 4], [0u8; 4]);
        let queued = sched
            .submit(JobRequest::new(p, input(&data)), &rig.pool, rig.clock)
            .unwrap();
        let a = sched.submit_alone(JobRequest::new(p, input(&data)), &mut out_a, &mut rig.env());
        assert!(matches!(a, Ok(Alone::Submitted(_))));
        assert!(matches!(sched.status(queued), Ok(JobStatus::Queued)));
        for _ in 0..8 {
            sched.step(&mut rig.env());
            rig.clock.advance(NPU_US);
        }
        assert!(sched.is_idle());
        let mut work2 = [0u8; 256];
        let mut alone = overlapped_empty(&mut work2);
        let b = alone.submit_alone(JobRequest::new(q, input(&data)), &mut out_b, &mut rig.env());
        let Ok(Alone::Submitted(b)) = b else {
            panic!("a two-step pipeline goes through the steps");
        };
        assert!(matches!(alone.status(b), Ok(JobStatus::Queued)));
    }

    #[test]
    fn a_job_alone_that_cannot_start_fails_at_once() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let data = [1u8; 8];
        let mut work = [0u8; 256];
        let mut short = [0u8; 3];
        let mut sched = overlapped_empty(&mut work);
        let failed =
            sched.submit_alone(JobRequest::new(p, input(&data)), &mut short, &mut rig.env());
        assert_eq!(
            failed,
            Ok(Alone::Done(Err(JobError::BufferTooSmall {
                needed: 4,
                available: 3
            })))
        );
        assert!(sched.is_idle());
        assert_eq!(rig.profiler.summary().count, 0);
    }

    #[test]
    fn overlap_hands_the_device_to_the_next_job_as_it_collects() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let (a, b) = ([1u8; 8], [2u8; 8]);
        let mut work = [0u8; 256];
        let (mut sched, ja) = rig.overlapped(&mut work, p, &a);
        let jb = sched
            .submit(JobRequest::new(p, input(&b)), &rig.pool, rig.clock)
            .unwrap();
        assert!(matches!(sched.step(&mut rig.env()), StepOutcome::Ran { job, .. } if job == ja));
        // B's next step is the model: it waits for the device.
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        rig.clock.advance(NPU_US);
        // A is collected and B started in one call: the device is busy again.
        assert!(matches!(sched.step(&mut rig.env()), StepOutcome::Ran { job, .. } if job == jb));
        assert_eq!(rig.npu.state(), NpuState::Busy);
        assert!(matches!(sched.status(ja), Ok(JobStatus::Done(_))));
        rig.clock.advance(NPU_US);
        assert!(
            matches!(sched.step(&mut rig.env()), StepOutcome::Ran { job, finished: true, .. } if job == jb)
        );
        assert_eq!(claim(&mut sched, ja), expected(rig.model, &a));
        assert_eq!(claim(&mut sched, jb), expected(rig.model, &b));
    }

    /// A scheduler of four jobs in overlap mode over a rig whose NPU has
    /// a command queue, with one job of `p` per input submitted.
    fn queued_rig<'a>(
        rig: &mut Rig,
        work: &'a mut [u8],
        p: PipelineId,
        data: &'a [[u8; 8]],
        priorities: &[Priority],
    ) -> (Scheduler<'a, 4>, [JobId; 3]) {
        rig.npu.set_command_queue(true);
        let mut sched = Scheduler::new(work);
        sched.set_overlap(true).unwrap();
        let ids = core::array::from_fn(|k| {
            let request = with(JobRequest::new(p, input(&data[k])), priorities[k], true);
            sched.submit(request, &rig.pool, rig.clock).unwrap()
        });
        (sched, ids)
    }

    #[test]
    fn a_queued_npu_step_starts_as_the_running_one_ends() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let data = [[1u8; 8], [2u8; 8], [3u8; 8]];
        let mut work = [0u8; 512];
        let normal = [Priority::Normal; 3];
        let (mut sched, [a, b, c]) = queued_rig(&mut rig, &mut work, p, &data, &normal);
        let t0 = rig.clock.now_us();
        // A starts, B is queued behind it, C waits: the queue holds one.
        assert_eq!(sched.step(&mut rig.env()), ran(a, 0, false));
        assert_eq!(sched.step(&mut rig.env()), ran(b, 0, false));
        assert_eq!(rig.npu.in_flight(), 2);
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        // Collected late: B has run since A ended. One call collects A,
        // makes B the running step and queues C.
        rig.clock.advance(NPU_US + NPU_US / 2);
        assert_eq!(sched.step(&mut rig.env()), ran(c, 0, false));
        assert!(matches!(sched.status(a), Ok(JobStatus::Done(_))));
        assert_eq!(rig.npu.in_flight(), 2);
        // B is done at 2 x NPU_US, C at 3 x: the device never waited.
        rig.clock.advance(NPU_US / 2);
        assert_eq!(sched.step(&mut rig.env()), ran(b, 0, true));
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(c, 0, true));
        assert_eq!(rig.clock.now_us() - t0, 3 * NPU_US);
        assert_eq!(rig.npu.invoke_count(), 3);
        for (id, d) in [a, b, c].into_iter().zip(&data) {
            assert_eq!(claim(&mut sched, id), expected(rig.model, d));
        }
        assert!(sched.is_idle());
    }

    #[test]
    fn a_realtime_step_takes_the_npu_queue_from_a_normal_one() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let data = [[1u8; 8], [2u8; 8], [3u8; 8]];
        let mut work = [0u8; 512];
        let classes = [Priority::Normal, Priority::Normal, Priority::RealTime];
        let (mut sched, [a, b, r]) = queued_rig(&mut rig, &mut work, p, &data, &classes);
        // R arrived last but is picked first: it starts, A is queued.
        assert_eq!(sched.step(&mut rig.env()), ran(r, 0, false));
        assert_eq!(sched.step(&mut rig.env()), ran(a, 0, false));
        // Now with R done and A running, queue B, then make a second
        // REALTIME job arrive: it takes B's place in the queue.
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(b, 0, false));
        assert!(matches!(sched.status(r), Ok(JobStatus::Done(_))));
        assert_eq!(claim(&mut sched, r), expected(rig.model, &data[2]));
        let urgent = [9u8; 8];
        let request = with(JobRequest::new(p, input(&urgent)), Priority::RealTime, true);
        let r2 = sched.submit(request, &rig.pool, rig.clock).unwrap();
        assert_eq!(sched.step(&mut rig.env()), ran(r2, 0, false));
        assert_eq!(sched.status(b), Ok(JobStatus::Running { next_step: 0 }));
        assert_eq!(rig.npu.in_flight(), 2);
        // A ends, R2 runs (B queued again), R2 ends before B starts.
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(b, 0, false));
        assert!(matches!(sched.status(a), Ok(JobStatus::Done(_))));
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(r2, 0, true));
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(b, 0, true));
        assert_eq!(claim(&mut sched, a), expected(rig.model, &data[0]));
        assert_eq!(claim(&mut sched, b), expected(rig.model, &data[1]));
        assert_eq!(claim(&mut sched, r2), expected(rig.model, &urgent));
        assert_eq!(rig.npu.invoke_count(), 4, "B's withdrawn entry never ran");
    }

    #[test]
    fn a_fault_or_a_cancel_loses_no_queued_step() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        rig.npu.fail_on_marker(true);
        let data = [[FAIL_MARKER; 8], [2u8; 8], [3u8; 8]];
        let mut work = [0u8; 512];
        let normal = [Priority::Normal; 3];
        let (mut sched, [bad, b, c]) = queued_rig(&mut rig, &mut work, p, &data, &normal);
        assert_eq!(sched.step(&mut rig.env()), ran(bad, 0, false));
        assert_eq!(sched.step(&mut rig.env()), ran(b, 0, false));
        // The fault drops B's queued run; B starts again in the same call.
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(b, 0, false));
        assert_eq!(
            sched.status(bad),
            Ok(JobStatus::Failed(JobError::Npu(NpuError::DeviceFault)))
        );
        // C queued behind B, then cancelled: its run ends unclaimed and a
        // later job gets its own output.
        assert_eq!(sched.step(&mut rig.env()), ran(c, 0, false));
        sched.cancel(c).unwrap();
        let late = [4u8; 8];
        let d = sched
            .submit(JobRequest::new(p, input(&late)), &rig.pool, rig.clock)
            .unwrap();
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(d, 0, false));
        assert!(matches!(sched.status(b), Ok(JobStatus::Done(_))));
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        rig.clock.advance(NPU_US);
        assert_eq!(sched.step(&mut rig.env()), ran(d, 0, true));
        assert_eq!(claim(&mut sched, b), expected(rig.model, &data[1]));
        assert_eq!(claim(&mut sched, d), expected(rig.model, &late));
        assert!(sched.is_idle());
    }

    #[test]
    fn overlap_device_fault_and_cancel_leave_the_device_usable() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        rig.npu.fail_on_marker(true);
        let bad = [FAIL_MARKER; 8];
        let good = [3u8; 8];
        let mut work = [0u8; 256];
        let (mut sched, jf) = rig.overlapped(&mut work, p, &bad);
        sched.step(&mut rig.env());
        rig.clock.advance(NPU_US);
        sched.step(&mut rig.env());
        assert_eq!(
            sched.status(jf),
            Ok(JobStatus::Failed(JobError::Npu(NpuError::DeviceFault)))
        );
        // A job cancelled on the device: its result is dropped, the device
        // finishes and the next job runs.
        let jc = sched
            .submit(JobRequest::new(p, input(&bad)), &rig.pool, rig.clock)
            .unwrap();
        sched.step(&mut rig.env());
        sched.cancel(jc).unwrap();
        let jg = sched
            .submit(JobRequest::new(p, input(&good)), &rig.pool, rig.clock)
            .unwrap();
        assert_eq!(sched.step(&mut rig.env()), StepOutcome::Waiting);
        rig.clock.advance(NPU_US);
        assert!(matches!(sched.step(&mut rig.env()), StepOutcome::Ran { job, .. } if job == jg));
        rig.clock.advance(NPU_US);
        sched.step(&mut rig.env());
        assert_eq!(claim(&mut sched, jg), expected(rig.model, &good));
    }

    #[test]
    fn higher_priority_runs_first_and_fifo_within_a_class() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let data = [0u8; 8];
        let mut work = [0u8; 512];
        let mut sched: Scheduler<'_, 4> = Scheduler::new(&mut work);
        let classes = [
            Priority::BestEffort,
            Priority::Normal,
            Priority::Normal,
            Priority::RealTime,
        ];
        let [low, n1, n2, rt]: [JobId; 4] = core::array::from_fn(|i| {
            let req = with(JobRequest::new(p, input(&data)), classes[i], true);
            sched.submit(req, &rig.pool, rig.clock).unwrap()
        });
        let mut order: Vec<JobId, 4> = Vec::new();
        let mut env = rig.env();
        while let StepOutcome::Ran { job, .. } = sched.step(&mut env) {
            order.push(job).unwrap();
        }
        assert_eq!(order.as_slice(), &[rt, n1, n2, low]);
    }

    /// Job A (Normal): slow pre stage, model, three slow post stages. Job B
    /// (RealTime, model only) arrives after A's first stage.
    fn preemption_scenario(preemptible: bool) -> (u64, Vec<(JobId, u8), 8>, JobId, JobId, [u8; 4]) {
        let mut rig = Rig::new();
        let a = rig.pipeline(
            "a",
            &[slow_identity],
            &[slow_identity, slow_identity, slow_identity],
        );
        let b = rig.pipeline("b", &[], &[]);
        let a_data = [9u8; 8];
        let b_data = [3u8; 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        let ja = sched
            .submit(
                with(
                    JobRequest::new(a, input(&a_data)),
                    Priority::Normal,
                    preemptible,
                ),
                &rig.pool,
                rig.clock,
            )
            .unwrap();
        let mut trace: Vec<(JobId, u8), 8> = Vec::new();
        let StepOutcome::Ran { job, step, .. } = sched.step(&mut rig.env()) else {
            panic!()
        };
        trace.push((job, step)).unwrap();
        assert_eq!(rig.clock.now_us(), STAGE_US);
        let jb = sched
            .submit(
                with(JobRequest::new(b, input(&b_data)), Priority::RealTime, true),
                &rig.pool,
                rig.clock,
            )
            .unwrap();
        let arrived = rig.clock.now_us();
        let mut b_done = 0;
        loop {
            match sched.step(&mut rig.env()) {
                StepOutcome::Idle | StepOutcome::Waiting => break,
                StepOutcome::Ran {
                    job,
                    step,
                    finished,
                } => {
                    trace.push((job, step)).unwrap();
                    if job == jb && finished {
                        b_done = rig.clock.now_us();
                    }
                }
            }
        }
        let mut out = [0u8; 4];
        sched.get_result(ja, &mut out).unwrap();
        assert_eq!(out, expected(rig.model, &a_data));
        (b_done - arrived, trace, ja, jb, out)
    }

    #[test]
    fn realtime_job_starts_at_the_next_stage_boundary() {
        let (latency, trace, a, b, _) = preemption_scenario(true);
        // B ran right after A's first stage: its latency is its own NPU time.
        assert_eq!(latency, NPU_US);
        assert_eq!(
            trace.as_slice(),
            &[(a, 0), (b, 0), (a, 1), (a, 2), (a, 3), (a, 4)]
        );
    }

    #[test]
    fn non_preemptible_job_runs_to_completion_first() {
        let (latency, trace, a, b, out) = preemption_scenario(false);
        // B waits for A's model and three post stages.
        assert_eq!(latency, NPU_US + 3 * STAGE_US + NPU_US);
        assert_eq!(
            trace.as_slice(),
            &[(a, 0), (a, 1), (a, 2), (a, 3), (a, 4), (b, 0)]
        );
        // Preemption does not change the result.
        assert_eq!(out, preemption_scenario(true).4);
    }

    #[test]
    fn max_concurrent_one_disables_preemption() {
        let mut rig = Rig::new();
        let a = rig.pipeline("a", &[slow_identity], &[]);
        let b = rig.pipeline("b", &[], &[]);
        let data = [0u8; 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        assert_eq!(
            sched.set_max_concurrent(0),
            Err(SchedError::InvalidArgument)
        );
        assert_eq!(
            sched.set_max_concurrent(3),
            Err(SchedError::InvalidArgument)
        );
        sched.set_max_concurrent(1).unwrap();
        let ja = sched
            .submit(JobRequest::new(a, input(&data)), &rig.pool, rig.clock)
            .unwrap();
        sched.step(&mut rig.env());
        let jb = sched
            .submit(
                with(JobRequest::new(b, input(&data)), Priority::RealTime, true),
                &rig.pool,
                rig.clock,
            )
            .unwrap();
        assert_eq!(sched.step(&mut rig.env()), ran(ja, 1, true));
        assert_eq!(sched.status(jb), Ok(JobStatus::Queued));
    }

    #[test]
    fn wait_times_out_then_completes() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[slow_identity], &[slow_identity]);
        let data = [5u8; 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        let id = sched
            .submit(JobRequest::new(p, input(&data)), &rig.pool, rig.clock)
            .unwrap();
        assert_eq!(
            sched.wait(id, 500, &mut rig.env()),
            Err(SchedError::TimedOut)
        );
        // One stage (200) is under 500, the model (1000) crosses it.
        assert_eq!(rig.clock.now_us(), STAGE_US + NPU_US);
        assert_eq!(sched.status(id), Ok(JobStatus::Running { next_step: 2 }));
        assert_eq!(
            sched.get_result(id, &mut [0; 4]),
            Err(SchedError::NotFinished)
        );
        let meta = sched.wait(id, 10_000, &mut rig.env()).unwrap();
        assert_eq!(meta.byte_len(), 4);
        assert_eq!(
            sched.output(id).unwrap().data(),
            &expected(rig.model, &data)
        );
        assert_eq!(
            sched.get_result(id, &mut [0; 3]),
            Err(SchedError::OutputTooSmall {
                needed: 4,
                actual: 3
            })
        );
        sched.release(id).unwrap();
        assert_eq!(sched.status(id), Err(SchedError::StaleJob));
    }

    #[test]
    fn cancel_queued_and_running_jobs() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[slow_identity], &[]);
        let data = [0u8; 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        CALLS.with(|c| c.borrow_mut().clear());
        let queued = sched
            .submit(
                JobRequest {
                    callback: Some((record, 11)),
                    ..JobRequest::new(p, input(&data))
                },
                &rig.pool,
                rig.clock,
            )
            .unwrap();
        sched.cancel(queued).unwrap();
        CALLS.with(|c| {
            assert_eq!(
                c.borrow().as_slice(),
                &[(queued, Err(JobError::Cancelled), 11)]
            )
        });
        assert_eq!(sched.cancel(queued), Err(SchedError::StaleJob));
        let running = sched
            .submit(JobRequest::new(p, input(&data)), &rig.pool, rig.clock)
            .unwrap();
        sched.step(&mut rig.env());
        sched.cancel(running).unwrap();
        assert_eq!(sched.pending(), 0);
        assert_eq!(sched.run_until_idle(&mut rig.env()), 0);
        let done = sched
            .submit(JobRequest::new(p, input(&data)), &rig.pool, rig.clock)
            .unwrap();
        sched.run_until_idle(&mut rig.env());
        assert_eq!(sched.cancel(done), Err(SchedError::AlreadyFinished));
        assert_eq!(JobError::Cancelled.to_errno(), Errno::Canceled);
    }

    #[test]
    fn callback_gets_the_output_and_the_slot_is_reclaimed() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let data = [8u8; 8];
        let mut work = [0u8; 128];
        let mut sched: Scheduler<'_, 1> = Scheduler::new(&mut work);
        CALLS.with(|c| c.borrow_mut().clear());
        let req = JobRequest {
            callback: Some((record, 99)),
            ..JobRequest::new(p, input(&data))
        };
        let id = sched.submit(req, &rig.pool, rig.clock).unwrap();
        assert_eq!(
            sched.submit(req, &rig.pool, rig.clock),
            Err(SchedError::Full)
        );
        sched.run_until_idle(&mut rig.env());
        CALLS.with(|c| {
            assert_eq!(
                c.borrow().as_slice(),
                &[(id, Ok(expected(rig.model, &data)), 99)]
            );
        });
        assert_eq!(sched.status(id), Err(SchedError::StaleJob));
        let again = sched.submit(req, &rig.pool, rig.clock).unwrap();
        assert_ne!(again, id);
    }

    #[test]
    fn npu_fault_fails_the_job_and_the_next_job_still_runs() {
        let mut rig = Rig::new();
        rig.npu.fail_on_marker(true);
        let p = rig.pipeline("p", &[], &[increment]);
        let bad = [FAIL_MARKER, 0, 0, 0, 0, 0, 0, 0];
        let good = [1u8; 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        let mut out = [0u8; 4];
        let e = sched
            .run_sync(JobRequest::new(p, input(&bad)), &mut out, &mut rig.env())
            .unwrap_err();
        assert_eq!(e, SchedError::Job(JobError::Npu(NpuError::DeviceFault)));
        assert_eq!(e.to_errno(), Errno::Io);
        assert_eq!(rig.profiler.summary().count, 0);
        assert!(sched
            .run_sync(JobRequest::new(p, input(&good)), &mut out, &mut rig.env())
            .is_ok());
        assert_eq!(rig.profiler.summary().count, 1);
    }

    #[test]
    fn missed_deadline_and_submit_errors() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[slow_identity], &[]);
        let unbuilt = rig.pool.create("unbuilt").unwrap();
        let data = [0u8; 8];
        let mut work = [0u8; 256];
        let mut sched: Scheduler<'_, 2> = Scheduler::new(&mut work);
        assert_eq!(
            sched.submit(JobRequest::new(unbuilt, input(&data)), &rig.pool, rig.clock),
            Err(SchedError::Pipeline(PipelineError::NotBuilt))
        );
        let req = JobRequest {
            deadline_us: Some(STAGE_US / 2),
            ..JobRequest::new(p, input(&data))
        };
        let id = sched.submit(req, &rig.pool, rig.clock).unwrap();
        // The first stage runs (deadline not yet passed), then the job is failed.
        assert_eq!(
            sched.wait(id, u64::MAX, &mut rig.env()),
            Err(SchedError::Job(JobError::DeadlineMissed))
        );
        assert_eq!(rig.clock.now_us(), STAGE_US);
        assert_eq!(rig.npu.invoke_count(), 0);
    }

    #[test]
    fn small_work_buffer_and_stale_model_fail_cleanly() {
        let mut rig = Rig::new();
        let p = rig.pipeline("p", &[], &[]);
        let data = [0u8; 8];
        let mut tiny = [0u8; 8];
        let mut sched: Scheduler<'_, 1> = Scheduler::new(&mut tiny);
        assert_eq!(sched.buffer_len(), 0);
        let mut out = [0u8; 4];
        assert_eq!(
            sched.run_sync(JobRequest::new(p, input(&data)), &mut out, &mut rig.env()),
            Err(SchedError::Job(JobError::BufferTooSmall {
                needed: 4,
                available: 0
            }))
        );
        let mut work = [0u8; 128];
        let mut sched: Scheduler<'_, 1> = Scheduler::new(&mut work);
        let model = rig.model;
        rig.registry.unregister(model).unwrap();
        assert_eq!(
            sched.run_sync(JobRequest::new(p, input(&data)), &mut out, &mut rig.env()),
            Err(SchedError::Job(JobError::Registry(
                RegistryError::StaleHandle
            )))
        );
    }
}
